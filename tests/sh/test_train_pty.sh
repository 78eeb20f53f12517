#!/usr/bin/env bash
# tests/sh/test_train_pty.sh - mha.train at a terminal (a pty, through testlib.sh's pty_run): the progress line
# is rewritten in place (step, steps/s, loss, acc, ETA), and Ctrl-C stops training cleanly: the REPL stays up,
# train returns a history marked interrupted, and the model keeps its weights (its loss is the trained one, not
# the initial one). Skipped with a message when /usr/bin/python3 is absent.
. "$(dirname "$0")/testlib.sh"
need_python train_pty
out=$(pty_run 24 80 "$repl" 2>&1 <<'STEPS'
expect > 
send mha.seed(1); m = mha.nn.Transformer{vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24}\r
send t = mha.tasks.induction{vocab=20, len=24}; tk, tg = t:batch(); l0 = mha.train.loss(m:forward(tk), tg):item()\r
send h = mha.train{model=m, task=t, steps=100000, lr=1e-2, log_every=5}\r
patience 30
expect steps/s
sleep 2
send \x03
patience 10
expect interrupted after step
send l1 = mha.train.loss(m:forward(tk), tg):item()\r
send print('RESULT', h.interrupted, h.steps > 5, h.steps < 100000, #h.loss > 0, l1 < l0)\r
expect RESULT\ttrue
send \x04
STEPS
)
check() {   # check NAME PATTERN WHY
    if printf '%s' "$out" | grep -aqE "$2"; then pass "$1"; else fail "$1" "$3"; fi
}
check train_pty_progress 'step [0-9]+/100000 +[0-9.]+ steps/s +loss [0-9.]+ +acc +[0-9.]+% +ETA' \
      "no progress line with step, steps/s, loss, acc, ETA"
check train_pty_rewritten $'\r\e\\[Kstep' "the progress line is not rewritten in place (\\r and erase line)"
check train_pty_ctrl_c 'train: interrupted after step [0-9]+ of 100000; the model keeps what it learned' \
      "Ctrl-C did not stop training with its message"
check train_pty_kept 'RESULT[[:space:]]+true[[:space:]]+true[[:space:]]+true[[:space:]]+true[[:space:]]+true' \
      "after Ctrl-C: history not marked interrupted, or the model lost its training"
waits=$(printf '%s' "$out" | grep -a '^pty_drive: ')
[ -z "$waits" ] && pass train_pty_answers || fail train_pty_answers "$waits"
[ "$fails" -eq 0 ]
