#!/usr/bin/env bash
# tests/sh/test_notebook.sh - the Jupyter kernel and the notebook export checked by Jupyter's own tools
# (tests/notebook/*.py: jupyter_client, nbformat, nbconvert) and headless Chromium; skipped, saying so, when they
# are not installed (tools/deps.sh notebook installs them). usage: MHA_REPL=build/mha-repl bash tests/sh/test_notebook.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
repl=${MHA_REPL:-build/mha-repl}
export MHA_REPL=$repl PYDEVD_DISABLE_FILE_VALIDATION=1
python=/usr/bin/python3

missing=""
[ -x "$python" ] || missing="$missing python3"
for module in jupyter_client nbformat nbconvert; do
    [ -x "$python" ] && "$python" -c "import $module" 2>/dev/null || missing="$missing python3-${module/_/-}"
done
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing="$missing chromium"
if [ -n "$missing" ]; then
    echo "skipped: the notebook tests need$missing (tools/deps.sh notebook installs them)"
    exit 0
fi
if [ ! -x "$repl" ]; then echo "FAIL notebook: $repl is not built"; exit 1; fi

status=0
"$python" -Xfrozen_modules=off tests/notebook/test_kernel.py 2>/dev/null | grep -E '^(PASS|FAIL|skipped)' || status=1
"$python" -Xfrozen_modules=off tests/notebook/test_export.py ${NOTEBOOK_QUICK:+--quick} 2>/dev/null \
    | grep -E '^(PASS|FAIL|skipped)' || status=1
exit $status
