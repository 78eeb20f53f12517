#!/usr/bin/env bash
# tests/sh/test_paths.sh - the program finds its own lessons/ and models/ by its real path: started from
# another folder, through a symbolic link (absolute, relative, a link to a link), and a copy with none
# beside it says where it looked; $MHA_LESSONS and $MHA_MODELS still come first.
# env: MHA_REPL (the binary), as tests/run.sh sets it.
. "$(dirname "$0")/testlib.sh"
export MHA_REPL_HISTORY=/dev/null
unset MHA_LESSONS MHA_MODELS MHA_LANG
real=$(realpath "$repl")
root=$(cd "$(dirname "$0")/../.." && pwd)
module=""   # the mha.so beside the binary, when built (a sanitizer build's cannot load into the stock lua5.4)
case "${MHA_BUILD:-}" in
    *asan*) ;;
    ?*) [ -f "$MHA_BUILD/mha.so" ] && module=$(realpath "$MHA_BUILD/mha.so") ;;
esac

# the programs to start: the real binary, links to it, all run from an empty folder
mkdir -p "$tmp/elsewhere" "$tmp/abs" "$tmp/rel" "$tmp/chain"
ln -s "$real" "$tmp/abs/mha-repl"
ln -s "$(realpath --relative-to="$tmp/rel" "$real")" "$tmp/rel/mha-repl"
ln -s ../abs/mha-repl "$tmp/chain/mha-repl"
cd "$tmp/elsewhere" || exit 1

has() { case "$1" in *"$2"*) return 0 ;; *) return 1 ;; esac; }
# check NAME OUTPUT WANT...: OUTPUT holds every WANT
check() {
    local name=$1 out=$2; shift 2
    for want in "$@"; do
        if ! has "$out" "$want"; then fail "$name" "no \"$want\" in: $(printf '%s' "$out" | head -5)"; return; fi
    done
    pass "$name"
}

for how in real abs rel chain; do
    if [ "$how" = real ]; then prog=$real; else prog=$tmp/$how/mha-repl; fi
    out=$("$prog" --lesson 1 --batch 2>&1 </dev/null; echo "rc=$?")
    check "paths_${how}_lesson_batch" "$out" "── 01 A tour of attention" "End of the lesson" "rc=0"
    out=$(printf ':lessons\n' | "$prog" -i /dev/null 2>&1)
    check "paths_${how}_lessons_list" "$out" "Lessons (:open NAME or NUMBER):" "   1  tour " "  18  two_relations"
    out=$(printf ':open 1\n' | "$prog" -i /dev/null 2>&1)
    check "paths_${how}_open" "$out" "── 01 A tour of attention" "step 1/"
    out=$(printf 'm = mha.load_model("induction")\nprint(m:config().vocab, m:config().d_model)\n' |
          "$prog" -i /dev/null 2>&1)
    check "paths_${how}_load_model" "$out" $'20\t32'
done

# the teacher's folders still come first: a lesson 1 of one's own, a model of one's own
mkdir -p "$tmp/mine" "$tmp/mymodels"
cat >"$tmp/mine/01_mine.lua" <<'EOF'
return lesson{
    name = "mine", title = {en = "My own first lesson", zh = "我自己的第一课"},
    summary = {en = "a teacher's lesson", zh = "老师的课"},
    step{ title = {en = "Hello", zh = "你好"}, text = {en = "Hello.", zh = "你好。"}, code = [[print(6 * 7)]] },
}
EOF
cp "$root/models/induction.npz" "$tmp/mymodels/mine.npz"
out=$(MHA_LESSONS=$tmp/mine "$tmp/abs/mha-repl" --lesson 1 --batch 2>&1 </dev/null)
check paths_mha_lessons_first "$out" "── 01 My own first lesson" "42"
out=$(printf ':lessons\n' | MHA_LESSONS=$tmp/mine "$tmp/abs/mha-repl" -i /dev/null 2>&1)
check paths_mha_lessons_listed "$out" "   1  mine " "   2  dot_product "
out=$(printf 'print(mha.load_model("mine"):config().vocab)\n' | MHA_MODELS=$tmp/mymodels "$tmp/abs/mha-repl" -i /dev/null 2>&1)
check paths_mha_models_first "$out" "20"

# a copy of the program with no lessons or models beside it says where it looked, in both languages
mkdir -p "$tmp/bare/bin"
cp "$real" "$tmp/bare/bin/mha-repl"
out=$("$tmp/bare/bin/mha-repl" --lesson 1 --batch 2>&1 </dev/null; echo "rc=$?")
check paths_none_batch "$out" "no lessons found (looked in lessons, $tmp/bare/lessons, $tmp/lessons;" "rc=2"
out=$(printf ':lessons\n' | "$tmp/bare/bin/mha-repl" -i /dev/null 2>&1)
check paths_none_lessons_list "$out" "no lessons found (looked in lessons, $tmp/bare/lessons,"
out=$(printf ':open 1\n' | "$tmp/bare/bin/mha-repl" -i /dev/null 2>&1)
check paths_none_open "$out" "no lessons found (looked in lessons,"
out=$("$tmp/bare/bin/mha-repl" --lesson 1 --batch --lang zh 2>&1 </dev/null)
check paths_none_batch_zh "$out" "没有找到课程（找过 lessons，$tmp/bare/lessons，"
out=$(printf 'mha.load_model("induction")\n' | "$tmp/bare/bin/mha-repl" -i /dev/null 2>&1)
check paths_none_load_model "$out" "load_model: no model 'induction' (available: none; looked in models, $tmp/bare/models, $tmp/models;"

# a stock lua5.4 that loads mha.so (through a link, from another folder) finds the models beside mha.so
if [ -n "$module" ] && command -v lua5.4 >/dev/null; then
    mkdir -p "$tmp/so"
    ln -s "$module" "$tmp/so/mha.so"
    out=$(LUA_CPATH="$tmp/so/?.so" lua5.4 -e 'local mha = require "mha"
print(mha.load_model("induction"):config().vocab)' 2>&1)
    check paths_module_load_model "$out" "20"
fi

# ---- LESSON.scratch: a lesson's scratch file and the name os.tmpname reserved are gone at exit ----
made=$("$real" -e 'local p = require("mha.lesson.tools").scratch(".npz")
local f = assert(io.open(p, "w")); f:write("x"); f:close(); print(p)' 2>&1)
case "$made" in
    *.npz) if [ -e "$made" ] || [ -e "${made%.npz}" ]; then
               fail "LESSON.scratch leaves nothing at exit" "$made or its reservation is still there"
           else pass "LESSON.scratch leaves nothing at exit"; fi ;;
    *) fail "LESSON.scratch leaves nothing at exit" "got: $made" ;;
esac

exit $((fails > 0))
