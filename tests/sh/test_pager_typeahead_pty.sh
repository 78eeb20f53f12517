#!/usr/bin/env bash
# tests/sh/test_pager_typeahead_pty.sh - lines typed or pasted ahead of paged output are never lost (a pty of
# 40x80, through testlib.sh's pty_run): `help` (taller than the screen, so paged) and two prints sent at once
# run all three, the prints after the help with no pause taking them as its keys, and :save keeps them; the
# saved script replays bare help as help, not "function: 0x...". Alone, a long output still pauses.
. "$(dirname "$0")/testlib.sh"
need_python pager_typeahead_pty
pause="-- more: Space next page, Enter next line, q quits --"
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
expect > 
send help\rprint(11111)\rprint(22222)\r
expect 22222\r
send :save $tmp/s\r
expect saved
send \x04
STEPS
screen_lines "$tmp/shown" "$tmp/lines"
grep -qx 11111 "$tmp/lines" && grep -qx 22222 "$tmp/lines" && pass pager_typeahead_pty_both_run \
    || fail pager_typeahead_pty_both_run "print(11111) and print(22222) typed after help did not both run: $(cat "$tmp/lines")"
grep -qF -- "$pause" "$tmp/lines" && fail pager_typeahead_pty_no_pause "help paused with input typed ahead" \
    || pass pager_typeahead_pty_no_pause
grep -qF 'print(11111)' "$tmp/s.lua" 2>/dev/null && grep -qF 'print(22222)' "$tmp/s.lua" \
    && pass pager_typeahead_pty_saved || fail pager_typeahead_pty_saved "the prints are not in :save's script: $(cat "$tmp/s.lua" 2>&1)"
NO_COLOR=1 "$repl" "$tmp/s.lua" >"$tmp/replay" 2>&1
grep -qx 22222 "$tmp/replay" && ! grep -qE "^function: (0x|builtin)" "$tmp/replay" && grep -qF "help(f)" "$tmp/replay" \
    && pass pager_typeahead_pty_replay || fail pager_typeahead_pty_replay "the replay: $(cat "$tmp/replay")"

# help alone (nothing typed ahead) still pauses: Space goes on a screen, q quits (its last line, mha.view, is
# not shown)
(unset MHA_LANG; pty_run 40 80 "$repl" >"$tmp/shown" 2>"$tmp/err") <<STEPS
expect > 
send help\r
expect $pause
send \x20
expect $pause
send q
expect > 
send print(33333)\r
expect 33333\r
send \x04
STEPS
screen_lines "$tmp/shown" "$tmp/lines"
pauses=$(grep -cF -- "$pause" "$tmp/lines")
[ "$pauses" -eq 2 ] && ! grep -qx "  mha.view" "$tmp/lines" && grep -qx 33333 "$tmp/lines" \
    && pass pager_typeahead_pty_alone_pauses \
    || fail pager_typeahead_pty_alone_pauses "$pauses pauses (want 2), or the rest shown after q: $(cat "$tmp/lines")"
[ "$fails" -eq 0 ]
