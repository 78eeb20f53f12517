#!/usr/bin/env bash
# tests/sh/test_stream_pty.sh - a value the input has already written is not echoed again at a terminal (a pty):
# a bare mha.generate(...) streams its text and the REPL prints it once; stream = false is echoed as any value;
# Ctrl-C stops a long writing, which says so on a line of its own and returns (and shows once) what was written,
# and stops a loop of writings at its next turn. Skipped with a message when /usr/bin/python3 is absent.
. "$(dirname "$0")/testlib.sh"
need_python stream_pty
# each input waits for the next prompt (after readline's bracketed-paste mark), so no typing lands in the text
shown=$(pty_run 24 200 "$repl" 2>&1 <<'STEPS'
expect > 
patience 20
send m, e = mha.load_model("char_en"); tok = e.tokenizer\r
expect \x1b[?2004h> 
send mha.generate(m, tok, "Streamed", {max_new_tokens = 30, seed = 1})\r
expect \x1b[?2004h> 
send mha.generate(m, tok, "Quiet", {max_new_tokens = 30, seed = 1, stream = false})\r
expect \x1b[?2004h> 
send print("twice") return "twice"\r
expect \x1b[?2004h> 
send print("E" .. "ND", #_)\r
expect END
send mha.generate(m, tok, "Long", {max_new_tokens = 1000000, seed = 1})\r
sleep 1.5
send \x03
expect \x1b[?2004h> 
send print("AF" .. "TER", #_ > 4, _:sub(1, 4))\r
expect AFTER
send \x04
STEPS
)
printf '%s' "$shown" >"$tmp/shown"
screen_lines "$tmp/shown" "$tmp/lines"
count() { grep -ac "^$1" "$tmp/lines"; }   # lines that start with $1 (the echoed input starts with "> ")
n=$(count "Streamed")
[ "$n" = 1 ] && pass stream_pty_once || fail stream_pty_once "the streamed text shows $n times, not once: $(cat "$tmp/lines")"
n=$(count "Quiet")
[ "$n" = 1 ] && pass stream_pty_quiet_echoed || fail stream_pty_quiet_echoed "with stream = false the text shows $n times, not once (as the value)"
n=$(count "twice")
[ "$n" = 1 ] && pass stream_pty_written || fail stream_pty_written "a string the input wrote shows $n times, not once"
grep -aq "^END	5" "$tmp/lines" && pass stream_pty_kept || fail stream_pty_kept "_ is not the value shown once: $(tail -3 "$tmp/lines")"
n=$(count "Long")
[ "$n" = 1 ] && pass stream_pty_ctrl_c_once || fail stream_pty_ctrl_c_once "after Ctrl-C the text shows $n times, not once"
grep -aq "^AFTER	true	Long" "$tmp/lines" && pass stream_pty_ctrl_c_kept ||
    fail stream_pty_ctrl_c_kept "Ctrl-C did not return what was written: $(tail -4 "$tmp/lines")"
grep -aqE "^\(stopped by Ctrl-C after [0-9]+ new tokens; the text so far is returned\)$" "$tmp/lines" &&
    pass stream_pty_ctrl_c_said || fail stream_pty_ctrl_c_said "no line says Ctrl-C stopped the writing: $(tail -4 "$tmp/lines")"
grep -aq "interrupted" "$tmp/lines" && fail stream_pty_ctrl_c_quiet "Ctrl-C showed an error: $(cat "$tmp/lines")" ||
    pass stream_pty_ctrl_c_quiet
# a loop of writings: Ctrl-C stops the loop, not only the writing it came in (each turn takes ~1 s here)
looped=$(pty_run 24 200 "$repl" 2>&1 <<'STEPS'
expect > 
patience 20
send m, e = mha.load_model("char_en"); tok = e.tokenizer\r
expect \x1b[?2004h> 
send n = 0; for i = 1, 50 do mha.generate(m, tok, "L", {max_new_tokens = 2000, seed = i, stream = false}); n = i end\r
sleep 1.5
send \x03
expect \x1b[?2004h> 
send print("LOOP" .. "ED", n)\r
expect LOOPED
send \x04
STEPS
)
printf '%s' "$looped" >"$tmp/looped"
screen_lines "$tmp/looped" "$tmp/loop_lines"
n=$(grep -a "^LOOPED" "$tmp/loop_lines" | cut -f2)
[ -n "$n" ] && [ "$n" -lt 50 ] && grep -aq "interrupted" "$tmp/loop_lines" && pass stream_pty_ctrl_c_loop ||
    fail stream_pty_ctrl_c_loop "Ctrl-C did not stop the loop (turns done: ${n:-none}): $(tail -4 "$tmp/loop_lines")"
exit "$fails"
