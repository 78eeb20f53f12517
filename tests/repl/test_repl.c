/* tests/repl/test_repl.c - drives mha-repl in a real pseudo-terminal (forkpty), as a student would type:
 * multi-line input, auto-print, ';', '_', Tab completion, Ctrl-C, history across runs, Ctrl-D, :time, :save.
 * Every read has a timeout, so a REPL that hangs is a FAIL, never a hung test. The binary is $MHA_REPL. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#include "pty_session.h"

/* ---- the checks ---- */

static void test_evaluation(session *s) {
    check_output(s, "autoprint_number", "6 * 7", "42");
    check_output(s, "autoprint_several", "1, 'two', nil", "1\ttwo\tnil");
    check_output(s, "semicolon_suppresses", "6 * 8;", "");
    check_output(s, "underscore_last_value", "_", "48");
    check_output(s, "statement_prints_nothing", "y = 10", "");
    check_output(s, "multiline_function", "function sq(n)\nreturn n * n\nend", "");
    check_output(s, "multiline_function_runs", "sq(12)", "144");
    check_output(s, "blank_line_keeps_input", "function five()\n\nreturn 5\nend", "");
    check_output(s, "blank_line_keeps_input_runs", "five()", "5");
    check_output(s, "multiline_expression", "{1,\n2}", "{1, 2}");
    check_output(s, "table_readable", "{b = {1, 2}, 'one', a = 'x', [3] = true}", "{\"one\", [3] = true, a = \"x\", b = {1, 2}}");
    free(run(s, "c = {1, 2}; c.self = c", 10));
    check_output(s, "table_cycle", "c", "{1, 2, self = <cycle>}");
    check_output(s, "statements_return_values", "local v = 3; return v, v + 1", "3\t4");
    check_output(s, "error_message", "error('boom')", "stdin:1: boom");
    /* statements, then a value: the value prints as it would alone (lua.c's addreturn for the last
     * statement), whether the value alone is a syntax error (zz, #A) or a call statement (:shape()) */
    check_output(s, "value_after_statements", "zz = 3; zz", "3");
    check_output(s, "length_after_statements", "A = {4, 5, 6}; #A", "3");
    check_output(s, "call_after_statements", "sd = {w = mha.ones(2, 3)}; sd[\"w\"]:shape()", "{2, 3}");
    check_output(s, "value_after_local", "local v = 4; v * 2", "8");
    check_output(s, "value_after_multiline_statement", "t2 = {1,\n2}; #t2", "2");
    check_output(s, "value_after_statements_quiet", "q = 5; q + 1;", "");
    check_output(s, "value_after_statements_kept", "_", "6");
    check_output(s, "assignment_after_statements_prints_nothing", "w1 = 1; w2 = 2", "");
    check_output(s, "print_after_statements_once", "p1 = 'x'; print(p1)", "x");
    check_output(s, "error_after_statements_placed", "e1 = 1; error('boom')", "stdin:1: boom");
    /* without a ';' before the value it cannot print: the hint shows where the ';' goes */
    check_output(s, "value_after_statements_needs_break", "A3 = {1, 2} #A3",
                 "stdin:1: unexpected symbol near '#'\n"
                 "hint: a value after statements prints when a ';' comes before it: A3 = {1, 2}; #A3");
    char *got;
    check_output(s, "python_shape_hint_setup", "x = mha.ones(2, 3)", "");
    got = run(s, "x.shape", 10);
    CHECK("python_shape_hint_method", got && strstr(got, "hint: x.shape is the method itself; call it with a colon: x:shape()"),
          "got [%s]", got ? got : "(hung)");
    free(got);
    /* Python's loop, its colon typed: the error and the hint at once, as for x.shape, not a `>>` */
    check_output(s, "python_range_loop_hint_at_once", "for i in range(3):",
                 "stdin:1: <name> expected near <eof>\n"
                 "hint: Lua counts from 1: for i = 1, 3 do ... end (both ends included) runs i over 1, 2, 3, the\n"
                 "      indices x[i] takes; where range(3)'s 0, 1, 2 are really needed, write i - 1");
    got = run(s, "function bad() local t = nil; return t.x end\nbad()", 10);
    CHECK("error_traceback", got && strstr(got, "attempt to index a nil value") && strstr(got, "in function 'bad'")
          && !strstr(got, "repl.lua") && !strstr(got, "[C]: in ?"), "got [%s]", got ? got : "(hung)");
    free(got);
    /* an error a Lua helper raises for the user's call: no helper frames, no helper position */
    got = run(s, "mha.show(mha.ones(2, 2), 5)", 10);
    CHECK("helper_error_one_line", got && strcmp(got, "stdin:1: show: options must be a table, got number\n") == 0,
          "got [%s]", got ? got : "(hung)");
    free(got);
    free(run(s, "function call_show()\nmha.show(mha.ones(2, 2), 5)\nend", 10));
    got = run(s, "call_show()", 10);
    CHECK("helper_error_user_frames", got && strstr(got, "stdin:2: show: options must be a table, got number\n")
          && strstr(got, "stdin:2: in function 'call_show'") && !strstr(got, "lua/") && !strstr(got, "[C]"),
          "got [%s]", got ? got : "(hung)");
    free(got);
    /* a tensor prints as tostring shows it */
    free(run(s, "t = mha.tensor{{1.5, 2}, {3, 4}}", 10));
    char *shown = run(s, "t", 10);
    char *direct = run(s, "print(tostring(t))", 10);
    CHECK("autoprint_tensor", shown && direct && strcmp(shown, direct) == 0 && strstr(shown, "1.5"),
          "t printed [%s], tostring(t) is [%s]", shown ? shown : "(hung)", direct ? direct : "(hung)");
    free(shown);
    free(direct);
}

