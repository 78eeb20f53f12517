/* lua/repl/repl.c - mha-repl's main: Lua 5.4's stand-alone interpreter (lua.c) grown into a
 * teaching REPL, with GNU Readline editing and completion, a history kept across sessions, Ctrl-C
 * that stops kernels too.
 *
 * The shape is lua.c's, and its functions keep lua.c's names: main -> pmain (in protected mode) ->
 * collectargs/runargs -> handle_script or doREPL; docall runs every chunk with msghandler and the
 * SIGINT hook (laction/lstop, in lua/repl/signals.c); incomplete() spots the <eof> mark and
 * addreturn() tries "return <line>" first, addreturn_last() "<statements> return <last>" after. The
 * history file is lua/repl/history.c, the short tracebacks lua/repl/traceback.c,
 * the modes lua.c has not (--lesson, --kernel, --export) lua/repl/modes.c, which this file hands
 * what they need of it (docall, report, start), the usage and --help text lua/repl/usage.c. What a
 * teaching REPL adds lives in lua/repl/repl.lua (the ':' commands, printing values, the transcript
 * for :save); this file keeps what must be C: the terminal, signals and the lua_State itself
 * (which :reset replaces). */
#include <errno.h>
#include <signal.h>     /* sigprocmask around readline's pselect */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <readline/readline.h>
#include <readline/history.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "ljson.h"
#include "lmha.h"
#include "lsys.h"
#include "history.h"
#include "completion.h"
#include "lazy.h"
#include "modes.h"
#include "signals.h"
#include "traceback.h"
#include "usage.h"

#define MHA_REPL_VERSION "0.1.0"
#define PROGNAME         "mha-repl"
#define PROMPT           "> "
#define PROMPT2          ">> "

static lua_State *globalL = NULL;          /* the state running Lua code, for completion */
static const char *progname = PROGNAME;    /* NULL in the REPL: errors there need no prefix */

/* Interactive mode: readline on a terminal. Set once by pmain, kept across :reset. */
static int use_readline = 0;
static int use_colour = 0;

/* What the user asked for at the ':' prompt that only C can do, read back after each input. */
static int quit_requested = 0;
static int reset_requested = 0;
static char *carried = NULL;   /* repl.lua's state (transcript, :time) carried across :reset */

/* ---- messages and errors ---- */

static void l_message(const char *pname, const char *msg) {
    if (pname) fprintf(stderr, "%s: ", pname);
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

/* Pushes field `name` of module mha.repl (nil when the module is not loaded). */
static int push_repl_field(lua_State *L, const char *name) {
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "mha.repl");
    lua_remove(L, -2);
    if (!lua_istable(L, -1)) return lua_type(L, -1);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    return lua_type(L, -1);
}

/* Prints the error message at the top of the stack to stderr, after the program's name (none in the
 * REPL), as lua.c does. (The REPL's own inputs report through repl.after instead, which colours the
 * message and keeps it in the transcript.) */
static int report(lua_State *L, int status) {
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (msg == NULL) msg = "(error object is not a string)";
        l_message(progname, msg);
        lua_pop(L, 1);
    }
    return status;
}

/* Message handler of every chunk (lua.c's): the message and a short traceback
 * (lua/repl/traceback.c). From Lua (repl.lua's replay of a saved session) a second argument is
 * where a tail call of the chunk was made. */
