/* tests/repl/test_lessons_pty.c - steps through lesson 8 in mha-repl on a pseudo-terminal, as a student
 * would: Enter, :next, :back, :goto, changing a variable between steps, breaking a step and getting out
 * with the :goto it offers, :lang, answering the exercise (the verdict; at the prompt answer() echoes no boolean), :save
 * (whose script must run on its own), :quit.
 * The binary is found through env MHA_REPL (tests/run.sh sets it). Every read has a timeout. */
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

#define READ_TIMEOUT_MS 20000

static int master = -1;
static char seen[1 << 20];   /* everything the REPL printed since the last match */
static size_t seen_len = 0;
static char seen_before_prompt[1 << 16];   /* what expect() consumed up to its last match */

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Reads until `want` appears in the output; consumes the output up to the end of the match.
 * Returns 1 when found, 0 on timeout or end of output. */
static int expect(const char *want) {
    long deadline = now_ms() + READ_TIMEOUT_MS;
    for (;;) {
        seen[seen_len] = '\0';
        char *hit = strstr(seen, want);
        if (hit) {
            size_t consumed = (size_t)(hit - seen) + strlen(want);
            size_t kept = consumed < sizeof seen_before_prompt ? consumed : sizeof seen_before_prompt - 1;
            memcpy(seen_before_prompt, seen + consumed - kept, kept);
            seen_before_prompt[kept] = '\0';
            memmove(seen, seen + consumed, seen_len - consumed);
            seen_len -= consumed;
            return 1;
        }
        long left = deadline - now_ms();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = master, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        if (seen_len + 4096 >= sizeof seen) {   /* keep the tail: matches are near the end */
            memmove(seen, seen + seen_len / 2, seen_len - seen_len / 2);
            seen_len -= seen_len / 2;
        }
        ssize_t n = read(master, seen + seen_len, sizeof seen - seen_len - 1);
        if (n <= 0) return 0;
        seen_len += (size_t)n;
    }
}

static void type(const char *line) {
    size_t len = strlen(line);
    if (write(master, line, len) != (ssize_t)len || write(master, "\r", 1) != 1) perror("write");
}

/* Types a line and checks that `want` follows, naming the check. */
static void step(const char *name, const char *line, const char *want) {
    type(line);
    int found = expect(want);
    seen[seen_len] = '\0';
    const char *tail = seen_len > 800 ? seen + seen_len - 800 : seen;   /* the latest output */
    CHECK(name, found, "typed \"%s\", did not see \"%s\" within %d ms; the last output: %s", line, want,
          READ_TIMEOUT_MS, tail);
}

