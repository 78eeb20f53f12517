#!/usr/bin/env bash
# tests/sh/test_train_batch.sh - mha.train in batch mode (no terminal): one plain line per log step, no timings,
# and byte-identical output for a seed on 1 and 2 threads (MHA_THREADS), weights included.
set -u
cd "$(dirname "$0")/../.." || exit 2
repl=${MHA_REPL:?MHA_REPL must name the mha-repl binary}
script='
mha.seed(7)
local m = mha.nn.Transformer{vocab = 12, d_model = 32, heads = 4, layers = 2, d_ff = 64, max_len = 16}
local h = mha.train{model = m, task = mha.tasks.sort{vocab = 12, len = 8, batch = 48}, steps = 40, lr = 3e-3,
                    log_every = 10, seed = 3}
print(string.format("%.9g %.9g", h.loss[#h.loss], h.acc[#h.acc]))
local w = m.unembed.weight
print(string.format("%.9g %.9g", w:sum():item(), (w * w):sum():item()))
'
one=$(MHA_THREADS=1 "$repl" -e "$script" 2>&1)
two=$(MHA_THREADS=2 "$repl" -e "$script" 2>&1)
if [ "$one" = "$two" ]; then echo "PASS train_threads_identical"; else
    echo "FAIL train_threads_identical: 1 thread and 2 threads differ:"; diff <(echo "$one") <(echo "$two") | head -5; fi
if printf '%s\n' "$one" | grep -qE '^step +10  loss [0-9.]+  acc +[0-9.]+%$' && ! printf '%s' "$one" | grep -q 'steps/s'; then
    echo "PASS train_batch_lines"
else
    echo "FAIL train_batch_lines: want 'step    10  loss X  acc Y%' lines without timings, got: $(printf '%s' "$one" | head -2)"
fi
