#!/usr/bin/env bash
# tests/sh/test_history_files.sh - the history file is never one another user chose for us: at a terminal
# (a pty), a symbolic link another user owns - in a sticky folder anyone may write to, as /tmp, or in
# their own folder - is not followed, a file that is not in the history format is not rewritten, and
# a file of another user in /tmp is not used; each gives one warning line, the session works, and the
# file is unchanged byte for byte. Run as root (the attack's victim), with nobody as the other user;
# as another user the cases needing chown are skipped with a reason. Our own link is still followed,
# and the ~/.mha_repl_history of an older mha-repl (no header line) is still taken.
. "$(dirname "$0")/testlib.sh"
need_python history_files

header='# mha-repl history 1'
# session HISTORY_PATH: runs a REPL at a pty with that history file, types an entry, prints what it showed
session() {
    MHA_REPL_HISTORY="$1" pty_run 24 100 "$repl" 2>&1 <<'STEPS'
expect >
send answer = 6 * 7\r
expect >
send answer\r
expect 42
send \x04
STEPS
}
# check_refused NAME OUTPUT FILE COPY WANT: one warning naming WANT, the session worked, FILE is COPY
check_refused() {
    local name=$1 out=$2 file=$3 copy=$4 want=$5
    local warnings
    warnings=$(printf '%s' "$out" | grep -c 'warning')
    if [ "$warnings" = 1 ] && printf '%s' "$out" | grep -qF "$want"; then pass "${name}_one_warning"
    else fail "${name}_one_warning" "$warnings warnings, want one with [$want]: $(printf '%s' "$out" | tr '\r\n' '  ')"; fi
    printf '%s' "$out" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tr -d '\r' | grep -q '^42' && pass "${name}_session_works" || fail "${name}_session_works" "no 42 in the output"
    if cmp -s "$file" "$copy"; then pass "${name}_file_unchanged"
    else fail "${name}_file_unchanged" "$file now holds [$(head -c 200 "$file" | tr '\n' '|')]"; fi
}

# the victim: a root-owned 0600 file with backslashes, which a rewrite would double
secret="$tmp/secret"
printf 'root:$6$salt\\hash:19000:0\nsecond\\nline\n' >"$secret"
chmod 600 "$secret"
cp -p "$secret" "$tmp/secret.copy"

if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
    echo "SKIP history_other_users_links: needs root and a user 'nobody' to own the planted links (uid $(id -u))"
else
    # 1. a link nobody planted in a sticky folder anyone may write to (as /tmp)
    mkdir -m 1777 "$tmp/public"
    ln -s "$secret" "$tmp/public/h"
    chown -h nobody "$tmp/public/h"
    out=$(session "$tmp/public/h")
    check_refused "sticky_folder_link" "$out" "$secret" "$tmp/secret.copy" \
        "history not kept: $tmp/public/h is another user's symbolic link, in a folder anyone may write to"

    # 2. a link nobody owns in nobody's own folder, and a link to it from ours (the chain is checked)
    mkdir "$tmp/theirs"
    ln -s "$secret" "$tmp/theirs/h"
    chown -h nobody "$tmp/theirs/h"
    chown nobody "$tmp/theirs"
    ln -s "$tmp/theirs/h" "$tmp/mine"
    out=$(session "$tmp/mine")
    check_refused "link_chain_through_their_link" "$out" "$secret" "$tmp/secret.copy" \
        "history not kept: $tmp/theirs/h is another user's symbolic link"

    # 3. a history-format file nobody owns in the sticky folder: they could swap it for a link any time
    printf '%s\nplanted = 1\n' "$header" >"$tmp/public/theirs"
    chown nobody "$tmp/public/theirs"
    cp -p "$tmp/public/theirs" "$tmp/theirs.copy"
    out=$(session "$tmp/public/theirs")
    check_refused "their_file_in_sticky_folder" "$out" "$tmp/public/theirs" "$tmp/theirs.copy" \
        "history not kept: $tmp/public/theirs is another user's file, in a folder anyone may write to"
fi

# 4. a file that is not a history file, named directly: read-only to us, never rewritten
out=$(session "$secret")
check_refused "not_a_history_file" "$out" "$secret" "$tmp/secret.copy" \
    "history not kept: $secret is not an mha-repl history file (its first line is not '$header'): it is left alone"

# 5. our own link to our own history file is followed; the target gets the entry, the link stays
printf '%s\nbefore = 1\n' "$header" >"$tmp/real_history"
ln -s real_history "$tmp/my_link"
out=$(session "$tmp/my_link")
if [ -L "$tmp/my_link" ] && grep -qx 'answer = 6 \* 7' "$tmp/real_history" && grep -qx 'before = 1' "$tmp/real_history" \
    && [ "$(head -1 "$tmp/real_history")" = "$header" ] && ! printf '%s' "$out" | grep -q warning; then
    pass "own_link_followed"
else
    fail "own_link_followed" "target [$(tr '\n' '|' <"$tmp/real_history")], output $(printf '%s' "$out" | tr '\r\n' '  ')"
fi

# 6. the default ~/.mha_repl_history an older mha-repl wrote (no header) is taken and gets the header
mkdir "$tmp/home"
printf 'old_entry = 1\nwith\\\\backslash = 2\n' >"$tmp/home/.mha_repl_history"
out=$(HOME="$tmp/home" pty_run 24 100 /usr/bin/env -u MHA_REPL_HISTORY "$repl" 2>&1 <<'STEPS'
expect >
send new_entry = 3\r
expect >
send \x04
STEPS
)
want=$(printf '%s\nold_entry = 1\nwith\\\\backslash = 2\nnew_entry = 3\n' "$header")
if [ "$(cat "$tmp/home/.mha_repl_history")" = "$want" ] && ! printf '%s' "$out" | grep -q warning; then
    pass "old_default_file_taken"
else
    fail "old_default_file_taken" "file [$(tr '\n' '|' <"$tmp/home/.mha_repl_history")], output $(printf '%s' "$out" | tr '\r\n' '  ')"
fi

# 7. a history file in a folder that does not exist: one warning at start-up, before the first
# prompt (not after the first input), and the session works
out=$(session "$tmp/no_such_folder/h")
first_prompt=$(printf '%s' "$out" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tr -d '\r' | grep -n '^>' | head -1 | cut -d: -f1)
warned_at=$(printf '%s' "$out" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tr -d '\r' | grep -n 'warning' | head -1 | cut -d: -f1)
if [ "$(printf '%s' "$out" | grep -c warning)" = 1 ] && [ -n "$warned_at" ] && [ -n "$first_prompt" ] \
    && [ "$warned_at" -lt "$first_prompt" ] && printf '%s' "$out" | grep -qF "$tmp/no_such_folder/h: No such file or directory" \
    && printf '%s' "$out" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tr -d '\r' | grep -q '^42'; then
    pass "missing_folder_warned_at_start"
else
    fail "missing_folder_warned_at_start" "warning at line $warned_at, first prompt at $first_prompt: $(printf '%s' "$out" | tr '\r\n' '  ')"
fi

[ "$fails" -eq 0 ]
