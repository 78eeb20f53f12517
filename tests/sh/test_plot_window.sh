#!/usr/bin/env bash
# tests/sh/test_plot_window.sh - plots for a classroom: what gnuplot's libraries say on its stderr never
# fails a drawing (while gnuplot's own errors still do), and the projector settings.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
case $repl in /*) ;; *) repl=$PWD/$repl ;; esac
command -v gnuplot >/dev/null || { echo "PASS plot window: skipped, no gnuplot"; exit 0; }

# ---- toolkit noise: a gnuplot whose stderr carries Qt's complaint before and after every command ----
cat >"$tmp/noisy-gnuplot" <<'EOF'
#!/bin/sh
echo "QStandardPaths: XDG_RUNTIME_DIR not set, defaulting to '/tmp/runtime-root'" >&2
while IFS= read -r line; do
    printf '%s\n' "$line"
    echo "qt.qpa.xcb: could not connect to display" >&2
done | gnuplot "$@"
EOF
chmod +x "$tmp/noisy-gnuplot"
cat >"$tmp/noise.lua" <<EOF
local w = mha.tensor{{0.7, 0.3}, {0.2, 0.8}}
plot.heatmap(w, {tokens = "a b", title = "noise"})
plot.heads(mha.stack({w, w}, 1), {tokens = "a b"})
plot.save("$tmp/noise.png")
print("drawn")
local ok, err = pcall(function() plot.figure():run("test", { "plot mha_undefined_xyz" }) end)
print("real error:", err)
EOF
# The same toolkit noise, landed between each line gnuplot prints and its newline (gnuplot writes
# the newline apart, so the window process's line can fall there).
cat >"$tmp/splicing-gnuplot" <<'EOF'
#!/bin/bash
gnuplot "$@" 2> >(sed -u 's/$/qt.qpa.xcb: could not connect to display/' >&2)
EOF
chmod +x "$tmp/splicing-gnuplot"
for noisy in noisy-gnuplot splicing-gnuplot; do
    rm -f "$tmp/noise.png"
    # A run that hangs is interrupted (SIGINT), so the failure shows the Lua traceback of where it waited.
    MHA_GNUPLOT="$tmp/$noisy" MHA_PLOT_TERM=none timeout -s INT -k 10 60 "$repl" "$tmp/noise.lua" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 0 ] && grep -q '^drawn$' "$tmp/out" && [ -s "$tmp/noise.png" ] \
        && pass "$noisy: toolkit noise on gnuplot's stderr fails no drawing" \
        || fail "$noisy: toolkit noise on gnuplot's stderr fails no drawing" "status $rc: $(cat "$tmp/out" "$tmp/err")"
    grep -q 'QStandardPaths\|qt.qpa' "$tmp/out" "$tmp/err" \
        && fail "$noisy: toolkit noise is not shown" "$(cat "$tmp/out" "$tmp/err")" || pass "$noisy: toolkit noise is not shown"
    grep -qxF "real error:	$tmp/noise.lua:6: test: gnuplot: undefined variable: mha_undefined_xyz (in: plot mha_undefined_xyz)" "$tmp/out" \
        && pass "$noisy: gnuplot's own error still shown amid the noise" \
        || fail "$noisy: gnuplot's own error still shown amid the noise" "$(cat "$tmp/out")"
done

# ---- MHA_PLOT_SIZE and MHA_PLOT_FONT: the largest window and the font, for every plot ----
cat >"$tmp/env.lua" <<'EOF'
plot.terminal("none")
local fig = plot.figure()
fig:heads(mha.softmax(mha.randn(8, 6, 6), -1), {tokens = "a b c d e f"})
print("heads", fig.script.size[1], fig.script.size[2])
fig:bar({"a", "b"}, {1, 2})
print("bar", fig.script.size[1], fig.script.size[2])
fig:heatmap(mha.eye(3))
print("heat", fig.script.size[1], fig.script.size[2])
EOF
MHA_PLOT_SIZE=800x600 timeout 30 "$repl" "$tmp/env.lua" >"$tmp/out" 2>"$tmp/err"
grep -q '^heads	618	600$' "$tmp/out" && grep -q '^bar	480	420$' "$tmp/out" \
    && pass "MHA_PLOT_SIZE caps the window, keeping its shape" || fail "MHA_PLOT_SIZE caps the window, keeping its shape" "$(cat "$tmp/out" "$tmp/err")"
MHA_PLOT_FONT=20 timeout 30 "$repl" "$tmp/env.lua" >"$tmp/out" 2>"$tmp/err"
grep -q '^bar	777	680$' "$tmp/out" && grep -q '^heat	793	680$' "$tmp/out" \
    && pass "MHA_PLOT_FONT makes room for larger text" || fail "MHA_PLOT_FONT makes room for larger text" "$(cat "$tmp/out" "$tmp/err")"
MHA_PLOT_FONT=huge MHA_PLOT_SIZE=big timeout 30 "$repl" "$tmp/env.lua" >"$tmp/out" 2>"$tmp/err"
[ "$(grep -c "MHA_PLOT_FONT='huge' is not a font size in points from 6 to 72; ignored" "$tmp/err")" -eq 1 ] \
    && [ "$(grep -c "MHA_PLOT_SIZE='big' is not a size WxH such as 1280x720; ignored" "$tmp/err")" -eq 1 ] \
    && grep -q '^bar	480	420$' "$tmp/out" \
    && pass "a wrong MHA_PLOT_FONT or MHA_PLOT_SIZE is said once and ignored" \
    || fail "a wrong MHA_PLOT_FONT or MHA_PLOT_SIZE is said once and ignored" "$(cat "$tmp/out" "$tmp/err")"

# ---- without gnuplot, in a Chinese session: its notes in Chinese ----
mkdir "$tmp/empty-path"
cat >"$tmp/nognuplot.lua" <<'EOF'
require("mha.lesson").install_globals()
plot.line{ {y = {1, 2, 3}, title = "rising"} }
EOF
MHA_LANG=zh PATH="$tmp/empty-path" "$(command -v timeout)" 20 "$repl" "$tmp/nognuplot.lua" >"$tmp/out" 2>"$tmp/err"
grep -qxF "plot：找不到 gnuplot；请安装 Debian 软件包 gnuplot-qt（有窗口）或 gnuplot-nox（只画文件和文字）" "$tmp/err" \
    && grep -q "^plot.line：没有 gnuplot，未画出：rising" "$tmp/out" \
    && pass "no gnuplot: the notes in Chinese" || fail "no gnuplot: the notes in Chinese" "$(cat "$tmp/out" "$tmp/err")"

# ---- real windows (Xvfb and gnuplot's qt terminal): the collector closes none, a later plot opens its own ----
# Each run's curves are a figure nobody holds; after a full collection both gnuplots (so both windows) must
# still run, and plot.heatmap must draw on a new figure, not over the second run's curves. :close ends them.
if command -v Xvfb >/dev/null && gnuplot -e 'print GPVAL_TERMINALS' 2>&1 | grep -qw qt; then
    exec 3>"$tmp/display"
    Xvfb -displayfd 3 -screen 0 1280x1024x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
    xvfb=$!
    exec 3>&-
    for _ in $(seq 50); do [ -s "$tmp/display" ] && break; sleep 0.1; done
    cat >"$tmp/windows.lua" <<'EOF'
repl_pid = io.open("/proc/self/stat"):read("l"):match("^%d+")
-- the gnuplots this REPL started and the windows named after its figures, on one line
function live()
    local p = io.popen("pgrep -c -P " .. repl_pid .. " -x gnuplot")
    local gnuplots = p:read("n") or 0
    p:close()
    os.execute("sleep 1")
    p = io.popen("xdotool search --onlyvisible --name '^mha-repl figure [0-9]+$' getwindowname %@ 2>/dev/null | sort -u | tr '\\n' ' '")
    local names = p:read("a")
    p:close()
    return gnuplots .. " gnuplots; " .. names
end
t = mha.tasks.reverse{vocab = 8, len = 6}
function run(heads)
    local m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = heads, layers = 1, d_ff = 32, max_len = 12}
    return mha.train{model = m, task = t, steps = 20, lr = 1e-2, plot = true, quiet = true}
end
EOF
    printf '%s\n' 'ha = run(1); hb = run(2)' 'collectgarbage(); collectgarbage()' \
        'print("after the collector: " .. live())' 'plot.heatmap(mha.softmax(mha.randn(4, 4), -1))' \
        'print("after a heat map: " .. live() .. "current " .. plot.current().number)' ':close' \
        'print("after :close: " .. live())' >"$tmp/windows.in"
    DISPLAY=":$(cat "$tmp/display")" timeout 60 "$repl" -i "$tmp/windows.lua" <"$tmp/windows.in" >"$tmp/out" 2>"$tmp/err"
    kill "$xvfb" 2>/dev/null; wait "$xvfb" 2>/dev/null
    command -v xdotool >/dev/null && names=" mha-repl figure 1 mha-repl figure 2" || names=""
    grep -qxF "after the collector: 2 gnuplots;$names " "$tmp/out" \
        && pass "two training windows survive the collector" \
        || fail "two training windows survive the collector" "$(cat "$tmp/out" "$tmp/err")"
    grep -qxF "after a heat map: 3 gnuplots;$names${names:+ mha-repl figure 3} current 3" "$tmp/out" \
        && pass "a later plot opens a window of its own, not over the training curves" \
        || fail "a later plot opens a window of its own, not over the training curves" "$(cat "$tmp/out" "$tmp/err")"
    grep -qxF "after :close: 0 gnuplots; " "$tmp/out" \
        && pass ":close closes every window" || fail ":close closes every window" "$(cat "$tmp/out" "$tmp/err")"
else
    echo "SKIP plot windows: needs Xvfb and gnuplot-qt"
fi

[ "$fails" -eq 0 ]
