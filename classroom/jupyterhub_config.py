# classroom/jupyterhub_config.py - the JupyterHub of a class on one machine (`make classroom` runs
# it through classroom/classroom.sh): PAM accounts from the roster, a server per student, limits.
#
# No secrets live here: the cookie secret, the database and the proxy's token are made by the hub
# in the state folder (MHA_CLASSROOM_STATE, /var/lib/mha-classroom by default, mode 0711, its
# secrets 0600). Every setting a teacher may change is an environment variable read below, so this
# file stays as committed. The hub runs as root: LocalProcessSpawner starts each student's server
# as that student (setuid), which only root may do.
import os
import resource

from jupyterhub.spawner import LocalProcessSpawner

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

here = os.path.dirname(os.path.abspath(__file__))
state = os.environ.get("MHA_CLASSROOM_STATE", "/var/lib/mha-classroom")
roster_path = os.environ.get("MHA_CLASSROOM_ROSTER", os.path.join(here, "roster.txt"))


def env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def read_roster(path):
    """The roster (classroom/roster.example.txt says its format): {user: (lang, is_teacher)}."""
    people = {}
    if not os.path.exists(path):
        return people
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            lang = "zh" if "zh" in words[1:] else "en"
            people[words[0]] = (lang, "teacher" in words[1:])
    return people


roster = read_roster(roster_path)

# ---- where the hub listens ----
# 127.0.0.1 by default: only this machine reaches it (an ssh tunnel brings a laptop there). To serve
# a lab's network set MHA_CLASSROOM_URL=https://0.0.0.0:443 with MHA_CLASSROOM_SSL_CERT and
# MHA_CLASSROOM_SSL_KEY (a certificate and its key, e.g. from Let's Encrypt): passwords never cross
# a network in clear text. docs/classroom.md says more.
c.JupyterHub.bind_url = os.environ.get("MHA_CLASSROOM_URL", "http://127.0.0.1:8000")
if os.environ.get("MHA_CLASSROOM_SSL_CERT"):
    c.JupyterHub.ssl_cert = os.environ["MHA_CLASSROOM_SSL_CERT"]
    c.JupyterHub.ssl_key = os.environ["MHA_CLASSROOM_SSL_KEY"]
# the hub's API and the proxy's, for each other and the servers only: on 127.0.0.1, at ports a
# second hub on the machine (the load test's) changes
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = env_int("MHA_CLASSROOM_HUB_PORT", 8081)
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % env_int("MHA_CLASSROOM_PROXY_API_PORT", 8001)

# ---- the hub's own files, outside the repository ----
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(state, "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "proxy.pid")
# Ctrl-C stops the hub, the proxy and every student's server (their notebooks are saved files)
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

# ---- who may log in ----
# PAM: the machine's own accounts and passwords (classroom/accounts.py makes them from the roster).
# The teacher is an admin: sees every server in /hub/admin, can start, stop and open them.
# MHA_CLASSROOM_AUTH=dummy is the load test's authenticator (tests/hub/load_test.py): any password,
# for accounts it made; never use it for a class.
if os.environ.get("MHA_CLASSROOM_AUTH") == "dummy":
    c.JupyterHub.authenticator_class = "dummy"
else:
    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.open_sessions = False   # no login session (no systemd-logind in a container)
c.Authenticator.allowed_users = set(roster)
c.Authenticator.admin_users = {user for user, (_, teacher) in roster.items() if teacher}

# The load test drives the hub through its REST API with a token it makes for each run
# (MHA_CLASSROOM_TEST_TOKEN); a class has no such service.
if os.environ.get("MHA_CLASSROOM_TEST_TOKEN"):
    c.JupyterHub.services = [{"name": "loadtest", "api_token": os.environ["MHA_CLASSROOM_TEST_TOKEN"]}]
    c.JupyterHub.load_roles = [{"name": "loadtest", "services": ["loadtest"],
                                "scopes": ["admin:users", "admin:servers", "access:servers", "tokens"]}]

# ---- each student's server and its limits ----
memory_mb = env_int("MHA_CLASSROOM_MEMORY_MB", 2048)      # address space of a server and its kernels
tensor_mb = env_int("MHA_CLASSROOM_TENSOR_MB", 512)       # MHA_MAX_MEMORY: tensors of one kernel
cell_seconds = env_int("MHA_CLASSROOM_CELL_SECONDS", 120)  # MHA_CELL_SECONDS: CPU time of one cell
idle_minutes = env_int("MHA_CLASSROOM_IDLE_MINUTES", 60)   # an idle server is stopped after this


class ClassroomSpawner(LocalProcessSpawner):
    """LocalProcessSpawner, with per-student limits set in the child before the server starts:
    an address-space cap (RLIMIT_AS: one student's runaway allocation fails in their own kernel,
    not in the machine's OOM killer) and a lower priority (nice 5: the hub and the proxy answer
    first; students share the cores evenly among themselves, as the kernel's scheduler shares
    equal-nice processes). Hard CPU shares need cgroups: SystemdSpawner or DockerSpawner
    (cpu_limit), or Kubernetes (docs/classroom.md)."""

    def make_preexec_fn(self, name):
        become = super().make_preexec_fn(name)

        def preexec():
            become()
            limit = memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            os.nice(5)

        return preexec


c.JupyterHub.spawner_class = ClassroomSpawner
# the student's server: classroom/singleuser.sh copies the lesson notebooks into ~/lessons (never
# over a student's own copy), then starts jupyterhub-singleuser (the classic notebook server)
c.Spawner.cmd = [os.path.join(here, "singleuser.sh")]
c.Spawner.default_url = "/tree/lessons"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120   # a loaded machine starts Python slowly
c.Spawner.http_timeout = 120
# idle culling, by the notebook server itself (Debian packages no jupyterhub-idle-culler): a
# kernel idle for idle_minutes is shut down, and a server with no kernel and no activity for as
# long stops itself; its notebooks stay in the student's home
c.Spawner.args = [
    "--NotebookApp.shutdown_no_activity_timeout=%d" % (idle_minutes * 60),
    "--MappingKernelManager.cull_idle_timeout=%d" % (idle_minutes * 60),
    "--MappingKernelManager.cull_interval=60",
    "--MappingKernelManager.default_kernel_name=mha-repl",
]


def student_lang(spawner):
    return roster.get(spawner.user.name, ("en", False))[0]


c.Spawner.environment = {
    "MHA_LANG": student_lang,                     # the student's language, from the roster
    "MHA_MAX_MEMORY": str(tensor_mb),
    "MHA_CELL_SECONDS": str(cell_seconds),
    "MHA_THREADS": "1",                           # one core a kernel: a class shares the machine
    "MHA_CLASSROOM_NOTEBOOKS": os.path.join(state, "notebooks"),
}
# where the servers find kernelspecs besides the system's (the load test's own mha-repl kernel)
if os.environ.get("MHA_CLASSROOM_JUPYTER_PATH"):
    c.Spawner.environment["JUPYTER_PATH"] = os.environ["MHA_CLASSROOM_JUPYTER_PATH"]
