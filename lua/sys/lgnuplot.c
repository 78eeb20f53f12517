/* lua/sys/lgnuplot.c - module "mha.gnuplot": a gnuplot process behind three pipes (stdin, stdout,
 * stderr), so lua/show/plot.lua can send it commands, read its errors back and always reap it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>

#include "lsys.h"

#define GNUPLOT_T "mha.gnuplot.Process"
#define OUTPUT_LIMIT (16u << 20)   /* bytes kept of what gnuplot writes between two syncs */

/* What gnuplot has written and we have not handed to Lua yet. */
typedef struct byte_buffer {
    char *data;
    size_t len, cap;
} byte_buffer;

/* One gnuplot process. pid == 0 once it has been reaped; a descriptor is -1 once closed. */
typedef struct gnuplot_process {
    pid_t pid;
    int to_stdin;     /* write end of its stdin */
    int from_stdout;  /* read ends of its stdout and stderr (non-blocking) */
    int from_stderr;
    int status;       /* its wait status, once reaped */
    byte_buffer out, err;
} gnuplot_process;

#define toprocess(L) ((gnuplot_process *)luaL_checkudata(L, 1, GNUPLOT_T))

/* ---- small helpers ---- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds left before `deadline` for poll(), never negative. */
static int ms_left(double deadline) {
    double left = deadline - now_seconds();
    if (left <= 0) return 0;
    if (left > 3600) return 3600 * 1000;
    return (int)(left * 1000) + 1;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* A pipe whose two ends are close-on-exec (so no other child inherits them: a gnuplot that held the
 * stdin of another figure's gnuplot would keep it alive) and are above 2 (so the dup2 calls in the
 * child cannot overwrite one another). F_DUPFD_CLOEXEC sets both at once. */
static int make_pipe(int fds[2]) {
    if (pipe(fds) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        int saved = errno;
        close(fds[i]);
        fds[i] = moved;
        if (moved < 0) {
            if (i == 1) close_fd(&fds[0]);
            errno = saved;
            return -1;
        }
    }
    return 0;
}

static void set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* write() that cannot raise SIGPIPE: a gnuplot that died must give an EPIPE error, not kill the
 * REPL. SIGPIPE is blocked around the write and, if the write raised it, taken back off the pending
 * set, so the process's own disposition of SIGPIPE is left as it was. */
static ssize_t write_no_sigpipe(int fd, const char *data, size_t n) {
    sigset_t pipe_set, old_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old_set);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    ssize_t written = write(fd, data, n);
    int saved = errno;
    if (written < 0 && saved == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {}
    }
    sigprocmask(SIG_SETMASK, &old_set, NULL);
    errno = saved;
    return written;
}

/* Reads what is available on *fd into buf; closes *fd at end of file. Beyond OUTPUT_LIMIT bytes the
 * rest is read and dropped, so a runaway gnuplot cannot eat the memory or block on a full pipe. */
static void drain(int *fd, byte_buffer *buf) {
    char chunk[4096];
    while (*fd >= 0) {
        ssize_t got = read(*fd, chunk, sizeof chunk);
        if (got > 0) {
            size_t keep = (size_t)got;
            if (buf->len + keep > OUTPUT_LIMIT) keep = OUTPUT_LIMIT - buf->len;
            if (buf->len + keep > buf->cap) {
                size_t cap = buf->cap ? buf->cap : 8192;
                while (cap < buf->len + keep) cap *= 2;
                char *grown = realloc(buf->data, cap);
                if (grown == NULL) keep = 0;   /* out of memory: drop this chunk */
                else { buf->data = grown; buf->cap = cap; }
            }
            if (keep > 0) memcpy(buf->data + buf->len, chunk, keep);
            buf->len += keep;
        } else if (got == 0) {
            close_fd(fd);
        } else if (errno != EINTR) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) close_fd(fd);
            return;
        }
    }
}

/* Removes the first n bytes of buf. */
static void discard(byte_buffer *buf, size_t n) {
    if (n == 0) return;
    memmove(buf->data, buf->data + n, buf->len - n);
    buf->len -= n;
}