static int msghandler(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {  /* not a string: use its __tostring, or say what it is */
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    const char *before = lua_type(L, 2) == LUA_TSTRING ? repl_traceback_tailcall(lua_tostring(L, 2)) : NULL;
    repl_traceback(L, msg, 1);  /* append a standard traceback, without the embedded code's
                                   frames */
    if (lua_type(L, 2) == LUA_TSTRING) repl_traceback_tailcall(before);
    return 1;
}

/* Runs the function below narg arguments with msghandler, Ctrl-C armed: lua.c's docall. The
 * kernels' interrupt flag is cleared first, and a hook left by a Ctrl-C that came as the code
 * finished is removed, so it cannot stop the next, innocent call. */
static int docall(lua_State *L, int narg, int nres) {
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    globalL = L;
    repl_interrupt_arm(L);
    int status = lua_pcall(L, narg, nres, base);
    repl_interrupt_disarm(L);
    lua_remove(L, base);
    return status;
}

/* lua.c's arg table: arg[0] is the script, its arguments at 1.., the interpreter's options below
 * 0. */
static void createargtable(lua_State *L, char **argv, int argc, int script) {
    if (script == argc) script = 0;  /* no script name: the interpreter is arg[0] */
    int narg = argc - (script + 1);
    lua_createtable(L, narg > 0 ? narg : 0, script + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
    if (status == LUA_OK) status = docall(L, 0, 0);
    return report(L, status);
}

static int dofile(lua_State *L, const char *name) {
    return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name) {
    return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* require(name) into the global `name` (option -l). */
static int dolibrary(lua_State *L, const char *name) {
    lua_getglobal(L, "require");
    lua_pushstring(L, name);
    int status = docall(L, 1, 1);
    if (status == LUA_OK) lua_setglobal(L, name);
    return report(L, status);
}

static int pushargs(lua_State *L) {
    if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    int i;
    for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
    lua_remove(L, -i);
    return n;
}

static int handle_script(lua_State *L, char **argv) {
    const char *fname = argv[0];
    if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL;  /* stdin */
    int status = luaL_loadfile(L, fname);
    if (status == LUA_OK) {
        int n = pushargs(L);
        status = docall(L, n, LUA_MULTRET);
    }
    return report(L, status);
}


/* ---- the command line ---- */

#define has_error  1   /* bad option */
#define has_i      2   /* -i */
#define has_v      4   /* -v, --version */
#define has_e      8   /* -e */
#define has_help   16  /* --help; the modes' bits (--lesson ...) are in modes.h */

/* Walks argv as lua.c does, returning a mask of the options seen; *first is the script's index
 * (argc when there is none) or, on has_error, the bad argument's. Long options are mha-repl's
 * own. */
static int collectargs(char **argv, int *first) {
    int args = 0;
    int i;
    for (i = 1; argv[i] != NULL; i++) {
        *first = i;
        const char *a = argv[i];
        if (a[0] != '-') return args;            /* the script */
        if (strcmp(a, "--") == 0) { *first = i + 1; return args; }
        if (strcmp(a, "-") == 0) return args;    /* the script is stdin */
        if (strcmp(a, "--help") == 0) { args |= has_help; continue; }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-v") == 0) { args |= has_v; continue; }
        if (strcmp(a, "-i") == 0) { args |= has_i; continue; }
        if (strcmp(a, "--batch") == 0) { args |= has_batch; continue; }
        int mode = repl_mode_option(a);          /* --lesson NAME, --kernel FILE, ... */
        if (mode) {
            if (argv[i + 1] == NULL || argv[i + 1][0] == '-') return has_error;
            args |= mode;
            repl_mode_set(mode, argv[++i]);
            continue;
        }
        if (a[1] == 'e' || a[1] == 'l') {        /* -e chunk, -l name (or -echunk, -lname) */
            if (a[1] == 'e') args |= has_e;
            if (a[2] == '\0') {
                i++;
                if (argv[i] == NULL || argv[i][0] == '-') { *first = i - 1; return has_error; }
            }
            continue;
        }
        return has_error;
    }
    *first = i;
    return args;
}

/* Runs the -e and -l options in order. Returns 0 when one raised an error. */
static int runargs(lua_State *L, char **argv, int n) {
    for (int i = 1; i < n; i++) {
        int option = argv[i][1];
        if (option == '-') {  /* a long option: skip the argument of those that take one */
            if (repl_mode_option(argv[i])) i++;
        } else if (option == 'e' || option == 'l') {
            const char *extra = argv[i] + 2;
            if (*extra == '\0') extra = argv[++i];
            int status = option == 'e' ? dostring(L, extra, "=(command line)") : dolibrary(L, extra);
            if (status != LUA_OK) return 0;
        }
    }
    return 1;
}


/* ---- the state: standard libraries, mha, and the lazy globals ---- */

/* stop_resumed_after(seconds): repl_stop_resumed_after, for repl.lua's replay of an input Ctrl-C
 * stopped. */
static int l_stop_resumed_after(lua_State *L) {
    repl_stop_resumed_after((double)luaL_checknumber(L, 1));
    return 0;
}

/* The libraries every mode gets: Lua's, `mha` as a global, and the lazy globals. The metatable of
 * _G also lists the lazy names in __lazy, so completion can offer them before they are loaded. */
static void openlibs(lua_State *L) {
    luaL_openlibs(L);
    repl_install_coroutine_hooks(L);
    lua_pushcfunction(L, msghandler);  /* for repl.lua, which reports the errors of commands
                                          alike */
    lua_setfield(L, LUA_REGISTRYINDEX, "mha.repl.msghandler");
    lua_pushcfunction(L, l_stop_resumed_after);   /* for a saved session's replay (repl.lua) */
    lua_setfield(L, LUA_REGISTRYINDEX, "mha.repl.stop_resumed_after");
    lua_pushcfunction(L, repl_interrupt_later);   /* for mha.generate (lua/train/writing.lua) */
    lua_setfield(L, LUA_REGISTRYINDEX, "mha.repl.interrupt_later");
    lua_pushcfunction(L, repl_caught);   /* for :save (repl.lua) */
    lua_setfield(L, LUA_REGISTRYINDEX, "mha.repl.caught");
    lua_pushcfunction(L, repl_input_done);   /* for mha.kernel's cells and mha.lesson's steps */
    lua_setfield(L, LUA_REGISTRYINDEX, "mha.repl.input_done");
    luaL_requiref(L, "mha", luaopen_mha, 1);
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_mha_json);
    lua_setfield(L, -2, "mha.json");
    lua_pop(L, 1);
    repl_lazy_globals(L);
}

/* Wall-clock seconds, for :time (os.clock measures CPU time, not what the student waits). */
static int l_clock(lua_State *L) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* Loads mha.repl and tells it how it runs; restores what it carried across a :reset. Called in
 * protected mode; returns the status. */
static int open_repl(lua_State *L) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "mha.repl");
    int status = docall(L, 1, 1);
    if (status != LUA_OK) return report(L, status);
    lua_pushboolean(L, use_colour);
    lua_setfield(L, -2, "colour");
    lua_pushboolean(L, use_readline);
    lua_setfield(L, -2, "interactive");
    lua_pushcfunction(L, l_clock);
    lua_setfield(L, -2, "clock");
    lua_getfield(L, -1, "init");
    lua_pushstring(L, carried);   /* nil when there is nothing to carry */
    free(carried);
    carried = NULL;
    status = docall(L, 1, 0);
    lua_pop(L, 1);
    return report(L, status);
}


