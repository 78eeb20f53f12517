#!/usr/bin/env bash
# tests/sh/test_deps.sh - which gnuplot tools/deps.sh installs: gnuplot-qt where a display is (DISPLAY or
# WAYLAND_DISPLAY), so a fresh desktop gets plot windows, gnuplot-nox elsewhere, and the line saying which;
# and the corpora (bible-kjv, bible-kjv-text, fortunes-zh) for `text` and `test`.
# dpkg-query, apt-get and sudo are stand-ins on PATH: nothing is installed or removed, and the stand-in
# dpkg-query reports every package installed but those in $FAKE_MISSING.
. "$(dirname "$0")/testlib.sh"
deps=$(cd "$(dirname "$0")/../.." && pwd)/tools/deps.sh

mkdir -p "$tmp/bin"
cat >"$tmp/bin/dpkg-query" <<'EOF'
#!/bin/sh
# dpkg-query -W -f='${Status}' PACKAGE: installed unless named in $FAKE_MISSING
for p in $FAKE_MISSING; do [ "$p" = "$3" ] && exit 1; done
printf 'install ok installed'
EOF
cat >"$tmp/bin/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$FAKE_LOG"
EOF
printf '#!/bin/sh\nexec "$@"\n' >"$tmp/bin/sudo"
chmod +x "$tmp/bin/"*

# case NAME TARGET MISSING WANT LINE [VAR=VALUE...]: deps.sh TARGET, run where the packages MISSING are
# not installed, with the display variables unset but for the VAR=VALUE given, must ask apt-get for
# exactly WANT and say LINE (or, with LINE empty, say nothing of gnuplot)
case_() {
    local name=$1 target=$2 missing=$3 want=$4 line=$5; shift 5
    : >"$tmp/log"
    local said got
    said=$(env -u DISPLAY -u WAYLAND_DISPLAY "$@" PATH="$tmp/bin:$PATH" FAKE_MISSING="$missing" \
           FAKE_LOG="$tmp/log" sh "$deps" "$target" 2>&1)
    got=$(sed -n 's/.*install -y -qq --no-install-recommends //p' "$tmp/log")
    if [ "$got" != "$want" ]; then fail "$name" "installed [$got], want [$want]; said: $said"
    elif [ -n "$line" ] && ! grep -qxF -- "$line" <<<"$said"; then fail "$name" "no line \"$line\" in: $said"
    elif [ -z "$line" ] && grep -q "gnuplot:" <<<"$said"; then fail "$name" "said a gnuplot choice with none to make: $said"
    else pass "$name"; fi
}
none="gnuplot-qt gnuplot-nox gnuplot-x11"   # no gnuplot at all
qt="mha-repl: gnuplot: a display is set (DISPLAY or WAYLAND_DISPLAY): gnuplot-qt, so plots open in a window"
nox="mha-repl: gnuplot: no display (DISPLAY and WAYLAND_DISPLAY unset): gnuplot-nox, so plots are drawn as text"

case_ deps_run_display_x11_qt     run "$none" gnuplot-qt "$qt" DISPLAY=:0
case_ deps_run_display_wayland_qt run "$none" gnuplot-qt "$qt" WAYLAND_DISPLAY=wayland-0
case_ deps_run_no_display_nox     run "$none" gnuplot-nox "$nox"
case_ deps_run_empty_display_nox  run "$none" gnuplot-nox "$nox" DISPLAY=
case_ deps_run_display_qt_and_fonts run "$none fonts-noto-cjk" "gnuplot-qt fonts-noto-cjk" "$qt" DISPLAY=:0
# a desktop that has only the text gnuplot (an earlier `make run`) gets the windowed one beside it
case_ deps_run_display_nox_only_adds_qt run "gnuplot-qt gnuplot-x11" gnuplot-qt "$qt" DISPLAY=:0
case_ deps_run_no_display_nox_enough    run "gnuplot-qt gnuplot-x11" "" ""
case_ deps_run_display_x11_enough       run "gnuplot-nox gnuplot-qt" "" "" DISPLAY=:0
case_ deps_run_display_qt_there         run "gnuplot-nox gnuplot-x11" "" "" DISPLAY=:0
# the tests draw on any gnuplot; with none, the same choice
case_ deps_test_any_gnuplot     test "gnuplot-qt gnuplot-x11" "" "" DISPLAY=:0
case_ deps_test_display_qt      test "$none poppler-utils" "gnuplot-qt poppler-utils" "$qt" DISPLAY=:0
case_ deps_test_no_display_nox  test "$none poppler-utils" "gnuplot-nox poppler-utils" "$nox"
# a target without gnuplot says nothing of it
case_ deps_build_no_gnuplot     build "$none" "" "" DISPLAY=:0
# the corpora of mha.data.text: their own target, and the tests' (test_text.lua reads them)
case_ deps_text_corpora         text "bible-kjv-text fortunes-zh $none" "bible-kjv-text fortunes-zh" ""
case_ deps_test_corpora         test "bible-kjv fortunes-zh" "bible-kjv fortunes-zh" ""

exit $((fails > 0))
