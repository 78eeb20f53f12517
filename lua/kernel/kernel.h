/* lua/kernel/kernel.h - mha-repl as a Jupyter kernel (mha-repl --kernel CONNECTION_FILE): the
 * messaging protocol 5.3 over ZeroMQ in C, the cells run by module mha.kernel
 * (lua/kernel/kernel.lua). */
#ifndef MHA_KERNEL_H
#define MHA_KERNEL_H

#include <lua.h>

#define MHA_KERNEL_DONE  0   /* shut down as asked (or the connection file was bad: see the
                                message) */
#define MHA_KERNEL_RESET 1   /* a cell ran :reset: call again with a fresh state, the sockets stay
                                open */
#define MHA_KERNEL_ERROR 2   /* could not start: the connection file or the sockets; the message is
                                printed */

/* Serves the kernel on the lua_State L, which has the libraries and mha.repl loaded. The sockets
 * are opened on the first call and kept across MHA_KERNEL_RESET. stop(L) must ask the Lua code
 * running in L and the C kernels under it to stop (async-signal-safe: the REPL's Ctrl-C),
 * stopped(L) undo what stop left once the code has returned. */
int mha_kernel_serve(lua_State *L, const char *connection_file, void (*stop)(lua_State *L),
                     void (*stopped)(lua_State *L));

#endif
