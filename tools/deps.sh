#!/bin/sh
# tools/deps.sh - installs the Debian packages mha-repl needs that this machine lacks, saying which,
# so that `make run` and `make test` work on a fresh Debian machine.
# usage: tools/deps.sh [build|run|test|text|bench|notebook|fuzz|python|window|hub]   (notebook: what tests/notebook/ needs:
# Python's Jupyter, Chromium; python: NumPy and torch for the checks that compare with them; window: a virtual
# display and gnuplot's qt terminal, for the tests that open real plot windows; text: the corpora
# mha.data.text reads, which test installs too; hub: JupyterHub 3 with its node proxy and the classic
# notebook server, for classroom/ and tests/hub/)
set -eu
need="gcc make pkg-config liblua5.4-dev libreadline-dev zlib1g-dev libzmq3-dev libjansson-dev libssl-dev"
# the corpora of mha.data.text: the King James Bible (its text and the bible program) and the
# Chinese fortunes (300 Tang poems, 100 Song ci, the larger collection)
text="bible-kjv bible-kjv-text fortunes-zh"
target=${1:-build}
case "$target" in
    build) ;;
    # fonts-noto-cjk: the glyphs gnuplot (through fontconfig) needs for Chinese titles, labels and tokens
    run) need="$need gnuplot fonts-noto-cjk" ;;
    # the stock interpreter loads mha.so; pgrep counts gnuplots; pdftotext reads the saved PDFs' text
    test) need="$need gnuplot fonts-noto-cjk lua5.4 procps poppler-utils $text" ;;
    text) need="$need $text" ;;
    # torch 1.13: the peer of every row, and the only one of the training and decoding rows
    bench) need="$need python3-numpy python3-torch libopenblas0-pthread python3-threadpoolctl" ;;
    notebook) need="$need gnuplot fonts-noto-cjk python3-nbformat python3-jupyter-client jupyter-client jupyter-nbconvert jupyter-console chromium" ;;
    fuzz) need="$need clang libclang-rt-14-dev" ;;   # libFuzzer and the sanitizers' runtime
    python) need="$need python3-numpy python3-torch" ;;   # the checks against NumPy and torch 1.13 (.npz, state_dict)
    # tests/sh/test_plot_window.sh: Xvfb for a display, gnuplot-qt for its windows, xdotool to read their names
    window) need="$need gnuplot-qt xvfb xauth xdotool fonts-noto-cjk" ;;
    # classroom/: the hub, its proxy (node-configurable-http-proxy), the single-user notebook server,
    # PAM login (python3-pamela, pulled by jupyterhub), the kernel's ZeroMQ and the load test's clients
    hub) need="$need jupyterhub node-configurable-http-proxy jupyter-notebook python3-jupyter-client python3-websocket python3-psutil" ;;
    *) echo "usage: tools/deps.sh [build|run|test|text|bench|notebook|fuzz|python|window|hub]" >&2; exit 2 ;;
esac
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
# The gnuplot to install, and the line that says why: where a display is (DISPLAY or WAYLAND_DISPLAY
# set) gnuplot-qt, whose plots open in a window; elsewhere (ssh, a server) gnuplot-nox, which draws text
# in the terminal and writes files. `run` on a display wants a window even where gnuplot-nox is installed
# (gnuplot-qt sits beside it and becomes `gnuplot`); the tests draw on any gnuplot.
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
    gnuplot_pick=gnuplot-qt
    gnuplot_why="a display is set (DISPLAY or WAYLAND_DISPLAY): gnuplot-qt, so plots open in a window"
else
    gnuplot_pick=gnuplot-nox
    gnuplot_why="no display (DISPLAY and WAYLAND_DISPLAY unset): gnuplot-nox, so plots are drawn as text"
fi
# Is a gnuplot that serves the target installed?
gnuplot_there() {
    if installed gnuplot-qt || installed gnuplot-x11; then return 0; fi
    if [ "$target" = run ] && [ "$gnuplot_pick" = gnuplot-qt ]; then return 1; fi
    installed gnuplot-nox
}
missing=""
for p in $need; do
    if [ "$p" = gnuplot ]; then
        gnuplot_there && continue
        missing="$missing $gnuplot_pick"
        echo "mha-repl: gnuplot: $gnuplot_why"
    else
        installed "$p" || missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "mha-repl needs these Debian packages:$missing (no apt-get here: install them by hand)" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "mha-repl: installing the missing Debian packages:$missing"
# another apt or dpkg at work (unattended upgrades, a second make): wait for its lock up to 10 minutes
lock="-o DPkg::Lock::Timeout=600"
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get $lock update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get $lock install -y -qq --no-install-recommends $missing
