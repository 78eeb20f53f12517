#!/usr/bin/env bash
# tests/sh/test_cli.sh - mha-repl used without a terminal: piped stdin, -e, -i, scripts with arguments,
# errors as file:line with exit codes 0/1/2, --version, --help, --lesson's checks, and startup time.
# usage: MHA_REPL=build/mha-repl bash tests/sh/test_cli.sh
set -u
repl=${MHA_REPL:-build/mha-repl}
export MHA_REPL_HISTORY=/dev/null
unset NO_COLOR
failures=0
tmp=$(mktemp -d /tmp/mha-test-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }

# run NAME STDIN ARGS... : runs the REPL, keeping stdout, stderr and the exit status in $out $err $rc
run() {
    local input=$1; shift
    out=$(printf '%s' "$input" | "$repl" "$@" 2>"$tmp/err")
    rc=$?
    err=$(cat "$tmp/err")
}

# check NAME CONDITION-STATUS WHY
check() { if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1" "$3"; fi; }
has() { case "$1" in *"$2"*) return 0 ;; *) return 1 ;; esac; }

if [ ! -x "$repl" ]; then fail repl_binary "$repl is not an executable (set MHA_REPL)"; exit 1; fi

# ---- piped stdin: a script, no prompt, no colour ----
run $'x = 6 * 7\nprint(x)\n'
[ "$out" = "42" ] && [ "$rc" -eq 0 ]; check stdin_script $? "out [$out] rc $rc err [$err]"
run $'print(mha.tensor{{1, 2}})\n'
! has "$out" $'\033' && ! has "$out" "> "; check stdin_no_prompt_no_colour $? "out [$out]"
run $'print("before")\nlocal t = nil\nprint(t.field)\n'
[ "$rc" -eq 1 ] && [ "$out" = "before" ] && has "$err" "stdin:3: attempt to index a nil value"
check stdin_error_line_and_status $? "rc $rc out [$out] err [$err]"
run $'print(arg[0], ...)\n' - one two
[ "$out" = $'-\tone\ttwo' ] && [ "$rc" -eq 0 ]; check dash_reads_stdin_with_args $? "out [$out] rc $rc err [$err]"
run $'for i = 1,\n'
[ "$rc" -eq 1 ] && has "$err" "stdin:2: unexpected symbol near <eof>"; check stdin_syntax_error $? "rc $rc err [$err]"

# ---- -e ----
run '' -e 'print(1 + 2)'
[ "$out" = "3" ] && [ "$rc" -eq 0 ]; check e_chunk $? "out [$out] rc $rc err [$err]"
run '' -e 'a = 5' -e 'print(a * 2)'
[ "$out" = "10" ] && [ "$rc" -eq 0 ]; check e_chunks_in_order $? "out [$out] rc $rc"
run '' -e 'error("no good")'
[ "$rc" -eq 1 ] && has "$err" "(command line):1: no good"; check e_error_status $? "rc $rc err [$err]"
run '' -e
[ "$rc" -eq 2 ] && has "$err" "'-e' needs an argument" && has "$err" "usage:"; check e_without_chunk $? "rc $rc err [$err]"
run '' -e 'x = mha.matmul(mha.zeros(3, 4), mha.zeros(5, 2))'
[ "$rc" -eq 1 ] && has "$err" "matmul: (3,4) @ (5,2)"; check e_library_error $? "rc $rc err [$err]"

