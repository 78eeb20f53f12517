"""tests/notebook/test_clients.py - a class's notebooks in the Jupyter clients Debian has: plots (plot.heatmap,
plot.heads, mha.show_attention{plot = true}, mha.train's curve) through nbconvert --execute and the classic
notebook server run by headless Chromium; through jupyter_client, the REPL's hints for a student's Python habits
and `help` alone in a cell, and an exported lesson's exercise answered wrong and right, in English and Chinese.

usage: MHA_REPL=build/mha-repl /usr/bin/python3 tests/notebook/test_clients.py   (prints PASS/FAIL lines)
JupyterLab is not in Debian 12 (only python3-jupyterlab-server and -pygments), so it is not tested here.
"""
import base64
from collections import Counter
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import nbformat

from nbtest import REPL, Checks, kernelspec_dir

check = Checks("clients")
# the kernelspec of the mha-repl under test, before any installed one: for the kernels started here
# (jupyter_client reads os.environ) and for nbconvert's and the notebook server's
os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in [kernelspec_dir(), os.environ.get("JUPYTER_PATH")] if p)
ENV = dict(os.environ, NO_COLOR="1", MHA_REPL_HISTORY="/dev/null", PYDEVD_DISABLE_FILE_VALIDATION="1")

# One cell for each way a student draws; each must show one PNG.
PLOT_CELLS = [
    "plot.heatmap(mha.tensor{{1, 2}, {3, 4}}, {rows = {'a', 'b'}})",
    "mha.seed(1)\nplot.heads(mha.softmax(mha.randn{2, 4, 4}, 3))",
    "mha.show_attention(mha.softmax(mha.randn{2, 5, 5}, 3), 'hello', {plot = true})",
    "m = mha.nn.Transformer{vocab = 6, d_model = 16, heads = 2, max_len = 6}\n"
    "t = mha.tasks.reverse{vocab = 6, len = 3}\n"
    "h = mha.train{model = m, task = t, steps = 20, log_every = 5, plot = true, seed = 1};",
]


def plot_notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "mha-repl", "display_name": "mha-repl (test)", "language": "lua"}
    nb.cells = [nbformat.v4.new_code_cell(code) for code in PLOT_CELLS]
    nbformat.write(nb, path)


