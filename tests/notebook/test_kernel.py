"""tests/notebook/test_kernel.py - drives `mha-repl --kernel` with jupyter_client as Jupyter does: kernel_info,
execute (stream, results, tensors as HTML, plots as SVG, errors), completion, inspect, is_complete, interrupts
(signal and control message; a long matmul and a Lua loop), a bad signature refused, :commands, restart, shutdown.

usage: MHA_REPL=build/mha-repl /usr/bin/python3 tests/notebook/test_kernel.py   (prints PASS/FAIL lines)
"""
import os
import re
import shutil
import sys
import time

from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

from nbtest import Checks, kernelspec_dir

check = Checks("kernel")


def start():
    km = KernelManager(kernel_name="mha-repl")
    km.start_kernel(env=dict(os.environ, NO_COLOR="1", MHA_REPL_HISTORY="/dev/null"))
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


def interrupt_test(name, km, kc, code, how):
    msg_id = kc.execute(code)
    time.sleep(1.5)
    started = time.time()
    if how == "signal":
        km.interrupt_kernel()
    else:
        kc.control_channel.send(kc.session.msg("interrupt_request", {}))
    try:
        reply, outputs = collect(kc, msg_id, timeout=20)
    except Exception as e:  # the queue stayed empty: the cell never stopped
        check(name, False, "no reply after the interrupt (%s)" % type(e).__name__)
        return
    waited = time.time() - started
    errors = of_type(outputs, "error")
    check(name, reply["status"] == "error" and errors and "interrupted" in errors[0]["evalue"] and waited < 10,
          "reply %s, errors %s, %.1f s" % (reply.get("status"), errors, waited))


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

    reply, out = run(kc, "mha.matmul(mha.ones{2, 3}, mha.ones{2, 3})")
    errors = of_type(out, "error")
    check("error_shapes", errors and "(2,3)" in errors[0]["evalue"] and "inner" in errors[0]["evalue"], str(errors))

    reply, out = run(kc, "x = = 1")
    check("syntax_error", reply["status"] == "error" and "unexpected symbol" in reply["evalue"], str(reply))

    c = request(kc, "complete", "y = mha.sof", 11)
    check("complete", "mha.softmax" in c["matches"] and c["cursor_start"] == 4 and c["cursor_end"] == 11, str(c))
    c = request(kc, "complete", "x:tra", 5)
    check("complete_method", "x:transpose" in c["matches"], str(c))
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

    shutil.rmtree(spec, ignore_errors=True)
    print("%d failed" % check.failures)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
