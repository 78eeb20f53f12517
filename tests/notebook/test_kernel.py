"""tests/notebook/test_kernel.py - drives `mha-repl --kernel` with jupyter_client as Jupyter does: kernel_info,
execute (stream, results, tensors as HTML, plots as PNG, errors, the REPL's hints, bad UTF-8), completion,
inspect, is_complete, interrupts (signal and control message; a long matmul, a Lua loop, a coroutine), :commands,
restart, shutdown; and as an attacker or a crash would: bad, replayed and NUL-cut signatures, frames too big,
a flooded stdin, a long heartbeat, a front end killed while a cell runs.

usage: MHA_REPL=build/mha-repl /usr/bin/python3 tests/notebook/test_kernel.py   (prints PASS/FAIL lines)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import zmq
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

from nbtest import REPL, Checks, kernelspec_dir

check = Checks("kernel")


def start(**env):
    if os.environ.get("ASAN_OPTIONS"):   # freed memory a sanitizer holds would count as memory kept
        env.setdefault("ASAN_OPTIONS", os.environ["ASAN_OPTIONS"] + ":quarantine_size_mb=8")
    km = KernelManager(kernel_name="mha-repl")
    km.start_kernel(env=dict(os.environ, NO_COLOR="1", MHA_REPL_HISTORY="/dev/null", **env))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=30)
    return km, kc


def run(kc, code, timeout=30):
    """Executes code; returns the reply's content and the iopub messages [(type, content)] it caused."""
    msg_id = kc.execute(code)
    return collect(kc, msg_id, timeout)


def collect(kc, msg_id, timeout=30):
    outputs = []
    deadline = time.time() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        if msg["msg_type"] != "status":
            outputs.append((msg["msg_type"], msg["content"]))
    while True:
        reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.time()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"], outputs


def request(kc, method, *args):
    msg_id = getattr(kc, method)(*args)
    while True:
        reply = kc.get_shell_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def of_type(outputs, kind):
    return [c for t, c in outputs if t == kind]


def interrupt_test(name, km, kc, code, how, within=10):
    msg_id = kc.execute(code)
    time.sleep(1.5)
    started = time.time()
    if how == "signal":
        km.interrupt_kernel()
    else:
        kc.control_channel.send(kc.session.msg("interrupt_request", {}))
    try:
        reply, outputs = collect(kc, msg_id, timeout=max(within, 5) + 5)
    except Exception as e:  # the queue stayed empty: the cell never stopped
        check(name, False, "no reply after the interrupt (%s)" % type(e).__name__)
        return
    waited = time.time() - started
    errors = of_type(outputs, "error")
    check(name, reply["status"] == "error" and errors and "interrupted" in errors[0]["evalue"] and waited < within,
          "reply %s, errors %s, %.1f s" % (reply.get("status"), errors, waited))
    # the hint names the notebook's Interrupt, which stopped the cell, not Ctrl-C
    hint = errors[-1]["traceback"][-1] if errors else ""
    check(name + "_hint", hint.startswith("hint: Interrupt") and "Ctrl-C" not in hint, hint)


def streams_of(outputs):
    return "".join(c["text"] for c in of_type(outputs, "stream"))


def result_of(outputs):
    results = of_type(outputs, "execute_result")
    return results[0]["data"]["text/plain"] if results else None


def status_kb(pid, field):
    """A line of /proc/PID/status in kB: VmRSS (resident now), VmHWM (the peak)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def gone(pid):
    """The process has ended (a zombie nobody reaps counts: it runs no more)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def raw_socket(context, km, kind, port_name):
    """A socket of our own on one of the kernel's ports, as an attacker on 127.0.0.1 has."""
    info = km.get_connection_info()
    sock = context.socket(kind)
    sock.linger = 0
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info[port_name]))
    return sock


def execute_request(kc, code):
    return kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                              "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})


