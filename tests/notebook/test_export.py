"""tests/notebook/test_export.py - the notebook export: every lesson's .ipynb (en and zh) is valid nbformat 4.4 with
the kernelspec mha-repl and its outputs are those of the batch transcript (tests/golden/); lessons re-executed
by nbconvert in the kernel give the same outputs; the HTML export is one self-contained page that headless
Chromium renders without console errors, every SVG in place; a session's notebook in a lesson re-runs
without errors, its answers as in the session.

usage: MHA_REPL=build/mha-repl /usr/bin/python3 tests/notebook/test_export.py [--quick]   (PASS/FAIL lines)
--quick re-executes one lesson instead of two.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import nbformat

from nbtest import REPL, Checks, kernelspec_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, NO_COLOR="1", LC_ALL="C.UTF-8", MHA_REPL_HISTORY="/dev/null", COLUMNS="80",
           MHA_ISA="portable", PYDEVD_DISABLE_FILE_VALIDATION="1")
for name in ("MHA_LANG", "LANG", "MHA_LESSONS"):
    ENV.pop(name, None)
check = Checks("export")


def export(number, lang, path):
    r = subprocess.run([REPL, "--lesson", str(number), "--batch", "--lang", lang, "--export", path],
                       env=ENV, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    return r.returncode, r.stderr.decode("utf-8", "replace")


def pieces(nb):
    """The outputs of the code cells as comparable text: streams, the text of tables, errors, figures."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.outputs:
            if o.output_type == "stream":
                out.append(("stream", o.text))
            elif o.output_type == "error":
                out.append(("error", o.evalue))
            elif "image/png" in o.data:
                out.append(("figure", "png" if o.data["image/png"].startswith("iVBORw0KGgo") else "broken png"))
            else:
                out.append((o.output_type, o.data.get("text/plain", ""), o.data.get("text/html", "")))
    return out


def chunk_names(text):
    """Error positions without the chunk: a notebook cell is "cell:3:", a batch step its lesson file's line."""
    text = re.sub(r"\b(?:cell|step \d+|\d\d_\w+\.lua):\d+:", "<chunk>:", text)
    return re.sub(r"\s+", " ", text)   # a message with a longer chunk name wraps elsewhere


def in_transcript(nb, transcript):
    """Every printed text of the notebook, in order, in the batch transcript. Returns the first missing one."""
    transcript = chunk_names(transcript)
    pos = 0
    for piece in pieces(nb):
        if piece[0] in ("figure",):
            continue
        text = chunk_names(piece[1]).strip()
        found = transcript.find(text, pos)
        if found < 0:
            return text
        pos = found + len(text)
    return None


def validation_error(nb):
    """None when nb is valid nbformat, else the start of why not."""
    try:
        nbformat.validate(nb)
        return None
    except nbformat.ValidationError as e:
        return str(e)[:300]


def nbconvert_html(notebook):
    """jupyter nbconvert --to html, as a user runs it (no flags): the page's text, or None and why."""
    page = notebook[:-len(".ipynb")] + ".nbconvert.html"
    r = subprocess.run(["jupyter", "nbconvert", "--to", "html", "--output", page, notebook],
                       env=ENV, capture_output=True, timeout=120)
    if r.returncode != 0:
        return None, r.stderr.decode("utf-8", "replace")[-400:]
    return open(page, encoding="utf-8").read(), page


