#!/usr/bin/env bash
# tests/sh/test_plot_save_full.sh - plot.save on a full disk (a 96 KiB tmpfs; skipped with a reason where it
# cannot be mounted, or without gnuplot): gnuplot's file is cut short without a word from gnuplot, so
# plot.save checks it is whole before it replaces anything. The error names the file and the full disk,
# the old SVG/PNG/PDF stays byte for byte, and no temporary file is left.
. "$(dirname "$0")/testlib.sh"

if ! command -v gnuplot >/dev/null; then echo "SKIP plot_save_full: gnuplot is not installed"; exit 0; fi
disk="$tmp/disk"
mkdir -p "$disk"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=96k tmpfs "$disk" 2>"$tmp/mount.err"; then
    echo "SKIP plot_save_full: cannot mount a 96 KiB tmpfs (uid $(id -u): $(tr '\n' ' ' <"$tmp/mount.err" 2>/dev/null))"
    exit 0
fi
trap 'umount "$disk" 2>/dev/null; rm -rf "$tmp"' EXIT

for ext in svg png pdf; do
    cat >"$tmp/save.lua" <<EOF
local plot = require "mha.plot"
plot.line{ {y = {1, 3, 2}, title = "small"} }
plot.save("$disk/fig.$ext")
os.execute("cp '$disk/fig.$ext' '$tmp/old.$ext'")
mha.seed(1)
plot.line{ {y = mha.randn(20000), title = "big"} }   -- an SVG of 20,000 points needs far more than 96 KiB
local ok, err = pcall(plot.save, "$disk/fig.$ext", {width = 1200, height = 1200})
print(ok and "saved" or err)
EOF
    got=$(DISPLAY= MHA_PLOT_TERM=dumb "$repl" "$tmp/save.lua" 2>&1 | tail -1)
    want="plot.save: cannot write '$disk/fig.$ext': No space left on device (the old file is kept as it was)"
    case "$got" in
        *"$want") pass "full_disk_${ext}_says_why" ;;
        *) fail "full_disk_${ext}_says_why" "got [$got], want [$want]" ;;
    esac
    if [ -s "$tmp/old.$ext" ] && cmp -s "$disk/fig.$ext" "$tmp/old.$ext"; then pass "full_disk_${ext}_keeps_old_file"
    else fail "full_disk_${ext}_keeps_old_file" "fig.$ext is $(stat -c %s "$disk/fig.$ext" 2>/dev/null) bytes, the old one $(stat -c %s "$tmp/old.$ext" 2>/dev/null)"; fi
    left=$(ls -A "$disk" | grep -v "^fig\.$ext\$" | tr '\n' ' ')
    [ -z "$left" ] && pass "full_disk_${ext}_no_temporary_left" || fail "full_disk_${ext}_no_temporary_left" "$left"
    rm -f "$disk/fig.$ext"
done

[ "$fails" -eq 0 ]
