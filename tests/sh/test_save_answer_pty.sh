#!/usr/bin/env bash
# tests/sh/test_save_answer_pty.sh - :save replays answer(x) as the session showed it (a pty of 40x80, through
# testlib.sh's pty_run): at the prompt answer() prints the verdict and no value, so `mha-repl s.lua` prints the
# same verdict lines and no "true"/"false" under them; a ';' input and a value after them replay as shown.
. "$(dirname "$0")/testlib.sh"
need_python save_answer_pty
solution="mha.softmax(Q:matmul(K:transpose(1, 2)) / math.sqrt(4), 2)"
(unset DISPLAY WAYLAND_DISPLAY MHA_PLOT_TERM MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>&1) <<STEPS
expect > 
send :open 2\r
expect One query against three keys
send :goto 5\r
expect Scaled weights
send w = $solution\r
expect > 
send answer(1)\r
expect not yet
send answer(w);\r
expect correct
send print("BETW" .. "EEN")\r
expect BETWEEN
send answer(w)\r
expect > 
send 40 + 2\r
expect 42
send :save $tmp/s\r
expect saved
send \x04
STEPS
screen_lines "$tmp/shown" "$tmp/lines"
# what the session printed for its inputs after :goto: every line from the first verdict to 42, less the
# prompts with their inputs and the typed lines the terminal echoed
awk '/^not yet/ { on = 1 } on && !/^> / && !/^answer\(/ && !/^print\(/ && !/^40 \+ 2$/ { print }
     on && /^42$/ { exit }' "$tmp/lines" >"$tmp/session"
NO_COLOR=1 "$repl" "$tmp/s.lua" >"$tmp/replay" 2>&1
awk '/^not yet/ { on = 1 } on' "$tmp/replay" >"$tmp/replayed"
[ -n "${SHOW:-}" ] && { echo "--- session"; cat "$tmp/session"; echo "--- replay"; cat "$tmp/replayed"; }
grep -qx correct "$tmp/session" && grep -qx 42 "$tmp/session" && pass save_answer_pty_session \
    || fail save_answer_pty_session "the session did not answer and print 42: $(cat "$tmp/lines")"
cmp -s "$tmp/session" "$tmp/replayed" && pass save_answer_pty_replay_as_session \
    || fail save_answer_pty_replay_as_session "the replay printed other lines than the session: $(diff "$tmp/session" "$tmp/replayed")"
grep -qxE "true|false" "$tmp/replay" && fail save_answer_pty_no_booleans "the replay printed true/false: $(cat "$tmp/replay")" \
    || pass save_answer_pty_no_booleans
[ "$fails" -eq 0 ]