/* ---- completion ----
 * Inside a string, file names (lua/repl/completion.c). Elsewhere repl.complete(text, line, start)
 * in Lua gives the candidates: keywords, globals, fields, methods, ':' commands; it may answer
 * "files" to ask for file names (a FILE argument). */

/* repl.complete's candidates for text (its list, or "files": readline's file names), as readline's
 * matches. */
static char **complete(const char *text, int start, int end) {
    (void)end;
    rl_completion_append_character = '\0';
    if (rl_completion_quote_character) return NULL;  /* in a string: file names */
    rl_attempted_completion_over = 1;
    lua_State *L = globalL;
    if (!L) return NULL;
    int top = lua_gettop(L);
    char **matches = NULL;
    if (push_repl_field(L, "complete") == LUA_TFUNCTION) {
        lua_pushstring(L, text);
        lua_pushstring(L, rl_line_buffer);
        lua_pushinteger(L, start);
        repl_interrupt_arm(L);  /* a Ctrl-C stops a runaway __index */
        int status = lua_pcall(L, 3, 1, 0);
        repl_interrupt_disarm(L);
        if (status == LUA_OK && lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "files") == 0) {
            rl_attempted_completion_over = 0;
        } else if (status == LUA_OK && lua_istable(L, -1)) {
            size_t n = (size_t)luaL_len(L, -1), kept = 0;
            const char **list = calloc(n ? n : 1, sizeof *list);   /* strings the table holds */
            for (size_t i = 0; list && i < n; i++) {
                lua_rawgeti(L, -1, (lua_Integer)i + 1);
                if ((list[kept] = lua_tostring(L, -1)) != NULL) kept++;
                lua_pop(L, 1);
            }
            if (list) matches = repl_completion_matches(text, list, kept);
            free(list);
        }
    }
    lua_settop(L, top);
    return matches;
}

static void init_readline(void) {
    rl_readline_name = "mha-repl";
    rl_instream = stdin;
    rl_outstream = stdout;
    rl_catch_signals = 0;        /* SIGINT is ours: see laction (signals.c) */
    rl_catch_sigwinch = 0;       /* so is SIGWINCH */
    rl_change_environment = 0;   /* no stale LINES/COLUMNS for the programs we start (gnuplot) */
    repl_completion_setup(complete);
    repl_signals_catch();
    repl_history_load(PROGNAME);
    atexit(repl_history_save);
}