def nbconvert_plots(tmp):
    """jupyter nbconvert --execute --to html: every plotting cell's PNG is an <img> in the page."""
    source = os.path.join(tmp, "plots.ipynb")
    plot_notebook(source)
    r = subprocess.run(["jupyter", "nbconvert", "--execute", "--to", "html", "--output",
                        os.path.join(tmp, "plots_nbconvert.html"), source],
                       env=ENV, capture_output=True, timeout=300)
    if r.returncode != 0:
        check("nbconvert_execute_plots", False, r.stderr.decode("utf-8", "replace")[-400:])
        return
    page = open(os.path.join(tmp, "plots_nbconvert.html"), encoding="utf-8").read()
    images = page.count('<img src="data:image/png;base64,iVBORw0KGgo')
    check("nbconvert_execute_plots", images == len(PLOT_CELLS) and 'data-mime-type="image/svg+xml"' not in page,
          "%d PNG <img> for %d plotting cells" % (images, len(PLOT_CELLS)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            return urllib.request.urlopen(url, timeout=2).read()
        except OSError:
            time.sleep(0.3)
    return None


class Page:
    """A headless Chromium page driven through the DevTools protocol (python3-websocket)."""

    def __init__(self, websocket, chromium, url, profile):
        self.process = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                         "--disable-background-networking", "--disable-component-update",
                                         "--no-first-run", "--user-data-dir=" + profile,
                                         "--remote-debugging-port=0", "--window-size=1000,2400", url],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and open(port_file).read().strip()) and time.time() < deadline:
            time.sleep(0.2)
        port = open(port_file).read().split()[0]
        targets = json.loads(wait_for("http://127.0.0.1:%s/json" % port, 30))
        target = [t for t in targets if t["type"] == "page"][0]
        self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                return message.get("result", {})

    def eval(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def until(self, expression, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.5)
        return None

    def close(self):
        try:
            self.ws.close()
        finally:
            self.process.kill()
            self.process.wait()


def classic_notebook(tmp):
    """The classic notebook server (jupyter-notebook 6) with Chromium: open the plots' notebook, run all,
    every cell shows its PNG (loaded, not broken), no error; the screenshot is left in tmp."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not shutil.which("jupyter-notebook") or not chromium:
        print("skipped: the classic notebook's test needs jupyter-notebook and chromium")
        return
    try:
        import websocket
    except ImportError:
        print("skipped: the classic notebook's test needs python3-websocket to drive Chromium")
        return
    root = os.path.join(tmp, "server")
    os.makedirs(root)
    plot_notebook(os.path.join(root, "plots.ipynb"))
    port, token = free_port(), "mha-test-token"
    env = dict(ENV, JUPYTER_RUNTIME_DIR=os.path.join(tmp, "runtime"), JUPYTER_CONFIG_DIR=os.path.join(tmp, "config"),
               JUPYTER_DATA_DIR=os.path.join(tmp, "data"))
    log = open(os.path.join(tmp, "notebook_server.log"), "w")
    server = subprocess.Popen(["jupyter-notebook", "--no-browser", "--ip=127.0.0.1", "--port=%d" % port,
                               "--port-retries=0", "--NotebookApp.token=" + token,
                               "--notebook-dir=" + root] + (["--allow-root"] if os.geteuid() == 0 else []),
                              env=env, stdout=log, stderr=log)
    page = None
    try:
        base = "http://127.0.0.1:%d" % port
        if wait_for("%s/api/status?token=%s" % (base, token), 60) is None:
            check("classic_notebook_plots", False, "the notebook server did not start (see %s)" % log.name)
            return
        page = Page(websocket, chromium, "%s/notebooks/plots.ipynb?token=%s" % (base, token),
                    os.path.join(tmp, "chromium"))
        ready = page.until("typeof Jupyter !== 'undefined' && Jupyter.notebook && Jupyter.notebook.kernel"
                           " && Jupyter.notebook.kernel.is_connected()", 90)
        if not ready:
            check("classic_notebook_plots", False, "the notebook's kernel did not connect")
            return
        page.eval("Jupyter.notebook.execute_all_cells()")
        done = page.until("Jupyter.notebook.get_cells().every(c => c.get_text() === '' ||"
                          " (c.input_prompt_number !== '*' && c.input_prompt_number !== undefined"
                          " && c.input_prompt_number !== null))"
                          " && document.querySelectorAll('.output_png img').length >= %d" % len(PLOT_CELLS), 240)
        images = page.eval("Array.from(document.querySelectorAll('.output_png img'))"
                           ".map(i => [i.complete, i.naturalWidth, i.src.slice(0, 22)])") or []
        errors = page.eval("document.querySelectorAll('.output_error').length")
        # the window is taller than the page: a capture beyond the viewport would clip CodeMirror's lines
        shot = page.call("Page.captureScreenshot", format="png")
        png = os.path.join(tmp, "classic_notebook.png")
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot.get("data", "")))
        check("classic_notebook_plots", done and errors == 0 and len(images) == len(PLOT_CELLS)
              and all(ok and width > 100 and src == "data:image/png;base64," for ok, width, src in images),
              "images %s, error outputs %s" % (images, errors))
    finally:
        if page:
            page.close()
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def kernel_outputs(kc, code, timeout=120):
    """Runs code in the kernel: the reply's status and the cell's outputs' text (streams, results, errors)."""
    msg_id = kc.execute(code)
    texts, deadline = [], time.time() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            break
        if kind == "stream":
            texts.append(content["text"])
        elif kind == "execute_result":
            texts.append(content["data"]["text/plain"] + "\n")
        elif kind == "error":
            texts.append("\n".join(content["traceback"]) + "\n")
    while True:
        reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.time()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]["status"], "".join(texts)


def words(text):
    return " ".join(text.split())


