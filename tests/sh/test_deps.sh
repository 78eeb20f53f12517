#!/usr/bin/env bash
# tests/sh/test_deps.sh - which gnuplot tools/deps.sh installs: gnuplot-qt where a display is (DISPLAY or
# WAYLAND_DISPLAY), so a fresh desktop gets plot windows, gnuplot-nox elsewhere, and the line saying which.
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

# deps NAME TARGET MISSING [VAR=VALUE...]: runs deps.sh TARGET with the display variables unset but for the
# VAR=VALUE given; keeps what it said in $said and the packages apt-get was asked to install in $got
deps() {
    local target=$1 missing=$2; shift 2
    : >"$tmp/log"
    said=$(env -u DISPLAY -u WAYLAND_DISPLAY "$@" PATH="$tmp/bin:$PATH" FAKE_MISSING="$missing" \
           FAKE_LOG="$tmp/log" sh "$deps" "$target" 2>&1)
    got=$(sed -n 's/.*install -y -qq --no-install-recommends //p' "$tmp/log")
}
# expect NAME WANT-PACKAGES WANT-LINE: apt-get installed exactly WANT-PACKAGES, and deps.sh said WANT-LINE
expect() {
    if [ "$got" != "$2" ]; then fail "$1" "installed [$got], want [$2]; said: $said"
    elif [ -n "$3" ] && ! grep -qxF -- "$3" <<<"$said"; then fail "$1" "no line \"$3\" in: $said"
    elif [ -z "$3" ] && grep -q "gnuplot:" <<<"$said"; then fail "$1" "said a gnuplot choice with none to make: $said"
    else pass "$1"; fi
}
no_gnuplot="gnuplot-qt gnuplot-nox gnuplot-x11"
qt_line="mha-repl: gnuplot: a display is set (DISPLAY or WAYLAND_DISPLAY): gnuplot-qt, so plots open in a window"
nox_line="mha-repl: gnuplot: no display (DISPLAY and WAYLAND_DISPLAY unset): gnuplot-nox, so plots are drawn as text"

deps run "$no_gnuplot" DISPLAY=:0
expect deps_run_display_x11_qt "gnuplot-qt" "$qt_line"
deps run "$no_gnuplot" WAYLAND_DISPLAY=wayland-0
expect deps_run_display_wayland_qt "gnuplot-qt" "$qt_line"
deps run "$no_gnuplot"
expect deps_run_no_display_nox "gnuplot-nox" "$nox_line"
deps run "$no_gnuplot" DISPLAY=
expect deps_run_empty_display_nox "gnuplot-nox" "$nox_line"
deps run "$no_gnuplot fonts-noto-cjk" DISPLAY=:0
expect deps_run_display_qt_and_fonts "gnuplot-qt fonts-noto-cjk" "$qt_line"
# a desktop that has only the text gnuplot (an earlier `make run`) gets the windowed one beside it
deps run "gnuplot-qt gnuplot-x11" DISPLAY=:0
expect deps_run_display_nox_only_adds_qt "gnuplot-qt" "$qt_line"
deps run "gnuplot-qt gnuplot-x11"
expect deps_run_no_display_nox_enough "" ""
deps run "gnuplot-nox gnuplot-qt" DISPLAY=:0
expect deps_run_display_x11_enough "" ""
deps run "gnuplot-nox gnuplot-x11" DISPLAY=:0
expect deps_run_display_qt_there "" ""
# the tests draw on any gnuplot; with none, the same choice
deps test "gnuplot-qt gnuplot-x11" DISPLAY=:0
expect deps_test_any_gnuplot "" ""
deps test "$no_gnuplot poppler-utils" DISPLAY=:0
expect deps_test_display_qt "gnuplot-qt poppler-utils" "$qt_line"
deps test "$no_gnuplot poppler-utils"
expect deps_test_no_display_nox "gnuplot-nox poppler-utils" "$nox_line"
# a target without gnuplot says nothing of it
deps build "$no_gnuplot" DISPLAY=:0
expect deps_build_no_gnuplot "" ""

exit $((fails > 0))
