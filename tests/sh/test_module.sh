#!/usr/bin/env bash
# tests/sh/test_module.sh - the stock lua5.4 loads $MHA_BUILD/mha.so with require "mha": the library, its
# embedded helpers in package.preload, and a forward pass work outside mha-repl.
# An AddressSanitizer build's mha.so cannot load into an unsanitized lua5.4, so that build is skipped.
set -u
cd "$(dirname "$0")/../.." || exit 2
build=${MHA_BUILD:?MHA_BUILD must name a build directory}

case "$build" in
    *asan*) echo "SKIP module: $build is a sanitizer build; its mha.so cannot load into the stock lua5.4"; exit 0 ;;
esac
if ! command -v lua5.4 >/dev/null 2>&1; then
    echo "FAIL module: lua5.4 is not installed (Debian package lua5.4)"; exit 1
fi
if [ ! -f "$build/mha.so" ]; then
    echo "FAIL module: $build/mha.so was not built"; exit 1
fi

# check NAME LUA_CODE: the code runs in a fresh lua5.4 with mha loaded as `mha`; it prints "ok" when right
failed=0
check() {
    local name=$1 code=$2 out
    out=$(LUA_CPATH="$build/?.so" LUA_PATH="" lua5.4 -e "local mha = require 'mha'; $code" 2>&1)
    if [ "$out" = ok ]; then
        echo "PASS module $name"
    else
        echo "FAIL module $name: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
        failed=1
    fi
}

check "require gives the library" \
    'print(type(mha) == "table" and type(mha.tensor) == "function" and package.loaded.mha == mha and "ok" or "not the table")'
check "embedded helpers are preloaded" \
    'local p = package.preload; print(p["mha.gnuplot"] and p["mha.term"] and "ok" or "missing C helpers")'
# the Makefile's EMBED list names each Lua helper's module: module=lua/room/file.lua
embedded=$(sed -n '/^EMBED/,/^[A-Z]/p' Makefile | grep -o '[a-z0-9_.]*=lua/[a-z0-9_/]*\.lua')
unlisted=""
for f in lua/*/*.lua; do
    printf '%s\n' "$embedded" | grep -q "=$f\$" || unlisted="$unlisted $f"
done
if [ -z "$unlisted" ]; then echo "PASS module every lua/*/*.lua is in the Makefile's EMBED list"
else echo "FAIL module every lua/*/*.lua is in the Makefile's EMBED list: missing$unlisted"; failed=1; fi
check "every embedded module is preloaded under its EMBED name" \
    'local missing = {}
     for _, m in ipairs{'"$(for e in $embedded; do printf '"%s",' "${e%%=*}"; done)"'} do
         if not package.preload[m] then missing[#missing + 1] = m end
     end
     print(#missing == 0 and "ok" or table.concat(missing, " "))'
check "tensor arithmetic" \
    'local t = mha.tensor{{1,2},{3,4}}; print(((t + 1) * 2):totable()[2][2] == 10 and "ok" or "wrong")'
check "the acceptance line" \
    'local x = mha.randn(5, 4)
     local m = mha.MultiheadAttention{embed_dim=4, num_heads=2}; local out, w = m:forward(x, x, x)
     local s, ws = out:shape(), w:shape()
     print(s[1] == 5 and s[2] == 4 and ws[1] == 5 and ws[2] == 5 and "ok" or "shapes")'
check "tostring works" \
    'local s = tostring(mha.eye(2)); print(type(s) == "string" and s:find("1") and "ok" or s)'
check "errors are Lua errors with the message" \
    'local ok, e = pcall(mha.matmul, mha.zeros(2,3), mha.zeros(2,3)); print(not ok and e:find("inner sizes 3 and 2 differ", 1, true) and "ok" or tostring(e))'

exit "$failed"
