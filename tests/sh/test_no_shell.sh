#!/usr/bin/env bash
# tests/sh/test_no_shell.sh - no user text, file name, folder name or environment value reaches a shell:
# lesson discovery lists folders with readdir (mha.dir), and no Lua helper calls io.popen or os.execute.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
case $repl in /*) ;; *) repl=$PWD/$repl ;; esac
cd "$tmp" || exit 2

# MHA_LESSONS naming a folder with a command substitution, a backquote and a quote in it
for name in 'x$(touch pwned1)' 'x`touch pwned2`' 'x"; touch pwned3; "'; do
    MHA_LESSONS="$tmp/$name" timeout 20 "$repl" --lesson 1 --batch >/dev/null 2>&1
    mkdir -p "$tmp/$name"
    cp "$OLDPWD/lessons/01_tour.lua" "$tmp/$name/"
    out=$(MHA_LESSONS="$tmp/$name" timeout 20 "$repl" --lesson 1 --batch 2>&1 | head -1)
    case $out in *"01 A tour of attention"*) pass "lessons found in a folder named $name" ;;
                 *) fail "lessons found in a folder named $name" "$out" ;; esac
done
# an install folder named that way: the REPL looks for lessons beside its binary
mkdir -p "$tmp/i\$(touch pwned4)/bin"
ln -s "$repl" "$tmp/i\$(touch pwned4)/bin/mha-repl"
MHA_LESSONS= timeout 20 "$tmp/i\$(touch pwned4)/bin/mha-repl" --lesson 1 --batch >/dev/null 2>&1
left=$(ls "$tmp" | grep '^pwned')
[ -z "$left" ] && pass "no folder name ran a command" || fail "no folder name ran a command" "made: $left"

# the Lua helpers never start a shell
cd "$OLDPWD" || exit 2
calls=$(grep -rn --include='*.lua' 'io\.popen\|os\.execute' lua/ | grep -v '^lua/help/docs_')
[ -z "$calls" ] && pass "no io.popen or os.execute in lua/" || fail "no io.popen or os.execute in lua/" "$calls"

# :export lesson (the open lesson, alone) runs a second mha-repl by an argument list: a file name full of
# shell syntax is only a file name
(cd "$tmp" && printf ':open 2\n:export lesson it'"'"'s;touch${IFS}pwned4;`touch${IFS}pwned5`.ipynb\n' \
    | MHA_REPL_HISTORY=/dev/null "$repl" -i >"$tmp/export.out" 2>&1)
[ -s "$tmp/it's;touch\${IFS}pwned4;\`touch\${IFS}pwned5\`.ipynb" ] && grep -q 'wrote lesson 2 to it' "$tmp/export.out" \
    && pass ":export lesson wrote the lesson under the name given" \
    || fail ":export lesson wrote the lesson under the name given" "$(ls "$tmp"; cat "$tmp/export.out")"
left=$(ls "$tmp" | grep '^pwned[45]')
[ -z "$left" ] && pass ":export's file name ran no command" || fail ":export's file name ran no command" "made: $left"

[ "$fails" -eq 0 ]
