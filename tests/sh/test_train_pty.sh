#!/usr/bin/env bash
# tests/sh/test_train_pty.sh - mha.train at a terminal (a pty, through testlib.sh's pty_run): the progress line
# is rewritten in place (step, steps/s, loss, acc, ETA), and Ctrl-C stops training cleanly: train says the step
# reached and returns the history so far (h.interrupted, its losses kept), the REPL stays up, and the model keeps
# its weights (its loss is the trained one, not the initial one). A lesson step whose loop calls train stops
# once, as an interrupted step, and Enter runs it again. With checkpoint = path, Ctrl-C writes the step reached
# and resume goes on from it. Skipped with a message when /usr/bin/python3 is absent.
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
send print('RESULT', h.interrupted, #h.loss > 0, l1 < l0)\r
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
check train_pty_kept 'RESULT[[:space:]]+true[[:space:]]+true[[:space:]]+true' \
      "after Ctrl-C: h is not the history so far, or the model lost its training"
waits=$(printf '%s' "$out" | grep -a '^pty_drive: ')

# ---- in Chinese at 80 columns, where the progress line with a validation loss would fill the width: it fits
# in 78 cells with its loss whole, so the terminal never wraps it (a wrapped line leaves a copy at each rewrite),
# nor the ^C it echoes after it when Ctrl-C stops the run ----
out=$(MHA_LANG=zh pty_run 24 80 "$repl" 2>&1 <<'STEPS'
expect > 
send mha.seed(1); m = mha.nn.Transformer{vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24}\r
send t, v = mha.tasks.induction{vocab=20, len=24}, mha.tasks.induction{vocab=20, len=24}\r
send h = mha.train{model=m, task=t, steps=100000, lr=1e-2, log_every=5, val=v, val_every=5}\r
patience 30
expect 验证损失
sleep 1
send \x03
patience 10
expect 中断
send \x04
STEPS
)
lines=$(printf '%s' "$out" | tr '\r' '\n' | sed 's/\x1b\[K//g' | grep -aE '第 [0-9]+/[0-9]+ 步')
widest=$(printf '%s\n' "$lines" | LC_ALL=C.UTF-8 wc -L)
if [ "${widest:-0}" -gt 0 ] && [ "$widest" -le 80 ] && printf '%s\n' "$lines" | grep -aqE '验证损失 [0-9]+\.[0-9]{4}'; then
    pass train_pty_zh_fits
else fail train_pty_zh_fits "the widest zh progress line, with its ^C, is ${widest:-?} cells at 80 columns: $lines"; fi

# ---- Ctrl-C in lesson 17's step 2 (zh), whose loop calls train twice: one stop, no error, Enter reruns ----
out=$(MHA_LANG=zh pty_run 40 80 "$repl" 2>&1 <<'STEPS'
expect > 
patience 20
send :open 17\r
expect 77.1
sleep 0.5
send \r
expect quiet = true
sleep 0.2
send \x03
expect 按 Enter
send print('AFTER', results.none == nil)\r
expect AFTER
send \x04
STEPS
)
stops=$(printf '%s' "$out" | grep -acE 'train: interrupted after step|train：第 [0-9]+ 步（共')
[ "$stops" = 1 ] && pass train_pty_lesson_once || fail train_pty_lesson_once "train stopped $stops times: $out"
check train_pty_lesson_step '第 2 步被 Ctrl-C 停下：按 Enter 重新运行它。' "the step was not reported as interrupted"
if printf '%s' "$out" | grep -aqE 'attempt to|出错'; then fail train_pty_lesson_clean "an error after Ctrl-C: $out"
else pass train_pty_lesson_clean; fi
check train_pty_lesson_loop_stopped 'AFTER[[:space:]]+true' "the loop went on to train without norm after Ctrl-C"
waits="$waits$(printf '%s' "$out" | grep -a '^pty_drive: ')"

# ---- Ctrl-C with checkpoint = path: the checkpoint holds the step reached, and resume goes on from it ----
out=$(pty_run 24 80 "$repl" 2>&1 <<STEPS
expect > 
send mha.seed(1); m = mha.nn.Transformer{vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24}\r
send t = mha.tasks.induction{vocab=20, len=24}; path = "$tmp/ck.npz"\r
send h = mha.train{model=m, task=t, steps=100000, lr=1e-2, log_every=5, checkpoint_every=100000, checkpoint=path}\r
patience 30
expect steps/s
sleep 2
send \x03
patience 10
expect interrupted after step
send c = math.tointeger(mha.load(path)["extra.train.step"]:item()); print("CKPT", c)\r
expect CKPT
send h2 = mha.train{model=m, task=t, steps=c + 3, quiet=true, resume=path}; print("RESUMED", h2.steps - c)\r
expect RESUMED
send \x04
STEPS
)
reached=$(printf '%s' "$out" | grep -aoE 'interrupted after step [0-9]+' | grep -oE '[0-9]+$')
saved=$(printf '%s' "$out" | grep -aoE 'CKPT[[:space:]]+[0-9]+' | grep -oE '[0-9]+$')
[ -n "$reached" ] && [ "$reached" = "$saved" ] && pass train_pty_checkpoint_on_ctrl_c ||
    fail train_pty_checkpoint_on_ctrl_c "Ctrl-C stopped at step '$reached', the checkpoint holds '$saved'"
check train_pty_resume 'RESUMED[[:space:]]+3' "resume did not go on for the 3 steps after the checkpoint"
waits="$waits$(printf '%s' "$out" | grep -a '^pty_drive: ')"

# ---- between log steps: a run that logs only at its end still shows its progress line ----
out=$(pty_run 24 80 "$repl" 2>&1 <<'STEPS'
expect > 
send mha.seed(1); m = mha.nn.Transformer{vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24}\r
send h = mha.train{model=m, task=mha.tasks.induction{vocab=20, len=24}, steps=100000, log_every=100000}\r
patience 30
expect steps/s
send \x03
patience 10
expect interrupted after step
send \x04
STEPS
)
check train_pty_progress_between_logs 'step [0-9]+/100000 +[0-9.]+ steps/s +loss [0-9.]+' \
      "no progress line before the first log step"
waits="$waits$(printf '%s' "$out" | grep -a '^pty_drive: ')"
[ -z "$waits" ] && pass train_pty_answers || fail train_pty_answers "$waits"
[ "$fails" -eq 0 ]
