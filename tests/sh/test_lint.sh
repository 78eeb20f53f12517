#!/usr/bin/env bash
# tests/sh/test_lint.sh - the architecture's rules hold (tools/lint.lua, make lint): no include,
# room or require cycle, core includes no Lua, no file over 900 lines, no function over 100,
# comments within 100 columns. First the checker itself, on a small tree breaking each rule and a
# clean twin.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
case $repl in /*) ;; *) repl=$PWD/$repl ;; esac
cd "$(dirname "$0")/../.." || exit 2
lint=$PWD/tools/lint.lua

# lines N TEXT: N lines of TEXT
lines() { local i; for ((i = 0; i < $1; i++)); do echo "$2"; done; }
long_comment="-- $(printf 'x%.0s' $(seq 1 100))"
long_code="local s = \"$(printf 'y%.0s' $(seq 1 100))\""

# a small tree: core/one and core/two include each other (each a unit: a .c with its .h), one includes Lua, mha.a and mha.b require
# each other (one lazily, through pcall), a C and a Lua function of 101 lines, a comment past
# column 100, a file of 901 lines
bad=$tmp/bad
mkdir -p "$bad/core/one" "$bad/core/two" "$bad/lua/x"
printf 'ALL_CFLAGS = $(DEFS) -Icore -I$(BUILD)\nEMBED = mha.a=lua/x/a.lua mha.b=lua/x/b.lua\n' \
    >"$bad/Makefile"
printf '#include "two/b.h"\n#include <lauxlib.h>\n' >"$bad/core/one/a.h"
printf '#include "a.h"\nint a(void)\n{\n%s\n}\n' "$(lines 99 '    ;')" >"$bad/core/one/a.c"
printf '#include "one/a.h"\n' >"$bad/core/two/b.h"
printf '#include "b.h"\n' >"$bad/core/two/b.c"
{ echo 'local b = require "mha.b"'; echo "local function f()"; lines 99 "    b.x()"; echo "end"
  echo "$long_comment"; echo "$long_code"; } >"$bad/lua/x/a.lua"
printf 'local function g() local ok, a = pcall(require, "mha.a") end\n-- require "mha.c"\n' \
    >"$bad/lua/x/b.lua"
lines 901 'local x = "end"' >"$bad/lua/x/c.lua"
out=$("$repl" "$lint" "$bad" 2>&1); rc=$?
expect="core/one/a.c:3: function-length: function a is 101 lines (at most 100)
core/one/a.h:1: include-cycle: core/one/a -> core/two/b -> core/one/a
core/one/a.h:1: room-cycle: one -> two -> one
core/one/a.h:2: core-includes-lua: core includes <lauxlib.h>
lua/x/a.lua:1: require-cycle: mha.a -> mha.b -> mha.a
lua/x/a.lua:2: function-length: function f is 101 lines (at most 100)
lua/x/a.lua:103: comment-width: comment past column 100
lua/x/c.lua:1: file-length: 901 lines (at most 900)"
summary="lint: 7 files checked, 8 violations (comment-width 1, core-includes-lua 1, file-length 1, "
summary+="function-length 2, include-cycle 1, require-cycle 1, room-cycle 1); code or strings past "
summary+="column 100 on 1 lines (a warning; LINT_WARNINGS=1 lists them)"
expect+=$'\n'$summary
if [ "$rc" -eq 1 ] && [ "$out" = "$expect" ]; then
    pass "lint_finds: each rule's violation, one line each"
else fail "lint_finds" "exit $rc, printed: $out"; fi

# the clean twin: no cycle, functions of 100 lines, a long string (a warning only)
good=$tmp/good
mkdir -p "$good/core/one" "$good/core/two" "$good/lua/x"
cp "$bad/Makefile" "$good/"
printf '#include "two/b.h"\n' >"$good/core/one/a.h"
printf '#include "a.h"\nint a(void)\n{\n%s\n}\n' "$(lines 98 '    ;')" >"$good/core/one/a.c"
printf 'int b(void);\n' >"$good/core/two/b.h"
{ echo 'local b = require "mha.b"'; echo "local function f()"; lines 98 "    b.x()"; echo "end"
  echo "$long_code"; } >"$good/lua/x/a.lua"
printf 'return {}\n' >"$good/lua/x/b.lua"
out=$("$repl" "$lint" "$good" 2>&1); rc=$?
if [ "$rc" -eq 0 ]; then pass "lint_clean: a tree within the rules passes"
else fail "lint_clean" "exit $rc, printed: $out"; fi

# the project itself
out=$("$repl" "$lint" 2>&1); rc=$?
if [ "$rc" -eq 0 ]; then pass "lint: $(printf '%s\n' "$out" | tail -1)"
else fail "lint" "$(printf '%s\n' "$out" | tail -1); the first ones (make lint lists all):
$(printf '%s\n' "$out" | head -20)"; fi

[ "$fails" -eq 0 ]
