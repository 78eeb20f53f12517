#!/usr/bin/env bash
# tests/sh/test_save_atomic.sh - mha.save keeps the old .npy/.npz whole when the new one cannot be written:
# on a full disk (a 1 MiB tmpfs; skipped with a reason where mounting is not allowed) it says why and
# leaves no temporary file; after a kill -9 mid-save the old file is intact, and the next save of that
# name removes the temporary file the killed one left (ours, of exactly our pattern, and no other).
. "$(dirname "$0")/testlib.sh"

# save_ok FILE LUA_EXPR: mha.save(FILE, LUA_EXPR) in a fresh REPL
save_ok() { "$repl" -e "mha.save('$1', $2)" >"$tmp/save.out" 2>&1; }
# save_fails FILE LUA_EXPR: prints the error of mha.save(FILE, LUA_EXPR), or "saved"
save_fails() {
    "$repl" -e "local ok, e = pcall(mha.save, '$1', $2); print(ok and 'saved' or e)" 2>&1
}
# temps DIR NAME: the temporary files of NAME in DIR
temps() { (cd "$1" && ls -A | grep -F "$2.tmp" || true); }

# ---- a full disk: the old file stays, byte for byte, and the error says so ----
disk="$tmp/disk"
mkdir -p "$disk"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=1m tmpfs "$disk" 2>"$tmp/mount.err"; then
    echo "SKIP save_full_disk: cannot mount a 1 MiB tmpfs ($(id -u) is not root or mount refused:" \
         "$(tr '\n' ' ' <"$tmp/mount.err" 2>/dev/null))"
else
    trap 'umount "$disk" 2>/dev/null; rm -rf "$tmp"' EXIT
    for ext in npy npz; do
        value="mha.arange(10)"; big="mha.ones(512, 1024)"   # 2 MiB of float32: more than the disk holds
        [ "$ext" = npz ] && { value="{w = mha.arange(10)}"; big="{w = mha.ones(512, 1024)}"; }
        save_ok "$disk/x.$ext" "$value" || fail "full_disk_$ext" "the small save failed: $(cat "$tmp/save.out")"
        cp "$disk/x.$ext" "$tmp/old.$ext"
        got=$(save_fails "$disk/x.$ext" "$big")
        want="save: cannot write '$disk/x.$ext': No space left on device (the old file is kept as it was)"
        case "$got" in
            *"$want"*) pass "full_disk_${ext}_says_why" ;;
            *) fail "full_disk_${ext}_says_why" "got [$got], want [$want]" ;;
        esac
        if cmp -s "$disk/x.$ext" "$tmp/old.$ext"; then pass "full_disk_${ext}_keeps_old_file"
        else fail "full_disk_${ext}_keeps_old_file" "x.$ext changed ($(stat -c %s "$disk/x.$ext") bytes)"; fi
        left=$(temps "$disk" "x.$ext")
        [ -z "$left" ] && pass "full_disk_${ext}_no_temporary_left" || fail "full_disk_${ext}_no_temporary_left" "$left"
        "$repl" -e "assert(mha.load('$disk/x.$ext'))" >/dev/null 2>&1 && pass "full_disk_${ext}_old_file_loads" \
            || fail "full_disk_${ext}_old_file_loads" "mha.load refused it"
    done
    umount "$disk"
    trap 'rm -rf "$tmp"' EXIT
fi

# ---- kill -9 in the middle of a big save ----
dir="$tmp/kill"
mkdir -p "$dir"
save_ok "$dir/k.npy" "mha.arange(5)" || fail "kill_mid_save" "the small save failed: $(cat "$tmp/save.out")"
cp "$dir/k.npy" "$tmp/k_old.npy"
"$repl" -e "local t = mha.ones(64 * 1024 * 1024); mha.save('$dir/k.npy', t)" >/dev/null 2>&1 &
saver=$!
seen=""
for _ in $(seq 1 3000); do   # up to 30 s for the 256 MiB tensor to be made and its save to start
    seen=$(temps "$dir" k.npy)
    [ -n "$seen" ] && break
    kill -0 "$saver" 2>/dev/null || break
    sleep 0.01
done
kill -9 "$saver" 2>/dev/null
wait "$saver" 2>/dev/null
if [ -n "$seen" ]; then pass "kill_mid_save_caught_writing ($seen)"
else fail "kill_mid_save_caught_writing" "no temporary file was seen before the save ended"; fi
if cmp -s "$dir/k.npy" "$tmp/k_old.npy"; then pass "kill_mid_save_keeps_old_file"
else fail "kill_mid_save_keeps_old_file" "k.npy is $(stat -c %s "$dir/k.npy" 2>/dev/null || echo missing) bytes"; fi