/* ---- reading input ---- */

#define LINE_OK     1
#define LINE_EOF    0
#define LINE_CANCEL (-1)   /* Ctrl-C at the prompt */

static char *rl_result = NULL;
static int rl_have_result = 0;

static void on_line(char *line) {
    rl_result = line;
    rl_have_result = 1;
    rl_callback_handler_remove();
}

/* readline through its callback interface, so a Ctrl-C at the prompt can abandon the line:
 * pselect() returns EINTR, the line is dropped and LINE_CANCEL returned. SIGINT and SIGWINCH are
 * blocked except inside pselect, so one that comes while a key is handled waits for it instead of
 * being missed. *line is malloc'd. */
static int read_with_readline(const char *prompt, char **line) {
    sigset_t blocked, waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGWINCH);
    sigaddset(&blocked, SIGHUP);
    sigaddset(&blocked, SIGTERM);
    sigprocmask(SIG_BLOCK, &blocked, &waiting);
    rl_have_result = 0;
    rl_result = NULL;
    /* a Ctrl-C at the prompt is not forgotten here: a Ctrl-C typed ahead, between two lines of an
     * input, cancels that input */
    int result = LINE_OK;
    /* readline 8.2 sets rl_eof_found on a Ctrl-D and, in the callback interface, leaves it set:
     * every later line would end with a blank one (rl_deprep_terminal writes "\n" after
     * bracketed paste while it is set). A Ctrl-D on a ">>" line is not the end of the session. */
#if RL_READLINE_VERSION >= 0x0802
    rl_eof_found = 0;
#endif
    rl_callback_handler_install(prompt, on_line);
    while (!rl_have_result) {
        if (repl_hangup()) {  /* the terminal is gone, or we were asked to end: as at end of
                                 input */
            rl_callback_handler_remove();
            result = LINE_EOF;
            break;
        }
        if (repl_prompt_interrupted()) {
            /* as bash does: the abandoned line stays on the screen once, "^C" after its end, and
             * the next prompt starts a fresh line. "^C" is written before readline restores the
             * terminal, which may return the cursor to column 0 (after turning bracketed paste
             * off). */
            rl_point = rl_end;
            rl_free_line_state();  /* (redisplays: the cursor goes to the end of the line) */
            rl_redisplay();
            fputs("^C", rl_outstream);
            fflush(rl_outstream);
            rl_callback_sigcleanup();
            rl_cleanup_after_signal();
            rl_callback_handler_remove();
            fputs("\n", stdout);
            fflush(stdout);
            result = LINE_CANCEL;
            break;
        }
        if (repl_window_resized()) rl_resize_terminal();
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fileno(rl_instream), &fds);
        int r = pselect(fileno(rl_instream) + 1, &fds, NULL, NULL, NULL, &waiting);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rl_callback_handler_remove();
            result = LINE_EOF;
            break;
        }
        rl_callback_read_char();
    }
    sigprocmask(SIG_SETMASK, &waiting, NULL);
    if (result != LINE_OK) return result;
    *line = rl_result;
    return rl_result ? LINE_OK : LINE_EOF;
}

/* Without a terminal (mha-repl -i FILE < input): plain lines, no prompt. */
static int read_plain(char **line) {
    size_t cap = 0;
    *line = NULL;
    ssize_t len = getline(line, &cap, stdin);
    if (len < 0) {
        free(*line);
        *line = NULL;
        return LINE_EOF;
    }
    if (len > 0 && (*line)[len - 1] == '\n') (*line)[len - 1] = '\0';
    return LINE_OK;
}

/* The prompt: _PROMPT / _PROMPT2 when the user set them, as in lua.c; green and bold with colour
 * (\001 and \002 tell readline the escapes take no room on the screen). Pushes the prompt
 * string. */
static const char *get_prompt(lua_State *L, int firstline) {
    lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2");
    const char *p = lua_tostring(L, -1);
    if (p == NULL) p = firstline ? PROMPT : PROMPT2;
    if (use_colour) p = lua_pushfstring(L, "\001\033[1;32m\002%s\001\033[0m\002", p);
    else p = lua_pushstring(L, p);
    lua_remove(L, -2);
    return p;
}

