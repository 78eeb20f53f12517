"""tests/notebook/nbtest.py - what the notebook tests share: PASS/FAIL lines in tests/run.sh's format, and a
kernelspec for the mha-repl under test (found before any installed one through JUPYTER_PATH)."""
import json
import os
import tempfile

REPL = os.path.abspath(os.environ.get("MHA_REPL", "build/mha-repl"))


class Checks:
    def __init__(self, prefix):
        self.prefix, self.failures = prefix, 0

    def __call__(self, name, ok, why=""):
        if ok:
            print("PASS %s_%s" % (self.prefix, name), flush=True)
        else:
            self.failures += 1
            print("FAIL %s_%s: %s" % (self.prefix, name, why), flush=True)


def kernelspec_dir(interrupt_mode="signal"):
    """A directory to put first in JUPYTER_PATH: kernels/mha-repl/kernel.json runs REPL --kernel."""
    root = tempfile.mkdtemp(prefix="mha-kernelspec-")
    os.makedirs(os.path.join(root, "kernels", "mha-repl"))
    with open(os.path.join(root, "kernels", "mha-repl", "kernel.json"), "w") as f:
        json.dump({"argv": [REPL, "--kernel", "{connection_file}"], "display_name": "mha-repl (test)",
                   "language": "lua", "interrupt_mode": interrupt_mode}, f)
    return root
