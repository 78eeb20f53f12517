/* lua/repl/signals.c - the signals of mha-repl: Ctrl-C stops running Lua code and the core's
 * kernels (lua.c's laction/lstop), SIGHUP/SIGTERM end the REPL as Ctrl-D would, SIGWINCH resizes
 * readline's line.
 *
 * While Lua code runs (evaluating), SIGINT asks the core's kernels to stop
 * (mha_interrupt, a flag they poll) and sets a hook that raises "interrupted" at the next Lua
 * instruction, call or return: the lua.c technique, since a signal handler cannot touch a lua_State
 * safely. At the prompt, it only sets a flag; the readline loop sees select() fail with EINTR and
 * clears the line. */
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>

#include "tensor/tensor.h"      /* mha_interrupt: Ctrl-C reaches running kernels */
#include "signals.h"

static lua_State *volatile running = NULL;   /* the state running Lua code, for laction (lua.c's
                                                globalL) */
static volatile sig_atomic_t interactive = 0;   /* readline reads stdin: SIGINT is not armed per
                                                   call */
static volatile sig_atomic_t evaluating = 0;
static volatile sig_atomic_t prompt_interrupted = 0;
static volatile sig_atomic_t window_resized = 0;
static volatile sig_atomic_t hangup = 0;   /* SIGHUP or SIGTERM: leave the REPL as Ctrl-D would */
static volatile sig_atomic_t caught = 0;   /* the input caught a Ctrl-C (interrupt_later) */
static lua_State *serving = NULL;   /* the state the Jupyter kernel runs cells on, while it
                                       serves */

static void lstop(lua_State *L, lua_Debug *ar) {
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    luaL_error(L, "%s", "interrupted");
}

/* A hook set on one lua_State does not reach a coroutine running inside it: each coroutine is a
 * thread (lua_State) of its own, and `coroutine.wrap(function() while true do end end)()` could not
 * be stopped. So coroutine.resume and coroutine.wrap are replaced (install_coroutine_hooks) by
 * versions that keep the chain of threads being resumed, and a signal sets the hook on the main
 * thread and on each of them. */
#define RESUME_CHAIN_MAX 256
static lua_State *volatile resume_chain[RESUME_CHAIN_MAX];
static volatile sig_atomic_t resume_depth = 0;

/* Stops the code running in L and in every coroutine it is resuming, and the kernels under them.
 * From a signal handler (lua_sethook is the one call lua.c makes there too) or the Jupyter kernel's
 * control thread, which lua_sethook allows as it allows a signal. */
