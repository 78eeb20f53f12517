#!/usr/bin/env bash
# tests/sh/test_zh.sh - Chinese outside the lessons: with MHA_LANG=zh (or --lang zh, :lang zh) the REPL's
# ?, ?name, help(), :reset, :time and its hints are Chinese; in English they stay English.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
has() {   # has NAME FILE LINE: FILE has LINE exactly
    grep -qxF -- "$3" "$2" && pass "$1" || fail "$1" "no line '$3' in: $(cat "$2")"
}

printf '?\n?mha.softmax\n?mha.sofmax\nhelp()\n:reset\n:time\n' >"$tmp/in"
MHA_LANG=zh COLUMNS=80 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
has "? heading in Chinese" "$tmp/out" "命令（输入不引起歧义的前缀即可，:q 即 :quit）："
has "? command line in Chinese" "$tmp/out" "  :reset                 重新开始：新的 Lua 状态，所有变量清空"
has "? keys in Chinese" "$tmp/out" "值：    表达式会打印它的值；末尾加 ; 则不打印；_ 保存上一个值"
has "?mha.softmax explained in Chinese" "$tmp/out" "  把分数变成沿 dim 为正且和为 1 的权重（dim 必须给出，同 PyTorch；注意力分数矩阵"
has "?mha.softmax labels in Chinese" "$tmp/out" "  公式：    softmax(x)_i = exp(x_i - max x) / Σ_j exp(x_j - max x)"
has "?mha.sofmax: did you mean, in Chinese" "$tmp/out" "没有“mha.sofmax”的帮助。你是想查 mha.softmax 吗？"
has "help() groups in Chinese" "$tmp/out" "注意力："
# help() in a script or -e, where the REPL never starts: the language still follows MHA_LANG
MHA_LANG=zh COLUMNS=80 timeout 10 "$repl" -e 'help()' >"$tmp/help_e" 2>&1
has "help() from -e in Chinese" "$tmp/help_e" "注意力："
MHA_LANG=en COLUMNS=80 timeout 10 "$repl" -e 'help()' >"$tmp/help_e" 2>&1
grep -q '注意力' "$tmp/help_e" && fail "help() from -e in English" "$(cat "$tmp/help_e")" || pass "help() from -e in English"
has ":reset in Chinese" "$tmp/out" "新的状态（历史、:save 的记录和 :time 设置都保留）"
has ":time in Chinese" "$tmp/out" "计时：开"
grep -q 'Commands (a unique\|Formula:\|fresh state' "$tmp/out" \
    && fail "no English frame in Chinese help" "$(grep 'Commands (a unique\|Formula:\|fresh state' "$tmp/out")" \
    || pass "no English frame in Chinese help"

COLUMNS=80 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
has "? in English" "$tmp/out" "Commands (a unique prefix is enough, :q for :quit):"
has "?mha.sofmax: did you mean" "$tmp/out" "No help for 'mha.sofmax'. Did you mean mha.softmax?"
has ":reset in English" "$tmp/out" "fresh state (the history, the transcript for :save and :time are kept)"

# the REPL's command errors (stderr) follow the language too
printf ':q2\n:save\n' | MHA_LANG=zh timeout 10 "$repl" -i >"$tmp/out" 2>"$tmp/err"
has "unknown command in Chinese" "$tmp/err" "没有命令 :q2（? 列出所有命令）"
has ":save without a name in Chinese" "$tmp/err" ":save 需要文件名：:save FILE 写出 FILE.lua 和 FILE.md"

# :export's failures too, at the prompt and on the command line
printf ':export %s/x.txt\n:export\n' "$tmp" | MHA_LANG=zh timeout 10 "$repl" -i >"$tmp/out" 2>"$tmp/err"
has ":export of a wrong name in Chinese" "$tmp/err" ":export: “$tmp/x.txt”：文件名必须以 .ipynb 或 .html 结尾"
has ":export without a name in Chinese" "$tmp/err" ":export: 需要一个以 .ipynb 或 .html 结尾的文件名"
timeout 10 "$repl" --lesson 2 --batch --lang zh --export "$tmp/x.txt" >"$tmp/out" 2>"$tmp/err"
has "--export of a wrong name in Chinese" "$tmp/err" "$repl: --export: “$tmp/x.txt”：文件名必须以 .ipynb 或 .html 结尾"

