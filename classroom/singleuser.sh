#!/bin/sh
# classroom/singleuser.sh - a student's notebook server (the hub starts it as the student): the
# lesson notebooks copied into ~/lessons/en and ~/lessons/zh, never over a file already there.
#
# Runs as the student, so a link a student put in their home cannot make root write elsewhere. A
# lesson missing from ~/lessons (a new one, or one the student deleted for a fresh copy) is copied
# at the next start.
set -u
src=${MHA_CLASSROOM_NOTEBOOKS:-}
if [ -n "$src" ] && [ -d "$src" ]; then
    for lang in en zh; do
        [ -d "$src/$lang" ] || continue
        mkdir -p "$HOME/lessons/$lang"
        for nb in "$src/$lang"/*.ipynb; do
            [ -e "$nb" ] || continue
            dest="$HOME/lessons/$lang/$(basename "$nb")"
            [ -e "$dest" ] || [ -L "$dest" ] || cp "$nb" "$dest"
        done
    done
fi
exec jupyterhub-singleuser "$@"
