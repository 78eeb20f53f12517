#!/usr/bin/env bash
# tests/sh/test_pager_keys_pty.sh - the pager's keys at an 80x40 pseudo-terminal (testlib.sh's pty_run), as in
# less and more: each key acts as it is pressed, without Enter. help() fills the screen exactly (39 lines and the
# pause line under them), Space shows the next 39, Enter one more line, q and Ctrl-C quit quietly to a clean
# prompt; :lessons pages too, and in Chinese no summary ends with one character alone on its line.
. "$(dirname "$0")/testlib.sh"
need_python pager_keys_pty
pause="-- more:"   # the start of the English pause line, whatever keys it names

# screen SHOWN LINES: SHOWN as plain lines, escapes removed and a carriage return inside a line taken as the
# terminal takes it (what follows it overwrites the line: the pause line erased before the next line)
screen() {
    sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\r$//; s/.*\r//' "$1" >"$2"
    [ -z "${SHOW:-}" ] || cat "$2"
}
# screenful SHOWN FROM K: in SHOWN (escapes removed), the lines shown after the first line holding FROM (K = 0) or after pause K, before
# the next pause (the line that overwrites a pause line is on the pause's line: it counts)
screenful() {
    awk -v from="$2" -v k="$3" -v p="$pause" '
        index($0, p) { if (started && n == k) { print lines; found = 1; exit } n++ }
        !started && k == 0 && index($0, from) { started = 1; next }
        !started && k > 0 && n == k { started = 1 }
        started && n == k { lines++ }
        END { if (!found) print "none" }' <(sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$1")
}

# help(): the first screen, Space, Enter, then q, each key alone
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
patience 4
expect > 
send help()\r
expect $pause
send \x20
expect $pause
send \r
expect $pause
send q
expect > 
send print(44444)\r
expect 44444\r
send \x04
STEPS
screen "$tmp/shown" "$tmp/lines"
raw_pauses=$(grep -oF -- "$pause" "$tmp/shown" | wc -l)
first=$(screenful "$tmp/shown" "> help()" 0)
[ "$first" = 39 ] && pass pager_keys_pty_first_page_fits \
    || fail pager_keys_pty_first_page_fits "$first lines above the first pause, want 39 (40 rows, the pause on the last)"
second=$(screenful "$tmp/shown" "" 1)
[ "$second" = 39 ] && pass pager_keys_pty_space_pages \
    || fail pager_keys_pty_space_pages "Space: $raw_pauses pauses, $second lines in the second screen (want 39)"
third=$(screenful "$tmp/shown" "" 2)
[ "$third" = 1 ] && pass pager_keys_pty_enter_one_line \
    || fail pager_keys_pty_enter_one_line "Enter: $raw_pauses pauses, $third lines after the second (want 1)"
last_help_line=$(NO_COLOR=1 "$repl" -e 'help()' | tail -1)
if [ "$raw_pauses" -ne 3 ] || ! grep -qx 44444 "$tmp/lines"; then
    fail pager_keys_pty_q_quits "q: $raw_pauses pauses (want 3), or print(44444) did not run after it"
elif grep -qxF -- "$last_help_line" "$tmp/lines"; then
    fail pager_keys_pty_q_quits "the rest of help() was printed after q"
elif grep -qF -- "$pause" "$tmp/lines"; then
    fail pager_keys_pty_q_quits "a pause line is left on the screen: $(grep -F -- "$pause" "$tmp/lines")"
else pass pager_keys_pty_q_quits; fi

# Ctrl-C at the pause: quits the pager, no ^C, no "interrupted", and the prompt works
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
patience 4
expect > 
send help()\r
expect $pause
send \x03
expect > 
send print(55555)\r
expect 55555\r
send \x04
STEPS
screen "$tmp/shown" "$tmp/lines"
if ! grep -qx 55555 "$tmp/lines"; then fail pager_keys_pty_ctrl_c "print(55555) did not run after Ctrl-C"
elif grep -qE 'interrupted|\^C' "$tmp/lines"; then
    fail pager_keys_pty_ctrl_c "Ctrl-C left: $(grep -E 'interrupted|\^C' "$tmp/lines")"
elif grep -qF -- "$pause" "$tmp/lines"; then fail pager_keys_pty_ctrl_c "a pause line is left on the screen"
else pass pager_keys_pty_ctrl_c; fi

# Ctrl-D at the pause: quits the pager, not the REPL (it is the key that ends things elsewhere)
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
patience 4
expect > 
send help()\r
expect $pause
send \x04
expect > 
send print(66666)\r
expect 66666\r
send \x04
STEPS
screen "$tmp/shown" "$tmp/lines"
if ! grep -qx 66666 "$tmp/lines"; then fail pager_keys_pty_ctrl_d "print(66666) did not run after Ctrl-D at the pause"
elif grep -qF -- "$pause" "$tmp/lines"; then fail pager_keys_pty_ctrl_d "a pause line is left on the screen"
else pass pager_keys_pty_ctrl_d; fi

# :lessons at 40 rows: the list (about 60 rows) pauses with the first 39 lines on the screen
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
patience 4
expect > 
send :lessons\r
expect $pause
send q
expect > 
send \x04
STEPS
screen "$tmp/shown" "$tmp/lines"
first=$(screenful "$tmp/shown" "> :lessons" 0)
[ "$first" = 39 ] && pass pager_keys_pty_lessons_pages \
    || fail pager_keys_pty_lessons_pages "$first lines of :lessons above a pause, want 39"

# :lessons in Chinese, paged through with Space: no summary's last line is one character alone
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
patience 4
expect > 
send :lang zh\r
expect > 
send :lessons\r
expect 还有
send \x20
expect > 
send \x04
STEPS
screen "$tmp/shown" "$tmp/lines"
lone=$(grep -P '^ +\p{Han}[，。；：）]?$' "$tmp/lines")
if ! grep -q ' 32  ' "$tmp/lines"; then fail pager_keys_pty_zh_no_lone_character "no lesson 32 in :lessons"
elif [ -n "$lone" ]; then fail pager_keys_pty_zh_no_lone_character "a line of one character: $lone"
else pass pager_keys_pty_zh_no_lone_character; fi
[ "$fails" -eq 0 ]
