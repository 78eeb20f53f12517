#!/usr/bin/env bash
# tests/run.sh - runs every test suite against one build directory and ends with the line
# "N passed, M failed". A suite prints "PASS name" / "FAIL name: why" lines; a suite that exits
# non-zero without printing a FAIL line (a crash, a sanitizer report) counts as one failure.
# usage: tests/run.sh BUILD_DIR
set -u
build=${1:?usage: tests/run.sh BUILD_DIR}
cd "$(dirname "$0")/.." || exit 2
export MHA_REPL="$build/mha-repl" MHA_BUILD="$build" NO_COLOR=1 LC_ALL=C.UTF-8
export MHA_REPL_HISTORY=/dev/null
# sanitizer builds: a failing huge malloc must return NULL (the tests check that path), leaks count
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0 failed=0
log=$(mktemp); trap 'rm -f "$log"' EXIT

# run_suite NAME COMMAND... : run one suite, echo its output, count its PASS/FAIL lines
run_suite() {
    local name=$1; shift
    echo "== $name"
    "$@" >"$log" 2>&1 </dev/null
    local rc=$?
    cat "$log"
    local p f
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log")
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited with status $rc and reported no failure (crash or sanitizer?)"
        failed=$((failed + 1))
    fi
}

for t in "$build"/tests/test_*; do
    [ -x "$t" ] && run_suite "$(basename "$t")" "$t"
done
for t in tests/lua/test_*.lua; do
    [ -f "$t" ] && run_suite "$(basename "$t")" "$MHA_REPL" "$t"
done
for t in tests/sh/test_*.sh; do
    [ -f "$t" ] && run_suite "$(basename "$t")" bash "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
