#!/usr/bin/env bash
# tests/golden.sh - replays every lesson in both languages in batch mode and compares the transcript with
# tests/golden/NN_name.LANG.txt; prints PASS/FAIL per transcript and the diff of each failure.
# Each lesson is also replayed on every other kernel variant this CPU runs (AVX-512, AVX2) and must print
# the same transcript: lessons print nothing at the level of rounding noise.
# usage: tests/golden.sh BUILD [--update]   (--update rewrites the transcripts: `make golden`)
set -u
build=${1:?usage: tests/golden.sh BUILD [--update]}
update=${2:-}
cd "$(dirname "$0")/.." || exit 2
repl="$build/mha-repl"
[ -x "$repl" ] || { echo "FAIL golden: $repl is not built"; exit 1; }
# the transcript must not depend on the caller's terminal, locale or language settings
export NO_COLOR=1 LC_ALL=C.UTF-8 MHA_REPL_HISTORY=/dev/null COLUMNS=80
unset MHA_LANG LANG MHA_LESSONS
# nor on the CPU: the last digit of a 4-decimal print can legitimately differ between kernel paths (the
# unit tests hold every path equal to the references), so transcripts are compared on the portable path
# and are the same on every machine
export MHA_ISA=portable
# the kernel variants this CPU runs (mha.isa); each replays every lesson, and those it cannot run are named
isas=$(MHA_ISA= "$repl" -e 'local _, runnable = mha.isa(); print(table.concat(runnable, " "))') ||
    { echo "FAIL golden: mha.isa() did not list the kernel variants"; exit 1; }
for isa in avx512 avx2; do
    case " $isas " in *" $isa "*) ;; *) echo "# this CPU cannot run the $isa kernels: no lesson is replayed on them here" ;; esac
done
out=$(mktemp) err=$(mktemp); trap 'rm -f "$out" "$err"' EXIT
failed=0
# labels lesson code, the runner or the display print in English (and an ASCII colon after 练习); a Chinese
# transcript (its echoed code aside) must print its own words instead
english_only=("true = not allowed" "weights per head" "max |bool - additive|" "shares storage with Q"
    "mean per token" "(not printed)" "seed:" "multi-head output" "scores grow with" "every key masked"
    "difference from the boolean mask" "by hand" "view without contiguous" "tensor memory" "weighted sum"
    "attention weights" "nearly one-hot" "largest weight" "rows mix tokens" "decoder states" "练习:"
    "tutorial:" "true:" "[plot:" " series" "scale:" "(median of 5)" "heads (H, L, D)" "  strides (" "contiguous false"
    "contiguous true")
# and labels the runner and the display print, as patterns: panel titles, column chunks, error positions
# (and mha.heads.report's kinds, layers and heads)
english_patterns=("^head [0-9]" "^columns? [0-9]" "^step [0-9]+:[0-9]+" "(^|[^_a-z])step [0-9]+:[0-9]+:"
    "^(previous|duplicate|induction)( |$)" "曲线：loss" "^layer [0-9]" "^ +h[0-9]+( h[0-9]+)*$")
