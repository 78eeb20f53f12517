#!/usr/bin/env bash
# tests/sh/test_text_plots_pty.sh - lessons at an 80x40 colour terminal without a display, so plots are
# text: a coloured heat map and a line chart fit their step without a pause (colour escapes take no
# cells), and a step that cannot hold its chart pauses before the chart, never inside it; in English
# and in Chinese. (tests/golden.sh checks every step so, in batch mode, with golden_height_text_*.)
. "$(dirname "$0")/testlib.sh"
need_python text_plots_pty
command -v gnuplot >/dev/null || { echo "PASS text_plots_pty: skipped, no gnuplot"; exit 0; }
pause_en="-- more: Space next page, Enter next line, q quits --"
pause_zh="-- 还有：空格下一页，回车下一行，q 退出 --"

# lesson LESSON LANG STEPS: the lesson at an 80x40 colour terminal with no display; the screen's text in
# $tmp/lines (escape sequences and carriage returns taken out)
lesson() {
    pty_run 40 80 /usr/bin/env -u NO_COLOR -u DISPLAY -u WAYLAND_DISPLAY -u MHA_PLOT_TERM \
        "$repl" --lesson "$1" --lang "$2" >"$tmp/shown" 2>"$tmp/err"
    sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$tmp/shown" | tr -d '\r' >"$tmp/lines"
    [ -n "${SHOW:-}" ] && cat "$tmp/lines"
}

for lang in en zh; do
    pause_of=pause_$lang
    pause=${!pause_of}
    # lesson 10 step 5: a 16x8 heat map in colour (its rows hundreds of bytes long) and a table: 38 rows
    lesson 10 "$lang" <<STEPS
patience 20
expect >
send :goto 5\r
expect [float32 (4,8)]
send \x04
STEPS
    if ! grep -q '^\[float32 (16,8)\]$' "$tmp/lines"; then
        fail "text_plots_pty_${lang}_heat_map_fits" "no heat map drawn (SHOW=1 prints the screen): $(head -5 "$tmp/err")"
    elif grep -qF -- "$pause" "$tmp/lines"; then
        fail "text_plots_pty_${lang}_heat_map_fits" "a pause in a step of 38 rows (SHOW=1 prints the screen)"
    else pass "text_plots_pty_${lang}_heat_map_fits"; fi

    # lesson 14 step 2: a table, then a line chart in the rows left
    lesson 14 "$lang" <<STEPS
patience 30
expect >
send :goto 2\r
expect 10000
sleep 1
send \x04
STEPS
    # the chart is whole (its two borders) and readable: at least 8 rows of data between them
    inside=$(awk '/^ +[0-9.]+ \+-+\+/ { n++; next } n == 1 { rows++ } END { print (n == 2) ? rows : 0 }' "$tmp/lines")
    if grep -qF -- "$pause" "$tmp/lines"; then
        fail "text_plots_pty_${lang}_chart_fits" "a pause (SHOW=1 prints the screen)"
    elif [ "$inside" -lt 8 ]; then
        fail "text_plots_pty_${lang}_chart_fits" "$inside rows inside the chart's borders (SHOW=1 prints the screen)"
    else pass "text_plots_pty_${lang}_chart_fits"; fi

    # lesson 5 step 3: text, 18 lines of code and a table leave too few rows: the chart comes whole after
    # the pause, its top border and its x axis on the same screen
    lesson 5 "$lang" <<STEPS
patience 20
expect >
send :goto 3\r
expect $pause
send \x20
expect >
send \x04
STEPS
    if [ "$(grep -cF -- "$pause" "$tmp/lines")" -ne 1 ]; then
        fail "text_plots_pty_${lang}_pause_before_chart" "$(grep -cF -- "$pause" "$tmp/lines") pauses, want 1 (SHOW=1 prints the screen)"
    elif ! awk -v p="$pause" 'index($0, p) { at = NR } END { exit !at }' "$tmp/lines" \
        || ! awk -v p="$pause" 'prev == "[float32 (5,4)]" && index($0, p) { ok = 1 } { prev = $0 } END { exit !ok }' "$tmp/lines"; then
        fail "text_plots_pty_${lang}_pause_before_chart" "the pause does not follow the step's table (SHOW=1 prints the screen)"
    elif ! awk -v p="$pause" 'index($0, p) { after = 1 } after && /^ +[0-9.]+ \+-+\+/ { borders++ }
            END { exit borders != 2 }' "$tmp/lines"; then
        fail "text_plots_pty_${lang}_pause_before_chart" "the chart's two borders are not both after the pause (SHOW=1 prints the screen)"
    else pass "text_plots_pty_${lang}_pause_before_chart"; fi
done
[ "$fails" -eq 0 ]
