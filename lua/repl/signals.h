/* lua/repl/signals.h - mha-repl's signals (lua/repl/signals.c): Ctrl-C that stops Lua code and
 * kernels, a terminal that closes or resizes. repl.c arms Ctrl-C around each call and asks what
 * came at the prompt. */
#ifndef MHA_REPL_SIGNALS_H
#define MHA_REPL_SIGNALS_H

#include <lua.h>

/* Says whether readline reads stdin (a terminal): then SIGINT is caught once for the session by
 * repl_signals_catch, else only while Lua code runs (arm/disarm), and a second one ends the
 * script. */
void repl_signals_readline(int readline);
/* SIGINT, SIGWINCH, SIGHUP and SIGTERM caught from now on: the REPL at a terminal starts. */
void repl_signals_catch(void);
/* Around a call into Lua (lua.c's docall): Ctrl-C meanwhile stops L's code and the kernels; disarm
 * removes a hook left by a Ctrl-C that came as the code finished, so it cannot stop the next,
 * innocent call. */
void repl_interrupt_arm(lua_State *L);
void repl_interrupt_disarm(lua_State *L);
/* interrupt_later(...) -> ...: a Ctrl-C that Lua code caught stops the input at its next line or
 * loop turn (registered as "mha.repl.interrupt_later"). */
int repl_interrupt_later(lua_State *L);
/* caught() -> boolean: whether the REPL's input running, or last run, returned through
 * interrupt_later, stopped short by a Ctrl-C it caught (registered as "mha.repl.caught"; the REPL
 * forgets it before each input). */
int repl_caught(lua_State *L);
void repl_caught_forget(void);
/* input_done(...) -> ...: a Jupyter cell or a lesson's step has returned; the stop
 * interrupt_later set for its next line goes (registered as "mha.repl.input_done"). */
int repl_input_done(lua_State *L);
/* L is about to be closed: no signal may touch it. */
void repl_signals_forget(void);

/* At the prompt: a Ctrl-C, or a resize, since last asked (each answer clears it); SIGHUP/SIGTERM
 * seen. */
int repl_prompt_interrupted(void);
int repl_window_resized(void);
int repl_hangup(void);

/* The Jupyter kernel's interrupt (SIGINT or an interrupt_request): Ctrl-C's stop, and its
 * undoing; serving names the state it runs cells on (NULL when it stops serving it), where
 * interrupt_later re-arms the stop as on the REPL's. */
void repl_kernel_stop(lua_State *L);
void repl_kernel_stopped(lua_State *L);
void repl_kernel_serving(lua_State *L);

/* A saved session's replay of an input Ctrl-C stopped, which it runs in a coroutine: after
 * `seconds` the kernels and the coroutines being resumed are stopped as Ctrl-C stops them, while
 * the thread that resumed them goes on. 0 disarms it and takes the kernels' stop request back. */
void repl_stop_resumed_after(double seconds);

/* Replaces coroutine.resume and coroutine.wrap in the coroutine table (the same table as
 * package.loaded.coroutine), so a Ctrl-C reaches code running in any coroutine resumed from Lua. */
void repl_install_coroutine_hooks(lua_State *L);

#endif
