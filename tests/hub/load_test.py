"""tests/hub/load_test.py - a class on this machine, measured: the classroom's JupyterHub
(classroom/jupyterhub_config.py) on 127.0.0.1 with a test authenticator, N students' servers started
through the hub's REST API, a lesson notebook run to its end in every one at once over the servers'
kernel websockets.

It prints, for each N (5, 10, 20 unless given), p50 and p95 cell latency, kernel and server memory
(RSS) per student, and failures, and checks: every cell's outputs equal the exported notebook's
(`--batch`'s); the exercise's verdict is recorded and `make classroom-report` lists it for every
student; one student can read neither another's home nor their server; a runaway cell
(`while true do end`, a 10 GB tensor) is stopped by the limits with a clear message while the
others' cells keep their latency.

usage: (as root) MHA_REPL=build/mha-repl /usr/bin/python3 tests/hub/load_test.py [N ...]
Makes accounts mhahub01.. (userdel -r at the end), a hub on free ports, all under a temporary
folder; prints PASS/FAIL lines and the table; exit status 1 on a failure.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import requests
import websocket

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REPL = os.path.abspath(os.environ.get("MHA_REPL", os.path.join(REPO, "build", "mha-repl")))
# the lesson every student runs (MHA_HUB_LESSON, default 1: tables, two plots, an exercise)
LESSON = int(os.environ.get("MHA_HUB_LESSON", "1"))
CELL_SECONDS = 5               # the runaway test's MHA_CELL_SECONDS
TENSOR_MB = 512                # MHA_MAX_MEMORY
failures = []


def check(name, ok, why=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + str(why)[:400]), flush=True)
    if not ok:
        failures.append(name)
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def processes_of(uid):
    """{pid: command line} of the processes run by uid."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                out[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            pass
    return out


