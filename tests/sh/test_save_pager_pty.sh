#!/usr/bin/env bash
# tests/sh/test_save_pager_pty.sh - :save's transcript holds what was printed, never the pager's pause (a pty
# of 40x80, through testlib.sh's pty_run): help and :lessons pause, Space goes on, and FILE.md has no pause line,
# no carriage return and no run of spaces that erased the pause; the screen had both.
. "$(dirname "$0")/testlib.sh"
need_python save_pager_pty
for lang in en zh; do
    (unset MHA_LANG; pty_run 40 80 "$repl" --lang "$lang" >"$tmp/shown" 2>&1) <<STEPS
expect > 
send help\r
expect -- 
send \x20
sleep 0.5
send \x20
sleep 0.5
send \x20
sleep 0.5
send \x20
expect > 
send :lessons\r
sleep 0.5
send \x20
sleep 0.5
send \x20
expect > 
send :save $tmp/s_$lang\r
expect s_$lang.md
send \x04
STEPS
    screen_lines "$tmp/shown" "$tmp/lines"
    grep -qE -- "-- (more|还有)" "$tmp/lines" && pass "save_pager_pty_${lang}_paused" \
        || fail "save_pager_pty_${lang}_paused" "help did not pause: $(cat "$tmp/lines")"
    md=$tmp/s_$lang.md
    if [ ! -s "$md" ]; then fail "save_pager_pty_${lang}_md" "no $md"; continue; fi
    grep -qF "Tensor:grad" "$md" && pass "save_pager_pty_${lang}_help_in_md" \
        || fail "save_pager_pty_${lang}_help_in_md" "help's text is not in the .md: $(cat "$md")"
    if grep -q $'\r' "$md"; then
        fail "save_pager_pty_${lang}_no_erase" "carriage returns in the .md: $(grep -n $'\r' "$md" | cat -A | head)"
    elif grep -qE -- "-- (more|还有)" "$md"; then
        fail "save_pager_pty_${lang}_no_erase" "the pause line is in the .md: $(grep -nE -- "-- (more|还有)" "$md")"
    else pass "save_pager_pty_${lang}_no_erase"; fi
done
[ "$fails" -eq 0 ]