for lesson in lessons/[0-9][0-9]_*.lua; do
    base=$(basename "$lesson" .lua)
    for lang in en zh; do
        name="golden_${base}_${lang}"
        want="tests/golden/$base.$lang.txt"
        "$repl" --lesson "${base%%_*}" --batch --lang "$lang" >"$out" 2>"$err" </dev/null
        echo "[exit status $?]" >>"$out"
        if [ "$update" = "--update" ]; then
            cp "$out" "$want"
            echo "PASS $name (updated)"
        elif [ ! -f "$want" ]; then
            echo "FAIL $name: no transcript $want (run make golden)"; failed=1
        elif diff -u "$want" "$out" >"$err.diff"; then
            echo "PASS $name"
        else
            echo "FAIL $name: the replay differs from $want:"; failed=1
            head -60 "$err.diff"
            [ -s "$err" ] && { echo "--- stderr:"; head -20 "$err"; }
        fi
        rm -f "$err.diff"
        # every line fits the 80 columns the transcript is wrapped to (wc -L counts a CJK character as 2)
        widest=$(head -n -1 "$out" | wc -L)
        if [ "$widest" -le 80 ]; then echo "PASS golden_width_${base}_${lang}"
        else echo "FAIL golden_width_${base}_${lang}: a line is $widest columns wide (COLUMNS=80)"; failed=1; fi
        # every step fits a projector's 80x40 screen: its header, text, code and output, and the prompt under
        # them (a step runs from its "── step" rule to the blank line before the next, or to the lesson's end;
        # the first step also below the lesson's title and summary). A pause line (a replay with text plots:
        # the pager pausing before a chart that only fits the next screen) starts a new screen.
        heights='
            function screen() { if (title != "" && n + 1 > 40) printf "%s (%d lines) ", title, n + 1 }
            function done() { screen(); title = "" }
            /^── (step [0-9]+\/|第 [0-9]+\/)/ { done(); title = $2 " " $3; n = (steps++ == 0) ? NR - 1 : 0; blank = 0 }
            /^(End of the lesson|本课结束)/ { done() }
            /^-- (more: |还有：)/ { screen(); n = 0; blank = 0; next }
            title != "" { if ($0 == "") blank++; else { n += blank + 1; blank = 0 } }
            END { done() }'
        tall=$(head -n -1 "$out" | awk "$heights")
        if [ -z "$tall" ]; then echo "PASS golden_height_${base}_${lang}"
        else echo "FAIL golden_height_${base}_${lang}: taller than 40 rows with the prompt at 80 columns: $tall"; failed=1; fi
        # and so it does with the plots drawn as text (no DISPLAY, ssh, gnuplot-nox): the replay draws them on
        # gnuplot's dumb terminal, sized as at an 80x40 terminal, instead of the one-line notes above
        MHA_PLOT_TERM=dumb "$repl" -e "assert(require('mha.lesson').start('${base%%_*}',
            {batch = true, lang = '$lang', screen_rows = 40}))" >"$out.text" 2>"$err" </dev/null
        rc=$?
        tall=$(awk "$heights" "$out.text")
        if [ "$rc" -ne 0 ]; then
            echo "FAIL golden_height_text_${base}_${lang}: the replay with text plots exited with $rc:"; failed=1
            head -20 "$err"
        elif grep -qE '^\[(plot: |图：)' "$out.text"; then
            echo "FAIL golden_height_text_${base}_${lang}: the replay printed a plot's one-line note, not the chart"
            failed=1
        elif [ -z "$tall" ]; then echo "PASS golden_height_text_${base}_${lang}"
        else
            echo "FAIL golden_height_text_${base}_${lang}: with text plots, a screen is taller than 40 rows: $tall"
            failed=1
        fi
        rm -f "$out.text"
        if [ "$lang" = zh ]; then
            found=""
            for phrase in "${english_only[@]}"; do
                grep -v '^  │' "$out" | grep -qF -- "$phrase" && found="$found \"$phrase\""
            done
            for pattern in "${english_patterns[@]}"; do
                grep -v '^  │' "$out" | grep -qE -- "$pattern" && found="$found /$pattern/"
            done
            if [ -z "$found" ]; then echo "PASS golden_zh_words_${base}"
            else echo "FAIL golden_zh_words_${base}: English labels in the Chinese transcript:$found"; failed=1; fi
        fi
        # the same lesson on every other kernel variant this CPU runs prints the same
        for isa in $isas; do
            [ "$isa" = portable ] && continue
            if MHA_ISA=$isa "$repl" --lesson "${base%%_*}" --batch --lang "$lang" 2>/dev/null </dev/null | cmp -s - <(head -n -1 "$out"); then
                echo "PASS golden_${isa}_${base}_${lang}"
            else
                echo "FAIL golden_${isa}_${base}_${lang}: the replay on the $isa kernels differs from the portable one:"
                MHA_ISA=$isa "$repl" --lesson "${base%%_*}" --batch --lang "$lang" 2>/dev/null </dev/null | diff <(head -n -1 "$out") - | head -20
                failed=1
            fi
        done
    done
done
exit $failed
