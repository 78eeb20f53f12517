# tests/sh/testlib.sh - what a shell test in tests/sh/ starts with: the binary under test, PASS/FAIL lines
# that tests/run.sh counts, and a scratch folder removed at exit. Sourced: . "$(dirname "$0")/testlib.sh"
set -u
repl=${MHA_REPL:?set MHA_REPL to the mha-repl binary}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
