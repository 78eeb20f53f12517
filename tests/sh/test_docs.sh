#!/usr/bin/env bash
# tests/sh/test_docs.sh - the manual stays true to the code: the API reference (docs/api.md, api.zh.md) is
# what the help entries generate (make docs), README's layout map names every tracked file of core/ and
# lua/, every link of README.md and docs/*.md to a file of the repository leads to one, and README stays an
# index of at most 250 lines.
set -u
cd "$(dirname "$0")/../.." || exit 2
source tests/sh/testlib.sh
repl=${MHA_REPL:?MHA_REPL must name the mha-repl binary}
fails=0

for lang in en zh; do
    file=docs/api.md; [ "$lang" = zh ] && file=docs/api.zh.md
    if COLUMNS=100 "$repl" tools/api_docs.lua "$lang" | diff -u "$file" - >/tmp/docs_api_$$.diff 2>&1; then
        pass "docs_api_$lang: $file is what the help entries generate"
    else
        fail "docs_api_$lang" "$file differs from the help entries (run make docs): $(head -c 600 /tmp/docs_api_$$.diff)"
    fi
    rm -f /tmp/docs_api_$$.diff
done

# the layout map: the fenced block under README's "## Layout"
map=$(awk '/^## Layout/{on=1} on && /^```/{n++; next} on && n==1' README.md)
missing=""
for f in $(git ls-files core lua); do
    d=$(dirname "$f"); b=$(basename "$f")
    # the folder's line starts with "DIR/", its files follow on indented lines until the next folder
    printf '%s\n' "$map" | awk -v dir="$d/" -v file="$b" '
        index($0, dir) == 1 { on = 1; next }
        /^[^ ]/ { on = 0 }
        on { for (i = 1; i <= NF; i++) if ($i == file) found = 1 }
        END { exit !found }' || missing="$missing $f"
done
if [ -z "$missing" ]; then pass "docs_layout_map: README's layout names every tracked file of core/ and lua/"
else fail "docs_layout_map" "README's layout map misses:$missing"; fi

# links to files of the repository (not http, not mailto, not an anchor alone) lead somewhere
dead=""
for doc in README.md docs/*.md; do
    dir=$(dirname "$doc")
    for target in $(grep -o '](\([^)#]*\)\(#[^)]*\)\?)' "$doc" | sed 's/^](//; s/)$//; s/#.*//' | grep -v '^[a-z]*:' | grep -v '^$'); do
        [ -e "$dir/$target" ] || dead="$dead $doc->$target"
    done
done
if [ -z "$dead" ]; then pass "docs_links: every link to a file of the repository leads to one"
else fail "docs_links" "dead links:$dead"; fi

lines=$(wc -l < README.md)
if [ "$lines" -le 250 ]; then pass "docs_readme_index: README.md is an index of $lines lines (at most 250)"
else fail "docs_readme_index" "README.md has $lines lines; the manual belongs in docs/ (at most 250)"; fi

[ "$fails" -eq 0 ]
