/* tests/repl/pty_session.h - a session of mha-repl in a pseudo-terminal (forkpty) for the pty tests:
 * start it, type, wait for its prompt or a string with a timeout (a hang is a FAIL, never a hung test). */
#ifndef MHA_TESTS_PTY_SESSION_H
#define MHA_TESTS_PTY_SESSION_H

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define BUF_MAX (4 << 20)

typedef struct session {
    pid_t pid;
    int fd;          /* the pty's master side */
    char *buf;       /* everything the REPL wrote, NUL-terminated */
    size_t len;
    size_t mark;     /* output before mark has been looked at */
    int exited, status;
} session;

#define HEADER "# mha-repl history 1\n"   /* the first line of a history file (lua/repl/history.c) */

static const char *repl_path;
static char tmpdir[256];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads what is available within `timeout` seconds. Returns bytes read, 0 on timeout, -1 at EOF. */
static int pump(session *s, double timeout) {
    struct pollfd p = {s->fd, POLLIN, 0};
    int r = poll(&p, 1, (int)(timeout * 1000));
    if (r <= 0) return 0;
    char chunk[65536];
    ssize_t n = read(s->fd, chunk, sizeof chunk);
    if (n <= 0) return -1;  /* EIO: the child closed the terminal */
    if (s->len + (size_t)n >= BUF_MAX) n = (ssize_t)(BUF_MAX - 1 - s->len);
    memcpy(s->buf + s->len, chunk, (size_t)n);
    s->len += (size_t)n;
    s->buf[s->len] = '\0';
    return (int)n;
}

/* Starts the REPL with a clean environment: TERM=dumb, NO_COLOR, the given history file. */
static int colour_terminal = 0;  /* start the next session as a colour terminal would: TERM=xterm, no NO_COLOR */
/* Or exactly these (NULL: unset), when env_given: for the colour policy's cases. */
static int env_given = 0;
static const char *env_term = NULL, *env_no_colour = NULL;

static int start(session *s, const char *history, const char *const *args) {
    memset(s, 0, sizeof *s);
    s->buf = calloc(1, BUF_MAX);
    struct winsize ws = {40, 100, 0, 0};   /* a projector's 40 rows: a lesson step fits without a pause */
    s->pid = forkpty(&s->fd, NULL, NULL, &ws);
    if (s->pid < 0) return 0;
    if (s->pid == 0) {
        setenv("TERM", colour_terminal ? "xterm" : "dumb", 1);
        if (colour_terminal) unsetenv("NO_COLOR");
        else setenv("NO_COLOR", "1", 1);
        if (env_given) {
            if (env_term) setenv("TERM", env_term, 1); else unsetenv("TERM");
            if (env_no_colour) setenv("NO_COLOR", env_no_colour, 1); else unsetenv("NO_COLOR");
        }
        setenv("MHA_REPL_HISTORY", history, 1);
        setenv("INPUTRC", "/dev/null", 1);
        char *argv[16];
        int n = 0;
        argv[n++] = (char *)repl_path;
        for (int i = 0; args && args[i] && n < 15; i++) argv[n++] = (char *)args[i];
        argv[n] = NULL;
        execv(repl_path, argv);
        _exit(127);
    }
    return 1;
}

static void send_text(session *s, const char *text) {
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(s->fd, text, n);
        if (w <= 0) { if (errno == EINTR) continue; return; }
        text += w;
        n -= (size_t)w;
    }
}

/* Reads output for `seconds` (lets the REPL get where a test wants it before a key arrives). */
static void settle(session *s, double seconds) {
    double end = now() + seconds;
    for (double left; (left = end - now()) > 0;)
        if (pump(s, left) < 0) break;
}

/* Waits until needle appears in the output after the mark; moves the mark past it. */
static int expect(session *s, const char *needle, double timeout) {
    double end = now() + timeout;
    for (;;) {
        char *hit = strstr(s->buf + s->mark, needle);
        if (hit) { s->mark = (size_t)(hit - s->buf) + strlen(needle); return 1; }
        double left = end - now();
        if (left <= 0) return 0;
        if (pump(s, left) < 0) return 0;
    }
}

#define COLOUR_PROMPT_END "> \033[0m"

/* Does the output end with a prompt ("> ", or its coloured form)? */
static int at_prompt(const session *s) {
    size_t n = strlen(COLOUR_PROMPT_END);
    if (s->len >= s->mark + 2 && memcmp(s->buf + s->len - 2, "> ", 2) == 0) return 1;
    return s->len >= s->mark + n && memcmp(s->buf + s->len - n, COLOUR_PROMPT_END, n) == 0;
}

/* Waits for the prompt at the end of the output, with nothing more coming for 150 ms. */
static int wait_prompt(session *s, double timeout) {
    double end = now() + timeout;
    for (;;) {
        if (at_prompt(s)) {
            if (pump(s, 0.15) == 0) return 1;
            continue;
        }
        double left = end - now();
        if (left <= 0) return 0;
        if (pump(s, left) < 0) return 0;
    }
}

/* Sends one line and returns (malloc'd) what the REPL printed before its next prompt: the text after
 * the echoed line, with \r\n made \n and the prompt taken off. NULL when no prompt came back. */
static char *run(session *s, const char *line, double timeout) {
    s->mark = s->len;
    send_text(s, line);
    send_text(s, "\n");
    if (!wait_prompt(s, timeout)) return NULL;
    const char *start = s->buf + s->mark;
    /* the echo of the input spans as many lines as it has */
    for (const char *p = line; *p; p++)
        if (*p == '\n') { const char *nl = strchr(start, '\n'); if (nl) start = nl + 1; }
    const char *nl = strchr(start, '\n');
    start = nl ? nl + 1 : s->buf + s->len;
    size_t n = (size_t)(s->buf + s->len - start);
    char *out = malloc(n + 1), *q = out;
    for (size_t i = 0; i < n; i++)
        if (start[i] != '\r') *q++ = start[i];
    *q = '\0';
    /* take off the prompt (and any secondary prompts left by a multi-line input) */
    char *prompt = strrchr(out, '\n');  /* the prompt is the last line */
    if (prompt) prompt[1] = '\0';
    else *out = '\0';
    s->mark = s->len;
    return out;
}

/* Checks that line prints exactly want (plus a newline). */
static void check_output(session *s, const char *name, const char *line, const char *want) {
    char *got = run(s, line, 10);
    char expected[4096];
    snprintf(expected, sizeof expected, "%s%s", want, *want ? "\n" : "");
    CHECK(name, got && strcmp(got, expected) == 0, "%s: got [%s], want [%s]", line, got ? got : "(no prompt: hung?)", expected);
    free(got);
}

/* Waits for the child to exit; kills it after timeout. Returns 1 when it exited by itself. */
static int finish(session *s, double timeout) {
    double end = now() + timeout;
    while (now() < end) {
        pump(s, 0.05);
        pid_t r = waitpid(s->pid, &s->status, WNOHANG);
        if (r == s->pid) { s->exited = 1; break; }
    }
    if (!s->exited) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &s->status, 0);
    }
    close(s->fd);
    return s->exited;
}

static void end_session(session *s) {
    if (!s->exited) finish(s, 0);
    const char *dump = getenv("MHA_TEST_DUMP");  /* a file to append the raw terminal output to */
    FILE *f = dump ? fopen(dump, "a") : NULL;
    if (f) { fwrite(s->buf, 1, s->len, f); fputs("\n=====\n", f); fclose(f); }
    free(s->buf);
    s->buf = NULL;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static int count(const char *haystack, const char *needle) {
    int n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

#endif
