#!/usr/bin/env bash
# tests/sh/test_torch_habits.sh - a PyTorch user's habits at the prompt: bare help shows the help; x.data,
# len(x), m:to("cuda"), m:train(1), cross_entropy's 0 targets and bad options get their one-line hint, in
# English and (MHA_LANG=zh) Chinese, exactly;
# the same at a terminal (a pty, through testlib.sh's pty_run). env: MHA_REPL, as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"

check() {   # check NAME FILE LINE: FILE has LINE exactly
    grep -qxF -- "$3" "$2" && pass "$1" || fail "$1" "no line '$3' in: $(cat "$2")"
}
has() {   # has NAME FILE TEXT: FILE contains TEXT (a line the terminal's width may wrap further on)
    grep -qF -- "$3" "$2" && pass "$1" || fail "$1" "no '$3' in: $(cat "$2")"
}
lacks() {   # lacks NAME FILE TEXT: FILE does not contain TEXT
    grep -qF -- "$3" "$2" && fail "$1" "'$3' in: $(cat "$2")" || pass "$1"
}

cat >"$tmp/in" <<'EOF_IN'
x = mha.randn(3, 4)
x.data
x.data:shape()
len(x)
m = mha.nn.Linear{in_features = 4, out_features = 2}
m:to("cuda")
m:train(1)
for name, p in m:named_parameters() do print(name, table.concat(p:shape(), "x")) end
print(m:eval().training, m:to("cpu") == m)
logits = mha.randn(3, 4)
mha.cross_entropy(logits, {1, 2, 0})
mha.cross_entropy(logits, {1, 2, 3}, {reduction = "avg"})
print(mha.cross_entropy(mha.tensor{{0, 0}, {5, 0}}, {1, 0}, {ignore_index = 0}):item() < 0.6932)
help
EOF_IN
COLUMNS=200 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check "x.data: a hint" "$tmp/out" "hint: there is no .data here: use x:detach() (the same numbers, outside the graph) or x itself"
check "x.data:shape(): the hint under the error" "$tmp/err" "hint: there is no .data here: use x:detach() (the same numbers, outside the graph) or x itself"
check "len(x): a hint to #x" "$tmp/err" "hint: Lua has no len(): #x is the size of dim 1, as x:size(1); x:numel() counts every element"
lacks "len(x): not 'did you mean mha.le'" "$tmp/err" "mha.le"
check "m:to(\"cuda\"): the error names function and device" "$tmp/err" \
    'stdin:1: Linear:to: device "cuda" is not available: mha-repl computes on the CPU only; m:to("cpu") or no call at all'
check "m:train(1): the error names function and argument" "$tmp/err" "stdin:1: Linear:train: mode must be true or false, got number"
check "named_parameters iterates (name, tensor)" "$tmp/out" "$(printf 'weight\t2x4')"
check "named_parameters in torch's order" "$tmp/out" "$(printf 'bias\t2')"
check "eval and to(\"cpu\") return m" "$tmp/out" "$(printf 'false\ttrue')"
check "targets padded with 0: a hint to ignore_index" "$tmp/err" \
    "hint: classes count from 1 here; to skip the targets that are 0, give {ignore_index = 0}"
check "cross_entropy's bad option: the error names function, option and value" "$tmp/err" \
    'stdin:1: cross_entropy: option reduction must be "mean", "sum" or "none", got avg'
check "ignore_index = 0 skips the padding" "$tmp/out" "true"
has "bare help shows the help" "$tmp/out" "help(f) or ?name explains a function: its signature, what it does, the formula"
lacks "bare help: no function: 0x" "$tmp/out" "function: 0x"

MHA_LANG=zh COLUMNS=200 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
check "x.data in Chinese" "$tmp/out" "提示：这里没有 .data：用 x:detach()（同样的数值，不在计算图里）或直接用 x"
check "len(x) in Chinese" "$tmp/err" "提示：Lua 没有 len()：#x 是第 1 维的大小，即 x:size(1)；x:numel() 数所有元素"
check "m:to(\"cuda\") in Chinese" "$tmp/err" '提示：mha-repl 只在 CPU 上计算：写 m:to("cpu")，或不调用 to'
check "m:train(1) in Chinese" "$tmp/err" "提示：m:train(true) 进入训练模式，m:train(false) 或 m:eval() 进入评估模式"
check "targets padded with 0 in Chinese" "$tmp/err" "提示：这里的类别从 1 开始数；要跳过值为 0 的目标，就给出 {ignore_index = 0}"
check "cross_entropy's bad option in Chinese" "$tmp/err" \
    '提示：cross_entropy 的选项：ignore_index 是要跳过的目标值（整数），reduction 是 "mean"、"sum" 或 "none"，label_smoothing 是 0 到 1 之间的数'
has "bare help in Chinese" "$tmp/out" "help(f) 或 ?名字 解释一个函数：签名、作用、公式和例子"

# ---- at a terminal ----
need_python torch_habits_pty
out=$(pty_run 40 100 "$repl" 2>&1 <<'STEPS'
expect > 
send x = mha.randn(3, 4)\r
send len(x)\r
expect hint:
send help\r
expect topics:
send \x04
STEPS
)
printf '%s' "$out" | tr -d '\r' >"$tmp/pty"
check "pty: len(x)'s hint" "$tmp/pty" "hint: Lua has no len(): #x is the size of dim 1, as x:size(1); x:numel() counts every element"
grep -qF "help(f) or ?name explains a function" "$tmp/pty" && ! grep -qF "function: 0x" "$tmp/pty" \
    && pass "pty: bare help shows the help" || fail "pty: bare help shows the help" "$(cat "$tmp/pty")"

[ "$fails" -eq 0 ]
