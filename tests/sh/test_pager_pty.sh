#!/usr/bin/env bash
# tests/sh/test_pager_pty.sh - the lesson pager at a real terminal (a pty of 12 rows, through testlib.sh's pty_run):
# a step taller than the screen pauses on the line of the lesson's language, Enter goes on a screen, q prints the
# rest of the step without pausing again; in English and in Chinese.
. "$(dirname "$0")/testlib.sh"
need_python pager_pty
pause_en="-- more: Enter goes on, q stops pausing --"
pause_zh="-- 还有：回车继续，q 不再暂停 --"
for lang in en zh; do
    pause_of=pause_$lang
    pause=${!pause_of}
    # step 1 pauses once; step 2 (about 28 lines) pauses, then q prints the rest down to its last table
    pty_run 12 80 "$repl" --lesson 1 --lang "$lang" >"$tmp/shown" 2>"$tmp/err" <<STEPS
expect $pause
send \r
expect [float32 (3,4)]
send :next\r
expect $pause
send q\r
expect out = weights·V
send \x04
STEPS
    sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$tmp/shown" | tr -d '\r' >"$tmp/lines"
    [ -n "${SHOW:-}" ] && cat "$tmp/lines"
    [ ! -s "$tmp/err" ] && pass "pager_pty_${lang}_answers" || fail "pager_pty_${lang}_answers" "$(cat "$tmp/err")"
    pauses=$(grep -cF -- "$pause" "$tmp/lines")
    [ "$pauses" -eq 2 ] && pass "pager_pty_${lang}_pause_line" \
        || fail "pager_pty_${lang}_pause_line" "$pauses lines '$pause' (want 2, one a step) in: $(cat "$tmp/lines")"
    # after the first pause (Enter): the rest of step 1; after the second (q): the rest of step 2, unpaused
    awk -v p="$pause" 'index($0, p) { n++ } n == 1 && $0 == "[float32 (3,4)]" { ok = 1 } END { exit !ok }' \
        "$tmp/lines" && pass "pager_pty_${lang}_enter_goes_on" \
        || fail "pager_pty_${lang}_enter_goes_on" "no step 1 table after the first pause (SHOW=1 prints the screen)"
    awk -v p="$pause" 'index($0, p) { n++ } n == 2 && $0 == "out = weights·V" { ok = 1 } END { exit !ok }' \
        "$tmp/lines" && pass "pager_pty_${lang}_q_prints_the_rest" \
        || fail "pager_pty_${lang}_q_prints_the_rest" "no step 2 output after q (SHOW=1 prints the screen)"
done
grep -qF -- "-- more:" "$tmp/lines" && fail "pager_pty_zh_no_english" "an English pause in Chinese (SHOW=1 prints the screen)" \
    || pass "pager_pty_zh_no_english"
[ "$fails" -eq 0 ]