static void test_completion(session *s) {
    check_output(s, "complete_field", "type(mha.so\t)", "function");
    free(run(s, "x = mha.randn(2, 3)", 10));
    check_output(s, "complete_method", "x:transp\t(1, 2):size(1)", "3");
    check_output(s, "complete_global", "type(pri\t)", "function");
    check_output(s, "complete_keyword", "loc\t zz = 3; return zz", "3");
    char line[600], want[600];
    snprintf(line, sizeof line, "io.open('%s/unique_name_abc.npy', 'w'):close()", tmpdir);
    free(run(s, line, 10));
    snprintf(line, sizeof line, "'%s/unique_na\t", tmpdir);
    snprintf(want, sizeof want, "%s/unique_name_abc.npy", tmpdir);
    check_output(s, "complete_file_in_string", line, want);
    /* a name with quotes: escaped for the string it is completed in, so it reads back as itself */
    snprintf(line, sizeof line, "io.open('%s/it\\'s \"q\".npz', 'w'):close()", tmpdir);
    free(run(s, line, 10));
    snprintf(line, sizeof line, "\"%s/it\t", tmpdir);
    snprintf(want, sizeof want, "%s/it's \"q\".npz", tmpdir);
    check_output(s, "complete_file_quoted_double", line, want);
    snprintf(line, sizeof line, "'%s/it\t", tmpdir);
    check_output(s, "complete_file_quoted_single", line, want);
    free(run(s, "cm = mha.MultiheadAttention{embed_dim = 4, num_heads = 2}", 10));
    check_output(s, "complete_module_parameter", "cm.in_proj_w\t:size(1)", "12");
    free(run(s, "cl = mha.nn.Linear{in_features = 4, out_features = 3}", 10));
    check_output(s, "complete_nn_method", "cl:forw\t(mha.ones(1, 4)):size(2)", "3");
    check_output(s, "complete_command", ":tim\t", "time: on");
    check_output(s, "complete_command_again", ":time", "time: off");
}

static void test_interrupt(session *s) {
    /* Ctrl-C at the prompt clears the line; at the secondary prompt it drops the statement */
    send_text(s, "this is not lua");
    settle(s, 0.3);
    send_text(s, "\x03");
    CHECK("ctrl_c_prompt", wait_prompt(s, 5), "no prompt after Ctrl-C at the prompt");
    check_output(s, "ctrl_c_prompt_cleared", "2 + 3", "5");
    send_text(s, "function half_typed(\n");
    settle(s, 0.3);
    send_text(s, "\x03");
    CHECK("ctrl_c_secondary", wait_prompt(s, 5), "no prompt after Ctrl-C at >>");
    check_output(s, "ctrl_c_secondary_dropped", "9 + 1", "10");

    /* a Lua loop */
    s->mark = s->len;
    send_text(s, "while true do end\n");
    settle(s, 0.4);
    double t0 = now();
    send_text(s, "\x03");
    int stopped = expect(s, "interrupted", 5);
    CHECK("ctrl_c_lua_loop", stopped, "no 'interrupted' within 5 s of Ctrl-C");
    if (stopped) printf("# Lua loop stopped %.0f ms after Ctrl-C\n", (now() - t0) * 1000);
    wait_prompt(s, 5);
    check_output(s, "ctrl_c_lua_loop_alive", "1 + 1", "2");

    /* a long C kernel: the core polls mha_interrupted() */
    /* one matmul of about 4 s here: (8,3000,3000) @ (3000,3000), batch broadcast */
    char *made = run(s, "a = mha.randn(8, 3000, 3000); b = mha.randn(3000, 3000)", 60);
    free(made);
    s->mark = s->len;
    send_text(s, "kernel_out = mha.matmul(a, b)\n");
    settle(s, 0.5);
    t0 = now();
    send_text(s, "\x03");
    stopped = expect(s, "interrupted", 120);
    double latency = now() - t0;
    CHECK("ctrl_c_kernel", stopped && latency < 1.0,
          stopped ? "the kernel stopped %.2f s after Ctrl-C (want < 1 s: does it poll mha_interrupted?)"
                  : "no 'interrupted' within 120 s (%.0f s), or the kernel ended before Ctrl-C", latency);
    if (stopped) printf("# matmul (8,3000,3000)@(3000,3000) stopped %.0f ms after Ctrl-C\n", latency * 1000);
    wait_prompt(s, 10);
    check_output(s, "ctrl_c_kernel_alive", "kernel_out == nil, 1 + 1", "true\t2");
    /* the interrupted kernel freed its scratch and its output: only the tensors of earlier checks remain */
    free(run(s, "a, b = nil, nil; collectgarbage(); collectgarbage()", 10));
    check_output(s, "ctrl_c_kernel_freed", "mha.memory() < 100000", "true");

    /* a tensor of 4 GB being made: writing it takes seconds (its pages fault in); Ctrl-C stops it
     * within a run of 64 MiB, and nothing of it stays held */
    s->mark = s->len;
    send_text(s, "huge = mha.zeros(1e9)\n");
    settle(s, 0.15);   /* well before the 4 GB are written, even on a fast machine */
    t0 = now();
    send_text(s, "\x03");
    stopped = expect(s, "interrupted", 60);
    latency = now() - t0;
    CHECK("ctrl_c_zeros", stopped && latency < 1.0,
          stopped ? "zeros stopped %.2f s after Ctrl-C (want < 1 s)" : "no 'interrupted' within 60 s (%.0f s)", latency);
    if (stopped) printf("# mha.zeros(1e9) stopped %.0f ms after Ctrl-C\n", latency * 1000);
    wait_prompt(s, 10);
    check_output(s, "ctrl_c_zeros_freed", "huge == nil, mha.memory() < 100000", "true\ttrue");
}

/* Runs a command line and returns (malloc'd) what it wrote to stdout and stderr; *rc its exit status. */
static char *run_command(const char *command, int *rc) {
    FILE *p = popen(command, "r");
    char *text = calloc(1, 1 << 16);
    size_t n = p ? fread(text, 1, (1 << 16) - 1, p) : 0;
    text[n] = '\0';
    *rc = p ? pclose(p) : -1;
    return text;
}