# the next save of k.npy removes the killed save's file, and only files that are ours and of our pattern
: >"$dir/k.npy.tmpEEEEEE"         # ours, as a killed save leaves it (besides the one killed above)
: >"$dir/k.npy.tmpAAAAAAA"        # seven letters: not mkstemp's
: >"$dir/k.npy.tmp-BBBBBB"        # the history's pattern, not ours
: >"$dir/kk.npy.tmpCCCCCC"        # another name's
: >"$dir/k.npy.tmpDDDDDD"; chown nobody "$dir/k.npy.tmpDDDDDD" 2>/dev/null   # someone else's (as root)
foreign=$(stat -c %u "$dir/k.npy.tmpDDDDDD")
save_ok "$dir/k.npy" "mha.arange(7)" || fail "stale_temporary_removed" "the next save failed: $(cat "$tmp/save.out")"
left=$(cd "$dir" && ls -A | sort | tr '\n' ' ')
want="k.npy k.npy.tmp-BBBBBB k.npy.tmpAAAAAAA kk.npy.tmpCCCCCC "
[ "$foreign" != "$(id -u)" ] && want="k.npy k.npy.tmp-BBBBBB k.npy.tmpAAAAAAA k.npy.tmpDDDDDD kk.npy.tmpCCCCCC "
if [ "$left" = "$want" ]; then pass "stale_temporary_removed_only_ours"
else fail "stale_temporary_removed_only_ours" "folder holds [$left], want [$want]"; fi
got=$("$repl" -e "print(mha.load('$dir/k.npy'):sum():item())" 2>&1)
[ "$got" = "21.0" ] && pass "save_after_kill_writes_new_file" || fail "save_after_kill_writes_new_file" "sum [$got]"

# the new file keeps the old one's mode and, for root saving over someone's file, its owner
save_ok "$dir/owned.npy" "mha.zeros(2)"
chmod 640 "$dir/owned.npy"
[ "$(id -u)" -eq 0 ] && chown nobody "$dir/owned.npy" 2>/dev/null
want=$(stat -c '%a %U' "$dir/owned.npy")
save_ok "$dir/owned.npy" "mha.ones(3)"
got=$(stat -c '%a %U' "$dir/owned.npy")
[ "$got" = "$want" ] && pass "save_keeps_mode_and_owner ($got)" || fail "save_keeps_mode_and_owner" "got [$got], want [$want]"

# another user's link in a sticky folder anyone may write to (/tmp) is replaced, never written through:
# it could aim root's save at any file or device
if [ "$(id -u)" -eq 0 ]; then
    mkdir -m 1777 "$tmp/public"
    printf 'precious\n' >"$tmp/victim"
    mkfifo "$tmp/victim_fifo"
    ln -s "$tmp/victim" "$tmp/public/a.npy"; chown -h nobody "$tmp/public/a.npy"
    ln -s "$tmp/victim_fifo" "$tmp/public/b.npy"; chown -h nobody "$tmp/public/b.npy"
    save_ok "$tmp/public/a.npy" "mha.zeros(2)"
    timeout 10 "$repl" -e "mha.save('$tmp/public/b.npy', mha.zeros(2))" >/dev/null 2>&1
    if [ "$(cat "$tmp/victim")" = precious ] && [ -f "$tmp/public/a.npy" ] && [ ! -L "$tmp/public/a.npy" ] \
        && [ -p "$tmp/victim_fifo" ] && [ -f "$tmp/public/b.npy" ] && [ ! -L "$tmp/public/b.npy" ]; then
        pass "their_link_in_sticky_folder_replaced_not_followed"
    else
        fail "their_link_in_sticky_folder_replaced_not_followed" "victim [$(cat "$tmp/victim")], $(ls -l "$tmp/public" | tr '\n' ' ')"
    fi
fi

# a device is written in place, not replaced by a regular file
if [ -w /dev/null ]; then
    "$repl" -e "mha.save('/dev/null', mha.zeros(3))" >/dev/null 2>&1
    [ -c /dev/null ] && pass "save_to_dev_null_leaves_the_device" || fail "save_to_dev_null_leaves_the_device" "not a device now"
fi

[ "$fails" -eq 0 ]
