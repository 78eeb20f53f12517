#!/usr/bin/env bash
# tests/sh/test_train_words.sh - mha.train speaks the REPL's language: under :lang zh (no lesson open) its
# done, progress and Ctrl-C lines are Chinese, at a pty; its log lines and its curves' title (the model's heads,
# so that two runs can be told apart) in both languages, on the text plot of a terminal without windows; and
# attention_every's maps, one figure per layer.
. "$(dirname "$0")/testlib.sh"
script='
mha.printoptions{lang = arg[1]}
mha.seed(1)
local m = mha.nn.Transformer{vocab = 6, d_model = 16, heads = 2, max_len = 6}
mha.train{model = m, task = mha.tasks.reverse{vocab = 6, len = 3}, steps = 20, log_every = 10, plot = true}
'
printf '%s' "$script" > "$tmp/train.lua"
for lang in en zh; do
    out=$(MHA_PLOT_TERM=dumb "$repl" "$tmp/train.lua" "$lang" 2>&1)
    if [ "$lang" = en ]; then log='^step +10  loss [0-9.]+  acc +[0-9.]+%$'; title='training: 2 heads, d_model 16, 1 layer'
    else log='^第 +10 步  损失 [0-9.]+  准确率 +[0-9.]+%$'; title='训练：2 个头，d_model 16，1 层'; fi
    if printf '%s\n' "$out" | grep -qE "$log"; then pass "train_log_$lang"; else fail "train_log_$lang" "no '$log' in: $(printf '%s' "$out" | head -3)"; fi
    if printf '%s\n' "$out" | grep -qF "$title"; then pass "train_plot_title_$lang"; else fail "train_plot_title_$lang" "no '$title' above the curves"; fi
done

# attention_every = k draws each layer's heads on a figure of its own (it raised "plot.figure: unknown option")
out=$(MHA_PLOT_TERM=dumb "$repl" -e 'mha.printoptions{lang = "zh"}; mha.seed(1)
local m = mha.nn.Transformer{vocab = 6, d_model = 16, heads = 2, layers = 2, max_len = 6}
mha.train{model = m, task = mha.tasks.reverse{vocab = 6, len = 3}, steps = 4, log_every = 2, attention_every = 2,
          quiet = true, plot = true}' 2>&1)
layers=$(printf '%s\n' "$out" | grep -cE '^ *第 [12] 层 *$')
if [ "$layers" -eq 4 ] && printf '%s' "$out" | grep -qF '训练：2 个头，d_model 16，2 层'; then pass train_attention_every
else fail train_attention_every "want layers 1 and 2 drawn twice and the curves, got: $(printf '%s' "$out" | head -3)"; fi

need_python train_words_pty
out=$(pty_run 24 80 /usr/bin/env MHA_LANG= "$repl" 2>&1 <<'STEPS'
expect > 
send :lang zh\r
send mha.seed(1); m = mha.nn.Transformer{vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24}\r
send t = mha.tasks.induction{vocab=20, len=24}; h = mha.train{model=m, task=t, steps=20, log_every=5}\r
patience 30
expect 完成
send h = mha.train{model=m, task=t, steps=100000, lr=1e-2, log_every=5}\r
expect 步/秒
sleep 1
send \x03
patience 10
expect 后中断
send \x04
STEPS
)
for pair in 'progress|第 [0-9]+/100000 步 +[0-9.]+ 步/秒 +损失 [0-9.]+ +准确率 +[0-9.]+% +还需' \
            'interrupted|train：第 [0-9]+ 步（共 100000 步）后中断；模型保留已学到的' \
            'done|完成：[0-9]+ 步，用时 [0-9.]+s（CPU），'; do
    name=${pair%%|*} pattern=${pair#*|}
    if printf '%s' "$out" | grep -aqE "$pattern"; then pass "train_zh_$name"; else fail "train_zh_$name" "no '$pattern'"; fi
done
[ "$fails" -eq 0 ]