def exercise_in_kernel(tmp, lang):
    """Lesson 4's notebook, exported in lang, run in the kernel through jupyter_client; its exercise cell
    answered wrong, then right: each says what the REPL says to the same answer, in lang."""
    from jupyter_client.manager import KernelManager
    source = os.path.join(tmp, "lesson4_%s.ipynb" % lang)
    subprocess.run([REPL, "--lesson", "4", "--batch", "--lang", lang, "--export", source], env=ENV,
                   capture_output=True, timeout=120, check=True)
    answers = os.path.join(tmp, "answers_%s.txt" % lang)
    with open(answers, "w") as f:
        f.write("%s\n%s\n" % (WRONG, RIGHT))
    batch = subprocess.run([REPL, "--lesson", "4", "--batch", "--lang", lang, "--answers", answers], env=ENV,
                           capture_output=True, timeout=120).stdout.decode("utf-8")
    said = batch.split(":answer ")[1:]   # what the REPL said to each answer, after the answer's line
    repl_wrong, repl_right = (words(s.split("\n", 1)[1]) for s in said[:2])
    repl_right = repl_right.split(" ")[0]
    not_yet, correct = {"en": ("not yet:", "correct"), "zh": ("还不对：", "正确")}[lang]
    nb = nbformat.read(source, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    exercise = [i for i, c in enumerate(code) if c.startswith("exercise(")]
    if not exercise:
        check("exercise_cell_" + lang, False, "no exercise( cell in %s" % code)
        return
    first_line = code[exercise[0]].split("\n")[0]
    km = KernelManager(kernel_name="mha-repl")
    km.start_kernel(env=ENV)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        failed = [c[:40] for c in code[:exercise[0]] if kernel_outputs(kc, c)[0] != "ok"]
        check("exercise_cells_before_" + lang, not failed, str(failed))
        status, wrong = kernel_outputs(kc, "%s\nanswer(%s)" % (first_line, WRONG))
        check("exercise_wrong_" + lang, status == "ok" and words(wrong) == repl_wrong + " false"
              and wrong.startswith(not_yet),
              repr((wrong, repl_wrong)))
        status, right = kernel_outputs(kc, "answer(%s)" % RIGHT)
        check("exercise_right_" + lang, status == "ok" and words(right) == repl_right + " true"
              and repl_right == correct,
              repr((right, repl_right)))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# A student's Python habits and misspellings (mha.repl.habits): the REPL's hint under each
HABITS = ["len(x)", "x:tranpose(1, 2)", "exit()", "quit", "A = x:sum() A", "mha.nn.Linaer", "x.data", "x.shape",
          "x.T", "y = x * x:T()", "x @ x", "mha.sofmax(x, 1)", "hepl", ":lesons", "True", "x.data:shape()",
          "mha.cross_entropy(x, {1, 0})", "import torch", "x[0]"]
# quit and exit() end the REPL with :quit or Ctrl-D, a notebook from its Kernel menu: the kernel's hint says so
NOTEBOOK_END = {"en": "hint: a notebook ends from its Kernel menu (Shut Down), or by closing its tab; "
                      "Kernel > Restart starts afresh",
                "zh": "提示：笔记本用“内核”菜单的“关闭内核”（Shut Down）结束，或关闭它的标签页；“重启内核”重新开始"}


def hint_lines(text, lang):
    mark = {"en": ("hint: ", "unknown command"), "zh": ("提示：", "没有命令")}[lang]
    return [line for line in text.split("\n") if line.startswith(mark)]


def hints_as_repl(lang):
    """Each habit in HABITS gets in a kernel cell the hint the REPL (-i, MHA_LANG=lang) prints for it, but
    quit and exit() the notebook's (NOTEBOOK_END)."""
    from jupyter_client.manager import KernelManager
    env = dict(ENV, MHA_LANG=lang, COLUMNS="1000")
    km = KernelManager(kernel_name="mha-repl")
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    differ = []
    try:
        kc.wait_for_ready(timeout=30)
        kernel_outputs(kc, "x = mha.randn{2, 3}")
        # `help` alone shows the help, as the REPL does
        r = subprocess.run([REPL, "-i"], input=b"x = mha.randn{2, 3}\nhelp\n", env=env, capture_output=True, timeout=30)
        status, text = kernel_outputs(kc, "help")
        # laid out for the kernel's width: the same words, maybe in other columns
        repl_help = r.stdout.decode("utf-8")
        check("bare_help_" + lang, status == "ok" and sorted(text.split()) == sorted(repl_help.split())
              and "function: 0x" not in text, repr((Counter(text.split()) - Counter(repl_help.split()), Counter(repl_help.split()) - Counter(text.split()))))
        for typed in HABITS:
            r = subprocess.run([REPL, "-i"], input=("x = mha.randn{2, 3}\n%s\n" % typed).encode(), env=env,
                               capture_output=True, timeout=30)
            repl = hint_lines(r.stdout.decode("utf-8") + r.stderr.decode("utf-8"), lang)
            kernel = hint_lines(kernel_outputs(kc, typed)[1], lang)
            want = [NOTEBOOK_END[lang]] if typed in ("exit()", "quit") else repl
            if not repl or kernel != want:
                differ.append((typed, repl, kernel))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    check("hints_as_repl_" + lang, not differ, repr(differ))


WRONG, RIGHT = "1 / math.sqrt(768)", "1 / math.sqrt(768 / 12)"   # lesson 4's exercise: the scale of BERT-base


def main():
    tmp = tempfile.mkdtemp(prefix="mha-clients-")
    for lang in ("en", "zh"):
        hints_as_repl(lang)
        exercise_in_kernel(tmp, lang)
    nbconvert_plots(tmp)
    classic_notebook(tmp)
    if check.failures == 0 and not os.environ.get("MHA_KEEP"):
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("kept: %s" % tmp)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
