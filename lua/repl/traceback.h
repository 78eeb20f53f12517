/* lua/repl/traceback.h - the REPL's tracebacks (lua/repl/traceback.c): luaL_traceback without the
 * frames of the Lua code built into the binary, a helper's error placed at the user's line. */
#ifndef MHA_REPL_TRACEBACK_H
#define MHA_REPL_TRACEBACK_H

#include <lua.h>

/* Pushes msg followed by "\nstack traceback:" and the frames of L from level on that the reader
 * needs (none at all when they only repeat where msg points); a msg at a helper's position gets the
 * user's. */
void repl_traceback(lua_State *L, const char *msg, int level);
/* Where the chunk being run made its last call, when a tail call hides it
 * ("stdin:1" for the one-line expression the REPL runs as "return opt.step();"), or NULL: a
 * helper's error below that tail call is placed there, as it would be without the tail call. */
const char *repl_traceback_tailcall(const char *where);   /* returns the one before */

#endif