/* Pushes the first n bytes of buf as a string and removes them from it. */
static void push_taken(lua_State *L, byte_buffer *buf, size_t n) {
    lua_pushlstring(L, n > 0 ? buf->data : "", n);
    discard(buf, n);
}

/* Offset just past the first complete line that begins with `marker` in buf, or 0 when there is
 * none. Begins, not equals: gnuplot writes a printed line's newline apart from its text, and
 * another program on the same stderr (its Qt window process) may land a line of its own between. */
static size_t find_marker_line(const byte_buffer *buf, const char *marker, size_t mlen, size_t *line_start) {
    for (size_t start = 0; start + mlen < buf->len;) {
        const char *nl = memchr(buf->data + start, '\n', buf->len - start);
        if (nl == NULL) return 0;
        size_t len = (size_t)(nl - (buf->data + start));
        if (len >= mlen && memcmp(buf->data + start, marker, mlen) == 0) {
            *line_start = start;
            return start + len + 1;
        }
        start += len + 1;
    }
    return 0;
}

/* Reaps the process if it has exited (never blocks). True when it is gone. */
static bool try_reap(gnuplot_process *gp) {
    if (gp->pid == 0) return true;
    pid_t r = waitpid(gp->pid, &gp->status, WNOHANG);
    if (r == gp->pid || (r < 0 && errno == ECHILD)) {  /* ECHILD: SIGCHLD ignored, already reaped */
        gp->pid = 0;
        return true;
    }
    return false;
}

/* Closes its stdin (gnuplot exits at end of input), waits up to `timeout` seconds, draining its
 * output, then sends SIGTERM and, half a second later, SIGKILL to its process group; reaps it. */
static void shut_down(gnuplot_process *gp, double timeout) {
    close_fd(&gp->to_stdin);
    if (gp->pid != 0) {
        double deadline = now_seconds() + timeout;
        int signals[] = {0, SIGTERM, SIGKILL};
        for (int stage = 0; stage < 3 && !try_reap(gp); stage++) {
            if (stage > 0) {
                kill(-gp->pid, signals[stage]);   /* its group: gnuplot_qt or gnuplot_x11 too */
                kill(gp->pid, signals[stage]);
                deadline = now_seconds() + 0.5;
            }
            while (!try_reap(gp) && now_seconds() < deadline) {
                struct pollfd fds[2] = {{gp->from_stdout, POLLIN, 0}, {gp->from_stderr, POLLIN, 0}};
                if (poll(fds, 2, 10) > 0) {
                    drain(&gp->from_stdout, &gp->out);
                    drain(&gp->from_stderr, &gp->err);
                    gp->out.len = gp->err.len = 0;   /* nobody will read it now */
                }
            }
        }
        if (gp->pid != 0 && waitpid(gp->pid, &gp->status, 0) == gp->pid) gp->pid = 0;
    }
    close_fd(&gp->from_stdout);
    close_fd(&gp->from_stderr);
}

/* ---- the library ---- */

/* gnuplot.spawn([program]) -> process | nil, message, reason
 * Starts `program` (default "gnuplot", looked up in PATH) with its stdin, stdout and stderr on
 * pipes. reason is "notfound" when the program does not exist, "error" for any other failure. */
