#!/usr/bin/env bash
# tests/sh/test_habits.sh - a student's habits at the prompt: the hints the REPL prints under an error or
# a value, in English and (MHA_LANG=zh) Chinese, and an input that can never complete given back at once.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"

# ---- a value after statements: printed as a value alone is, and the next line runs ----
printf 'score = 1; score\nprint("next line ran")\n' | timeout 10 "$repl" -i >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = "$(printf '1\nnext line ran')" ] && [ ! -s "$tmp/err" ] \
    && pass "a value after statements is printed, not an endless >>" \
    || fail "a value after statements is printed, not an endless >>" "$(cat "$tmp/out" "$tmp/err")"
# what is really unfinished still waits for its end, across a blank line
printf 'function f()\n\nreturn 2 end\nf()\nt = {1,\n2}\n#t\n' | timeout 10 "$repl" -i >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = "$(printf '2\n2')" ] && [ ! -s "$tmp/err" ] \
    && pass "unfinished statements still continue" || fail "unfinished statements still continue" "$(cat "$tmp/out" "$tmp/err")"

# ---- the hints, as the REPL prints them ----
cat >"$tmp/in" <<'EOF'
x = mha.randn(3, 4)
y = mha.randn(3, 4)
x.shape
x @ y
x * y:T()
mha.sofmax(x, 2)
help
exit()
:opne 3
EOF
COLUMNS=120 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check() {   # check NAME FILE LINE: FILE has LINE exactly
    grep -qxF -- "$3" "$2" && pass "$1" || fail "$1" "no line '$3' in: $(cat "$2")"
}
check "x.shape" "$tmp/out" "hint: x.shape is the method itself; call it with a colon: x:shape()"
# the hint says what the value is: no "function: 0x..." above it
grep -q "^function: 0x" "$tmp/out" && fail "x.shape shows the hint alone" "$(cat "$tmp/out")" \
    || pass "x.shape shows the hint alone"
check "x @ y" "$tmp/err" "hint: Lua has no @ operator: the matrix product is x:matmul(y), or mha.matmul(x, y)"
check "x * y:T()" "$tmp/err" "hint: * multiplies element by element (broadcasting); for the matrix product write x:matmul(y:T())"
check "mha.sofmax" "$tmp/err" "hint: did you mean mha.softmax?"
grep -qF "help(f) or ?name explains a function: its signature" "$tmp/out" && pass "help typed bare shows the help" \
    || fail "help typed bare shows the help" "$(cat "$tmp/out")"
check "exit()" "$tmp/err" "hint: :quit or Ctrl-D leaves mha-repl (os.exit() too)"
check ":opne 3" "$tmp/err" "unknown command :opne (did you mean :open?)"
MHA_LANG=zh COLUMNS=120 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check "x.shape in Chinese" "$tmp/out" "提示：x.shape 是方法本身；用冒号调用它：x:shape()"
check "mha.sofmax in Chinese" "$tmp/err" "提示：你是想写 mha.softmax 吗？"
check ":opne in Chinese" "$tmp/err" "没有命令 :opne（你是想输入 :open 吗？）"

# at 80 columns a long hint wraps between words, its continuation indented
COLUMNS=80 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check "a long hint wraps between words" "$tmp/err" "hint: * multiplies element by element (broadcasting); for the matrix product"
check "its continuation is indented" "$tmp/err" "      write x:matmul(y:T())"

[ "$fails" -eq 0 ]
