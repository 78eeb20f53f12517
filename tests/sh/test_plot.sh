#!/usr/bin/env bash
# tests/sh/test_plot.sh - plotting seen from outside the REPL: without gnuplot on PATH (one message,
# then text fallbacks, never a hang), MHA_PLOT_TERM, and no gnuplot left running after the REPL exits.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
case $repl in /*) ;; *) repl=$PWD/$repl ;; esac

timeout=$(command -v timeout)   # found now: one test empties PATH

# ---- gnuplot absent from PATH: PATH holds only a directory without it ----
mkdir "$tmp/empty-path"
cat >"$tmp/nognuplot.lua" <<'EOF'
local w = mha.tensor{{0.7, 0.3}, {0.2, 0.8}}
plot.heatmap(w, {tokens = "a b", title = "first"})
plot.heatmap(w, {tokens = "a b", title = "second"})
plot.heads(mha.stack({w, w}, 1), {tokens = "a b"})
plot.line{ {y = {1, 2, 3}, title = "rising"} }
plot.bar({"x", "y"}, {1, 2})
local ok, err = pcall(plot.save, "never.png")
print("save:", ok, err)
print("end of script")
EOF
start=$(date +%s)
PATH="$tmp/empty-path" "$timeout" 20 "$repl" "$tmp/nognuplot.lua" >"$tmp/out" 2>"$tmp/err"
rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -eq 0 ] && pass "no gnuplot: the script runs to its end" || fail "no gnuplot: the script runs to its end" "status $rc: $(cat "$tmp/err")"
[ "$elapsed" -le 10 ] && pass "no gnuplot: no hang" || fail "no gnuplot: no hang" "took ${elapsed}s"
n=$(grep -c 'plot: gnuplot not found; install the Debian package gnuplot-nox' "$tmp/err")
[ "$n" -eq 1 ] && pass "no gnuplot: said once" || fail "no gnuplot: said once" "said $n times: $(cat "$tmp/err")"
n=$(grep -c '^scale: ' "$tmp/out")
[ "$n" -eq 3 ] && pass "no gnuplot: heat maps fall back to mha.heat" || fail "no gnuplot: heat maps fall back to mha.heat" "$n scale lines in: $(cat "$tmp/out")"
grep -q '^\[head 2\]' "$tmp/out" && pass "no gnuplot: heads fall back by head" || fail "no gnuplot: heads fall back by head" "$(cat "$tmp/out")"
grep -q 'plot.line: not drawn without gnuplot: rising (3 points)' "$tmp/out" && pass "no gnuplot: a line plot leaves a note" || fail "no gnuplot: a line plot leaves a note" "$(cat "$tmp/out")"
grep -q '^y ████████████████████████████████████████ 2$' "$tmp/out" && pass "no gnuplot: bars drawn as text" || fail "no gnuplot: bars drawn as text" "$(cat "$tmp/out")"
grep -qF "save:	false	$tmp/nognuplot.lua:7: plot: gnuplot not found; install the Debian package gnuplot-nox" "$tmp/out" && pass "no gnuplot: save is an error" || fail "no gnuplot: save is an error" "$(cat "$tmp/out")"
[ ! -e never.png ] && [ ! -e "$tmp/never.png" ] && pass "no gnuplot: no file" || fail "no gnuplot: no file" "never.png exists"

# ---- MHA_PLOT_TERM chooses the terminal; a bad name warns and falls back ----
cat >"$tmp/term.lua" <<'EOF'
print("terminal:", plot.terminal())
plot.line{ {y = {1, 3, 2}, title = "wiggle"}, title = "text plot" }
EOF
MHA_PLOT_TERM=dumb timeout 20 "$repl" "$tmp/term.lua" >"$tmp/out" 2>"$tmp/err"
grep -q '^terminal:	dumb$' "$tmp/out" && grep -q 'text plot' "$tmp/out" && grep -q 'wiggle' "$tmp/out" \
    && pass "MHA_PLOT_TERM=dumb draws text" || fail "MHA_PLOT_TERM=dumb draws text" "$(cat "$tmp/out" "$tmp/err")"
MHA_PLOT_TERM=none timeout 20 "$repl" "$tmp/term.lua" >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = "terminal:	none" ] && [ ! -s "$tmp/err" ] \
    && pass "MHA_PLOT_TERM=none draws nothing" || fail "MHA_PLOT_TERM=none draws nothing" "$(cat "$tmp/out" "$tmp/err")"
MHA_PLOT_TERM=nosuchterm DISPLAY= timeout 20 "$repl" "$tmp/term.lua" >"$tmp/out" 2>"$tmp/err"
grep -q "plot: MHA_PLOT_TERM: gnuplot has no terminal 'nosuchterm' (one of: dumb, none, .*); choosing one" "$tmp/err" && grep -q '^terminal:	dumb$' "$tmp/out" \
    && pass "MHA_PLOT_TERM unknown falls back" || fail "MHA_PLOT_TERM unknown falls back" "$(cat "$tmp/out" "$tmp/err")"

# terminals gnuplot has that write files or code (or none at all) were taken, then failed in gnuplot:
# each is said once and the automatic choice made
for name in png lua xterm tkcanvas 'png|lua'; do
    MHA_PLOT_TERM=$name DISPLAY= timeout 20 "$repl" "$tmp/term.lua" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    n=$(grep -cF "terminal '$name' " "$tmp/err")
    [ "$rc" -eq 0 ] && [ "$n" -eq 1 ] && grep -q "^plot: MHA_PLOT_TERM: gnuplot.*(one of: dumb, none, .*); choosing one$" "$tmp/err" \
        && grep -q '^terminal:	dumb$' "$tmp/out" && grep -q 'wiggle' "$tmp/out" \
        && pass "MHA_PLOT_TERM=$name refused once, text drawn" \
        || fail "MHA_PLOT_TERM=$name refused once, text drawn" "status $rc, said $n times: $(cat "$tmp/out" "$tmp/err")"
done

# ---- plot.save: a name gnuplot would read as a pipe ('|cmd') never reaches it ----
mkdir "$tmp/cwd"
cat >"$tmp/pipe.lua" <<'EOF'
plot.line{y = {1, 2, 3}}
for _, name in ipairs({"|touch pwned1; cat >/dev/null; .png", " |touch pwned2 #.svg", "|touch pwned3;.pdf",
                       "|pwned4/x.png"}) do
    print(pcall(plot.save, name))
end
EOF
(cd "$tmp/cwd" && MHA_PLOT_TERM=none timeout 30 "$repl" "$tmp/pipe.lua" >"$tmp/out" 2>"$tmp/err")
ls -A "$tmp/cwd" >"$tmp/ls"
! grep -q '^pwned' "$tmp/ls" && pass "save: no pipe ran" || fail "save: no pipe ran" "$(cat "$tmp/ls")"
grep -qxF "false	$tmp/pipe.lua:4: plot.save: cannot write '|touch pwned1; cat >/dev/null; .png': folder '|touch pwned1; cat >/dev': No such file or directory" "$tmp/out" \
    && grep -qxF "false	$tmp/pipe.lua:4: plot.save: cannot write '|pwned4/x.png': folder '|pwned4': No such file or directory" "$tmp/out" \
    && pass "save: a missing folder is named" || fail "save: a missing folder is named" "$(cat "$tmp/out")"
grep -qxF "true	 |touch pwned2 #.svg" "$tmp/out" && grep -qxF "true	|touch pwned3;.pdf" "$tmp/out" \
    && grep -q '^<svg' "$tmp/cwd/ |touch pwned2 #.svg" && [ "$(head -c 5 "$tmp/cwd/|touch pwned3;.pdf")" = "%PDF-" ] \
    && pass "save: a pipe-like name is an ordinary file name" || fail "save: a pipe-like name is an ordinary file name" "$(cat "$tmp/out" "$tmp/err" "$tmp/ls")"
[ "$(wc -l <"$tmp/ls")" -eq 2 ] && pass "save: no temporary file left" || fail "save: no temporary file left" "$(cat "$tmp/ls")"

# ---- the REPL's exit reaps every figure's gnuplot (a gnuplot under a unique name, to count it) ----
mkdir "$tmp/bin"
ln -s "$(command -v gnuplot)" "$tmp/bin/gnuplot-mhatest-$$"
cat >"$tmp/exit.lua" <<'EOF'
for i = 1, 5 do plot.figure():bar({"a", "b"}, {i, 1}) end
print("figures made")
EOF
count_ours() { pgrep -f "gnuplot-mhatest-$$" | wc -l; }
MHA_GNUPLOT="$tmp/bin/gnuplot-mhatest-$$" MHA_PLOT_TERM=none timeout 20 "$repl" "$tmp/exit.lua" >"$tmp/out" 2>"$tmp/err"
grep -q 'figures made' "$tmp/out" || fail "exit: script ran" "$(cat "$tmp/out" "$tmp/err")"
n=$(count_ours)
[ "$n" -eq 0 ] && pass "exit: no gnuplot left after the script ends" || fail "exit: no gnuplot left after the script ends" "$n left"
cat >"$tmp/exit2.lua" <<'EOF'
for i = 1, 3 do plot.figure():bar({"a", "b"}, {i, 1}) end
os.exit(0)
EOF
MHA_GNUPLOT="$tmp/bin/gnuplot-mhatest-$$" MHA_PLOT_TERM=none timeout 20 "$repl" "$tmp/exit2.lua" >"$tmp/out" 2>"$tmp/err"
# os.exit skips the collector: each gnuplot sees its input end and leaves by itself, at once
for _ in 1 2 3 4 5 6 7 8 9 10; do [ "$(count_ours)" -eq 0 ] && break; sleep 0.2; done
n=$(count_ours)
[ "$n" -eq 0 ] && pass "exit: no gnuplot left after os.exit" || fail "exit: no gnuplot left after os.exit" "$n left"

[ "$fails" -eq 0 ]