# ---- scripts ----
cat >"$tmp/args.lua" <<'EOF'
print(arg[0]:match("[^/]*$"), #arg, arg[1], arg[2], select("#", ...), ...)
EOF
run '' "$tmp/args.lua" alpha beta
[ "$out" = $'args.lua\t2\talpha\tbeta\t2\talpha\tbeta' ] && [ "$rc" -eq 0 ]; check script_args $? "out [$out] rc $rc err [$err]"
cat >"$tmp/fails.lua" <<'EOF'
local x = mha.ones(2, 3)
print("ran line 2")
local y = x:view(4, 4)
EOF
run '' "$tmp/fails.lua"
[ "$rc" -eq 1 ] && [ "$out" = "ran line 2" ] && has "$err" "fails.lua:3: " && has "$err" "view"
check script_error_file_line $? "rc $rc out [$out] err [$err]"
first_line=$(printf '%s\n' "$err" | head -n 1)
has "$first_line" "$tmp/fails.lua:3: "; check script_error_first_line $? "first line [$first_line]"
! has "$err" "[C]: in ?" && ! has "$err" "repl.lua"; check script_traceback_short $? "err [$err]"
# error() at the script's top level: the message alone, the traceback would only repeat it; an error in
# a function the script defined: the traceback shows the user's frames
printf 'print("before")\nerror("x")\n' >"$tmp/toplevel.lua"
run '' "$tmp/toplevel.lua"
[ "$rc" -eq 1 ] && [ "$err" = "$repl: $tmp/toplevel.lua:2: x" ]; check script_toplevel_error_no_traceback $? "rc $rc err [$err]"
printf 'local function inner() error("deep") end\nlocal function outer() inner() end\nouter()\n' >"$tmp/nested.lua"
run '' "$tmp/nested.lua"
[ "$rc" -eq 1 ] && has "$err" "$tmp/nested.lua:1: deep"$'\n'"stack traceback:" && has "$err" "nested.lua:1: in " \
    && has "$err" "nested.lua:2: in " && has "$err" "nested.lua:3: in main chunk" && ! has "$err" "repl.lua"
check script_nested_error_traceback $? "rc $rc err [$err]"
# an error a Lua helper (lua/show/display.lua) raises for the script's call: the script's line, no helper frames
printf 'local w = mha.ones(2, 2)\nmha.show(w, 5)\n' >"$tmp/helper.lua"
run '' "$tmp/helper.lua"
[ "$rc" -eq 1 ] && [ "$err" = "$repl: $tmp/helper.lua:2: show: options must be a table, got number" ]
check script_helper_error_at_script_line $? "rc $rc err [$err]"
# an option error from lua/nn or printoptions (raised in the helper, placed at the script's line by the REPL)
printf 'local a = 1\nlocal l = mha.nn.Linear{in_features = 3}\n' >"$tmp/nnopt.lua"
run '' "$tmp/nnopt.lua"
[ "$rc" -eq 1 ] && [ "$err" = "$repl: $tmp/nnopt.lua:2: nn.Linear: option out_features is required, e.g. mha.nn.Linear{in_features = 4, out_features = 2}" ]
check script_nn_option_error_at_script_line $? "rc $rc err [$err]"
printf '\nmha.printoptions{precision = "x"}\n' >"$tmp/popt.lua"
run '' "$tmp/popt.lua"
[ "$rc" -eq 1 ] && [ "$err" = "$repl: $tmp/popt.lua:2: printoptions: option precision must be an integer 0..16, got x" ]
check script_printoptions_error_at_script_line $? "rc $rc err [$err]"
# a function called by its long name: the core's "sdpa:" says that name, and over MHA_MAX_MEMORY the
# limit is still named
err_capped=$(MHA_MAX_MEMORY=10 "$repl" -e 'local q = mha.zeros(2000, 8); mha.scaled_dot_product_attention(q, q, q)' 2>&1)
has "$err_capped" "(command line):1: scaled_dot_product_attention: out of memory allocating 16000000 bytes" \
    && has "$err_capped" "tensor memory limit of 10 MB reached (MHA_MAX_MEMORY)"
check alias_name_keeps_the_memory_limit $? "[$err_capped]"
# help() outside the interactive REPL lists every REPL command, not only the four with a docs entry
run '' -e 'help()'
cmds=$(printf '%s\n' "$out" | sed -n '/^REPL commands:/,/^[^ ]/p')
has "$cmds" ":save" && has "$cmds" ":goto" && has "$cmds" ":quit" && has "$cmds" ":answer" && has "$cmds" ":next"
check help_lists_all_commands_outside_repl $? "commands [$cmds]"
printf 'x = = 1\n' >"$tmp/syntax.lua"
run '' "$tmp/syntax.lua"
[ "$rc" -eq 1 ] && has "$err" "syntax.lua:1:"; check script_syntax_error $? "rc $rc err [$err]"
run '' "$tmp/missing.lua"
[ "$rc" -eq 1 ] && has "$err" "cannot open"; check script_missing $? "rc $rc err [$err]"
printf 'os.exit(3)\n' >"$tmp/exit3.lua"
run '' "$tmp/exit3.lua"
[ "$rc" -eq 3 ]; check script_os_exit $? "rc $rc"

# ---- -i: run, then read REPL input (here from a pipe: no prompt, values still printed); an input that
# raised an error makes the exit status 1 ----
printf 'x = 21\n' >"$tmp/setup.lua"
run $'x * 2\nx;\n{a = 1}\nerror("oops")\nx + 1\n' -i "$tmp/setup.lua"
[ "$out" = $'42\n{a = 1}\n22' ] && [ "$rc" -eq 1 ] && has "$err" "stdin:1: oops"
check i_then_repl $? "out [$out] rc $rc err [$err]"
run $'_G.y = 1\n' -i "$tmp/fails.lua"
[ "$rc" -eq 1 ]; check i_script_error_status $? "rc $rc err [$err]"

# ---- usage ----
run '' --bogus
[ "$rc" -eq 2 ] && has "$err" "unrecognized option '--bogus'"; check unknown_option $? "rc $rc err [$err]"
run '' --version
[ "$rc" -eq 0 ] && has "$out" "mha-repl " && has "$out" "Lua 5.4"; check version $? "rc $rc out [$out]"
run '' -v
[ "$rc" -eq 0 ] && has "$out" "mha-repl "; check version_short $? "rc $rc out [$out]"
run '' --help
[ "$rc" -eq 0 ] && has "$out" "usage:" && has "$out" "--lesson" && has "$out" "-e chunk"; check help $? "rc $rc out [$out]"
# on a projector's 80 columns no line wraps (the usage line holds the program's path, however long)
widest=$(printf '%s\n' "$out" | tail -n +2 | wc -L)
[ "$widest" -le 80 ]; check help_fits_80_columns $? "a line of --help is $widest columns wide"
run '' --batch
[ "$rc" -eq 2 ] && has "$err" "--lesson"; check batch_needs_lesson $? "rc $rc err [$err]"
run '' --lesson 1 --lang fr
[ "$rc" -eq 2 ] && has "$err" "fr"; check lang_checked $? "rc $rc err [$err]"
run '' --lesson
[ "$rc" -eq 2 ] && has "$err" "'--lesson' needs an argument"; check lesson_needs_name $? "rc $rc err [$err]"
run '' --lesson no_such_lesson_here --batch
[ "$rc" -eq 2 ] && [ -n "$err" ]; check lesson_unknown $? "rc $rc err [$err]"
run '' --lesson 1 --batch --lang en
[ "$rc" -eq 0 ] && has "$out" "1/"; check lesson_batch $? "rc $rc out [${out:0:300}] err [$err]"

# ---- a lesson by its path; every MHA_LESSONS folder; errors name the file and line ----
mkdir -p "$tmp/a" "$tmp/b"
cat >"$tmp/a/21_mine.lua" <<'LESSON'
return lesson{
    name = "mine", seed = 1,
    title = {en = "Mine", zh = "我的"}, summary = {en = "a teacher's lesson", zh = "老师的课"},
    step{title = {en = "One", zh = "一"}, text = {en = "One step.", zh = "一步。"},
         code = [[
x = mha.tensor{1, 2}
print(tr{en = "sum:", zh = "和："}, x:sum():item())]]},
    step{title = {en = "Two", zh = "二"}, text = {en = "A broken step.", zh = "坏的一步。"},
         code = [[
y = nil
print(y.field)]]},
}
LESSON
cat >"$tmp/b/22_other.lua" <<'LESSON'
return lesson{
    name = "other", seed = 2,
    title = {en = "Other", zh = "另一课"}, summary = {en = "another folder", zh = "另一个文件夹"},
    step{title = {en = "One", zh = "一"}, text = {en = "Hello.", zh = "你好。"}, code = [[print(1 + 1)]]},
}
LESSON
run '' --lesson "$tmp/a/21_mine.lua" --batch --lang zh
[ "$rc" -eq 1 ] && has "$out" "和：	3.0" && has "$out" '│ print("和：", x:sum():item())'
check lesson_by_path_echoes_one_language $? "rc $rc out [${out:0:600}] err [$err]"
has "$out" "21_mine.lua:11: attempt to index a nil value"
check lesson_error_names_file_and_line $? "out [${out:0:900}]"
out=$(MHA_LESSONS="$tmp/a:$tmp/b" "$repl" -e 'require("mha.lesson").list("en")' 2>&1)
has "$out" "21  mine" && has "$out" "22  other" && has "$out" " 1  tour"
check lessons_every_mhalessons_folder $? "out [$out]"
weird="$tmp/it's \$(touch $tmp/ran)"
mkdir -p "$weird" && cp "$tmp/b/22_other.lua" "$weird/23_quoted.lua"
out=$(MHA_LESSONS="$weird" "$repl" -e 'require("mha.lesson").list("en")' 2>&1)
has "$out" "23  quoted" && [ ! -e "$tmp/ran" ]; check lessons_folder_name_quoted_for_the_shell $? "out [$out]"
out=$(MHA_LESSONS="$tmp/a:$tmp/b" "$repl" --lesson other --batch 2>&1); rc=$?
[ "$rc" -eq 0 ] && has "$out" "22 Other"; check lessons_second_folder_by_name $? "rc $rc out [$out]"

# ---- --answers FILE: a student's attempts replayed, with the hints they get ----
printf '%s\n' '0.25' '1 / math.sqrt(768)' '1 / math.sqrt(64)' >"$tmp/answers4.txt"
run '' --lesson 4 --answers "$tmp/answers4.txt" --lang en
[ "$rc" -eq 0 ] && has "$out" "you gave 0.25;" && has "$out" "√d_model" && has "$out" $'correct\n'
check answers_file_attempts_and_hints $? "rc $rc out [${out: -900}] err [$err]"
run '' --lesson 4 --answers "$tmp/no_such_answers.txt"
[ "$rc" -eq 2 ] && has "$err" "--answers:"; check answers_file_missing $? "rc $rc err [$err]"
run '' --answers "$tmp/answers4.txt"
[ "$rc" -eq 2 ] && has "$err" "--answers go with --lesson"; check answers_needs_lesson $? "rc $rc err [$err]"

# ---- --lang without a lesson: the REPL's language, as README and docs/repl.md say ----
run '' --lang zh -e 'print(os.getenv("MHA_LANG"))'
[ "$rc" -eq 0 ] && [ "$out" = "zh" ]; check lang_without_lesson $? "rc $rc out [$out] err [$err]"
run '' --lang fr -e 'print(1)'
[ "$rc" -eq 2 ] && has "$err" "--lang: 'fr' is not a language"; check lang_without_lesson_checked $? "rc $rc err [$err]"

# ---- -i: a session whose inputs raised errors exits 1; one without, 0 ----
run $'x = 1
error("boom")
x
' -i
[ "$rc" -eq 1 ]; check i_session_with_error_exits_1 $? "rc $rc"
run $'x = 1
x
' -i
[ "$rc" -eq 0 ]; check i_session_without_error_exits_0 $? "rc $rc err [$err]"
run '' -- "$tmp/args.lua" -x
[ "$rc" -eq 0 ] && has "$out" $'\t-x'; check double_dash $? "rc $rc out [$out] err [$err]"

# ---- the lazy globals ----
run '' -e 'print(rawget(_G, "help") == nil, rawget(_G, "plot") == nil, type(help), type(plot))'
[ "$out" = $'true\ttrue\tfunction\ttable' ]; check lazy_globals $? "out [$out] err [$err]"

# ---- startup: mha-repl -e '' under 15 ms. Timed over 100 starts, three rounds, the best kept. The
# check is on CPU time (user + system), which other jobs on a shared machine do not inflate; the wall
# time is printed beside it.
if ldd "$repl" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    echo "# startup not timed: a sanitizer build is several times slower by design"
    [ "$failures" -eq 0 ]
    exit
fi
best_cpu=999999 best_wall=999999
TIMEFORMAT='%R %U %S'
for round in 1 2 3; do
    times=$( { time (for i in $(seq 100); do "$repl" -e '' || exit 1; done) ; } 2>&1 ) || break
    read -r wall user sys <<<"$times"
    # seconds for 100 starts = hundredths of a ms per start
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1000 }')
    wall=$(awk -v w="$wall" 'BEGIN { printf "%d", w * 1000 }')
    [ "$cpu" -lt "$best_cpu" ] && best_cpu=$cpu
    [ "$wall" -lt "$best_wall" ] && best_wall=$wall
done
ms() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }
echo "# mha-repl -e '': $(ms "$best_cpu") ms CPU, $(ms "$best_wall") ms wall per start (best of 3 x 100)"
[ "$best_cpu" -lt 1500 ]; check startup_under_15ms $? "$(ms "$best_cpu") ms of CPU per start"

[ "$failures" -eq 0 ]
