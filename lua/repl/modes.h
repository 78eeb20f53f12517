/* lua/repl/modes.h - what mha-repl runs besides lua.c's script, -e chunk and REPL
 * (lua/repl/modes.c): a lesson (--lesson, with --batch, --lang, --answers), a Jupyter kernel
 * (--kernel), an export (--export). */
#ifndef MHA_REPL_MODES_H
#define MHA_REPL_MODES_H

#include <lua.h>

/* exit codes, of the modes and of mha-repl */
#define EXIT_OK     0
#define EXIT_SCRIPT 1   /* a script, -e chunk or lesson raised an error */
#define EXIT_USAGE  2   /* a bad command line */

/* The bits collectargs (repl.c) sets for these options, above lua.c's own
 * (has_error .. has_help). */
#define has_lesson  32    /* --lesson NAME */
#define has_batch   64    /* --batch */
#define has_lang    128   /* --lang en|zh */
#define has_answers 256   /* --answers FILE */
#define has_kernel  512   /* --kernel FILE */
#define has_export  1024  /* --export FILE */

/* The has_ bit of a long option that takes an argument (--lesson, --lang, --answers, --kernel,
 * --export), else 0. */
int repl_mode_option(const char *arg);
/* Keeps value as the argument of the option with bit flag. */
void repl_mode_set(int flag, const char *value);
/* Options that do not go together, or an unknown --lang: the message (pushed on L) and *usage
 * (1 when the usage line should follow); NULL when all is well. */
const char *repl_modes_check(lua_State *L, int args, int *usage);

/* What the modes need of the REPL, which repl.c hands them (as it hands itself to the lesson
 * runner): lua.c's docall (the message handler, Ctrl-C armed), report (the error at the top of the
 * stack printed after the program's name, and popped) and l_message (msg to stderr after the
 * program's name), and start (readline, signals and history once per process, mha.repl on L; a
 * Lua status). */
typedef struct repl_host {
    int (*docall)(lua_State *L, int narg, int nres);
    int (*report)(lua_State *L, int status);
    void (*message)(const char *msg);
    int (*start)(lua_State *L);
} repl_host;

/* The modes; each returns an exit code. A :reset in a kernel's cell sets *reset: the kernel comes
 * back on a fresh state. */
int repl_dolesson(lua_State *L, const repl_host *repl, int batch);
int repl_dokernel(lua_State *L, const repl_host *repl, int *reset);
int repl_doexport(lua_State *L, const repl_host *repl);

#endif