def screenshot(page, png):
    """Headless Chromium's picture of a page (optional: False when there is no chromium)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        return False
    profile = tempfile.mkdtemp(prefix="mha-chromium-")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--no-first-run", "--user-data-dir=" + profile,
                    "--window-size=1000,1600", "--screenshot=" + png, "file://" + page],
                   capture_output=True, timeout=120)
    shutil.rmtree(profile, ignore_errors=True)
    return os.path.exists(png) and os.path.getsize(png) > 10000


def html_by_nbconvert(tmp):
    """A lesson's notebook through nbconvert's HTML with no flags: its plot is the PNG (Debian's nbconvert
    passes an SVG through lxml's clean_html, which leaves a blank)."""
    source = os.path.join(tmp, "08_multihead_zh.ipynb")
    if not os.path.exists(source):
        return
    nb = nbformat.read(source, as_version=4)
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    check("lesson_plot_png_only", figures and all("image/svg+xml" not in o.data for o in figures), str(figures)[:200])
    page, why = nbconvert_html(source)
    check("lesson_nbconvert_png", page is not None and '<img src="data:image/png;base64,iVBORw0KGgo' in page
          and 'data-mime-type="image/svg+xml"' not in page, why if page is None else "no PNG <img> in the page")
    if page is not None:
        shot = os.path.join(tmp, "08_zh.png")
        if screenshot(why, shot):
            check("lesson_nbconvert_chromium", True)


def session_export(tmp):
    """:export of a session in a terminal without a window: a value and show() as tables, a heat map (drawn
    as text at the terminal) as a PNG, in nbconvert's HTML too."""
    target = os.path.join(tmp, "session.ipynb")
    env = dict(ENV)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "MHA_PLOT_TERM"):
        env.pop(name, None)
    typed = ("t = mha.tensor{{1, 2}, {3, 4}}\nt\nmha.show(t, {rows = {'<a>', 'b'}})\nplot.heatmap(t, {title = 'H'})\n"
             ":export %s\n" % target)
    r = subprocess.run([REPL, "-i", "/dev/null"], input=typed.encode(), env=env, capture_output=True, timeout=120,
                       cwd=ROOT)
    said = r.stdout.decode("utf-8", "replace")
    check("session_written", r.returncode == 0 and "wrote the session to" in said and os.path.exists(target),
          said[-300:] + r.stderr.decode("utf-8", "replace")[-300:])
    if not os.path.exists(target):
        return
    nb = nbformat.read(target, as_version=4)
    valid = validation_error(nb)
    check("session_valid", valid is None, valid)
    kinds = [(c.source, [(o.output_type, sorted(o.get("data", {}))) for o in c.outputs])
             for c in nb.cells if c.cell_type == "code"]
    check("session_rich", kinds[1:] == [
        ("t", [("execute_result", ["text/html", "text/plain"])]),
        ("mha.show(t, {rows = {'<a>', 'b'}})", [("display_data", ["text/html", "text/plain"])]),
        ("plot.heatmap(t, {title = 'H'})", [("display_data", ["image/png", "text/plain"])])], str(kinds))
    page, why = nbconvert_html(target)
    check("session_nbconvert", page is not None and '<img src="data:image/png;base64,iVBORw0KGgo' in page
          and page.count('class="mha-tensor"') == 2 and "<th>&lt;a&gt;</th>" in page,
          why if page is None else "no PNG or tables in the page")
    if page is not None:
        screenshot(why, os.path.join(tmp, "session.png"))


def text_of(cell):
    """What a code cell printed as one text: streams and values (a value as the REPL prints it, on a line)."""
    out = ""
    for o in cell.outputs:
        if o.output_type == "stream":
            out += o.text
        elif o.output_type == "error":
            out += "error: " + o.evalue + "\n"
        else:
            out += o.get("data", {}).get("text/plain", "") + "\n"
    return out


def session_in_lesson(tmp, name, typed):
    """The code cells of the notebook :export writes after typed (the REPL's input), or None."""
    target = os.path.join(tmp, name + ".ipynb")
    typed += ":export %s\n" % target
    r = subprocess.run([REPL, "-i", "/dev/null"], input=typed.encode(), env=ENV, capture_output=True, timeout=120,
                       cwd=ROOT)
    said = r.stdout.decode("utf-8", "replace")
    check(name + "_written", r.returncode == 0 and os.path.exists(target), said[-300:])
    if not os.path.exists(target):
        return None, target
    return [c for c in nbformat.read(target, as_version=4).cells if c.cell_type == "code"], target


def executed_cells(target):
    """The code cells of target executed by nbconvert in the kernel (errors allowed), or None and why."""
    executed = target[:-len(".ipynb")] + ".executed.ipynb"
    r = subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
                        "--ExecutePreprocessor.kernel_name=mha-repl", "--ExecutePreprocessor.timeout=120",
                        "--output", executed, target], env=ENV, capture_output=True, timeout=300)
    if r.returncode != 0:
        return None, r.stderr.decode()[-400:]
    return [c for c in nbformat.read(executed, as_version=4).cells if c.cell_type == "code"], executed


MID_EXERCISE = r"""return lesson{
    name = "mid", seed = 7, title = {en = "Mid", zh = "中"}, summary = {en = "s", zh = "s"},
    step{ title = {en = "a", zh = "a"}, text = {en = "t", zh = "t"}, code = [[x = mha.randn{2}]] },
    exercise{ title = {en = "e", zh = "e"}, prompt = {en = "two?", zh = "二"}, solution = [[2]] },
    step{ title = {en = "b", zh = "b"}, text = {en = "t", zh = "t"}, code = [[print(LESSON ~= nil, x:shape()[1])]] },
}
"""