static void stop_lua(lua_State *L) {
    mha_interrupt();
    lua_sethook(L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
    for (sig_atomic_t i = 0; i < resume_depth && i < RESUME_CHAIN_MAX; i++)
        lua_sethook(resume_chain[i], lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static void laction(int sig) {
    if (evaluating) {
        stop_lua(running);
        /* outside the REPL, a second Ctrl-C ends a script that ignores the first, as in lua.c */
        if (!interactive) signal(sig, SIG_DFL);
    } else {
        prompt_interrupted = 1;
    }
}

/* SIGHUP (the terminal closed) or SIGTERM: a flag, which the readline loop sees, so the REPL ends
 * normally and atexit saves the history; running Lua code is stopped as by Ctrl-C. Code that goes
 * on anyway (it catches the error, or a C call does not return) gets one second: then SIGALRM ends
 * the process, as does a second SIGHUP or SIGTERM at once. Each entry is in the history file as
 * soon as it is typed (repl_history_add), so ending at once loses nothing. */
static volatile sig_atomic_t hangup_signal = 0;

/* Ends the process as sig would have: default action, unblocked (a handler runs with its own signal
 * blocked), raised. Only async-signal-safe calls. */
static void die_of(int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    signal(sig, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void on_hangup_timeout(int sig) {
    (void)sig;
    die_of(hangup_signal ? hangup_signal : SIGTERM);
}

static void on_hangup(int sig) {
    if (hangup) die_of(sig);   /* the second one */
    hangup = 1;
    hangup_signal = sig;
    if (evaluating) stop_lua(running);
    signal(SIGALRM, on_hangup_timeout);   /* whatever holds the way out (a figure's gnuplot too) */
    alarm(1);
}

/* The Jupyter kernel's interrupt: Ctrl-C's stop on the state serving cells (coroutines included),
 * and its undoing. */
void repl_kernel_stop(lua_State *L) { stop_lua(L); }

void repl_kernel_serving(lua_State *L) { serving = L; }

void repl_kernel_stopped(lua_State *L) {
    if (lua_gethook(L) == lstop) lua_sethook(L, NULL, 0, 0);
    mha_interrupt_clear();
}

static void on_winch(int sig) {
    (void)sig;
    window_resized = 1;
}

/* Installs handler for sig without SA_RESTART, so a blocked select() or read() returns EINTR. */
static void set_signal(int sig, void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* ---- what repl.c asks (signals.h) ---- */

void repl_signals_readline(int readline) { interactive = readline; }

void repl_signals_catch(void) {
    set_signal(SIGINT, laction);
    set_signal(SIGWINCH, on_winch);
    set_signal(SIGHUP, on_hangup);
    set_signal(SIGTERM, on_hangup);
}

void repl_interrupt_arm(lua_State *L) {
    running = L;
    mha_interrupt_clear();
    if (!interactive) set_signal(SIGINT, laction);
    evaluating = 1;
}

void repl_interrupt_disarm(lua_State *L) {
    evaluating = 0;
    if (!interactive) signal(SIGINT, SIG_DFL);
    if (lua_gethook(L) == lstop) lua_sethook(L, NULL, 0, 0);
    mha_interrupt_clear();
}

void repl_signals_forget(void) { running = NULL; }

/* Whether L is a coroutine being resumed (stop_lua reaches it). */
static int resumed(lua_State *L) {
    for (sig_atomic_t i = 0; i < resume_depth && i < RESUME_CHAIN_MAX; i++)
        if (resume_chain[i] == L) return 1;
    return 0;
}

/* For code that catches the "interrupted" of a Ctrl-C to return what it has (mha.generate's text):
 * it returns through interrupt_later(...), which, on the thread the REPL runs an input on (or the
 * Jupyter kernel a cell on), or a coroutine that thread is resuming, sets the Ctrl-C hook again for
 * the next new line or backward jump. `s = mha.generate(...)` then ends with s set, while a loop
 * that calls it stops at its next turn, as Ctrl-C stops every loop - in a coroutine too, and so in
 * a saved script's replay of the input (save.lua runs it in one); disarm (the kernel's stopped)
 * removes the hook when the input (the cell) ends. Returns its arguments. */
int repl_interrupt_later(lua_State *L) {
    int n = lua_gettop(L);
    if (evaluating && L == running) caught = 1;
    if ((evaluating && (L == running || resumed(L))) || (serving && L == serving))
        lua_sethook(L, lstop, LUA_MASKLINE, 0);
    return n;
}

void repl_caught_forget(void) { caught = 0; }

int repl_caught(lua_State *L) {
    lua_pushboolean(L, caught);
    return 1;
}

/* input_done(...): code that Lua runs as an input of its own - a Jupyter cell (mha.kernel), a
 * lesson's step (mha.lesson) - has returned, so a stop interrupt_later set for its next line goes
 * before the runner's own Lua runs another line (the runner calls it on the line of its xpcall, as
 * the REPL's disarm follows its lua_pcall in C). Returns its arguments. */
int repl_input_done(lua_State *L) {
    int n = lua_gettop(L);
    if (lua_gethook(L) == lstop && lua_gethookmask(L) == LUA_MASKLINE) lua_sethook(L, NULL, 0, 0);
    return n;
}

/* repl_stop_resumed_after's timer: Ctrl-C's stop for the kernels and the coroutines being resumed,
 * but not for the thread that resumed them, which is waiting for them and goes on. */
static void on_stop_alarm(int sig) {
    (void)sig;
    mha_interrupt();
    for (sig_atomic_t i = 0; i < resume_depth && i < RESUME_CHAIN_MAX; i++)
        lua_sethook(resume_chain[i], lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

void repl_stop_resumed_after(double seconds) {
    struct itimerval timer;
    memset(&timer, 0, sizeof timer);
    if (seconds > 0) {
        if (seconds > 1e6) seconds = 1e6;
        timer.it_value.tv_sec = (time_t)seconds;
        timer.it_value.tv_usec = (suseconds_t)((seconds - (double)timer.it_value.tv_sec) * 1e6) + 1;
        if (timer.it_value.tv_usec >= 1000000) { timer.it_value.tv_sec++; timer.it_value.tv_usec -= 1000000; }
        set_signal(SIGALRM, on_stop_alarm);
        setitimer(ITIMER_REAL, &timer, NULL);
    } else {
        setitimer(ITIMER_REAL, &timer, NULL);
        if (!hangup) signal(SIGALRM, SIG_DFL);   /* a hangup's alarm keeps its handler */
        mha_interrupt_clear();
    }
}

int repl_prompt_interrupted(void) {
    int seen = prompt_interrupted;
    prompt_interrupted = 0;
    return seen;
}

int repl_window_resized(void) {
    int seen = window_resized;
    window_resized = 0;
    return seen;
}

int repl_hangup(void) { return hangup; }

/* ---- coroutines that Ctrl-C reaches (see stop_lua) ---- */

/* Calls the original coroutine.resume (upvalue 1) on the arguments, with the coroutine in the
 * resume chain meanwhile. The original raises only for a non-coroutine first argument, checked
 * first, so the chain is always popped. */
static int resume_tracked(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co != NULL, 1, "coroutine");
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    sig_atomic_t depth = resume_depth;
    if (depth < RESUME_CHAIN_MAX) resume_chain[depth] = co;
    resume_depth = depth + 1;
    if (mha_interrupted())   /* a Ctrl-C (or a kernel's interrupt) between the resume and this
                                push */
        lua_sethook(co, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
    int status = lua_pcall(L, n, LUA_MULTRET, 0);
    resume_depth = depth;
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

/* The function coroutine.wrap returns: resumes its coroutine (upvalue 1) through resume_tracked
 * (upvalue 2) and, as Lua's own wrap, raises the coroutine's error
 * (with the caller's position when it is a string) after closing it
 * (upvalue 3: coroutine.close). */
static int wrap_call(lua_State *L) {
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_rotate(L, 1, 2);
    lua_call(L, n + 1, LUA_MULTRET);
    if (lua_toboolean(L, 1)) return lua_gettop(L) - 1;
    lua_settop(L, 2);   /* false, error */
    lua_pushvalue(L, lua_upvalueindex(3));
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pcall(L, 1, 0, 0);   /* to-be-closed variables of the dead coroutine; its own error is
                                kept */
    if (lua_type(L, 2) == LUA_TSTRING) {
        luaL_where(L, 1);
        lua_insert(L, 2);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

/* coroutine.wrap(f): as Lua's, through wrap_call. */
static int wrap_tracked(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    lua_pushvalue(L, lua_upvalueindex(1));   /* resume_tracked */
    lua_pushvalue(L, lua_upvalueindex(2));   /* coroutine.close */
    lua_pushcclosure(L, wrap_call, 3);
    return 1;
}

/* Every coroutine resumed from Lua is in the resume chain (signals.h). */
void repl_install_coroutine_hooks(lua_State *L) {
    lua_getglobal(L, "coroutine");
    lua_getfield(L, -1, "resume");
    lua_pushcclosure(L, resume_tracked, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "resume");
    lua_getfield(L, -2, "close");
    lua_pushcclosure(L, wrap_tracked, 2);
    lua_setfield(L, -2, "wrap");
    lua_pop(L, 1);
}
