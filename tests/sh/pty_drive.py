# tests/sh/pty_drive.py - runs a program at a pseudo-terminal of a given size and types to it, for the pty tests
# of tests/sh (through testlib.sh's pty_run); prints everything the program showed, escape sequences and all.
#
# usage: pty_drive.py ROWS COLUMNS PROGRAM [ARGS...] <STEPS
# STEPS, one a line:  send TEXT    types TEXT (\r is Enter, \x03 Ctrl-C, \x04 Ctrl-D)
#                     expect TEXT  waits until the program shows TEXT (\t a tab) after the last send, for the
#                                  patience set (10 s)
#                     patience S   waits up to S seconds in the expects that follow
#                     sleep S      lets S seconds pass, reading what comes
# An expect that times out says so on stderr and the steps go on: the test's checks of the output then fail
# with the whole transcript to read. At the end the program gets 2 s to finish before its output is printed.
import fcntl, os, pty, select, struct, sys, termios, time

rows, columns, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    os.environ.setdefault("MHA_REPL_HISTORY", "/dev/null")
    os.execv(argv[0], argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

shown = b""
since = 0   # where the output after the last send starts
def read_for(seconds, until=None):
    global shown
    end = time.time() + seconds
    while time.time() < end:
        if until is not None and until in shown[since:]:
            return True
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:   # the program ended
                break
            if not chunk:
                break
            shown += chunk
    return until is not None and until in shown[since:]

def unescaped(text):   # "\r" -> carriage return, "\x04" -> Ctrl-D; other text (Chinese too) as it is
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("utf-8")

patience = 10.0
for line in sys.stdin.read().splitlines():
    word, _, rest = line.partition(" ")
    if word == "send":
        read_for(0)
        since = len(shown)
        os.write(fd, unescaped(rest))
    elif word == "expect":
        if not read_for(patience, unescaped(rest)):
            sys.stderr.write("pty_drive: no '%s' within %g s\n" % (rest, patience))
    elif word == "patience":
        patience = float(rest)
    elif word == "sleep":
        read_for(float(rest))
    elif line.strip():
        sys.exit("pty_drive: unknown step: " + line)
read_for(2)
sys.stdout.write(shown.decode("utf-8", "replace"))
