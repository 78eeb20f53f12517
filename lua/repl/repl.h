/* lua/repl/repl.h - what repl.c (mha-repl's main, in lua.c's shape) lends the files beside it: the exit
 * codes, and lua.c's docall, report and l_message for the modes of lua/repl/modes.c. */
#ifndef MHA_REPL_REPL_H
#define MHA_REPL_REPL_H

#include <lua.h>

/* exit codes */
#define EXIT_OK     0
#define EXIT_SCRIPT 1   /* a script, -e chunk or lesson raised an error */
#define EXIT_USAGE  2   /* a bad command line */

/* Runs the function below narg arguments with the message handler, Ctrl-C armed (lua.c's docall). */
int repl_docall(lua_State *L, int narg, int nres);
/* Prints the error at the top of the stack after the program's name and pops it (lua.c's report). */
int repl_report(lua_State *L, int status);
/* Prints msg to stderr after the program's name (lua.c's l_message). */
void repl_message(const char *msg);
/* Readline, signals and history once per process; mha.repl on L. Returns a Lua status. */
int repl_start(lua_State *L);

#endif