static int gp_spawn(lua_State *L) {
    const char *program = luaL_optstring(L, 1, "gnuplot");
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, exec_status[2] = {-1, -1};
    /* built empty first, so that __gc can close whatever a failure below leaves behind */
    gnuplot_process *gp = (gnuplot_process *)lua_newuserdatauv(L, sizeof *gp, 0);
    memset(gp, 0, sizeof *gp);
    gp->to_stdin = gp->from_stdout = gp->from_stderr = -1;
    luaL_setmetatable(L, GNUPLOT_T);

    if (make_pipe(in) || make_pipe(out) || make_pipe(err) || make_pipe(exec_status)) goto fail;
    gp->to_stdin = in[1];
    gp->from_stdout = out[0];
    gp->from_stderr = err[0];
    pid_t pid = fork();
    if (pid < 0) goto fail;
    if (pid == 0) {
        /* the child: only async-signal-safe calls until exec */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        setpgid(0, 0);   /* its own group: Ctrl-C in the REPL interrupts Lua, not the figures */
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) {
            int e = errno;
            (void)!write(exec_status[1], &e, sizeof e);
            _exit(127);
        }
        char *argv[] = {(char *)program, NULL};
        execvp(program, argv);
        int e = errno;
        (void)!write(exec_status[1], &e, sizeof e);   /* tells the parent why exec failed */
        _exit(127);
    }
    gp->pid = pid;
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&exec_status[1]);
    /* exec_status[0] reads end-of-file when exec succeeds (close-on-exec), or the child's errno */
    int child_errno = 0;
    ssize_t got;
    while ((got = read(exec_status[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {}
    close_fd(&exec_status[0]);
    if (got > 0) {
        shut_down(gp, 0);
        lua_pushnil(L);
        lua_pushfstring(L, "gnuplot: cannot run '%s': %s", program, strerror(child_errno));
        lua_pushstring(L, child_errno == ENOENT ? "notfound" : "error");
        return 3;
    }
    set_nonblocking(gp->to_stdin);
    set_nonblocking(gp->from_stdout);
    set_nonblocking(gp->from_stderr);
    return 1;

fail: {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (in[i] != gp->to_stdin) close_fd(&in[i]);
            if (out[i] != gp->from_stdout) close_fd(&out[i]);
            if (err[i] != gp->from_stderr) close_fd(&err[i]);
            close_fd(&exec_status[i]);
        }
        shut_down(gp, 0);
        lua_pushnil(L);
        lua_pushfstring(L, "gnuplot: cannot start '%s': %s", program, strerror(e));
        lua_pushstring(L, "error");
        return 3;
    }
}

/* gnuplot.tempfile(dir, suffix) -> path | nil, message
 * Creates a new empty file dir/.mha-plot-<pid>-<n><suffix> (mode 0666 less the umask, never an
 * existing file) and returns its name, which starts with '/' or "./": gnuplot reads a `set output`
 * name that starts with '|' as a command to run, and this name never can. plot.save lets gnuplot
 * write there and renames the file to the name the user gave, so no user text ever reaches
 * `set output` as a name. */
static int gp_tempfile(lua_State *L) {
    const char *dir = luaL_checkstring(L, 1);
    const char *suffix = luaL_checkstring(L, 2);
    const char *lead = dir[0] == '/' ? "" : "./";
    static unsigned long serial;
    for (int attempt = 0; attempt < 100; attempt++) {
        serial++;
        const char *path = lua_pushfstring(L, "%s%s/.mha-plot-%d-%d%s", lead, dir, (int)getpid(),
                                           (int)(serial % 1000000000ul), suffix);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            return 1;
        }
        int e = errno;
        lua_pop(L, 1);
        if (e != EEXIST) {
            lua_pushnil(L);
            lua_pushstring(L, strerror(e));
            return 2;
        }
    }
    lua_pushnil(L);
    lua_pushliteral(L, "no free temporary name");
    return 2;
}

/* True when the n bytes of a file that start with head (its first bytes) and end with tail (its
 * last bytes) are a whole file of kind: PNG ends with its IEND chunk, SVG with </svg>, PDF with
 * %%EOF - what a file cut short by a full disk lacks, gnuplot and cairo saying nothing of it. */
static bool file_complete(const char *kind, const unsigned char *head, size_t nhead, const unsigned char *tail,
                          size_t ntail) {
    while (ntail > 0 && (tail[ntail - 1] == '\n' || tail[ntail - 1] == '\r' || tail[ntail - 1] == ' '))
        ntail--;
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char png_end[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    if (strcmp(kind, "png") == 0)
        return nhead >= 8 && memcmp(head, png_sig, 8) == 0 && ntail >= 12 && memcmp(tail + ntail - 12, png_end, 12) == 0;
    if (strcmp(kind, "svg") == 0) return ntail >= 6 && memcmp(tail + ntail - 6, "</svg>", 6) == 0;
    if (strcmp(kind, "pdf") == 0)
        return nhead >= 5 && memcmp(head, "%PDF-", 5) == 0 && ntail >= 5 && memcmp(tail + ntail - 5, "%%EOF", 5) == 0;
    return false;
}

/* fsync of the folder of path, so that a rename in it survives a power cut. */
static void sync_folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (slash == NULL) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* gnuplot.commit(temp, path, kind) -> true | nil, why
 * Renames the file gnuplot wrote at temp (a gnuplot.tempfile, kind "png", "svg" or "pdf") to path,
 * only when it is whole (file_complete) and on disk (fsync), so path holds the new figure or its
 * old file, never a cut one. why says what went wrong ("No space left on device" when the disk is
 * full); the caller removes temp. */
static int gp_commit(lua_State *L) {
    const char *temp = luaL_checkstring(L, 1);
    const char *path = luaL_checkstring(L, 2);
    const char *kind = luaL_checkstring(L, 3);
    int fd = open(temp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        lua_pushnil(L);
        lua_pushstring(L, strerror(e));
        return 2;
    }
    unsigned char head[8], tail[64];
    size_t size = (size_t)st.st_size, ntail = size < sizeof tail ? size : sizeof tail;
    bool read_ok = pread(fd, head, sizeof head, 0) >= 0 && pread(fd, tail, ntail, (off_t)(size - ntail)) == (ssize_t)ntail;
    const char *why = NULL;
    struct statvfs fs;
    if (size == 0) why = "gnuplot wrote nothing";
    else if (!read_ok || !file_complete(kind, head, size < sizeof head ? size : sizeof head, tail, ntail))
        why = fstatvfs(fd, &fs) == 0 && fs.f_bavail == 0 ? strerror(ENOSPC) : "the file gnuplot wrote is cut short";
    else if (fsync(fd) != 0) why = strerror(errno);
    close(fd);
    if (why == NULL && rename(temp, path) != 0) why = strerror(errno);
    if (why) {
        lua_pushnil(L);
        lua_pushstring(L, why);
        return 2;
    }
    sync_folder_of(path);
    lua_pushboolean(L, 1);
    return 1;
}

/* process:send(text [, timeout]) -> true | nil, message
 * Writes all of text to gnuplot's stdin, reading its output meanwhile (so neither side can block
 * the other on a full pipe). Fails when gnuplot has exited or has not taken the text within timeout
 * seconds (default 10). */
static int gp_send(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    size_t n, done = 0;
    const char *text = luaL_checklstring(L, 2, &n);
    double deadline = now_seconds() + luaL_optnumber(L, 3, 10);
    if (gp->to_stdin < 0) {
        lua_pushnil(L);
        lua_pushstring(L, "gnuplot: the process is closed");
        return 2;
    }
    while (done < n) {
        struct pollfd fds[3] = {
            {gp->to_stdin, POLLOUT, 0}, {gp->from_stdout, POLLIN, 0}, {gp->from_stderr, POLLIN, 0}
        };
        int ready = poll(fds, 3, ms_left(deadline));
        if (ready < 0 && errno == EINTR) {
            lua_pushnil(L);
            lua_pushstring(L, "gnuplot: interrupted");
            return 2;
        }
        if (ready == 0) {
            lua_pushnil(L);
            lua_pushstring(L, "gnuplot: timed out writing commands (is gnuplot stuck?)");
            return 2;
        }
        if (fds[1].revents) drain(&gp->from_stdout, &gp->out);
        if (fds[2].revents) drain(&gp->from_stderr, &gp->err);
        if (fds[0].revents & (POLLOUT | POLLERR | POLLHUP)) {
            ssize_t w = write_no_sigpipe(gp->to_stdin, text + done, n - done);
            if (w > 0) done += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                lua_pushnil(L);
                lua_pushstring(L, errno == EPIPE ? "gnuplot: the process has exited"
                                                 : "gnuplot: cannot write to the process");
                return 2;
            }
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* process:sync(marker [, timeout]) -> stdout, stderr, status
 * Reads gnuplot's output until a line beginning with marker appears on its stderr (the caller sent
 * `print "marker"` after its commands, so everything they printed is in by then; a marker ends in a
 * character no other line has there, as figure.lua's end in \037). Returns all of
 * stdout read so far, stderr up to the marker line, and status: "ok", "exited" (gnuplot ended
 * first), "timeout" (after timeout seconds, default 10) or "interrupted" (a signal: Ctrl-C). */
static int gp_sync(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    size_t mlen, line_start = 0, past = 0;
    const char *marker = luaL_checklstring(L, 2, &mlen);
    double deadline = now_seconds() + luaL_optnumber(L, 3, 10);
    const char *status = "ok";
    while ((past = find_marker_line(&gp->err, marker, mlen, &line_start)) == 0) {
        if (gp->from_stderr < 0) { status = "exited"; break; }
        struct pollfd fds[2] = {{gp->from_stdout, POLLIN, 0}, {gp->from_stderr, POLLIN, 0}};
        int ready = poll(fds, 2, ms_left(deadline));
        if (ready < 0 && errno == EINTR) { status = "interrupted"; break; }
        if (ready == 0) { status = "timeout"; break; }
        if (fds[0].revents) drain(&gp->from_stdout, &gp->out);
        if (fds[1].revents) drain(&gp->from_stderr, &gp->err);
    }
    drain(&gp->from_stdout, &gp->out);   /* gnuplot flushes its stdout before it reads `print` */
    push_taken(L, &gp->out, gp->out.len);
    if (past > 0) {
        push_taken(L, &gp->err, line_start);
        discard(&gp->err, past - line_start);   /* the marker line itself */
    } else {
        push_taken(L, &gp->err, gp->err.len);
    }
    lua_pushstring(L, status);
    return 3;
}

/* process:running() -> true while gnuplot has not exited (reaps it when it has). */
static int gp_running(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    lua_pushboolean(L, !try_reap(gp));
    return 1;
}

/* process:pid() -> its process id, or nil once reaped */
static int gp_pid(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    if (gp->pid == 0) lua_pushnil(L);
    else lua_pushinteger(L, gp->pid);
    return 1;
}

/* process:close([timeout]) -> exit code, or nil and "signal N"
 * Ends its input and reaps it: after timeout seconds (default 2) it is terminated, then killed.
 * Closing twice is harmless; the second call returns what the first did. */
static int gp_close(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    double timeout = luaL_optnumber(L, 2, 2);
    shut_down(gp, timeout < 0 ? 0 : timeout);
    free(gp->out.data);
    free(gp->err.data);
    memset(&gp->out, 0, sizeof gp->out);
    memset(&gp->err, 0, sizeof gp->err);
    if (WIFEXITED(gp->status)) {
        lua_pushinteger(L, WEXITSTATUS(gp->status));
        return 1;
    }
    lua_pushnil(L);
    lua_pushfstring(L, "signal %d", WIFSIGNALED(gp->status) ? WTERMSIG(gp->status) : 0);
    return 2;
}

/* __gc and __close: as close(), but quick - gnuplot exits at once when its input ends */
static int gp_gc(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    shut_down(gp, 1);
    free(gp->out.data);
    free(gp->err.data);
    memset(&gp->out, 0, sizeof gp->out);
    memset(&gp->err, 0, sizeof gp->err);
    return 0;
}

static int gp_tostring(lua_State *L) {
    gnuplot_process *gp = toprocess(L);
    if (gp->pid == 0) lua_pushliteral(L, "gnuplot process (closed)");
    else lua_pushfstring(L, "gnuplot process (pid %d)", (int)gp->pid);
    return 1;
}

static const luaL_Reg gp_meth[] = {
    {"send", gp_send},
    {"sync", gp_sync},
    {"running", gp_running},
    {"pid", gp_pid},
    {"close", gp_close},
    {NULL, NULL}
};

static const luaL_Reg gp_metameth[] = {
    {"__index", NULL},   /* set to the method table below */
    {"__gc", gp_gc},
    {"__close", gp_gc},
    {"__tostring", gp_tostring},
    {NULL, NULL}
};

static const luaL_Reg gp_funcs[] = {
    {"spawn", gp_spawn},
    {"tempfile", gp_tempfile},
    {"commit", gp_commit},
    {NULL, NULL}
};

int luaopen_mha_gnuplot(lua_State *L) {
    if (luaL_newmetatable(L, GNUPLOT_T)) {
        luaL_setfuncs(L, gp_metameth, 0);
        luaL_newlib(L, gp_meth);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
    luaL_newlib(L, gp_funcs);
    return 1;
}