/* :save without a file name, or to a path that cannot be written: a one-line error, no traceback. */
/* A command given an argument it does not take says how to use it, and does nothing. */
static void test_command_arguments(session *s) {
    char *got = run(s, ":time extra", 10);
    CHECK("time_rejects_argument", got && strstr(got, "usage: :time   (") && count(got, "\n") == 1 && !strstr(got, "time: on"),
          "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, ":quit now", 10);
    CHECK("quit_rejects_argument", got && strstr(got, "usage: :quit"), "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, ":help save extra", 10);
    CHECK("help_rejects_two_names", got && strstr(got, "usage: :help [NAME]"), "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, ":save a b", 10);
    CHECK("save_rejects_two_names", got && strstr(got, "usage: :save FILE"), "got [%s]", got ? got : "(hung)");
    free(got);
}

static void test_save_errors(session *s) {
    char *got = run(s, ":save", 10);
    CHECK("save_without_name", got && strstr(got, ":save needs a file name") && count(got, "\n") == 1,
          "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, ":save /nonexistent-dir/x", 10);
    CHECK("save_unwritable", got && strstr(got, ":save: /nonexistent-dir/x.lua: No such file or directory")
          && count(got, "\n") == 1, "got [%s]", got ? got : "(hung)");
    free(got);
}

static void test_commands(session *s) {
    free(run(s, "require('mha.repl').on_empty_line = function() print('the empty-line hook ran') end", 10));
    check_output(s, "empty_line_hook", "", "the empty-line hook ran");
    free(run(s, "require('mha.repl').on_empty_line = nil", 10));
    check_output(s, "empty_line_nothing", "", "");
    check_output(s, "time_on", ":time", "time: on");
    char *got = run(s, "tt = 1", 10);
    CHECK("time_shows", got && strstr(got, "[time ") && strstr(got, " ms") && strstr(got, "tensors hold"),
          "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, "tt = = 1", 10);   /* did not compile: it ran for no time */
    CHECK("time_not_after_syntax_error", got && strstr(got, "unexpected symbol") && !strstr(got, "[time "),
          "got [%s]", got ? got : "(hung)");
    free(got);
    check_output(s, "time_off", ":time", "time: off");
    got = run(s, "?", 10);
    CHECK("question_lists_commands", got && strstr(got, ":quit") && strstr(got, ":save FILE") && strstr(got, ":reset"),
          "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, "?mha.softmax", 10);
    CHECK("question_help", got && strstr(got, "mha.softmax(x, dim)") && strstr(got, "exp"), "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, "?print", 10);
    CHECK("question_lua_builtin", got && strstr(got, "manual.html#pdf-print") && !strstr(got, "printoptions"),
          "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, ":help goto", 10);
    CHECK("help_command_goto", got && strstr(got, ":goto K") && strstr(got, "step K"), "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(s, ":nonsense", 10);
    CHECK("unknown_command", got && strstr(got, "unknown command :nonsense"), "got [%s]", got ? got : "(hung)");
    free(got);

    char base[300], path[320];
    snprintf(base, sizeof base, "%s/session", tmpdir);
    char cmd[400];
    snprintf(cmd, sizeof cmd, ":save %s", base);
    got = run(s, cmd, 10);
    CHECK("save_reports", got && strstr(got, "saved "), "got [%s]", got ? got : "(hung)");
    free(got);
    snprintf(path, sizeof path, "%s.lua", base);
    char *script = read_file(path);
    CHECK("save_lua", script && strstr(script, "replay.show(6 * 7)") && strstr(script, "\nfunction sq(n)\nreturn n * n\nend\n")
          && strstr(script, "-- :time") && strstr(script, "replay.fails [[error('boom')]]"), "%s: [%s]", path, script ? script : "(missing)");
    snprintf(path, sizeof path, "%s.md", base);
    char *md = read_file(path);
    CHECK("save_md", md && strstr(md, "```lua\nsq(12)\n```\n```text\n144\n```") && strstr(md, "stdin:1: boom"),
          "%s: [%s]", path, md ? md : "(missing)");
    free(md);
    /* the script replays (the inputs Ctrl-C stopped run as long as they did in the session) */
    if (script) {
        char line[600];
        snprintf(line, sizeof line, "MHA_REPL_HISTORY=/dev/null timeout 60 %s %s.lua 2>&1", repl_path, base);
        int rc;
        char *replay = run_command(line, &rc);
        CHECK("save_replays", rc == 0 && strstr(replay, "42\n") && strstr(replay, "144\n"), "exit %d, output [%s]", rc, replay);
        free(replay);
    }
    CHECK("save_marks_interrupted", script && strstr(script, "-- stopped by Ctrl-C after ")
          && strstr(script, "replay.interrupted(") && strstr(script, "[[while true do end]])"),
          "[%s]", script ? script : "(missing)");
    free(script);
    test_save_errors(s);
    test_command_arguments(s);

    free(run(s, "zz = 5", 10));
    got = run(s, ":reset", 10);
    CHECK("reset_reports", got && strstr(got, "fresh state"), "got [%s]", got ? got : "(hung)");
    free(got);
    check_output(s, "reset_clears", "zz, type(mha), type(plot)", "nil\ttable\ttable");
    char want_arg[400];
    snprintf(want_arg, sizeof want_arg, "table\t%s", repl_path);
    check_output(s, "reset_keeps_arg", "type(arg), arg[0]", want_arg);
}

/* :save writes a script that prints what the session printed: `_` kept as the REPL keeps it, :reset a
 * real break, each input a chunk of its own (a local does not reach the next input), values printed
 * only when there are some, an input that raised an error raising it again. */
static void test_save_replays(const char *history) {
    static const char *const inputs[] = {
        "a = 1", "41 + a", "b = _ + 1", "b", ":reset", "a", "b", "local z = 3", "z", "print('no values')",
        "t = {n = 1}", "t", "w = mha.ones(2, 2)", "mha.show(w, 5)", "local v = 3; return v, v + 1",
        "x = 2; error('boom')", "x", "_", "y = 7;", "function f() return 5 end", "f();", "_ + y",
        /* a trailing comment after ';' (the README's example), ';' and "--" in strings */
        "x = mha.tensor{{1, 2}, {3, 4}}", "mha.softmax(x, -1);            -- a trailing ; hides the value ...",
        "_:sum(-1)                      -- ... and _ holds the last value", "mha.softmax(x, 2); -- hidden?",
        "x = 1; -- c", "x", "\"a--b\";", "_", "[[;]]", "[==[;]]--]==]; --[[ c ]]", "_",
        /* statements, then the value shown; a local among them */
        "A2 = {1, 2, 3}; #A2", "local v2 = 2; v2 + 1 -- three", "y2 = 3; y2;", "_", NULL
    };
    session s;
    const char *none[] = {NULL};
    start(&s, history, none);
    wait_prompt(&s, 10);
    char expected[16384] = "";
    for (int i = 0; inputs[i]; i++) {
        char *got = run(&s, inputs[i], 10);
        if (got && inputs[i][0] != ':') strncat(expected, got, sizeof expected - strlen(expected) - 1);
        free(got);
    }
    /* an input Ctrl-C stopped: what it did before the stop stays done (t0 is set), and the replay says
     * "interrupted" where the session did, after running as long */
    s.mark = s.len;
    send_text(&s, "t0 = mha.clock(); spins = 0; while true do spins = spins + 1 end\n");
    settle(&s, 0.5);
    send_text(&s, "\x03");
    if (wait_prompt(&s, 10)) strncat(expected, "interrupted\n", sizeof expected - strlen(expected) - 1);
    /* an input that catches the Ctrl-C and returns what it has, as s = mha.generate(...) does: it is
     * replayed for as long too (as a plain statement its loop would never end) */
    s.mark = s.len;
    send_text(&s, "kept = (function() pcall(function() while true do end end) "
                  "return debug.getregistry()['mha.repl.interrupt_later']('kept') end)()\n");
    settle(&s, 0.5);
    send_text(&s, "\x03");
    wait_prompt(&s, 10);
    /* a loop around such an input stops at its next turn, in the session and in the replay (which
     * runs the input in a coroutine, where the stop came once: the second turn's loop would never
     * end): "interrupted", and kept2 is the first turn's */
    s.mark = s.len;
    send_text(&s, "for i = 1, 3 do kept2 = (function() pcall(function() while true do end end) "
                  "return debug.getregistry()['mha.repl.interrupt_later'](i) end)() end\n");
    settle(&s, 0.5);
    send_text(&s, "\x03");
    if (wait_prompt(&s, 10)) strncat(expected, "interrupted\n", sizeof expected - strlen(expected) - 1);
    const char *after_stop[] = {"t0 ~= nil, spins > 0", "print(mha.clock() - t0 > 0.3)", "kept", "kept2", NULL};
    for (int i = 0; after_stop[i]; i++) {
        char *got = run(&s, after_stop[i], 10);
        if (got) strncat(expected, got, sizeof expected - strlen(expected) - 1);
        free(got);
    }
    char base[300], cmd[700];
    snprintf(base, sizeof base, "%s/replay", tmpdir);
    snprintf(cmd, sizeof cmd, ":save %s", base);
    free(run(&s, cmd, 10));
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
    CHECK("save_session_output", strncmp(expected, "42\n43\nnil\nnil\nnil\nno values\n{n = 1}\n", 36) == 0
          && strstr(expected, "show: options must be a table")
          && strstr(expected, "interrupted\ninterrupted\ntrue\ttrue\ntrue\nkept\n1\n"),
          "the session printed [%s]", expected);
    snprintf(cmd, sizeof cmd, "%s.lua", base);
    char *script = read_file(cmd);
    const char *second = script ? strstr(script, "replay.interrupted(") : NULL;
    CHECK("save_marks_caught_interrupt", second && strstr(second + 1, "replay.interrupted(")
          && strstr(script, "interrupt_later']('kept')"), "[%s]", script ? script : "(missing)");
    free(script);
    snprintf(cmd, sizeof cmd, "MHA_REPL_HISTORY=/dev/null timeout 60 %s %s.lua 2>&1", repl_path, base);
    int rc;
    char *replay = run_command(cmd, &rc);
    CHECK("save_replays_session_output", rc == 0 && strcmp(replay, expected) == 0,
          "exit %d, the replay printed [%s], the session [%s]", rc, replay, expected);
    free(replay);
}

/* Types the first session's inputs, quits with Ctrl-D, and checks the file; a second run reads it. */
static void test_history(const char *history) {
    session s;
    const char *none[] = {NULL};
    start(&s, history, none);
    wait_prompt(&s, 10);
    free(run(&s, "hist_a = 1", 10));
    free(run(&s, "hist_a = 1", 10));   /* a repeat: not a second entry */
    free(run(&s, "function hist_f(n)\nreturn n + 100\nend", 10));
    send_text(&s, "\x04");
    int exited = finish(&s, 5);
    CHECK("ctrl_d_exits", exited && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0,
          "exited %d, status %d", exited, s.status);
    end_session(&s);
    char *text = read_file(history);
    CHECK("history_written", text && strstr(text, "hist_a = 1\n") && strstr(text, "function hist_f(n)\\nreturn n + 100\\nend\n"),
          "file [%s]", text ? text : "(missing)");
    CHECK("history_no_repeat", text && count(text, "hist_a = 1\n") == 1, "file [%s]", text ? text : "(missing)");
    free(text);

    start(&s, history, none);
    wait_prompt(&s, 10);
    /* Ctrl-R finds the multi-line entry; Enter runs it whole */
    s.mark = s.len;
    send_text(&s, "\x12hist_f(n");
    settle(&s, 0.3);
    send_text(&s, "\r");  /* Enter, as a terminal sends it: accepts the line found */
    wait_prompt(&s, 10);
    check_output(&s, "history_read_back_multiline", "hist_f(1)", "101");
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
}

/* Closing the terminal (SIGHUP) or SIGTERM ends the REPL as Ctrl-D does: the session's history is kept,
 * whether it waits at the prompt or runs a loop that never ends. */
static void test_hangup(const char *history) {
    static const struct { const char *name; int sig; const char *entry; const char *busy; } cases[] = {
        {"sighup_at_prompt_keeps_history", SIGHUP, "hup_entry = 1", NULL},
        {"sigterm_while_running_keeps_history", SIGTERM, "term_entry = 2", "while true do end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        session s;
        const char *none[] = {NULL};
        start(&s, history, none);
        wait_prompt(&s, 10);
        free(run(&s, cases[i].entry, 10));
        if (cases[i].busy) {
            send_text(&s, cases[i].busy);
            send_text(&s, "\n");
            settle(&s, 0.3);
        }
        kill(s.pid, cases[i].sig);
        int exited = finish(&s, 5);
        end_session(&s);
        char *text = read_file(history);
        CHECK(cases[i].name, exited && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0 && text && strstr(text, cases[i].entry)
              && (!cases[i].busy || strstr(text, cases[i].busy)),
              "exited %d, status %d, file [%s]", exited, s.status, text ? text : "(missing)");
        free(text);
    }
}

/* Ctrl-C reaches a loop inside a coroutine (a thread of its own, which the hook on the main thread
 * never reached): through coroutine.wrap, coroutine.resume, and one coroutine inside another. */
static void test_coroutine_interrupt(session *s) {
    static const struct { const char *name, *code; } loops[] = {
        {"ctrl_c_in_coroutine_wrap", "coroutine.wrap(function() while true do end end)()"},
        {"ctrl_c_in_coroutine_resume", "co = coroutine.create(function() local n = 0 while true do n = n + 1 end end); "
                                       "print(coroutine.resume(co))"},
        {"ctrl_c_in_nested_coroutines", "coroutine.wrap(function() coroutine.wrap(function() while true do end end)() end)()"},
        {"ctrl_c_in_coroutine_after_yields", "g = coroutine.wrap(function() coroutine.yield(1) while true do end end); g(); g()"},
    };
    for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++) {
        s->mark = s->len;
        send_text(s, loops[i].code);
        send_text(s, "\n");
        settle(s, 0.4);
        send_text(s, "\x03");
        int stopped = expect(s, "interrupted", 3);
        CHECK(loops[i].name, stopped, "no 'interrupted' within 3 s of Ctrl-C: [%s]", s->buf + s->mark);
        wait_prompt(s, 5);
    }
    check_output(s, "ctrl_c_in_coroutine_alive", "1 + 1", "2");
    /* the wrapped functions behave as Lua's: values, errors with the caller's position, dead coroutines */
    check_output(s, "coroutine_wrap_values", "w = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end); "
                 "print(w(1), w(5))", "2\t10");
    check_output(s, "coroutine_wrap_dead", "print(pcall(w))", "false\tcannot resume dead coroutine");
    check_output(s, "coroutine_resume_values", "print(coroutine.resume(coroutine.create(function(x) return x, 7 end), 3))",
                 "true\t3\t7");
    check_output(s, "coroutine_resume_not_a_coroutine", "print(pcall(coroutine.resume, 5))",
                 "false\tbad argument #1 to 'coroutine.resume' (coroutine expected, got number)");
}

/* SIGTERM or SIGHUP ends the REPL within a second even when the running Lua code catches the interrupt
 * and goes on (a pcall in a loop, inside a coroutine); a second signal ends it at once. What was typed
 * before is in the history file either way. */
static void test_hangup_stubborn(const char *history) {
    static const char *stubborn = "coroutine.wrap(function() while true do pcall(function() while true do end end) end end)()";
    for (int twice = 0; twice < 2; twice++) {
        session s;
        const char *none[] = {NULL};
        remove(history);
        start(&s, history, none);
        wait_prompt(&s, 10);
        const char *entry = twice ? "stubborn_two = 2" : "stubborn_one = 1";
        free(run(&s, entry, 10));
        send_text(&s, stubborn);
        send_text(&s, "\n");
        settle(&s, 0.4);
        double t0 = now();
        kill(s.pid, twice ? SIGHUP : SIGTERM);
        if (twice) {
            settle(&s, 0.1);
            kill(s.pid, SIGHUP);
        }
        int exited = finish(&s, 5);
        double took = now() - t0;
        end_session(&s);
        char *text = read_file(history);
        CHECK(twice ? "second_sighup_ends_at_once" : "sigterm_ends_a_stubborn_loop_within_1s",
              exited && took < (twice ? 0.6 : 1.6) && text && strstr(text, entry),
              "exited %d after %.2f s, status %d, file [%s]", exited, took, s.status, text ? text : "(missing)");
        free(text);
    }
}

/* The history file keeps its mode and owner, a symbolic link stays one (its target is rewritten), a
 * read-only file is left alone with one warning, temporary files a killed REPL left are removed, and a
 * folder as the history path is one warning. */
static void test_history_files(void) {
    char path[400], target[400], stale[420], cmd[900];
    const char *none[] = {NULL};
    session s;

    snprintf(path, sizeof path, "%s/hist_mode", tmpdir);
    FILE *f = fopen(path, "w");
    fputs(HEADER "old_mode = 1\n", f);
    fclose(f);
    chmod(path, 0640);
    snprintf(stale, sizeof stale, "%s.tmp-Ab3xY9", path);
    f = fopen(stale, "w");
    fputs("half written\n", f);
    fclose(f);
    start(&s, path, none);
    wait_prompt(&s, 10);
    free(run(&s, "kept_mode = 1", 10));
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
    struct stat st;
    char *text = read_file(path);
    CHECK("history_keeps_mode", stat(path, &st) == 0 && (st.st_mode & 07777) == 0640 && text && strstr(text, "old_mode = 1\n")
          && strstr(text, "kept_mode = 1\n"), "mode %o, file [%s]", (unsigned)(st.st_mode & 07777), text ? text : "(missing)");
    free(text);
    CHECK("history_removes_stale_temporary_files", access(stale, F_OK) != 0, "%s is still there", stale);

    snprintf(path, sizeof path, "%s/hist_readonly", tmpdir);
    f = fopen(path, "w");
    fputs(HEADER "frozen = 1\n", f);
    fclose(f);
    chmod(path, 0444);
    start(&s, path, none);
    wait_prompt(&s, 10);
    free(run(&s, "not_written = 1", 10));
    send_text(&s, "\x04");
    finish(&s, 5);
    text = read_file(path);
    CHECK("history_readonly_left_alone", stat(path, &st) == 0 && (st.st_mode & 07777) == 0444 && text
          && strcmp(text, HEADER "frozen = 1\n") == 0 && count(s.buf, "warning: cannot write the history file") == 1,
          "mode %o, file [%s], output [%s]", (unsigned)(st.st_mode & 07777), text ? text : "(missing)", s.buf);
    free(text);
    end_session(&s);

    snprintf(target, sizeof target, "%s/hist_target", tmpdir);
    snprintf(path, sizeof path, "%s/hist_link", tmpdir);
    f = fopen(target, "w");
    fputs(HEADER "in_target = 1\n", f);
    fclose(f);
    if (symlink("hist_target", path) != 0) CHECK("symlink", 0, "symlink: %s", strerror(errno));
    start(&s, path, none);
    wait_prompt(&s, 10);
    free(run(&s, "through_link = 1", 10));
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
    text = read_file(target);
    CHECK("history_symlink_stays_a_link", lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "%s is no longer a link", path);
    CHECK("history_symlink_target_updated", text && strstr(text, "in_target = 1\n") && strstr(text, "through_link = 1\n"),
          "target [%s]", text ? text : "(missing)");
    free(text);

    /* NUL bytes another program left in the file: the entries are kept whole, the NUL as \0 */
    snprintf(path, sizeof path, "%s/hist_nul", tmpdir);
    f = fopen(path, "wb");
    fputs(HEADER, f);
    fwrite("nul_mid = 'a\0b'\n\0nul_first = 1\n", 1, 31, f);
    fclose(f);
    start(&s, path, none);
    wait_prompt(&s, 10);
    free(run(&s, "after_nul = 1", 10));
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
    text = read_file(path);
    CHECK("history_nul_bytes_kept", text && strstr(text, "nul_mid = 'a\\\\0b'\n") && strstr(text, "\\\\0nul_first = 1\n")
          && strstr(text, "after_nul = 1\n"), "file [%s]", text ? text : "(missing)");
    free(text);

    snprintf(path, sizeof path, "%s/hist_folder", tmpdir);
    mkdir(path, 0700);
    start(&s, path, none);
    wait_prompt(&s, 10);
    char *got = run(&s, "6 * 7", 10);
    send_text(&s, "\x04");
    finish(&s, 5);
    CHECK("history_folder_warns_once", got && strcmp(got, "42\n") == 0 && count(s.buf, "warning") == 1
          && strstr(s.buf, "Is a directory"), "got [%s], output [%s]", got ? got : "(hung)", s.buf);
    free(got);
    end_session(&s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    (void)!system(cmd);
}

/* Two REPLs that exit at the same moment both keep their entries; the file stays capped. */
static void test_history_concurrent(const char *history) {
    FILE *f = fopen(history, "w");
    fputs(HEADER, f);
    for (int i = 0; i < 1005; i++) fprintf(f, "old_%d = %d\n", i, i);
    fclose(f);
    session a, b;
    const char *none[] = {NULL};
    start(&a, history, none);
    start(&b, history, none);
    wait_prompt(&a, 10);
    wait_prompt(&b, 10);
    free(run(&a, "from_a = 1", 10));
    free(run(&b, "from_b = 2", 10));
    send_text(&a, "\x04");
    send_text(&b, "\x04");
    finish(&a, 5);
    finish(&b, 5);
    end_session(&a);
    end_session(&b);
    char *text = read_file(history);
    CHECK("history_concurrent_both_kept", text && strstr(text, "from_a = 1\n") && strstr(text, "from_b = 2\n"),
          "file ends [%s]", text ? text + (strlen(text) > 200 ? strlen(text) - 200 : 0) : "(missing)");
    int lines = text ? count(text, "\n") : 0;
    CHECK("history_capped", lines == 1001 && strncmp(text, HEADER, strlen(HEADER)) == 0, "%d lines, want the header and 1000",
          lines);
    free(text);
    /* nothing left beside the file: no lock file, no temporary file */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '^%s.'", tmpdir, strrchr(history, '/') + 1);
    int rc;
    char *others = run_command(cmd, &rc);
    CHECK("history_leaves_no_files", strcmp(others, "0\n") == 0, "%s has %s other files beside it", history, others);
    free(others);
}

/* mha-repl --lesson at a terminal: the lesson starts, then the prompt, where Enter runs the next step. */
static void test_lesson(const char *history) {
    session s;
    const char *args[] = {"--lesson", "1", "--lang", "en", NULL};
    start(&s, history, args);
    int started = expect(&s, "step 1/", 20) && wait_prompt(&s, 20);
    CHECK("lesson_starts_then_prompt", started, "output [%s]", s.buf);
    char *got = started ? run(&s, "", 20) : NULL;
    CHECK("lesson_enter_next_step", got && strstr(got, "step 2/"), "got [%s]", got ? got : "(hung)");
    free(got);
    got = started ? run(&s, ":next", 20) : NULL;
    CHECK("lesson_next_command", got && strstr(got, "step 3/"), "got [%s]", got ? got : "(hung)");
    free(got);
    send_text(&s, "\x04");
    CHECK("lesson_ctrl_d", finish(&s, 5) && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0, "status %d", s.status);
    end_session(&s);
}

/* :save during a lesson: the steps' code is in the script (repl.record_step, which the lesson runner
 * calls), so an input that uses a step's variable replays. Lesson 2's step 2 makes w. */
static void test_lesson_save(const char *history) {
    char *runner = read_file("lua/lesson/lesson.lua");
    int wired = runner && strstr(runner, "record_step");
    free(runner);
    if (!wired) {  /* until the lesson runner calls repl.record_step */
        printf("# lesson_save_replays not run: lua/lesson/lesson.lua does not call repl.record_step yet\n");
        return;
    }
    session s;
    const char *args[] = {"--lesson", "2", "--lang", "en", NULL};
    start(&s, history, args);
    int started = expect(&s, "step 1/", 20) && wait_prompt(&s, 20);
    char *step = started ? run(&s, "", 20) : NULL;
    char *sum = step ? run(&s, "w:sum()", 20) : NULL;
    /* the exercise (step 5), answered wrongly with :answer, then rightly with answer() */
    free(sum ? run(&s, ":goto 5", 20) : NULL);
    char *wrong = sum ? run(&s, ":answer mha.softmax(Q:matmul(K:transpose(1, 2)), 2)", 20) : NULL;
    char *right = wrong ? run(&s, "answer(mha.softmax(Q:matmul(K:transpose(1, 2)) / 2, 2))", 20) : NULL;
    CHECK("lesson_answers_at_the_prompt", wrong && strstr(wrong, "not yet") && right && strstr(right, "correct"),
          "wrong [%s] right [%s]", wrong ? wrong : "(hung)", right ? right : "(hung)");
    char base[300], cmd[700];
    snprintf(base, sizeof base, "%s/lesson_session", tmpdir);
    snprintf(cmd, sizeof cmd, ":save %s", base);
    free(right ? run(&s, cmd, 20) : NULL);
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
    CHECK("lesson_save_session", step && strstr(step, "step 2/") && sum && strlen(sum) > 1,
          "step [%s], w:sum() [%s]", step ? step : "(hung)", sum ? sum : "(hung)");
    snprintf(cmd, sizeof cmd, "MHA_REPL_HISTORY=/dev/null %s %s.lua 2>&1", repl_path, base);
    int rc;
    char *replay = run_command(cmd, &rc);
    CHECK("lesson_save_replays", rc == 0 && sum && strstr(replay, sum),
          "exit %d, the replay printed [%s], w:sum() was [%s]", rc, replay, sum ? sum : "(none)");
    /* the replay checks the answers against the lesson, as the session did */
    const char *hint = strstr(replay, "not yet");
    CHECK("lesson_save_replays_answers", hint && strstr(hint, "correct") && !strstr(replay, "no lesson is open"),
          "the replay printed [%s]", replay);
    free(replay);
    free(wrong);
    free(right);
    free(step);
    free(sum);
}

/* What a terminal shows for out (last `rows` lines of at most 199 columns): the text, carriage return,
 * newline, backspace, and the escape sequences readline uses to move along a line (CSI n C / D, CSI K);
 * other escape sequences (colour, bracketed paste) change nothing on the screen. */
#define SCREEN_ROWS 64
#define SCREEN_COLS 200
static void screen_of(const char *out, char screen[SCREEN_ROWS][SCREEN_COLS], int *nrows) {
    int row = 0, col = 0;
    memset(screen, 0, (size_t)SCREEN_ROWS * SCREEN_COLS);
    for (const char *p = out; *p; p++) {
        if (*p == '\033' && p[1] == '[') {
            int n = 0;
            p += 2;
            while (*p && ((*p >= '0' && *p <= '9') || *p == ';' || *p == '?')) { if (*p >= '0' && *p <= '9') n = n * 10 + (*p - '0'); p++; }
            if (!*p) break;
            if (*p == 'C') col += n ? n : 1;
            else if (*p == 'D') col -= n ? n : 1;
            else if (*p == 'K') memset(screen[row] + col, 0, (size_t)(SCREEN_COLS - col));
        } else if (*p == '\033') {
            if (p[1]) p++;
        } else if (*p == '\r') {
            col = 0;
        } else if (*p == '\n') {
            if (++row == SCREEN_ROWS) {  /* scroll */
                memmove(screen[0], screen[1], (size_t)(SCREEN_ROWS - 1) * SCREEN_COLS);
                memset(screen[SCREEN_ROWS - 1], 0, SCREEN_COLS);
                row = SCREEN_ROWS - 1;
            }
        } else if (*p == '\b') {
            if (col > 0) col--;
        } else if ((unsigned char)*p >= ' ' && col < SCREEN_COLS - 1) {
            screen[row][col++] = *p;
        }
        if (col < 0) col = 0;
        if (col > SCREEN_COLS - 1) col = SCREEN_COLS - 1;
    }
    for (int r = 0; r <= row; r++)  /* cells never written read as spaces */
        for (int c = 0; c < SCREEN_COLS - 1; c++) {
            int rest = 0;
            for (int k = c; k < SCREEN_COLS - 1; k++) if (screen[r][k]) rest = 1;
            if (!rest) break;
            if (!screen[r][c]) screen[r][c] = ' ';
        }
    *nrows = row + 1;
}

/* Ctrl-C on a half-typed line, the cursor inside it, on a terminal that has bracketed paste (xterm): the
 * line stays on the screen once, "^C" after it, and the next prompt is on a line of its own. */
static void test_ctrl_c_screen(const char *history) {
    session s;
    const char *none[] = {NULL};
    start(&s, history, none);
    wait_prompt(&s, 10);
    s.mark = s.len;
    size_t from = s.len;  /* the screen from the start of the prompt's line */
    while (from > 0 && s.buf[from - 1] != '\n') from--;
    send_text(&s, "half typed text\002\002\002");  /* Ctrl-B x3: the cursor back into the line */
    settle(&s, 0.3);
    send_text(&s, "\003");
    int prompt = wait_prompt(&s, 5);
    static char screen[SCREEN_ROWS][SCREEN_COLS];
    int rows;
    screen_of(s.buf + from, screen, &rows);
    CHECK("ctrl_c_line_kept", prompt && rows == 2 && strcmp(screen[0], "> half typed text^C") == 0
          && strcmp(screen[1], "> ") == 0, "%d rows: [%s] [%s]", rows, screen[0], rows > 1 ? screen[1] : "");
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
}

/* Ctrl-D on a ">>" line ends that input with its <eof> error, not the session, and leaves the screen
 * as it was: a later result right under its input (readline 8.2 keeps rl_eof_found set in its
 * callback interface, which then wrote a blank line after every input). */
static void test_ctrl_d_continuation(const char *history) {
    session s;
    const char *none[] = {NULL};
    start(&s, history, none);
    wait_prompt(&s, 10);
    send_text(&s, "x = {1,\n");
    settle(&s, 0.3);
    s.mark = s.len;
    send_text(&s, "\x04");
    CHECK("ctrl_d_continuation_error", expect(&s, "unexpected symbol near <eof>", 5) && wait_prompt(&s, 5),
          "no <eof> error and prompt after Ctrl-D at >>");
    size_t from = s.len;
    while (from > 0 && s.buf[from - 1] != '\n') from--;
    s.mark = s.len;
    send_text(&s, "2 + 2\n");
    int prompt = expect(&s, "4", 5) && wait_prompt(&s, 5);
    static char screen[SCREEN_ROWS][SCREEN_COLS];
    int rows;
    screen_of(s.buf + from, screen, &rows);
    CHECK("ctrl_d_continuation_screen", prompt && rows == 3 && strcmp(screen[0], "> 2 + 2") == 0 &&
          strcmp(screen[1], "4") == 0 && strcmp(screen[2], "> ") == 0, "%d rows: [%s] [%s] [%s]", rows, screen[0],
          rows > 1 ? screen[1] : "", rows > 2 ? screen[2] : "");
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
}

/* With TERM=xterm and NO_COLOR unset the prompt is green and errors red; with NO_COLOR, no escapes at all
 * (the other sessions check that: their outputs compare equal to plain text). */
static void test_colour(const char *history) {
    session s;
    const char *none[] = {NULL};
    colour_terminal = 1;
    start(&s, history, none);
    colour_terminal = 0;
    wait_prompt(&s, 10);
    int prompt = strstr(s.buf, "\033[1;32m> \033[0m") != NULL;
    char *got = run(&s, "error('red')", 10);
    CHECK("colour_prompt", prompt, "no green prompt in [%s]", s.buf);
    CHECK("colour_error", got && strstr(got, "\033[31mstdin:1: red\033[0m"), "got [%s]", got ? got : "(hung)");
    free(got);
    got = run(&s, "{1.5}", 10);
    CHECK("colour_number", got && strstr(got, "{\033[36m1.5\033[0m}"), "got [%s]", got ? got : "(hung)");
    free(got);
    send_text(&s, "\x04");
    finish(&s, 5);
    end_session(&s);
}

/* The one colour policy (lua/sys/lterm.c), asked by the prompt in C and by term.colour() in Lua alike:
 * at a terminal, colour only with TERM set and not dumb and NO_COLOR unset or empty. */
static void test_colour_policy(const char *history) {
    static const struct { const char *name, *term, *no_colour; int colour; } cases[] = {
        {"colour_policy_xterm", "xterm", NULL, 1},
        {"colour_policy_empty_no_color", "xterm", "", 1},
        {"colour_policy_no_color", "xterm", "1", 0},
        {"colour_policy_term_dumb", "dumb", NULL, 0},
        {"colour_policy_term_unset", NULL, NULL, 0},
        {"colour_policy_term_empty", "", NULL, 0},
    };
    const char *none[] = {NULL};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        session s;
        env_given = 1;
        env_term = cases[i].term;
        env_no_colour = cases[i].no_colour;
        start(&s, history, none);
        env_given = 0;
        wait_prompt(&s, 10);
        int green = strstr(s.buf, "\033[1;32m") != NULL;
        char *got = run(&s, "require('mha.term').colour()", 10);
        int lua_says = got && strstr(got, "true") != NULL;
        CHECK(cases[i].name, got && green == cases[i].colour && lua_says == cases[i].colour,
              "expected colour %d: green prompt %d, term.colour() [%s]", cases[i].colour, green, got ? got : "(hung)");
        free(got);
        send_text(&s, "\x04");
        finish(&s, 5);
        end_session(&s);
    }
}

static void test_history_unwritable(void) {
    session s;
    const char *none[] = {NULL};
    start(&s, "/nonexistent-dir/mha_history", none);
    wait_prompt(&s, 10);
    char *got = run(&s, "3 + 4", 10);
    /* the warning comes with the first entry, which is written at once */
    CHECK("history_unwritable_works", got && strlen(got) >= 2 && strcmp(got + strlen(got) - 2, "7\n") == 0, "got [%s]",
          got ? got : "(hung)");
    free(got);
    send_text(&s, "\x04");
    int exited = finish(&s, 5);
    CHECK("history_unwritable_one_warning", exited && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0
          && count(s.buf, "warning") == 1, "exit status %d, output [%s]", s.status, s.buf);
    end_session(&s);
}

int main(void) {
    repl_path = getenv("MHA_REPL");
    if (!repl_path) repl_path = "build/mha-repl";
    if (access(repl_path, X_OK) != 0) {
        CHECK("repl_binary", 0, "%s is not an executable (set MHA_REPL)", repl_path);
        CHECK_DONE();
    }
    signal(SIGPIPE, SIG_IGN);
    alarm(300);  /* a last guard: every wait below has its own timeout */
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mha-test-repl-XXXXXX");
    if (!mkdtemp(tmpdir)) { CHECK("tmpdir", 0, "mkdtemp: %s", strerror(errno)); CHECK_DONE(); }
    char history[300];
    snprintf(history, sizeof history, "%s/history", tmpdir);

    session s;
    const char *none[] = {NULL};
    start(&s, history, none);
    CHECK("starts", wait_prompt(&s, 10) && strstr(s.buf, "mha-repl"), "no banner and prompt: [%s]", s.buf);
    test_evaluation(&s);
    test_completion(&s);
    test_interrupt(&s);
    test_coroutine_interrupt(&s);
    test_commands(&s);
    free(run(&s, ":quit", 5));
    CHECK("quit_exits", finish(&s, 5) && WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0, "status %d", s.status);
    end_session(&s);

    snprintf(history, sizeof history, "%s/history2", tmpdir);
    test_save_replays(history);
    test_history(history);
    snprintf(history, sizeof history, "%s/history5", tmpdir);
    test_hangup(history);
    snprintf(history, sizeof history, "%s/history6", tmpdir);
    test_hangup_stubborn(history);
    test_history_files();
    snprintf(history, sizeof history, "%s/history3", tmpdir);
    test_history_concurrent(history);
    test_history_unwritable();
    snprintf(history, sizeof history, "%s/history4", tmpdir);
    test_colour(history);
    test_colour_policy(history);
    colour_terminal = 1;  /* xterm: readline turns bracketed paste on and off around each line */
    test_ctrl_c_screen(history);
    test_ctrl_d_continuation(history);
    colour_terminal = 0;
    test_lesson(history);
    test_lesson_save(history);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
    CHECK_DONE();
}
