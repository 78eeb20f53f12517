#!/usr/bin/env bash
# tests/sh/test_notebook.sh - the Jupyter kernel and the notebook export checked by Jupyter's own tools
# (tests/notebook/*.py: jupyter_client, nbformat, nbconvert) and headless Chromium; each part is skipped, saying
# so, when what it needs is not installed (tools/deps.sh notebook installs it all): the kernel's tests need
# python3 and jupyter_client alone. usage: MHA_REPL=build/mha-repl bash tests/sh/test_notebook.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
repl=${MHA_REPL:-build/mha-repl}
export MHA_REPL=$repl PYDEVD_DISABLE_FILE_VALIDATION=1
python=/usr/bin/python3

# missing_of MODULE... : the Debian packages missing for these Python modules (python3 itself first)
missing_of() {
    [ -x "$python" ] || { echo " python3"; return; }
    local module
    for module in "$@"; do "$python" -c "import $module" 2>/dev/null || printf ' python3-%s' "${module/_/-}"; done
}

kernel_missing=$(missing_of jupyter_client)
export_missing=$(missing_of jupyter_client nbformat nbconvert)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || export_missing="$export_missing chromium"
if [ -n "$kernel_missing" ] && [ -n "$export_missing" ]; then
    echo "skipped: the notebook tests need$export_missing (tools/deps.sh notebook installs them)"
    exit 0
fi
if [ ! -x "$repl" ]; then echo "FAIL notebook: $repl is not built"; exit 1; fi

status=0
if [ -n "$kernel_missing" ]; then
    echo "skipped: the kernel's tests need$kernel_missing (tools/deps.sh notebook installs it)"
else
    "$python" -Xfrozen_modules=off tests/notebook/test_kernel.py 2>/dev/null | grep -E '^(PASS|FAIL|skipped)' || status=1
fi
if [ -n "$export_missing" ]; then
    echo "skipped: the export's tests need$export_missing (tools/deps.sh notebook installs them)"
else
    "$python" -Xfrozen_modules=off tests/notebook/test_export.py ${NOTEBOOK_QUICK:+--quick} 2>/dev/null \
        | grep -E '^(PASS|FAIL|skipped)' || status=1
    # plots in nbconvert and the classic notebook, an exported lesson's exercise answered in the kernel
    "$python" -Xfrozen_modules=off tests/notebook/test_clients.py 2>/dev/null | grep -E '^(PASS|FAIL|skipped)' || status=1
fi
exit $status