# :lang zh switches the REPL's own words too
printf ':lang zh\n:time\n' | timeout 10 "$repl" -i >"$tmp/out" 2>"$tmp/err"
has ":lang zh switches the REPL's words" "$tmp/out" "计时：开"

# ---- the English messages of the core get a Chinese line under them; in English, none ----
cat >"$tmp/in" <<'EOF'
q = mha.randn(2, 3)
mha.sdpa(q, q, q, {mask = 1})
mha.sdpa(q, q, q, {zzz = 1})
x = mha.ones(1)
x.item()
y = mha.ones(2, 3):transpose(1, 2); y:view(6)
A = {1, 2} #A
EOF
MHA_LANG=zh COLUMNS=200 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
has "unknown option: did you mean, in Chinese" "$tmp/err" "提示：没有选项“mask”；你是想写“attn_mask”吗？"
has "unknown option in Chinese" "$tmp/err" "提示：没有选项“zzz”；分号后面列出了所有可用的选项"
has "a method called with a dot, in Chinese" "$tmp/err" "提示：item 是方法：用冒号调用它，写作 x:item()"
has "view of a transposed tensor, in Chinese" "$tmp/err" \
    "提示：view 从不复制数据：这个张量的元素在内存中不是依次排列的（例如转置过），先用 :contiguous() 复制成 C 顺序再 view，或者改用 :reshape()"
has "a value after statements without ';', in Chinese" "$tmp/err" "提示：语句后面的值要用 ; 隔开才会打印：A = {1, 2}; #A"
COLUMNS=200 timeout 10 "$repl" -i <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
grep -q '提示' "$tmp/err" && fail "no Chinese line in English" "$(cat "$tmp/err")" || pass "no Chinese line in English"

# Ctrl-C: the English "interrupted", with its Chinese line
need_python "interrupted in Chinese"
printf 'send while true do end\\r\nsleep 0.5\nsend \\x03\nexpect 提示\nsend \\x04\n' \
    | MHA_LANG=zh NO_COLOR=1 pty_run 40 100 "$repl" >"$tmp/out" 2>&1
grep -q 'interrupted' "$tmp/out" && grep -q '^提示：Ctrl-C 中断了这条输入；中断之前它做完的事（例如赋值）都还在' "$tmp/out" \
    && pass "interrupted, in Chinese" || fail "interrupted, in Chinese" "$(cat "$tmp/out")"

# lesson 7 in Chinese: its code comment, LESSON.describe's labels and the view error's line
NO_COLOR=1 COLUMNS=80 MHA_PLOT_TERM=none timeout 30 "$repl" --lesson 7 --batch --lang zh >"$tmp/out" 2>"$tmp/err"
has "lesson 7's code comment in Chinese" "$tmp/out" "  │ -- 代替各头输出的张量，(H, L, D)，连续存放"
has "LESSON.describe in Chinese" "$tmp/out" "    形状 (3,2,3)  步长 (3,9,1)  偏移 0  连续 否"
has "lesson 7's view error explained in Chinese" "$tmp/out" "拒绝了（原话如下）"
grep -q "a stand-in\|^    shape (\|contiguous false" "$tmp/out" \
    && fail "lesson 7 leaves no English label" "$(grep "a stand-in\|shape (\|contiguous false" "$tmp/out")" \
    || pass "lesson 7 leaves no English label"
NO_COLOR=1 COLUMNS=80 MHA_PLOT_TERM=none timeout 30 "$repl" --lesson 7 --batch --lang en >"$tmp/out" 2>"$tmp/err"
has "lesson 7's code comment in English" "$tmp/out" "  │ -- a stand-in for the heads' outputs, (H, L, D), contiguous"
has "LESSON.describe in English" "$tmp/out" "    shape (3,2,3)  strides (3,9,1)  offset 0  contiguous false"

[ "$fails" -eq 0 ]
