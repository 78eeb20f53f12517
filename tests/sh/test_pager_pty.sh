#!/usr/bin/env bash
# tests/sh/test_pager_pty.sh - the lesson pager at a real terminal (a pty of 12 rows, through testlib.sh's pty_run):
# a step taller than the screen pauses on the line of the lesson's language, Space goes on a screen, q (no Enter)
# quits: the rest of the step is not shown, but its code has run; in English and in Chinese.
# (tests/sh/test_pager_keys_pty.sh: every key at 80x40.)
. "$(dirname "$0")/testlib.sh"
need_python pager_pty
pause_en="-- more: Space next page, Enter next line, q quits --"
pause_zh="-- 还有：空格下一页，回车下一行，q 退出 --"
for lang in en zh; do
    pause_of=pause_$lang
    pause=${!pause_of}
    # step 1 pauses once; step 2 (about 28 lines) pauses, then q quits before its last table, which is set
    pty_run 12 80 "$repl" --lesson 1 --lang "$lang" >"$tmp/shown" 2>"$tmp/err" <<STEPS
expect $pause
send \x20
expect [float32 (3,4)]
send :next\r
expect $pause
send q
expect > 
send print(type(out))\r
expect userdata\r
send \x04
STEPS
    sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$tmp/shown" | tr -d '\r' >"$tmp/lines"
    [ -n "${SHOW:-}" ] && cat "$tmp/lines"
    [ ! -s "$tmp/err" ] && pass "pager_pty_${lang}_answers" || fail "pager_pty_${lang}_answers" "$(cat "$tmp/err")"
    pauses=$(grep -cF -- "$pause" "$tmp/lines")
    [ "$pauses" -eq 2 ] && pass "pager_pty_${lang}_pause_line" \
        || fail "pager_pty_${lang}_pause_line" "$pauses lines '$pause' (want 2, one a step) in: $(cat "$tmp/lines")"
    # after the first pause (Space): the rest of step 1; after the second (q): nothing more of step 2, whose
    # code has run all the same (out is its last table)
    awk -v p="$pause" 'index($0, p) { n++ } n == 1 && $0 == "[float32 (3,4)]" { ok = 1 } END { exit !ok }' \
        "$tmp/lines" && pass "pager_pty_${lang}_space_goes_on" \
        || fail "pager_pty_${lang}_space_goes_on" "no step 1 table after the first pause (SHOW=1 prints the screen)"
    if grep -qx "out = weights·V" "$tmp/lines"; then
        fail "pager_pty_${lang}_q_quits" "step 2's output went on after q (SHOW=1 prints the screen)"
    elif ! grep -qx "userdata" "$tmp/lines"; then
        fail "pager_pty_${lang}_q_quits" "step 2's code did not run to its end after q (SHOW=1 prints the screen)"
    else pass "pager_pty_${lang}_q_quits"; fi
done
grep -qF -- "-- more:" "$tmp/lines" && fail "pager_pty_zh_no_english" "an English pause in Chinese (SHOW=1 prints the screen)" \
    || pass "pager_pty_zh_no_english"
[ "$fails" -eq 0 ]
