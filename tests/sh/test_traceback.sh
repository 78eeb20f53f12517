#!/usr/bin/env bash
# tests/sh/test_traceback.sh - a C function's or operator's error at the top level reads as the message at
# the student's line, without "[C]: in metamethod 'mul'"; inside the student's own functions the traceback stays.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"

mul='mul: shapes (2,3) and (3,2) cannot broadcast: dim -2 has 2 and 3'

# typed at the prompt: the operator and a C function, each the message alone (and *'s hint)
printf 'mha.zeros(2,3) * mha.zeros(3,2)\nmha.zeros(2,3):matmul(mha.zeros(2,2))\n' \
    | NO_COLOR=1 timeout 10 "$repl" -i >"$tmp/out" 2>"$tmp/err"
grep -qxF "stdin:1: $mul" "$tmp/err" && pass "operator error at the prompt: the message at the line" \
    || fail "operator error at the prompt: the message at the line" "$(cat "$tmp/err")"
grep -qxF "stdin:1: matmul: (2,3) @ (2,2): inner sizes 3 and 2 differ" "$tmp/err" \
    && pass "C function error at the prompt: the message at the line" \
    || fail "C function error at the prompt: the message at the line" "$(cat "$tmp/err")"
grep -q 'stack traceback\|\[C\]' "$tmp/err" && fail "no traceback at the prompt" "$(cat "$tmp/err")" \
    || pass "no traceback at the prompt"

# in a script: the script's line, no traceback
printf 'local x = mha.zeros(2,3)\nlocal y = x * mha.zeros(3,2)\n' >"$tmp/top.lua"
NO_COLOR=1 timeout 10 "$repl" "$tmp/top.lua" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(cat "$tmp/err")" = "$repl: $tmp/top.lua:2: $mul" ] \
    && pass "operator error in a script: one line at the script's line" \
    || fail "operator error in a script: one line at the script's line" "rc $rc: $(cat "$tmp/err")"

# inside the student's functions the traceback helps: it names their lines
printf 'local function f(a) return a * mha.zeros(3,2) end\nlocal function g() local r = f(mha.zeros(2,3)) return r end\ng()\n' >"$tmp/deep.lua"
NO_COLOR=1 timeout 10 "$repl" "$tmp/deep.lua" >"$tmp/out" 2>"$tmp/err"
grep -qF "$tmp/deep.lua:2: in " "$tmp/err" && grep -qF "$tmp/deep.lua:3: in main chunk" "$tmp/err" \
    && grep -qF "[C]: in metamethod 'mul'" "$tmp/err" \
    && pass "operator error inside functions keeps the traceback" \
    || fail "operator error inside functions keeps the traceback" "$(cat "$tmp/err")"

# a C function inside the student's function is named as they know it, mha.matmul, not mha.core.matmul
printf 'local function f(a) return a:matmul(mha.zeros(5,5)) end\nf(mha.zeros(2,3))\n' >"$tmp/core.lua"
NO_COLOR=1 timeout 10 "$repl" "$tmp/core.lua" >"$tmp/out" 2>"$tmp/err"
grep -qxF "	[C]: in function 'mha.matmul'" "$tmp/err" && ! grep -q "mha\.core" "$tmp/err" \
    && pass "a core function's frame says mha.matmul" || fail "a core function's frame says mha.matmul" "$(cat "$tmp/err")"

# a library error raised without a position (error(msg, 0) in lua/nn/transformer.lua) gets the script's line
printf 'local a = 1\nlocal m = mha.nn.Transformer{vocab = 5, d_model = 5, heads = 2, max_len = 4}\n' >"$tmp/lib.lua"
NO_COLOR=1 timeout 10 "$repl" "$tmp/lib.lua" >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/err")" = "$repl: $tmp/lib.lua:2: nn.Transformer: d_model 5 must be divisible by heads 2" ] \
    && pass "library error without a position: the script's line" \
    || fail "library error without a position: the script's line" "$(cat "$tmp/err")"
# the student's own error(msg, 0) stays as written
printf 'error("mine", 0)\n' >"$tmp/own.lua"
NO_COLOR=1 timeout 10 "$repl" "$tmp/own.lua" >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/err")" = "$repl: mine" ] && pass "the student's error(msg, 0) keeps no position" \
    || fail "the student's error(msg, 0) keeps no position" "$(cat "$tmp/err")"

[ "$fails" -eq 0 ]
