#!/usr/bin/env bash
# tests/sh/test_ux.sh - what a new user meets at the prompt and on the command line: a method called with a dot
# says so at stdin:1, opt:step() and heads.report echo nothing to repeat, --export says one line where it wrote.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
check() {   # check NAME FILE LINE: FILE has LINE exactly
    grep -qxF -- "$3" "$2" && pass "$1" || fail "$1" "no line '$3' in: $(cat "$2")"
}

# ---- PyTorch's dot habit, at the user's line (a Lua class's method is tail-called by "return opt.step();") ----
cat >"$tmp/in" <<'IN'
x = mha.randn(2, 3); loss = x:sum()
loss.item()
opt = mha.optim.Adam({mha.randn(2):requires_grad(true)})
opt.step()
lin = mha.nn.Linear{in_features = 3, out_features = 2}
lin.forward(x)
lin.parameters()
opt:step()
print("after step")
IN
COLUMNS=120 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check "loss.item() at the prompt" "$tmp/err" "stdin:1: item is a method: call it with a colon: x:item()"
check "opt.step() at the prompt" "$tmp/err" "stdin:1: step is a method: call it with a colon: opt:step()"
check "lin.forward(x) at the prompt" "$tmp/err" "stdin:1: forward is a method: call it with a colon: m:forward(...)"
check "lin.parameters() at the prompt" "$tmp/err" "stdin:1: parameters is a method: call it with a colon: m:parameters()"
# the REPL's hint writes the call as typed, with a colon, when it differs from the message's
check "loss.item(): the call as typed" "$tmp/err" "hint: write loss:item()"
check "lin.forward(x): the call as typed" "$tmp/err" "hint: write lin:forward(x)"
grep -qxF "hint: write opt:step()" "$tmp/err" && fail "no hint repeating the message" "$(cat "$tmp/err")" \
    || pass "no hint repeating the message"
grep -q "attempt to" "$tmp/err" && fail "no 'attempt to' at the prompt" "$(cat "$tmp/err")" || pass "no 'attempt to' at the prompt"
# opt:step() returns nothing, as torch's None: the prompt prints nothing before the next output
[ "$(cat "$tmp/out")" = "after step" ] && pass "opt:step() prints nothing" || fail "opt:step() prints nothing" "$(cat "$tmp/out")"

# ---- heads.report printed its tables: the echo is one line, not the tables again ----
cat >"$tmp/in" <<'IN'
mha.seed(1); m = mha.nn.Transformer{vocab = 10, d_model = 8, heads = 2, layers = 2, d_ff = 0, max_len = 12}
mha.heads.report(m, mha.tasks.repeated(10, 6, 2, 1))
IN
COLUMNS=80 timeout 20 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check "heads.report echoes one line" "$tmp/out" "heads.report {previous, duplicate, induction}: (layers, heads) = (2,2) each"
n=$(grep -c '^previous ' "$tmp/out")
[ "$n" = 1 ] && pass "heads.report's table printed once" || fail "heads.report's table printed once" "$n times: $(cat "$tmp/out")"

# ---- --export: one line saying where it wrote, in the REPL's language; the transcript goes to the file ----
timeout 60 "$repl" --lesson 3 --batch --export "$tmp/l3.ipynb" >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = "wrote lesson 3 to $tmp/l3.ipynb" ] && [ -s "$tmp/l3.ipynb" ] && grep -q '"outputs"' "$tmp/l3.ipynb" \
    && pass "--export says where it wrote" || fail "--export says where it wrote" "$(cat "$tmp/out" "$tmp/err")"
MHA_LANG=zh timeout 60 "$repl" --lesson 3 --batch --lang zh --export "$tmp/l3.html" >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = "已把第 3 课写到 $tmp/l3.html" ] && [ -s "$tmp/l3.html" ] \
    && pass "--export says where it wrote, zh" || fail "--export says where it wrote, zh" "$(cat "$tmp/out" "$tmp/err")"

# ---- bench/bench.lua takes ONLY without a C results file: - (or "") stands for "no C file" ----
bench=$(dirname "$0")/../../bench/bench.lua
for none in - ""; do
    timeout 60 "$repl" "$bench" "$none" no_such_case >"$tmp/out" 2>"$tmp/err"; status=$?
    [ "$status" = 0 ] && grep -q '^case ' "$tmp/out" && ! grep -q 'cannot read' "$tmp/err" \
        && pass "bench.lua '$none' ONLY: no C file" || fail "bench.lua '$none' ONLY: no C file" "$status: $(cat "$tmp/out" "$tmp/err")"
done
[ "$fails" -eq 0 ]
