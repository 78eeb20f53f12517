#!/usr/bin/env bash
# tests/sh/test_train_pty.sh - mha.train at a terminal (a pty driven by Python's pty module): the progress line
# is rewritten in place (step, steps/s, loss, acc, ETA), and Ctrl-C stops training cleanly: the REPL stays up,
# train returns a history marked interrupted, and the model keeps its weights (its loss is the trained one, not
# the initial one). Skipped with a message when /usr/bin/python3 is absent.
set -u
cd "$(dirname "$0")/../.." || exit 2
repl=${MHA_REPL:?MHA_REPL must name the mha-repl binary}
py=/usr/bin/python3
if ! [ -x "$py" ]; then
    echo "SKIP train_pty: $py is not installed"
    exit 0
fi
out=$("$py" - "$repl" <<'PYEOF'
import os, pty, select, sys, time

repl = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.environ["MHA_REPL_HISTORY"] = "/dev/null"
    os.environ["TERM"] = "xterm"
    os.execv(repl, [repl])

buf = b""
def read_until(needle, timeout):
    global buf
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
        if needle.encode() in buf:
            return True
    return False

read_until("> ", 10)
os.write(fd, b"mha.seed(1); m = mha.nn.Transformer{vocab=20, d_model=32, heads=2, layers=2, d_ff=0, max_len=24}\r")
os.write(fd, b"t = mha.tasks.induction{vocab=20, len=24}; tk, tg = t:batch(); l0 = mha.train.loss(m:forward(tk), tg):item()\r")
os.write(fd, b"h = mha.train{model=m, task=t, steps=100000, lr=1e-2, log_every=5}\r")
read_until("steps/s", 30)
time.sleep(2.0)
os.write(fd, b"\x03")
read_until("interrupted after step", 10)
os.write(fd, b"l1 = mha.train.loss(m:forward(tk), tg):item()\r")
os.write(fd, b"print('RESULT', h.interrupted, h.steps > 5, h.steps < 100000, #h.loss > 0, l1 < l0)\r")
read_until("RESULT true", 10)
os.write(fd, b"\x04")
read_until("NEVER", 2)
sys.stdout.write(buf.decode("utf-8", "replace"))
if os.environ.get("SHOW"): sys.stderr.write(buf.decode("utf-8", "replace")[-1500:])
PYEOF
)
check() {   # check NAME PATTERN WHY
    if printf '%s' "$out" | grep -aqE "$2"; then echo "PASS $1"; else echo "FAIL $1: $3"; fi
}
check train_pty_progress 'step [0-9]+/100000 +[0-9.]+ steps/s +loss [0-9.]+ +acc +[0-9.]+% +ETA' \
      "no progress line with step, steps/s, loss, acc, ETA"
check train_pty_rewritten $'\r\e\\[Kstep' "the progress line is not rewritten in place (\\r and erase line)"
check train_pty_ctrl_c 'train: interrupted after step [0-9]+ of 100000; the model keeps what it learned' \
      "Ctrl-C did not stop training with its message"
check train_pty_kept 'RESULT[[:space:]]+true[[:space:]]+true[[:space:]]+true[[:space:]]+true[[:space:]]+true' \
      "after Ctrl-C: history not marked interrupted, or the model lost its training"