def hints_test(kc, lang):
    """The REPL's hints under a cell's value or error (mha.repl's repl.hint), in the kernel's language."""
    words = {"en": ("hint: ", "did you mean mha.softmax?"), "zh": ("提示：", "你是想写 mha.softmax 吗？")}[lang]
    run(kc, "x = mha.ones{2, 3}")
    reply, out = run(kc, "x.shape")
    # the hint alone: no execute_result "function: 0x..." above it, as at the prompt
    check("hint_method_" + lang, reply["status"] == "ok" and not of_type(out, "execute_result")
          and streams_of(out).startswith(words[0]) and "x:shape()" in streams_of(out), str(out))
    reply, out = run(kc, "y = 2\nx.shape")
    check("hint_method_last_line_" + lang, "x:shape()" in streams_of(out), str(out))
    reply, out = run(kc, "x @ x")
    errors = of_type(out, "error")
    check("hint_matmul_" + lang, reply["status"] == "error" and errors and errors[0]["traceback"][-1].startswith(words[0])
          and "x:matmul(x)" in errors[0]["traceback"][-1] and reply["traceback"] == errors[0]["traceback"], str(errors))
    reply, out = run(kc, "mha.sofmax(x, 1)")
    errors = of_type(out, "error")
    check("hint_did_you_mean_" + lang, errors and errors[0]["traceback"][-1] == words[0] + words[1], str(errors))
    # a statement shows no value, but Python's nested list made a Lua string: its hint still comes
    reply, out = run(kc, "rows = [[1, 2], [3, 4]]")
    check("hint_long_string_" + lang, reply["status"] == "ok" and not of_type(out, "execute_result")
          and streams_of(out).startswith(words[0]) and "{{1, 2}, {3, 4}}" in streams_of(out), str(out))


