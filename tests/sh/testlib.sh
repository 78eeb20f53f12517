# tests/sh/testlib.sh - what a shell test in tests/sh/ starts with: the binary under test, PASS/FAIL lines
# that tests/run.sh counts, and a scratch folder removed at exit. Sourced: . "$(dirname "$0")/testlib.sh"
set -u
repl=${MHA_REPL:?set MHA_REPL to the mha-repl binary}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# pty_run ROWS COLUMNS PROGRAM [ARGS...] <STEPS: runs PROGRAM at a pseudo-terminal of ROWS x COLUMNS (Python's
# pty module, through tests/sh/pty_drive.py, which says the STEPS: send, expect, sleep) and prints what it
# showed. A test calls need_python first: without /usr/bin/python3 it says SKIP and exits.
python=/usr/bin/python3
pty_run() { "$python" "$(dirname "${BASH_SOURCE[0]}")/pty_drive.py" "$@"; }
need_python() {   # need_python NAME
    [ -x "$python" ] || { echo "SKIP $1: $python is not installed"; exit 0; }
}
# screen_lines SHOWN LINES: what a pty showed (pty_run's output in SHOWN) as plain lines in LINES, escape
# sequences and carriage returns removed; SHOW=1 prints them.
screen_lines() {
    sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$1" | tr -d '\r' >"$2"
    [ -z "${SHOW:-}" ] || cat "$2"
}