def session_lesson_rerun(tmp):
    """:export of a session in lesson 4 (stepped to its exercise, answered wrong, then right) re-runs in the
    kernel: the first cell opens the lesson for code (its helpers, language, seed), the exercise step is
    at_step(5) (no ':next' cell), and nbconvert's executed notebook has no errors and the same answers.
    A lesson opened by its path, answered after the step past its exercise, re-runs as it ran too."""
    code, target = session_in_lesson(tmp, "session_lesson",
                                     ":open 4\n\n\n\n\nanswer(1 / math.sqrt(768))\nanswer(1 / 8)\n")
    if code is None:
        return
    sources = [c.source for c in code]
    check("session_lesson_cells", 'require("mha.lesson").open_cells(4, "en");' in sources[0]
          and sources[1] == "mha.seed(4)" and not any(s.startswith(":") for s in sources)
          and sources[-3].startswith('require("mha.lesson").at_step(5)') and sources[-2:] == ["answer(1 / math.sqrt(768))", "answer(1 / 8)"],
          str(sources))
    wrong, right = text_of(code[-2]), text_of(code[-1])
    check("session_lesson_answers", wrong.startswith("not yet: you scaled by √d_model") and wrong.endswith("false\n")
          and right == "correct\ntrue\n", repr((wrong, right)))
    again, executed = executed_cells(target)
    if again is None:
        check("session_lesson_rerun", False, executed)
        return
    errors = [(c.source[:40], o.evalue) for c in again for o in c.outputs if o.output_type == "error"]
    check("session_lesson_rerun", not errors and len(again) == len(code), str(errors))
    check("session_lesson_rerun_answers", [text_of(c) for c in again[-2:]] == [wrong, right],
          repr([text_of(c) for c in again[-2:]]))
    page, why = nbconvert_html(executed)
    if page is not None:
        screenshot(why, os.path.join(tmp, "lesson_session.png"))

    path = os.path.join(tmp, "77_mid.lua")
    with open(path, "w", encoding="utf-8") as f:
        f.write(MID_EXERCISE)
    code, target = session_in_lesson(tmp, "session_mid", ":open %s\n\n\nanswer(2)\n" % path)
    if code is None:
        return
    again, why = executed_cells(target)
    said = [text_of(c) for c in code]
    check("session_mid_rerun", again is not None and [text_of(c) for c in again] == said
          and said[-2:] == ["true\t2\n", "there is no exercise to answer at this step\nfalse\n"],
          why if again is None else repr((said, [text_of(c) for c in again])))


HOSTILE = r"""return lesson{
    name = "hostile", seed = 1,
    title = {en = "<img src=x onerror=alert(1)> `open", zh = "<b>粗</b>"},
    summary = {en = "bell \a and <i>", zh = "x"},
    step{ title = {en = "bad bytes", zh = "坏字节"}, text = {en = "esc \27[31m red", zh = "x"},
          code = [[print("\xff\xfe ok")]] },
}
"""


def hostile_lesson(tmp):
    """A lesson whose title carries HTML and an unclosed backtick, its text control characters and its
    output bytes that are not UTF-8: the notebook and the page are written, with nothing of it raw."""
    path = os.path.join(tmp, "99_hostile.lua")
    with open(path, "w", encoding="utf-8") as f:
        f.write(HOSTILE)
    notebook, page = os.path.join(tmp, "hostile.ipynb"), os.path.join(tmp, "hostile.html")
    r1 = subprocess.run([REPL, "--lesson", path, "--batch", "--export", notebook], env=ENV, capture_output=True,
                        timeout=60)
    r2 = subprocess.run([REPL, "--lesson", path, "--batch", "--export", page], env=ENV, capture_output=True,
                        timeout=60)
    check("hostile_written", r1.returncode == 0 and r2.returncode == 0 and os.path.exists(notebook)
          and os.path.exists(page), (r1.stderr + r2.stderr).decode("utf-8", "replace")[-300:])
    if not os.path.exists(notebook):
        return
    nb = nbformat.read(notebook, as_version=4)
    markdown = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    check("hostile_markdown", "&lt;img src=x onerror=alert(1)&gt; `open" in markdown and "<img" not in markdown
          and "\a" not in markdown and "\x1b" not in markdown and "␛[31m" in markdown, markdown[:300])
    check("hostile_utf8", "\ufffd\ufffd ok" in outputs, repr(outputs[:200]))
    converted, why = nbconvert_html(notebook)
    check("hostile_nbconvert", converted is not None and "<img src=x" not in converted
          and not re.search("[\x00-\x08\x0b-\x1f\x7f]", converted), why if converted is None else "raw HTML or controls")
    if os.path.exists(page):
        text = open(page, encoding="utf-8").read()
        check("hostile_page", "<img src=x" not in text and not re.search("[\x00-\x08\x0b-\x1f\x7f]", text)
              and "\ufffd\ufffd ok" in text, text[:300])