/* Reads a line and pushes it. Returns LINE_OK, LINE_EOF or LINE_CANCEL. */
static int pushline(lua_State *L, int firstline) {
    char *b = NULL;
    int r;
    if (use_readline) {
        get_prompt(L, firstline);
        r = read_with_readline(lua_tostring(L, -1), &b);
        lua_pop(L, 1);
    } else {
        r = read_plain(&b);
    }
    if (r != LINE_OK) return r;
    lua_pushstring(L, b);
    free(b);
    return LINE_OK;
}

/* mark in error messages for incomplete statements */
#define EOFMARK "<eof>"
#define marklen (sizeof(EOFMARK) / sizeof(char) - 1)

/* The parser's message for statements ending in a value that is not a call
 * ("score = K:matmul(q); score"): <eof>-marked, yet no line a student would type next completes it,
 * so it is an error, not a `>>`. */
#define DANGLING "syntax error near " EOFMARK
#define danglinglen (sizeof(DANGLING) / sizeof(char) - 1)

/* Is the syntax error at the top of the stack an incomplete statement? Then pop it. */
static int incomplete(lua_State *L, int status) {
    if (status == LUA_ERRSYNTAX) {
        size_t lmsg;
        const char *msg = lua_tolstring(L, -1, &lmsg);
        if (lmsg >= danglinglen && strcmp(msg + lmsg - danglinglen, DANGLING) == 0) return 0;
        if (lmsg >= marklen && strcmp(msg + lmsg - marklen, EOFMARK) == 0) {
            lua_pop(L, 1);
            return 1;
        }
    }
    return 0;
}

/* Tries to compile the input at index 1 as "return <code>;". repl.split_input
 * (lua/repl/repl.lua, which :save uses too) separates the code from a trailing ';' and comments
 * after it: the ';' sets *quiet, the values are kept in `_` but not printed. Without repl.lua the
 * input is taken as it is. On success the chunk is pushed. */
static int addreturn(lua_State *L, int *quiet) {
    int top = lua_gettop(L);
    *quiet = 0;
    if (push_repl_field(L, "split_input") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        if (lua_pcall(L, 1, 2, 0) == LUA_OK && lua_type(L, -2) == LUA_TSTRING) {
            *quiet = lua_toboolean(L, -1);
            lua_pop(L, 1);  /* the code stays */
        }
    }
    /* no repl.lua, or it failed */
    if (lua_gettop(L) != top + 1 || lua_type(L, -1) != LUA_TSTRING) {
        lua_settop(L, top);
        lua_pushvalue(L, 1);
    }
    lua_pushliteral(L, "return ");
    lua_insert(L, -2);
    lua_pushliteral(L, ";");
    lua_concat(L, 3);
    size_t rlen;
    const char *retline = lua_tolstring(L, -1, &rlen);
    int status = luaL_loadbuffer(L, retline, rlen, "=stdin");
    lua_remove(L, -2);  /* the modified line */
    if (status != LUA_OK) {
        lua_pop(L, 1);
        *quiet = 0;
    }
    return status;
}

/* The line of the input's `return` when the value it returns is on one line, else 0: where the
 * error of a function it tail-calls is placed (such an error names no line of its own). */
static int return_line = 0;

/* Tries to compile the input at index 1 as "<statements> return <last>;" when its last statement is
 * an expression ("sd = m:state_dict(); sd:shape()", "A = m:attention(); #A"): repl.return_last in
 * lua/repl/repl.lua finds where the statements end. On success the chunk is pushed. */
static int addreturn_last(lua_State *L, int *quiet) {
    int top = lua_gettop(L);
    int status = LUA_ERRSYNTAX;
    if (push_repl_field(L, "return_last") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        if (lua_pcall(L, 1, 3, 0) == LUA_OK && lua_type(L, -3) == LUA_TSTRING) {
            size_t len;
            const char *code = lua_tolstring(L, -3, &len);
            int line = (int)lua_tointeger(L, -1);
            int is_quiet = lua_toboolean(L, -2);
            status = luaL_loadbuffer(L, code, len, "=stdin");
            if (status == LUA_OK) {
                lua_replace(L, top + 1);
                *quiet = is_quiet;
                return_line = line;
            }
        }
    }
    lua_settop(L, status == LUA_OK ? top + 1 : top);
    return status;
}

#define INPUT_CANCEL (-1)