def hardening_tests(km, kc):
    """Messages as an attacker sends them: replayed, cut by a NUL, too big, to stdin; a long heartbeat."""
    context = zmq.Context()
    pid = km.provisioner.process.pid

    # a signed execute_request sent twice, byte for byte: the second is a replay and does not run
    frames = kc.session.serialize(execute_request(kc, "replayed = (replayed or 0) + 1"))
    shell = raw_socket(context, km, zmq.DEALER, "shell_port")
    shell.send_multipart(frames)
    answered = shell.poll(10000)
    shell.recv_multipart() if answered else None
    shell.send_multipart(frames)
    time.sleep(1.5)
    reply, out = run(kc, "replayed")
    check("replay_refused", answered and result_of(out) == "1", "answered %s, replayed = %s" % (answered, result_of(out)))

    # the header frame with a NUL and more after it, signed as if it ended at the NUL: refused
    frames = kc.session.serialize(execute_request(kc, "cut_by_nul = true"))
    frames[2] = frames[2] + b"\0, \"more\": 1}"
    shell.send_multipart(frames)
    time.sleep(1.5)
    reply, out = run(kc, "cut_by_nul == nil")
    check("nul_signature_refused", result_of(out) == "true", str(out))

    # a 100 MB frame on shell: the connection is dropped before it is taken (ZMQ_MAXMSGSIZE), the memory
    # the kernel ever held stays far below it; the kernel goes on answering
    peak = status_kb(pid, "VmHWM")
    big = context.socket(zmq.DEALER)
    big.linger = 0
    info = km.get_connection_info()
    big.connect("tcp://%s:%d" % (info["ip"], info["shell_port"]))
    big.send_multipart([b"<IDS|MSG>", b"0" * 64, b"x" * (100 << 20), b"{}", b"{}", b"{}"])
    time.sleep(3)
    grown = status_kb(pid, "VmHWM") - peak
    reply, out = run(kc, "1 + 1")
    check("big_frame_refused", grown < 50 * 1024 and result_of(out) == "2",
          "peak RSS grew %d MB, then %s" % (grown // 1024, out))
    big.close()

    # 300 messages of 1 MB on the stdin channel, which no cell reads: drained, not queued
    rss = status_kb(pid, "VmRSS")
    stdin = raw_socket(context, km, zmq.DEALER, "stdin_port")
    for _ in range(300):
        stdin.send_multipart([b"<IDS|MSG>", b"", b"y" * (1 << 20), b"{}", b"{}", b"{}"])
    time.sleep(3)
    grown = status_kb(pid, "VmRSS") - rss
    check("stdin_drained", grown < 100 * 1024, "RSS grew %d MB" % (grown // 1024))

    # the heartbeat echoes a 4 KB ping whole
    heartbeat = raw_socket(context, km, zmq.REQ, "hb_port")
    ping = os.urandom(4096)
    heartbeat.send(ping)
    pong = heartbeat.recv() if heartbeat.poll(5000) else b""
    check("heartbeat_whole", pong == ping, "%d bytes of %d came back" % (len(pong), len(ping)))
    for sock in (shell, stdin, heartbeat):
        sock.close()
    context.term()


def shutdown_test(name, code, status):
    """shutdown_request while code runs: the kernel ends on its own (not killed) within ~2 s."""
    km, kc = start()
    kc.execute(code)
    time.sleep(1)
    process = km.provisioner.process
    started = time.time()
    km.shutdown_kernel(now=False)
    took = time.time() - started
    check(name, process.returncode == status and took < 3, "exit status %s after %.1f s" % (process.returncode, took))
    kc.stop_channels()


def client(connection):
    kc = BlockingKernelClient(connection_file=connection)
    kc.load_connection_file()
    kc.start_channels()
    kc.wait_for_ready(timeout=30)
    return kc


def unsigned_test():
    """A connection file with an empty key: the kernel serves unsigned, and says so once on stderr."""
    folder = tempfile.mkdtemp(prefix="mha-unsigned-")
    connection = os.path.join(folder, "kernel.json")
    write_connection_file(connection, ip="127.0.0.1", key=b"")
    kernel = subprocess.Popen([REPL, "--kernel", connection], stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, NO_COLOR="1", MHA_REPL_HISTORY="/dev/null"))
    kc = client(connection)
    reply, out = run(kc, "1 + 2")
    kc.shutdown()
    try:
        stderr = kernel.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        kernel.kill()
        stderr = kernel.communicate()[1]
    said = [line for line in stderr.splitlines() if "not signed" in line]
    check("unsigned_said_once", result_of(out) == "3" and len(said) == 1 and len(stderr.splitlines()) == 1,
          "result %s, stderr %r" % (result_of(out), stderr))
    kc.stop_channels()
    shutil.rmtree(folder, ignore_errors=True)


def orphan_test():
    """The front end dies (kill -9) while a cell spins: the kernel, re-parented, ends within ~2 s."""
    folder = tempfile.mkdtemp(prefix="mha-orphan-")
    connection = os.path.join(folder, "kernel.json")
    write_connection_file(connection, ip="127.0.0.1", key=b"orphan-test-key")
    front = subprocess.Popen(["sh", "-c", 'NO_COLOR=1 MHA_REPL_HISTORY=/dev/null "$0" --kernel "$1" 2>/dev/null & '
                              'echo $!; wait', REPL, connection], stdout=subprocess.PIPE)
    kernel_pid = int(front.stdout.readline())
    kc = client(connection)
    kc.execute("while true do end")
    time.sleep(1)
    front.kill()
    front.wait()
    started = time.time()
    while not gone(kernel_pid) and time.time() - started < 5:
        time.sleep(0.05)
    took = time.time() - started
    ended = gone(kernel_pid)
    if not ended:
        os.kill(kernel_pid, signal.SIGKILL)
    check("orphan_ends", ended and took < 2.5, "still running after %.1f s" % took)
    kc.stop_channels()
    shutil.rmtree(folder, ignore_errors=True)


def main():
    spec = kernelspec_dir()
    os.environ["JUPYTER_PATH"] = spec + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    km, kc = start()

    info = request(kc, "kernel_info")
    check("info", info["protocol_version"] == "5.3" and info["language_info"]["name"] == "lua"
          and info["implementation"] == "mha-repl", str(info))

    reply, out = run(kc, 'print("hello", 1 + 1)\nio.write("no newline")')
    streams = "".join(c["text"] for c in of_type(out, "stream"))
    check("stream", reply["status"] == "ok" and streams == "hello\t2\nno newline", repr(streams))

    # streams go out as they are printed: the first line arrives while the cell still runs
    msg_id = kc.execute('print("first")\nlocal t = os.clock()\nwhile os.clock() - t < 2 do end\nprint("second")')
    sent, first_at = time.time(), None
    while first_at is None and time.time() - sent < 10:
        msg = kc.get_iopub_msg(timeout=10)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            first_at = time.time() - sent
    reply, out = collect(kc, msg_id)
    check("stream_live", first_at is not None and first_at < 1.5 and "second" in str(out),
          "first line after %s s" % first_at)

    reply, out = run(kc, "x = mha.tensor{{1, 2}, {3, 4}}\nx:sum():item()")
    results = of_type(out, "execute_result")
    check("result", results and results[0]["data"]["text/plain"] == "10.0"
          and results[0]["execution_count"] == reply["execution_count"], str(results))

    reply, out = run(kc, "x")
    data = (of_type(out, "execute_result") or [{"data": {}}])[0]["data"]
    check("tensor_html", "<table" in data.get("text/html", "") and "[float32 (2,2)]" in data.get("text/plain", ""),
          str(data)[:300])

    # rows and columns numbered from 1, as t[i][j] counts them (the try-out saw blank, 1, 2 for three rows)
    reply, out = run(kc, "mha.tensor{{1, 2}, {3, 4}, {5, 6}}")
    html = (of_type(out, "execute_result") or [{"data": {}}])[0]["data"].get("text/html", "")
    check("tensor_numbers", re.findall(r"<th>(.*?)</th>", html) == ["", "1", "2", "1", "2", "3"], html[:300])

    reply, out = run(kc, 'mha.show(x, {rows = {"we", "like"}, title = "X"})')
    shown = of_type(out, "display_data")
    check("show_labels", shown and "<th>like</th>" in shown[0]["data"]["text/html"]
          and shown[0]["data"]["text/plain"].startswith("X\nwe"), str(shown)[:300])

    reply, out = run(kc, "q = 1;")
    check("quiet", reply["status"] == "ok" and not of_type(out, "execute_result"), str(out))

    reply, out = run(kc, 'local function f() error("boom") end\nf()')
    errors = of_type(out, "error")
    check("error", reply["status"] == "error" and errors and errors[0]["evalue"] == "cell:1: boom"
          and "stack traceback:" in errors[0]["traceback"] and any("cell:1:" in l for l in errors[0]["traceback"][2:]),
          str(errors))

    hints_test(kc, "en")

    # bytes that are not UTF-8 reach the notebook as U+FFFD, as ipykernel's, and the cell stays ok
    reply, out = run(kc, 'print("a\\xffb")')
    check("utf8_stream", reply["status"] == "ok" and streams_of(out) == "a\ufffdb\n", "%s %r" % (reply["status"], out))
    reply, out = run(kc, '"\\xe2\\x82" .. "c"')
    check("utf8_result", reply["status"] == "ok" and result_of(out) == "\ufffdc", "%s %r" % (reply["status"], out))
    # each ill-formed sequence as Python's decode("utf-8", "replace") counts it: truncated, overlong,
    # surrogate, above U+10FFFF, a lone continuation byte; valid ones (4-byte included) kept
    tricky = b"\xe2\x82|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\x80|\xf0\x9f\x98\x80|\xe2\x82\xac|\xf1\x80\x80"
    reply, out = run(kc, "io.write('%s')" % "".join("\\x%02x" % b for b in tricky))
    check("utf8_like_python", streams_of(out) == tricky.decode("utf-8", "replace"),
          "%r, Python: %r" % (streams_of(out), tricky.decode("utf-8", "replace")))
    reply, out = run(kc, 'io.write("\\xe2")\nio.write("\\x82\\xac\\n")\nio.write("\\xe2\\x82")')
    check("utf8_cut_by_writes", streams_of(out) == "\u20ac\n\ufffd", repr(streams_of(out)))
    reply, out = run(kc, 'error("bad \\xc0\\xaf")')
    check("utf8_error", reply["status"] == "error" and reply["evalue"] == "cell:1: bad \ufffd\ufffd", str(reply))

    reply, out = run(kc, "mha.matmul(mha.ones{2, 3}, mha.ones{2, 3})")
    errors = of_type(out, "error")
    check("error_shapes", errors and "(2,3)" in errors[0]["evalue"] and "inner" in errors[0]["evalue"], str(errors))

    reply, out = run(kc, "x = = 1")
    check("syntax_error", reply["status"] == "error" and "unexpected symbol" in reply["evalue"], str(reply))

    c = request(kc, "complete", "y = mha.sof", 11)
    check("complete", "mha.softmax" in c["matches"] and c["cursor_start"] == 4 and c["cursor_end"] == 11, str(c))
    c = request(kc, "complete", "x:tra", 5)
    check("complete_method", "x:transpose" in c["matches"], str(c))
    reply, out = run(kc, "m = mha.nn.Transformer{vocab = 65, d_model = 32, heads = 2, layers = 1, max_len = 16}")
    c = request(kc, "complete", "m:gen", 5)
    check("complete_nn_method", c["matches"] == ["m:generate"] and c["cursor_start"] == 0, str(c))
    c = request(kc, "complete", "m.", 2)
    check("complete_nn_no_private", "m.generate" in c["matches"] and "m.embed" in c["matches"]
          and not any(name.startswith("m._") for name in c["matches"]), str(c))
    c = request(kc, "complete", ":les", 4)
    check("complete_command", ":lessons" in c["matches"], str(c))

    i = request(kc, "inspect", "mha.softmax(x, ", 5)
    check("inspect", i["found"] and "softmax" in i["data"]["text/plain"], str(i)[:300])
    i = request(kc, "inspect", "no_such_name_here", 3)
    check("inspect_unknown", i["status"] == "ok" and not i["found"], str(i))

    states = [request(kc, "is_complete", code)["status"] for code in
              ["for i = 1, 3 do", "x = {1,", "x = 1", "x = = 1", ":lessons"]]
    check("is_complete", states == ["incomplete", "incomplete", "complete", "invalid", "complete"], str(states))

    reply, out = run(kc, "plot.heatmap(mha.tensor{{1, 2}, {3, 4}}, {rows = {'a', 'b'}})")
    # a PNG and no SVG: nbconvert would pick an SVG and mangle it (lua/notebook/outputs.lua)
    images = [c["data"] for c in of_type(out, "display_data") if "image/png" in c["data"]]
    check("plot_png", len(images) == 1 and images[0]["image/png"].startswith("iVBORw0KGgo")
          and "image/svg+xml" not in images[0] and images[0]["text/plain"] == "figure 1", str(out)[:300])

    reply, out = run(kc, ":lessons")
    streams = "".join(c["text"] for c in of_type(out, "stream"))
    check("command_lessons", "multihead" in streams, streams[:200])
    reply, out = run(kc, ":open 2")
    reply2, out2 = run(kc, ":next")
    text = "".join(c["text"] for c in of_type(out + out2, "stream"))
    check("command_lesson_steps", "1/" in text and "2/" in text, text[:300])

    interrupt_test("interrupt_matmul", km, kc, "big = mha.randn{3000, 3000}\nfor i = 1, 100 do big:matmul(big) end",
                   "signal")
    interrupt_test("interrupt_lua_loop", km, kc, "n = 0\nwhile true do n = n + 1 end", "signal")
    interrupt_test("interrupt_message", km, kc, "while true do end", "message")
    interrupt_test("interrupt_coroutine_message", km, kc, "coroutine.wrap(function() while true do end end)()",
                   "message", within=1)
    interrupt_test("interrupt_coroutine_signal", km, kc,
                   "co = coroutine.create(function() while true do end end)\nassert(coroutine.resume(co))",
                   "signal", within=1)
    # mha.generate returns what it wrote when interrupted; a loop of it stops at its next turn
    run(kc, 'm, extra = mha.load_model("char_en")\nturns = 0')
    interrupt_test("interrupt_generate_loop", km, kc,
                   'for i = 1, 60 do turns = i; mha.generate(m, extra.tokenizer, "The ", '
                   '{max_new_tokens = 4000, stream = false}) end', "signal", within=3)
    reply, out = run(kc, "turns < 60")
    check("interrupt_generate_loop_stopped", of_type(out, "execute_result")
          and of_type(out, "execute_result")[0]["data"]["text/plain"] == "true", str(out))
    # one statement: the cell ends as at the prompt, s keeps the text, and the text came as a stream
    msg_id = kc.execute('s = mha.generate(m, extra.tokenizer, "The ", {max_new_tokens = 100000})')
    time.sleep(1.5)
    km.interrupt_kernel()
    reply, out = collect(kc, msg_id, timeout=10)
    streamed = streams_of(out)
    check("interrupt_generate_statement", reply["status"] == "ok" and streamed.startswith("The ")
          and len(streamed) > 20, "reply %s, streamed %r" % (reply, streamed[:80]))
    reply, out = run(kc, "#s > 20 and s:sub(1, 4) == 'The '")
    check("interrupt_generate_statement_kept", of_type(out, "execute_result")
          and of_type(out, "execute_result")[0]["data"]["text/plain"] == "true", str(out))
    reply, out = run(kc, "n > 0")
    check("after_interrupt", of_type(out, "execute_result") and
          of_type(out, "execute_result")[0]["data"]["text/plain"] == "true", str(out))

    # a message signed with another key is refused: no reply, no execution; the next good one runs
    bad = Session(key=b"not-the-key", username="intruder")
    bad.send(kc.shell_channel.socket, "execute_request",
             {"code": "hacked = 1", "silent": False, "store_history": True, "user_expressions": {},
              "allow_stdin": False, "stop_on_error": True})
    time.sleep(1.0)
    reply, out = run(kc, "hacked == nil")
    check("bad_signature_refused", of_type(out, "execute_result")
          and of_type(out, "execute_result")[0]["data"]["text/plain"] == "true", str(out))

    hardening_tests(km, kc)

    # :reset in a cell: a fresh state in the same kernel, which an interrupt still only interrupts
    reply, out = run(kc, ":reset")
    reply, out = run(kc, "n == nil")
    check("reset_command", of_type(out, "execute_result")
          and of_type(out, "execute_result")[0]["data"]["text/plain"] == "true", str(out))
    interrupt_test("interrupt_after_reset", km, kc, "while true do end", "signal")
    reply, out = run(kc, 'io.read("l")')
    check("stdin_reads_nothing", reply["status"] == "ok" and of_type(out, "execute_result")
          and of_type(out, "execute_result")[0]["data"]["text/plain"] == "nil", str(out))

    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=30)
    reply, out = run(kc, "x == nil")
    check("restart", reply["status"] == "ok" and of_type(out, "execute_result")[0]["data"]["text/plain"] == "true",
          str(out))

    process = km.provisioner.process if km.provisioner else None
    km.shutdown_kernel(now=False)
    code = process.returncode if process else None
    check("shutdown", not km.is_alive() and code == 0, "exit status %s" % code)
    kc.stop_channels()

    km, kc = start(MHA_LANG="zh")
    hints_test(kc, "zh")
    km.shutdown_kernel(now=False)
    kc.stop_channels()
    shutdown_test("shutdown_coroutine", "coroutine.wrap(function() while true do end end)()", 0)
    # a cell that catches the interrupt gets a second, then the kernel ends anyway (status 1)
    shutdown_test("shutdown_stubborn_cell", "while true do pcall(function() while true do end end) end", 1)
    orphan_test()
    unsigned_test()

    shutil.rmtree(spec, ignore_errors=True)
    print("%d failed" % check.failures)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
