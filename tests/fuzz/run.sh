#!/usr/bin/env bash
# tests/fuzz/run.sh - runs each libFuzzer target of tests/fuzz/ for a set time from its committed corpus
# (tests/fuzz/corpus/NAME, read only: new inputs go to BUILD/corpus/NAME) and prints one line per target:
# executions, coverage (edges), features, corpus size, and whether anything was found. A finding leaves
# its input in BUILD/findings/ and makes the script exit non-zero.
# usage: tests/fuzz/run.sh BUILD SECONDS [TARGET...]
set -u
build=${1:?usage: tests/fuzz/run.sh BUILD SECONDS [TARGET...]}
seconds=${2:?usage: tests/fuzz/run.sh BUILD SECONDS [TARGET...]}
shift 2
targets=${*:-fuzz_npy fuzz_npz fuzz_lua}
cd "$(dirname "$0")/../.." || exit 2
# a huge allocation returns NULL (the out-of-memory paths are tested); above 2 GB is such a one, below
# libFuzzer's own 4 GB malloc limit, so a refused size is an error message and not a "crash"
export ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=2048:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export MHA_THREADS=1
mkdir -p "$build/findings"
# a .npy header and data, or a small .npz archive, fit in 4 KiB; 1 KiB of Lua calls is ~300 of them
max_len() { case $1 in fuzz_lua) echo 1024 ;; *) echo 4096 ;; esac; }
status=0
for t in $targets; do
    name=${t#fuzz_}
    work="$build/corpus/$name"
    mkdir -p "$work"
    log="$build/$t.log"
    "$build/tests/$t" "$work" "tests/fuzz/corpus/$name" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=3072 -malloc_limit_mb=4096 -max_len="$(max_len "$t")" -print_final_stats=1 \
        -artifact_prefix="$build/findings/$name-" >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*')
    ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*')
    corp=$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*')
    if [ "$rc" -eq 0 ]; then
        echo "PASS fuzz $t: ${seconds}s, ${execs:-?} executions, coverage ${cov:-?} edges, ${ft:-?} features, corpus ${corp:-?}, no finding"
    else
        echo "FAIL fuzz $t: status $rc after ${execs:-?} executions; see $log and $build/findings/"
        grep -E 'ERROR|runtime error|FINDING|SUMMARY' "$log" | head -5
        status=1
    fi
done
exit $status