/* Is the input at index 1 an unfinished expression, such as "{1," or "f(x,"? Lua's statement
 * parser rejects it at once ("unexpected symbol near '{'"), but "return <input>" stops at <eof>. */
static int incomplete_expression(lua_State *L) {
    lua_pushliteral(L, "return ");
    lua_pushvalue(L, 1);
    lua_concat(L, 2);
    size_t len;
    const char *retline = lua_tolstring(L, -1, &len);
    int status = luaL_loadbuffer(L, retline, len, "=stdin");
    int result = incomplete(L, status);
    lua_pop(L, result ? 1 : 2);  /* the retline, and the chunk or message incomplete() left */
    return result;
}

/* Is the unfinished input at index 1 a Python habit no next line completes, such as
 * "for i in range(3):" (repl.never_completes in lua/repl/repl.lua)? Then its error and its hint
 * come at once, as a Python habit's that Lua rejects outright, not a `>>`. */
static int never_completes(lua_State *L) {
    int result = 0;
    if (push_repl_field(L, "never_completes") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        if (lua_pcall(L, 1, 1, 0) == LUA_OK) result = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);  /* the field, its answer or its error */
    return result;
}

/* Reads continuation lines until the input at index 1 is a complete chunk
 * (as an expression, then as statements), which it pushes; or pushes the syntax error. A blank line
 * does not end the input; only Ctrl-C (INPUT_CANCEL) or end of input does. *expr says the chunk is
 * "return <input>". */
static int loadinput(lua_State *L, int *expr, int *quiet) {
    for (;;) {
        if (addreturn(L, quiet) == LUA_OK) {
            *expr = 1;
            return_line = strchr(lua_tostring(L, 1), '\n') ? 0 : 1;
            return LUA_OK;
        }
        *expr = 0;
        size_t len;
        const char *text = lua_tolstring(L, 1, &len);
        int status = luaL_loadbuffer(L, text, len, "=stdin");
        if (!incomplete(L, status)) {
            if (status == LUA_OK || !incomplete_expression(L)) {
                if (addreturn_last(L, quiet) != LUA_OK) return status;
                lua_remove(L, -2);  /* the statements' chunk or syntax error */
                *expr = 1;
                return LUA_OK;
            }
            lua_pop(L, 1);  /* the statement's syntax error: read on */
        }
        /* its <eof> error, at once */
        if (never_completes(L)) return luaL_loadbuffer(L, text, len, "=stdin");
        int r = pushline(L, 0);
        if (r == LINE_CANCEL) return INPUT_CANCEL;
        if (r == LINE_EOF && repl_hangup()) return INPUT_CANCEL;
        /* the <eof> error again */
        if (r == LINE_EOF) return luaL_loadbuffer(L, text, len, "=stdin");
        lua_pushliteral(L, "\n");
        lua_insert(L, -2);
        lua_concat(L, 3);
    }
}

/* Reads repl.lua's answer left by a command: "quit" or "reset" are acted upon here. */
static void take_action(lua_State *L) {
    const char *action = lua_tostring(L, -1);
    if (action && strcmp(action, "quit") == 0) quit_requested = 1;
    if (action && strcmp(action, "reset") == 0) reset_requested = 1;
}

/* Runs repl.<fn>(input) for a ':' or '?' line, or an empty line at the first prompt. */
static void docommand(lua_State *L, const char *fn, int input_index) {
    if (push_repl_field(L, fn) != LUA_TFUNCTION) { lua_pop(L, 1); return; }
    lua_pushvalue(L, input_index);
    if (docall(L, 1, 1) != LUA_OK) { report(L, LUA_ERRRUN); return; }
    take_action(L);
    lua_pop(L, 1);
}

/* Evaluates the chunk at the top and shows what came of it through repl.after(input, how, seconds,
 * ...): how is "print" (the values follow), "quiet" (values follow, not printed), "stmt", or
 * "error" (the message follows). */
/* Inputs that raised an error (or did not compile): with -i, the exit status says the session had
 * some. */
static int input_errors = 0;

