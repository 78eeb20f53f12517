#!/usr/bin/env bash
# tests/sh/test_plot_pdf.sh - plot.save to PDF is readable: its text (pdftotext) holds the titles, axis labels,
# tokens and panel titles, in Chinese too (a CJK font embedded), at a size as large as the PNG's, and a
# projector's font= keeps the axis label clear of the tic labels and on the page.
# env: MHA_REPL (the binary), as tests/run.sh sets it. Needs pdftotext and pdffonts (poppler-utils, tools/deps.sh test).
. "$(dirname "$0")/testlib.sh"
if ! command -v pdftotext >/dev/null || ! command -v pdffonts >/dev/null; then
    fail "pdf tools" "pdftotext/pdffonts missing: install poppler-utils (tools/deps.sh test)"
    exit 1
fi

cat >"$tmp/plots.lua" <<LUA
plot.terminal("none")
plot.lang = function() return "zh" end
mha.seed(1)
local w = mha.softmax(mha.randn(4, 4), -1)
plot.heatmap(w, {tokens = {"我", "爱", "喝", "茶"}, title = "注意力权重"})
plot.save("$tmp/heatmap.pdf")
plot.heatmap(w, {tokens = {"我", "爱", "喝", "茶"}, title = "投影仪", font = 20})
plot.save("$tmp/big.pdf")
plot.heads(mha.softmax(mha.randn(2, 3, 3), -1), {tokens = "猫 坐 垫", title = "两个头"})
plot.save("$tmp/heads.pdf")
plot.heads(mha.softmax(mha.randn(2, 4, 4), -1), {tokens = {"我们", "喜欢", "绿", "茶"}, title = "投影仪", font = 16})
plot.save("$tmp/bigheads.pdf")
plot.line{{y = {3, 2, 1}, title = "训练损失"}, title = "损失曲线", xlabel = "步数", ylabel = "交叉熵"}
plot.save("$tmp/line.pdf")
plot.bar("甲 乙 丙", {1, 2, 3}, {title = "权重柱", xlabel = "词元", ylabel = "权重"})
plot.save("$tmp/bar.pdf")
LUA
NO_COLOR=1 timeout 60 "$repl" "$tmp/plots.lua" >"$tmp/out" 2>"$tmp/err" \
    || { fail "saving the PDFs" "$(cat "$tmp/err")"; exit 1; }

# has_words NAME FILE WORD...: the PDF's text holds every word
has_words() {
    local name=$1 file=$2 missing=""
    shift 2
    local text
    text=$(pdftotext "$file" - 2>&1 | tr -d ' \n')
    for word in "$@"; do case $text in *"$word"*) ;; *) missing="$missing $word" ;; esac; done
    [ -z "$missing" ] && pass "$name" || fail "$name" "missing:$missing in: $text"
}
has_words "pdf heat map: title, tokens, query/key in Chinese" "$tmp/heatmap.pdf" 注意力权重 我 爱 喝 茶 查询 键
has_words "pdf heads: title, panel titles, tokens, axes" "$tmp/heads.pdf" 两个头 头1 头2 猫 坐 垫 查询 键
has_words "pdf line: title, axis labels, legend" "$tmp/line.pdf" 损失曲线 步数 交叉熵 训练损失
has_words "pdf bar: title, labels, bars" "$tmp/bar.pdf" 权重柱 词元 权重 甲 乙 丙

for f in heatmap heads line bar; do
    pdffonts "$tmp/$f.pdf" | grep -i 'CJK' | grep -q ' yes ' || fails=$((fails + 1))
done
[ "$fails" -eq 0 ] && pass "pdf: a CJK font is embedded in every PDF" \
    || fail "pdf: a CJK font is embedded in every PDF" "$(pdffonts "$tmp/heatmap.pdf")"

# bbox FILE WORD: "yMin yMax pageHeight" of the word's first occurrence
bbox() {
    pdftotext -bbox "$1" - | awk -v w="$2" '
        /<page / { match($0, /height="[0-9.]+"/); h = substr($0, RSTART + 8, RLENGTH - 9) }
        /<word / && index($0, ">" w "<") { match($0, /yMin="[0-9.]+"/); a = substr($0, RSTART + 6, RLENGTH - 7)
                                          match($0, /yMax="[0-9.]+"/); b = substr($0, RSTART + 6, RLENGTH - 7)
                                          print a, b, h; exit }'
}
# the title's box is at least 4% of the page's height, as in the PNG (pdfcairo's default fontscale 0.5 made it 2%)
read -r y0 y1 page <<<"$(bbox "$tmp/heatmap.pdf" 注意力权重)"
awk -v a="$y0" -v b="$y1" -v h="$page" 'BEGIN { exit !((b - a) / h >= 0.04) }' \
    && pass "pdf text as large as the PNG's" || fail "pdf text as large as the PNG's" "title $y0..$y1 of $page points"
# font = 20: the key axis label lies below the tic labels and on the page
read -r k0 k1 page <<<"$(bbox "$tmp/big.pdf" 键)"
read -r t0 t1 _ <<<"$(pdftotext -bbox "$tmp/big.pdf" - | grep -F '>喝<' | tail -1 | sed 's/.*yMin="\([0-9.]*\)".*yMax="\([0-9.]*\)".*/\1 \2/')"
awk -v k0="$k0" -v k1="$k1" -v t1="$t1" -v h="$page" 'BEGIN { exit !(k0 >= t1 && k1 <= h) }' \
    && pass "pdf font=20: the axis label clear of the tics and on the page" \
    || fail "pdf font=20: the axis label clear of the tics and on the page" "键 $k0..$k1, tics end $t1, page $page"
# plot.heads lays out its own margins: with font = 16 the query label stays on the page
x0=$(pdftotext -bbox "$tmp/bigheads.pdf" - | grep -F '>查询<' | head -1 | sed 's/.*xMin="\([0-9.-]*\)".*/\1/')
[ -n "$x0" ] && awk -v x="$x0" 'BEGIN { exit !(x >= 0) }' \
    && pass "pdf heads font=16: the query label on the page" \
    || fail "pdf heads font=16: the query label on the page" "查询 at x '$x0'"

[ "$fails" -eq 0 ]