class Hub:
    """The classroom's hub, started with the test's settings under a temporary folder."""

    def __init__(self, tmp, users):
        self.tmp, self.users = tmp, users
        self.state = os.path.join(tmp, "state")
        self.token = secrets.token_hex(32)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        os.makedirs(os.path.join(self.state, "notebooks", "en"))
        os.chmod(tmp, 0o711)
        os.chmod(self.state, 0o711)
        for d in ("notebooks", "notebooks/en"):
            os.chmod(os.path.join(self.state, d), 0o755)
        self.roster = os.path.join(tmp, "roster.txt")
        with open(self.roster, "w") as f:
            f.write("".join(u + " en\n" for u in users))
        # the kernel of this build, for every student, in a folder they can read
        kernels = os.path.join(tmp, "jupyter", "kernels", "mha-repl")
        os.makedirs(kernels)
        for d in ("jupyter", "jupyter/kernels", "jupyter/kernels/mha-repl"):
            os.chmod(os.path.join(tmp, d), 0o755)
        with open(os.path.join(kernels, "kernel.json"), "w") as f:
            json.dump({"argv": [REPL, "--kernel", "{connection_file}"], "display_name": "mha-repl",
                       "language": "lua", "interrupt_mode": "signal"}, f)
        os.chmod(os.path.join(kernels, "kernel.json"), 0o644)
        name = next(f for f in sorted(os.listdir(os.path.join(REPO, "lessons"))) if f.startswith(f"{LESSON:02d}_"))
        self.notebook = os.path.join(self.state, "notebooks", "en", name.replace(".lua", ".ipynb"))
        subprocess.run([REPL, "--lesson", str(LESSON), "--batch", "--lang", "en", "--export", self.notebook],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        os.chmod(self.notebook, 0o644)
        env = dict(os.environ, MHA_CLASSROOM_STATE=self.state, MHA_CLASSROOM_ROSTER=self.roster,
                   MHA_CLASSROOM_URL=self.url, MHA_CLASSROOM_AUTH="dummy", MHA_CLASSROOM_TEST_TOKEN=self.token,
                   MHA_CLASSROOM_HUB_PORT=str(free_port()), MHA_CLASSROOM_PROXY_API_PORT=str(free_port()),
                   MHA_CLASSROOM_JUPYTER_PATH=os.path.join(tmp, "jupyter"),
                   MHA_CLASSROOM_CELL_SECONDS=str(CELL_SECONDS), MHA_CLASSROOM_TENSOR_MB=str(TENSOR_MB),
                   NODE_PATH="/usr/share/nodejs")
        self.log = open(os.path.join(tmp, "hub.log"), "w")
        self.proc = subprocess.Popen(["jupyterhub", "-f", os.path.join(REPO, "classroom", "jupyterhub_config.py")],
                                     cwd=self.state, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.api = requests.Session()
        self.api.headers["Authorization"] = "token " + self.token
        for _ in range(120):
            try:
                if self.api.get(self.url + "/hub/api/", timeout=5).ok:
                    return
            except requests.ConnectionError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(1)
        raise RuntimeError("the hub did not start: see " + self.log.name)

    def start_server(self, user):
        r = self.api.post(f"{self.url}/hub/api/users/{user}/server", timeout=180)
        if r.status_code not in (201, 202, 400):   # 400: already running
            raise RuntimeError(f"start {user}: {r.status_code} {r.text[:200]}")

    def wait_ready(self, user, seconds=300):
        end = time.time() + seconds
        while time.time() < end:
            r = self.api.get(f"{self.url}/hub/api/users/{user}", timeout=30)
            if r.ok and r.json().get("servers", {}).get("", {}).get("ready"):
                return True
            time.sleep(1)
        return False

    def stop_server(self, user):
        self.api.delete(f"{self.url}/hub/api/users/{user}/server", timeout=120)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)   # as Ctrl-C: the hub stops its proxy and servers
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class Student:
    """One student's kernel, reached through the hub's proxy as a browser reaches it."""

    def __init__(self, hub, user):
        self.hub, self.user = hub, user
        base = f"{hub.url}/user/{user}"
        r = hub.api.post(base + "/api/kernels", json={"name": "mha-repl"}, timeout=120)
        r.raise_for_status()
        self.kernel_id = r.json()["id"]
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{hub.port}/user/{user}/api/kernels/{self.kernel_id}/channels",
            header=["Authorization: token " + hub.token], timeout=300)
        self.session = uuid.uuid4().hex

    def execute(self, code, timeout=300):
        """Runs a cell; returns (seconds, outputs as nbformat dicts, error evalue or None)."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session,
                       "username": self.user, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        start = time.perf_counter()
        outputs, error, replied, idle = [], None, False, False
        end = time.time() + timeout
        while not (replied and idle):
            if time.time() > end:
                raise TimeoutError(f"{self.user}: no reply in {timeout} s")
            m = json.loads(self.ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "execute_reply":
                replied = True
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
            elif kind == "stream":
                if outputs and outputs[-1].get("output_type") == "stream":
                    outputs[-1]["text"] += content["text"]
                else:
                    outputs.append({"output_type": "stream", "text": content["text"]})
            elif kind in ("display_data", "execute_result"):
                outputs.append({"output_type": kind, "data": content["data"]})
            elif kind == "error":
                error = content["evalue"]
                outputs.append({"output_type": "error", "evalue": content["evalue"]})
        return time.perf_counter() - start, outputs, error

    def close(self):
        self.ws.close()
        self.hub.api.delete(f"{self.hub.url}/user/{self.user}/api/kernels/{self.kernel_id}", timeout=60)


def normal(outputs):
    """Outputs as comparable values: type, the stream's text, every MIME type's text."""
    out = []
    for o in outputs:
        if o["output_type"] == "stream":
            text = o["text"]
            out.append(("stream", "".join(text) if isinstance(text, list) else text))
        elif o["output_type"] in ("display_data", "execute_result"):
            data = {k: "".join(v) if isinstance(v, list) else v for k, v in o["data"].items()}
            out.append((o["output_type"], json.dumps(data, sort_keys=True)))
        else:
            out.append((o["output_type"], o.get("evalue") or o.get("ename")))
    return out


def lesson_cells(path):
    with open(path) as f:
        nb = json.load(f)
    return [("".join(c["source"]), c.get("outputs", [])) for c in nb["cells"] if c["cell_type"] == "code"]


def run_lesson(student, cells, result):
    """Every cell of the lesson in order; result gets latencies, mismatches and errors."""
    try:
        for i, (code, expected) in enumerate(cells):
            seconds, outputs, error = student.execute(code)
            result["latencies"].append(seconds)
            if error:
                result["errors"].append(f"cell {i + 1}: {error}")
            elif normal(outputs) != normal(expected):
                result["mismatches"].append(f"cell {i + 1}: {normal(outputs)[:2]} != {normal(expected)[:2]}")
    except Exception as e:   # a dropped websocket, a timeout: a failure of this student
        result["errors"].append(f"{type(e).__name__}: {e}")


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def memory(users):
    """Per student: the kernel's RSS and the notebook server's, in MB (lists)."""
    kernels, servers = [], []
    for user in users:
        for pid, cmd in processes_of(pwd_uid(user)).items():
            if "--kernel" in cmd:
                kernels.append(rss_mb(pid))
            elif "jupyterhub-singleuser" in cmd:
                servers.append(rss_mb(pid))
    return kernels, servers


def pwd_uid(user):
    import pwd
    return pwd.getpwnam(user).pw_uid


def level(hub, users, cells):
    """N students at once: start their servers, run the lesson in each, measure, stop."""
    t0 = time.time()
    for u in users:
        hub.start_server(u)
    ready = [hub.wait_ready(u) for u in users]
    spawn = time.time() - t0
    results = {u: {"latencies": [], "errors": [], "mismatches": []} for u in users}
    students = {}
    for u, ok in zip(users, ready):
        if not ok:
            results[u]["errors"].append("the server did not start")
            continue
        try:
            students[u] = Student(hub, u)
        except Exception as e:
            results[u]["errors"].append(f"no kernel: {e}")
    threads = [threading.Thread(target=run_lesson, args=(s, cells, results[u])) for u, s in students.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kernels, servers = memory(users)
    row = {"n": len(users), "load": open("/proc/loadavg").read().split()[0], "spawn": spawn, "latencies": [x for r in results.values() for x in r["latencies"]],
           "kernel_mb": kernels, "server_mb": servers, "results": results, "students": students}
    return row


def summary(row):
    lat = row["latencies"]
    bad = sum(1 for r in row["results"].values() if r["errors"] or r["mismatches"])
    kernel, server = row["kernel_mb"] or [0], row["server_mb"] or [0]
    return (f"| {row['n']:>2} | {len(lat):4d} | {percentile(lat, 50) * 1000:6.0f} | {percentile(lat, 95) * 1000:6.0f} | "
            f"{max(lat or [0]) * 1000:6.0f} | {statistics.mean(kernel):5.1f} ({max(kernel):.1f}) | "
            f"{statistics.mean(server):5.1f} ({max(server):.1f}) | {row['spawn']:6.1f} | {bad} of {row['n']} | "
            f"{row['load']} |")


def main():
    if os.geteuid() != 0:
        print("SKIP tests/hub/load_test.py: needs root (it makes accounts and starts servers as them)")
        return 0
    levels = [int(a) for a in sys.argv[1:]] or [5, 10, 20]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores ({cpu}), "
          f"load average before: {open('/proc/loadavg').read().split()[0]}", flush=True)
    users = [f"mhahub{i:02d}" for i in range(1, max(levels) + 1)]
    tmp = tempfile.mkdtemp(prefix="mha-hub-")
    made = []
    hub = None
    try:
        for u in users:
            subprocess.run(["userdel", "-r", u], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", u], check=True)
            os.chmod(os.path.expanduser("~" + u), 0o700)
            made.append(u)
        hub = Hub(tmp, users)
        cells = lesson_cells(hub.notebook)
        rows = []
        for n in levels:
            row = level(hub, users[:n], cells)
            rows.append(row)
            for u, r in row["results"].items():
                check(f"N={n} {u}: lesson {LESSON}'s {len(cells)} cells run to the end, no error",
                      not r["errors"] and len(r["latencies"]) == len(cells), r["errors"])
                check(f"N={n} {u}: every output equals --batch's (the exported notebook)",
                      not r["mismatches"], r["mismatches"])
            if n == levels[0]:
                isolation_and_limits(hub, users[:n], cells)
            for s in row["students"].values():
                s.close()
            for u in users[:n]:
                hub.stop_server(u)
        report(hub, users, tmp)
        print(f"\n| N | cells | p50 ms | p95 ms | max ms | kernel MB mean (max) | server MB mean (max) | "
              f"spawn s | failures | load |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            print(summary(row))
    finally:
        if hub:
            hub.stop()
        for u in made:
            subprocess.run(["userdel", "-r", u], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


def isolation_and_limits(hub, users, cells):
    a, b = users[0], users[1]
    # files: a student's home is theirs alone (0700), notebooks and answers included
    r = subprocess.run(["runuser", "-u", a, "--", "cat", f"/home/{b}/lessons/en/" + os.path.basename(hub.notebook)],
                       capture_output=True, text=True)
    check(f"isolation: {a} cannot read {b}'s notebook", r.returncode != 0 and "Permission denied" in r.stderr,
          r.stderr or r.stdout[:80])
    r = subprocess.run(["runuser", "-u", a, "--", "ls", f"/home/{b}/.local/share/jupyter/runtime"],
                       capture_output=True, text=True)
    check(f"isolation: {a} cannot list {b}'s kernel connection files", r.returncode != 0, r.stdout[:200])
    # servers: a's own token does not open b's server
    tok = hub.api.post(f"{hub.url}/hub/api/users/{a}/tokens", json={"note": "isolation"}, timeout=60).json()["token"]
    r = requests.get(f"{hub.url}/user/{b}/api/kernels", headers={"Authorization": "token " + tok}, timeout=60,
                     allow_redirects=False)
    mine = requests.get(f"{hub.url}/user/{a}/api/kernels", headers={"Authorization": "token " + tok}, timeout=60)
    check(f"isolation: {a}'s token opens {a}'s server, not {b}'s",
          mine.status_code == 200 and r.status_code in (302, 403), f"own {mine.status_code}, other {r.status_code}")
    # limits: one student's runaway cells while the others run the lesson again
    runaway = Student(hub, a)
    # the notebook's stop button: the server's interrupt reaches a loop at once
    stopped = {}
    t = threading.Thread(target=lambda: stopped.update(r=runaway.execute("while true do end", timeout=120)))
    t.start()
    time.sleep(1.5)
    hub.api.post(f"{hub.url}/user/{a}/api/kernels/{runaway.kernel_id}/interrupt", timeout=60)
    t.join()
    seconds, _, error = stopped["r"]
    check("limits: the stop button (the server's interrupt) stops `while true do end`",
          bool(error) and error.endswith("interrupted") and seconds < CELL_SECONDS, f"{seconds:.1f} s: {error}")
    others = {u: {"latencies": [], "errors": [], "mismatches": []} for u in users[1:]}
    outcome = {}

    def run_away():
        outcome["loop"] = runaway.execute("while true do end", timeout=120)
        outcome["big"] = runaway.execute("big = mha.zeros(50000, 50000)", timeout=120)
        outcome["after"] = runaway.execute("1 + 1", timeout=60)

    students = [Student(hub, u) for u in users[1:]]
    threads = [threading.Thread(target=run_away)] + [
        threading.Thread(target=run_lesson, args=(s, cells, others[s.user])) for s in students]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds, _, error = outcome["loop"]
    check(f"limits: `while true do end` stops after its {CELL_SECONDS} s of CPU, saying why",
          error and "MHA_CELL_SECONDS" in error and seconds < 60, f"{seconds:.1f} s: {error}")
    _, _, error = outcome["big"]
    check(f"limits: a 10 GB tensor is refused by MHA_MAX_MEMORY={TENSOR_MB}",
          error and f"tensor memory limit of {TENSOR_MB} MB reached (MHA_MAX_MEMORY)" in error, error)
    _, outputs, error = outcome["after"]
    check("limits: the kernel goes on after both", not error and normal(outputs) == [("execute_result",
          json.dumps({"text/plain": "2"}))], normal(outputs))
    lat = [x for r in others.values() for x in r["latencies"]]
    print(f"     the other {len(students)} students meanwhile: p50 {percentile(lat, 50) * 1000:.0f} ms, "
          f"p95 {percentile(lat, 95) * 1000:.0f} ms over {len(lat)} cells")
    check("limits: the others' cells all ran, right, meanwhile",
          all(not r["errors"] and not r["mismatches"] for r in others.values()),
          {u: r["errors"] + r["mismatches"] for u, r in others.items()})
    for s in students + [runaway]:
        s.close()


def report(hub, users, tmp):
    """Each student answered lesson 1's exercise right: their answers file says so, and the report
    lists it."""
    for u in users:
        path = f"/home/{u}/.mha-repl/answers.jsonl"
        ok = os.path.exists(path) and os.stat(path).st_uid == pwd_uid(u) and (os.stat(path).st_mode & 0o077) == 0
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        check(f"answers: {u}'s verdicts recorded in ~/.mha-repl/answers.jsonl (theirs, mode 0600)",
              ok and lines and all(json.loads(x)["verdict"] == "right" and json.loads(x)["lesson"] == LESSON
                                   for x in lines), lines[:2])
    csv = os.path.join(tmp, "report.csv")
    r = subprocess.run([REPL, os.path.join(REPO, "classroom", "report.lua"), hub.roster, csv], cwd=REPO,
                       capture_output=True, text=True, env=dict(os.environ, MHA_LANG="en"))
    rows = open(csv).read().splitlines() if os.path.exists(csv) else []
    right = {line.split(",")[0] for line in rows if line.split(",")[1:3] == [str(LESSON), "1"] and ",right," in line}
    check("report: every student's lesson 1 exercise is listed as right", right == set(users) and r.returncode == 0,
          r.stdout + r.stderr)


if __name__ == "__main__":
    sys.exit(main())