static void evaluate(lua_State *L, int status, int expr, int quiet) {
    int base = lua_gettop(L);  /* the chunk or the syntax error */
    double start = 0, seconds = 0;
    struct timespec ts;
    if (status == LUA_OK) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        start = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
        /* "return f(x);" tail-calls f, whose errors would name no line */
        char where[32];
        snprintf(where, sizeof where, "stdin:%d", return_line);
        repl_traceback_tailcall(expr && return_line > 0 ? where : NULL);
        repl_caught_forget();
        status = docall(L, 0, LUA_MULTRET);
        repl_traceback_tailcall(NULL);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seconds = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - start;
    }
    if (status != LUA_OK) input_errors++;
    int nres = lua_gettop(L) - base + 1;  /* results, or the one error message */
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    if (push_repl_field(L, "after") != LUA_TFUNCTION) {  /* no repl.lua: print as lua.c would */
        lua_pop(L, 1);
        if (status != LUA_OK) report(L, status);
        return;
    }
    lua_insert(L, base);
    lua_pushvalue(L, 1);
    lua_insert(L, base + 1);
    lua_pushstring(L, status != LUA_OK ? "error" : !expr ? "stmt" : quiet ? "quiet" : "print");
    lua_insert(L, base + 2);
    lua_pushnumber(L, seconds);
    lua_insert(L, base + 3);
    if (docall(L, nres + 3, 0) != LUA_OK) report(L, LUA_ERRRUN);
}

/* The read-eval-print loop. Returns when the input ends, or on :quit or :reset. */
static void doREPL(lua_State *L) {
    const char *oldprogname = progname;
    progname = NULL;
    for (;;) {
        lua_settop(L, 0);
        int r = pushline(L, 1);
        if (r == LINE_EOF) break;
        if (r == LINE_CANCEL) continue;
        const char *line = lua_tostring(L, 1);
        const char *p = line + strspn(line, " \t");
        if (*p == '\0') {
            docommand(L, "empty_line", 1);
        } else if ((p[0] == ':' && p[1] != ':') || p[0] == '?') {  /* '::label::' is Lua */
            if (use_readline) repl_history_add(line);
            docommand(L, "command", 1);
        } else {
            int expr, quiet;
            int status = loadinput(L, &expr, &quiet);
            if (status == INPUT_CANCEL) continue;
            if (use_readline) repl_history_add(lua_tostring(L, 1));
            evaluate(L, status, expr, quiet);
        }
        fflush(stdout);
        if (quit_requested || reset_requested || repl_hangup()) break;
    }
    lua_settop(L, 0);
    if (!quit_requested && !reset_requested && use_readline) fputs("\n", stdout);
    fflush(stdout);
    progname = oldprogname;
}

/* Before a :reset closes the state: keep repl.lua's state as a string for the new one. */
static void carry_state(lua_State *L) {
    if (push_repl_field(L, "carry") == LUA_TFUNCTION && docall(L, 0, 1) == LUA_OK && lua_isstring(L, -1)) {
        free(carried);
        carried = strdup(lua_tostring(L, -1));
    }
    lua_pop(L, 1);
}

static int stdin_is_tty(void) { return isatty(0); }

/* Sets how the REPL talks: readline when stdin is a terminal, colour as lua/sys's one policy
 * says. */
static void choose_terminal(void) {
    use_readline = stdin_is_tty();
    use_colour = mha_term_colour(STDOUT_FILENO);
    repl_signals_readline(use_readline);
}

/* Readline, signals and history once per process; mha.repl once per state. */
static int start_repl(lua_State *L) {
    static int initialised = 0;
    if (!initialised) {
        initialised = 1;
        if (use_readline) init_readline();
    }
    return open_repl(L);
}

/* The start-up line, after start_repl: repl.banner words it in the REPL's language
 * (MHA_LANG, LANG); in English as lua.c would when mha.repl is missing. */
static void print_banner(lua_State *L) {
    const char *line = NULL;
    int top = lua_gettop(L);
    if (push_repl_field(L, "banner") == LUA_TFUNCTION) {
        lua_pushstring(L, PROGNAME);
        lua_pushstring(L, MHA_REPL_VERSION);
        lua_pushstring(L, LUA_RELEASE);
        if (docall(L, 3, 1) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) line = lua_tostring(L, -1);
    }
    if (line) printf("%s\n", line);
    else printf("%s %s (%s)\ntype ? for the commands, help() for the functions, Ctrl-D to quit\n",
                PROGNAME, MHA_REPL_VERSION, LUA_RELEASE);
    lua_settop(L, top);
}

/* The interactive loop, after start_repl. */
static void interact(lua_State *L) {
    doREPL(L);
    if (reset_requested) carry_state(L);
}

/* ---- what the modes are handed (modes.h) ---- */

static void message(const char *msg) { l_message(progname, msg); }

