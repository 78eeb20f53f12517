#!/bin/sh
# classroom/classroom.sh - `make classroom`: a JupyterHub for a class on this machine, in the
# foreground (Ctrl-C stops the hub, its proxy and every student's server).
#
# usage: classroom/classroom.sh [BUILD]   (as root; make classroom has installed the packages, built
# mha-repl and registered its kernel system-wide). Environment: MHA_CLASSROOM_ROSTER (the roster,
# classroom/roster.txt), MHA_CLASSROOM_STATE (the hub's files, /var/lib/mha-classroom), and the
# settings classroom/jupyterhub_config.py reads (address, TLS, limits).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$repo/$build ;; esac
state=${MHA_CLASSROOM_STATE:-/var/lib/mha-classroom}
roster=${MHA_CLASSROOM_ROSTER:-$repo/classroom/roster.txt}
export MHA_CLASSROOM_STATE="$state" MHA_CLASSROOM_ROSTER="$roster"

if [ "$(id -u)" -ne 0 ]; then
    echo "classroom: the hub starts each student's server as that student, which needs root: sudo make classroom" >&2
    exit 1
fi
if [ ! -f "$roster" ]; then
    echo "classroom: no roster at $roster: copy classroom/roster.example.txt there and list your class" >&2
    exit 2
fi

# the hub's files: the folder 0711 (students reach the notebooks below, nothing else), what the
# hub writes 0600 (umask)
umask 077
mkdir -p "$state/notebooks/en" "$state/notebooks/zh"
chmod 711 "$state"
chmod 755 "$state/notebooks" "$state/notebooks/en" "$state/notebooks/zh"

/usr/bin/python3 "$repo/classroom/accounts.py" "$roster"

# students run the kernel from this checkout: every folder on the way must let them in
if ! runuser -u nobody -- test -x "$build/mha-repl"; then
    echo "classroom: other users cannot run $build/mha-repl (a folder on its path is private):" \
         "chmod o+x the folders, or clone the repository under /opt" >&2
    exit 1
fi

# every lesson as a notebook in both languages, exported by the tool itself, again when the
# program or a lesson is newer than the last export
stamp="$state/notebooks/.exported"
if [ ! -f "$stamp" ] || [ "$build/mha-repl" -nt "$stamp" ] || [ -n "$(find "$repo/lessons" -newer "$stamp" -name '*.lua')" ]; then
    echo "classroom: exporting the lessons as notebooks (en, zh) into $state/notebooks"
    for lang in en zh; do
        for lesson in "$repo"/lessons/[0-9][0-9]_*.lua; do
            name=$(basename "$lesson" .lua)
            printf '%s %s %s\n' "${name%%_*}" "$lang" "$state/notebooks/$lang/$name.ipynb"
        done
    done | (cd "$repo" && xargs -P 2 -n 3 sh -c 'umask 022; "$0" --lesson "$1" --batch --lang "$2" --export "$3" >/dev/null' "$build/mha-repl")
    touch "$stamp"
fi

# Debian's configurable-http-proxy finds its modules (commander, http-proxy...) in
# /usr/share/nodejs: Debian's node looks there itself, another node (nodesource's, nvm's) only
# through NODE_PATH
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

cd "$state"
echo "classroom: the hub for $(grep -c '^[a-z_]' "$roster") people at ${MHA_CLASSROOM_URL:-http://127.0.0.1:8000} (Ctrl-C stops it)"
exec jupyterhub -f "$repo/classroom/jupyterhub_config.py"