def main():
    quick = "--quick" in sys.argv
    tmp = tempfile.mkdtemp(prefix="mha-export-")
    spec = kernelspec_dir()
    ENV["JUPYTER_PATH"] = spec

    lessons = sorted(glob.glob(os.path.join(ROOT, "lessons", "[0-9][0-9]_*.lua")))
    for path in lessons:
        base = os.path.basename(path)[:-4]
        for lang in ("en", "zh"):
            name = "%s_%s" % (base, lang)
            target = os.path.join(tmp, name + ".ipynb")
            code, err = export(int(base[:2]), lang, target)
            if code != 0:
                check(name, False, "exit status %d: %s" % (code, err.strip()[-300:]))
                continue
            nb = nbformat.read(target, as_version=4)
            valid = validation_error(nb)
            check(name + "_valid", valid is None and nb.nbformat == 4 and nb.nbformat_minor == 4
                  and nb.metadata.kernelspec.name == "mha-repl", valid or str(nb.metadata))
            with open(os.path.join(ROOT, "tests", "golden", "%s.%s.txt" % (base, lang)), encoding="utf-8") as f:
                missing = in_transcript(nb, f.read())
            check(name + "_as_batch", missing is None, "not in the transcript: %r" % (missing or "")[:200])
            if lang == "zh":   # the first cell's comment in the lesson's language (a teacher found it in English)
                setup = next(c.source for c in nb.cells if c.cell_type == "code")
                check(name + "_setup_zh", setup.startswith("-- 课程的语言、随机种子"), setup[:120])

    # re-executed in the kernel by nbconvert: the same outputs
    for base, lang in ([("08_multihead", "zh")] if quick else [("08_multihead", "zh"), ("06_masks", "en")]):
        source = os.path.join(tmp, "%s_%s.ipynb" % (base, lang))
        if not os.path.exists(source):
            continue
        executed = os.path.join(tmp, "%s_%s.executed.ipynb" % (base, lang))
        r = subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute",
                            "--ExecutePreprocessor.kernel_name=mha-repl", "--ExecutePreprocessor.timeout=120",
                            "--output", executed, source], env=ENV, capture_output=True, timeout=300)
        if r.returncode != 0:
            check("reexecute_%s_%s" % (base, lang), False, r.stderr.decode()[-400:])
            continue
        a, b = pieces(nbformat.read(source, as_version=4)), pieces(nbformat.read(executed, as_version=4))
        diff = next((i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]), None)
        check("reexecute_%s_%s" % (base, lang), diff is None and len(a) > 5,
              "output %s differs: %r vs %r" % (diff, a[diff] if diff is not None and diff < len(a) else None,
                                               b[diff] if diff is not None and diff < len(b) else None))

    # the HTML page: self-contained, rendered by headless Chromium with every SVG and no console error
    page = os.path.join(tmp, "08_zh.html")
    code, err = export(8, "zh", page)
    check("html_written", code == 0 and os.path.exists(page), err[-300:])
    if code == 0:
        html = open(page, encoding="utf-8").read()
        external = re.findall(r'<(?:script|link|img|iframe)\b|(?:src|href)\s*=\s*["\']?(?:https?:|//)|url\(\s*["\']?https?:'
                              r'|@import', html)
        check("html_self_contained", not external and '<html lang="zh-CN">' in html, str(external[:5]))
        expected_svgs = html.count('<div class="figure"><svg')
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            print("skipped: export_html_chromium (no chromium)")
        else:
            profile = tempfile.mkdtemp(prefix="mha-chromium-")
            r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                "--no-first-run", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                                "--dump-dom", "file://" + page], capture_output=True, timeout=120)
            shutil.rmtree(profile, ignore_errors=True)
            dom = r.stdout.decode("utf-8", "replace")
            console = [l for l in r.stderr.decode("utf-8", "replace").splitlines() if "CONSOLE" in l]
            rendered_svgs = len(re.findall(r"<svg\b", dom))
            check("html_chromium", r.returncode == 0 and not console and expected_svgs >= 1
                  and rendered_svgs >= expected_svgs and "第 1/6 步" in dom,
                  "status %d, console %s, svgs %d of %d" % (r.returncode, console[:3], rendered_svgs, expected_svgs))

    html_by_nbconvert(tmp)
    session_export(tmp)
    session_lesson_rerun(tmp)
    hostile_lesson(tmp)

    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(spec, ignore_errors=True)
    print("%d failed" % check.failures)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