static const repl_host host = {docall, report, message, start_repl};

/* Main body, in protected mode. Returns (as an integer) the exit status. */
static int pmain(lua_State *L) {
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    static int resetting = 0;
    static int script;   /* argv's index of the script (argc when none), kept for :reset's `arg` */
    static int i_session = 0;   /* -i: an input that raised an error makes the exit status 1 */
    static int args;            /* the options seen (has_ bits), kept for :reset in a kernel */
    luaL_checkversion(L);
    if (resetting) {  /* :reset: a fresh state, `arg` as at startup, straight back to the prompt */
        openlibs(L);
        createargtable(L, argv, argc, script);
        lua_gc(L, LUA_GCRESTART);
        lua_gc(L, LUA_GCGEN, 0, 0);
        int code = EXIT_OK;
        if (args & has_kernel) code = repl_dokernel(L, &host, &reset_requested);
        else if (start_repl(L) == LUA_OK) interact(L);
        resetting = reset_requested;
        lua_pushinteger(L, code != EXIT_OK ? code : i_session && input_errors > 0 ? EXIT_SCRIPT : EXIT_OK);
        return 1;
    }
    args = collectargs(argv, &script);
    if (argv[0] && argv[0][0]) progname = argv[0];
    if (args == has_error) {
        repl_print_usage(progname, argv[script]);
        lua_pushinteger(L, EXIT_USAGE);
        return 1;
    }
    if (args & has_help) {
        repl_print_help(progname);
        lua_pushinteger(L, EXIT_OK);
        return 1;
    }
    int usage;
    const char *misuse = repl_modes_check(L, args, &usage);
    if (misuse) {
        l_message(progname, misuse);
        if (usage) repl_print_usage(progname, NULL);
        lua_pushinteger(L, EXIT_USAGE);
        return 1;
    }
    if (args & has_v) repl_print_version(PROGNAME, MHA_REPL_VERSION);
    choose_terminal();
    openlibs(L);
    createargtable(L, argv, argc, script);
    lua_gc(L, LUA_GCRESTART);
    lua_gc(L, LUA_GCGEN, 0, 0);
    int code = EXIT_OK;
    if (!runargs(L, argv, script)) code = EXIT_SCRIPT;
    else if (script < argc && handle_script(L, argv + script) != LUA_OK) code = EXIT_SCRIPT;
    else if (args & has_kernel) code = repl_dokernel(L, &host, &reset_requested);
    else if (args & has_export) code = repl_doexport(L, &host);
    else if (args & has_lesson) {
        int batch = (args & (has_batch | has_answers)) || !stdin_is_tty();   /* --answers replays */
        if (!batch && start_repl(L) != LUA_OK) code = EXIT_SCRIPT;
        if (code == EXIT_OK) code = repl_dolesson(L, &host, batch);
        if (code == EXIT_OK && !batch) interact(L);
    } else if (args & has_i) {
        if (start_repl(L) == LUA_OK) {
            if (stdin_is_tty()) print_banner(L);
            interact(L);
        }
        i_session = 1;
    } else if (script == argc && !(args & (has_e | has_v))) {
        if (stdin_is_tty()) {
            if (start_repl(L) == LUA_OK) {
                print_banner(L);
                interact(L);
            }
        } else {
            if (dofile(L, NULL) != LUA_OK) code = EXIT_SCRIPT;
        }
    }
    if (i_session && input_errors > 0 && code == EXIT_OK) code = EXIT_SCRIPT;
    resetting = reset_requested;
    lua_pushinteger(L, code);
    return 1;
}

int main(int argc, char **argv) {
    int code;
    do {
        reset_requested = 0;
        lua_State *L = luaL_newstate();
        if (L == NULL) {
            l_message(argv[0], "cannot create state: not enough memory");
            return EXIT_FAILURE;
        }
        lua_gc(L, LUA_GCSTOP);  /* stop GC while building state */
        lua_pushcfunction(L, pmain);
        lua_pushinteger(L, argc);
        lua_pushlightuserdata(L, argv);
        int status = lua_pcall(L, 2, 1, 0);
        code = status == LUA_OK ? (int)lua_tointeger(L, -1) : EXIT_SCRIPT;
        if (status != LUA_OK) report(L, status);
        globalL = NULL;
        repl_signals_forget();
        lua_close(L);
        fflush(stdout);
    } while (reset_requested && !quit_requested);
    return code;
}