int main(void) {
    const char *repl = getenv("MHA_REPL");
    if (!repl || !*repl) {
        CHECK("MHA_REPL is set", 0, "%s", "set MHA_REPL to the mha-repl binary");
        CHECK_DONE();
    }
    struct winsize ws = {.ws_row = 40, .ws_col = 100};
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    if (pid < 0) {
        CHECK("forkpty", 0, "%s", strerror(errno));
        CHECK_DONE();
    }
    if (pid == 0) {
        setenv("NO_COLOR", "1", 1);
        setenv("TERM", "dumb", 1);
        setenv("LC_ALL", "C.UTF-8", 1);
        setenv("MHA_REPL_HISTORY", "/dev/null", 1);
        unsetenv("MHA_LANG");
        setenv("MHA_PLOT_TERM", "none", 1);   /* stepping is under test, not gnuplot: no plot output */
        execl(repl, "mha-repl", "--lesson", "8", "--lang", "en", (char *)NULL);
        perror("execl");
        _exit(127);
    }

    CHECK("opens lesson 8 at step 1", expect("step 1/6: The layer and its parameters"), "%s", "no step 1 header");
    expect("\n> ");
    step("Enter on an empty line runs step 2", "", "step 2/6: Projections");
    expect("\n> ");
    step(":next runs step 3", ":next", "step 3/6: Heads, scores, weights");
    expect("\n> ");
    step(":back goes to step 2, replaying step 1", ":back", "(step 1 run again quietly, with the lesson's random seed 8)");
    CHECK(":back shows step 2", expect("step 2/6"), "%s", "no step 2 header after :back");
    expect("\n> ");
    step(":goto 5 replays steps 1-4", ":goto 5", "(steps 1-4 run again quietly, with the lesson's random seed 8)");
    CHECK(":goto 5 shows step 5 equal to the layer", expect("max |by hand - layer| < 1e-5:\ttrue"), "%s",
          "step 5 did not report equality");
    expect("\n> ");

    /* change a variable between steps: the next step goes on from the changed state */
    step(":goto 3", ":goto 3", "step 3/6");
    expect("\n> ");
    step("the student zeroes the values", "Vh = Vh * 0", "\n> ");
    step("Enter runs step 4 on the changed Vh", "", "step 4/6");
    expect("\n> ");
    step("the concat is now zero", "print(concat:abs():max():item())", "\n0.0\r\n");
    step("step 5 sees the change", ":next", "max |by hand - layer| < 1e-5:\tfalse");
    expect("\n> ");
    step(":goto 5 rebuilds the state from the seed", ":goto 5", "max |by hand - layer| < 1e-5:\ttrue");
    expect("\n> ");

    /* a step that fails on the student's state says how to get out, every time; its :goto works */
    step(":goto 3 again", ":goto 3", "step 3/6");
    expect("\n> ");
    step("the student removes the values", "Vh = nil", "\n> ");
    step("Enter: step 4 fails and offers :goto 4", "", "error in step 4");
    CHECK("the failure says :goto 4 rebuilds the state", expect(":goto 4 rebuilds them"), "%s", "no way out offered");
    expect("\n> ");
    step("Enter again: the same failure, the same way out", "", "error in step 4");
    CHECK("the second failure says :goto 4 too", expect(":goto 4 rebuilds them"), "%s", "no way out offered");
    expect("\n> ");
    step(":goto 4 runs step 4 from the seed", ":goto 4", "step 4/6");
    expect("\n> ");
    step(":next then shows step 5 equal to the layer", ":next", "max |by hand - layer| < 1e-5:\ttrue");
    expect("\n> ");

    /* :lang answers in the language it switches to */
    step(":lang zh confirms in Chinese", ":lang zh", "课程现在使用中文。");
    expect("\n> ");
    step(":lang en confirms in English", ":lang en", "Lessons are now in English.");
    expect("\n> ");

    /* the exercise: a classic mistake, a malformed answer, then the right answer */
    step("Enter shows the exercise", "", "step 6/6: A fifth token's query");
    expect("\n> ");
    step("the student's own names", "q5, k1 = mha.linear(x5, W_q, b_q):narrow(2, 1, D), Kh:select(1, 1):transpose(1, 2)", "\n> ");
    step("scaling by d_model gets its hint", "answer(mha.softmax(q5:matmul(k1) / math.sqrt(E), 2))", "you scaled by √d_model");
    /* at the prompt answer() returns nothing, as :answer: the verdict is not followed by a bare false/true */
    CHECK("answer() at the prompt echoes no false", expect("\n> ") && !strstr(seen_before_prompt, "\nfalse\r"),
          "the output before the prompt: %s", seen_before_prompt);
    step("a malformed answer gets a clear message", "answer({1, 2})", "your answer has shape (2); the expected one has shape (1,4)");
    expect("\n> ");
    step("answer() with the right value says correct", "answer(mha.softmax(q5:matmul(k1) / math.sqrt(D), 2))", "correct");
    CHECK("answer() at the prompt echoes no true", expect("\n> ") && !strstr(seen_before_prompt, "\ntrue\r"),
          "the output before the prompt: %s", seen_before_prompt);
    step("the lesson goes on: :answer EXPR is checked", ":answer mha.softmax(q5:matmul(k1) / math.sqrt(D), 2)", "correct");
    step("Enter at the end says the lesson is over", "", "End of the lesson");
    expect("\n> ");

    /* :save writes a script that replays the lesson's steps inline: it runs on its own */
    char save_base[64], save_cmd[160];
    snprintf(save_base, sizeof save_base, "/tmp/mha_lessons_pty_%ld", (long)getpid());
    char save_line[96];
    snprintf(save_line, sizeof save_line, ":save %s", save_base);
    step(":save writes the session", save_line, "saved ");
    expect("\n> ");

    step(":reset keeps the lesson open", ":reset", "lesson 8 is still open at step 6");
    expect("\n> ");
    step(":goto works after :reset", ":goto 5", "max |by hand - layer| < 1e-5:\ttrue");
    expect("\n> ");

    type(":quit");
    int status = 0;
    long deadline = now_ms() + READ_TIMEOUT_MS;
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < deadline) {
        char sink[4096];
        struct pollfd p = {.fd = master, .events = POLLIN};
        if (poll(&p, 1, 50) > 0 && read(master, sink, sizeof sink) <= 0) usleep(10000);
    }
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    CHECK(":quit exits with status 0", done == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child %s, status %d", done == pid ? "exited" : "had to be killed", status);
    close(master);

    snprintf(save_cmd, sizeof save_cmd, "%s %s.lua >/dev/null 2>&1", repl, save_base);
    int rc = system(save_cmd);
    CHECK("the script :save wrote during the lesson runs without error", rc == 0, "%s exited %d (kept)", save_cmd, rc);
    char path[96];
    snprintf(path, sizeof path, "%s.md", save_base);
    remove(path);
    snprintf(path, sizeof path, "%s.lua", save_base);
    if (rc == 0) remove(path);   /* a failing script is kept to read */
    CHECK_DONE();
}
