/* lua/repl/modes.c - what mha-repl runs besides lua.c's script, -e chunk and REPL: a lesson
 * (--lesson, --batch, --lang, --answers), a Jupyter kernel (--kernel), a lesson written as a
 * notebook (--export). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>

#include "kernel.h"
#include "modes.h"
#include "signals.h"

static const char *lesson_name = NULL;
static const char *lesson_lang = NULL;
static const char *lesson_answers = NULL;
static const char *kernel_file = NULL;
static const char *export_file = NULL;

/* The long options that take an argument: the bit each sets and where its argument is kept. */
static const struct {
    const char *name;
    int flag;
    const char **value;
} with_argument[] = {
    {"--lesson", has_lesson, &lesson_name},
    {"--lang", has_lang, &lesson_lang},
    {"--answers", has_answers, &lesson_answers},
    {"--kernel", has_kernel, &kernel_file},
    {"--export", has_export, &export_file},
};
#define N_WITH_ARGUMENT (sizeof with_argument / sizeof with_argument[0])

int repl_mode_option(const char *arg) {
    for (size_t i = 0; i < N_WITH_ARGUMENT; i++)
        if (strcmp(arg, with_argument[i].name) == 0) return with_argument[i].flag;
    return 0;
}

void repl_mode_set(int flag, const char *value) {
    for (size_t i = 0; i < N_WITH_ARGUMENT; i++)
        if (with_argument[i].flag == flag) *with_argument[i].value = value;
}

const char *repl_modes_check(lua_State *L, int args, int *usage) {
    *usage = 1;
    if ((args & has_export) && !(args & has_lesson))
        return "--export goes with --lesson NAME --batch (in the REPL: :export FILE)";
    if ((args & (has_batch | has_answers)) && !(args & has_lesson))
        return "--batch and --answers go with --lesson NAME";
    *usage = 0;
    if (lesson_lang && strcmp(lesson_lang, "en") != 0 && strcmp(lesson_lang, "zh") != 0)
        return lua_pushfstring(L, "--lang: '%s' is not a language of the lessons (en, zh)", lesson_lang);
    /* --lang without a lesson sets the REPL's language, as MHA_LANG does (read once it starts) */
    if (lesson_lang && !(args & has_lesson)) setenv("MHA_LANG", lesson_lang, 1);
    return NULL;
}

/* --lesson: require("mha.lesson").start(name, {batch=, lang=}); at a terminal the REPL follows.
 * -> EXIT_OK, EXIT_SCRIPT or EXIT_USAGE */
int repl_dolesson(lua_State *L, const repl_host *repl, int batch) {
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    int present = lua_getfield(L, -1, "mha.lesson") != LUA_TNIL;
    lua_pop(L, 2);
    if (!present) {
        repl->message("--lesson: the lesson runner (module mha.lesson) is not in this build");
        return EXIT_SCRIPT;
    }
    lua_getglobal(L, "require");
    lua_pushliteral(L, "mha.lesson");
    int status = repl->docall(L, 1, 1);
    if (status != LUA_OK) {
        repl->report(L, status);
        return EXIT_SCRIPT;
    }
    lua_getfield(L, -1, "start");
    lua_remove(L, -2);
    lua_pushstring(L, lesson_name);
    lua_createtable(L, 0, 2);
    lua_pushboolean(L, batch);
    lua_setfield(L, -2, "batch");
    if (lesson_lang) {
        lua_pushstring(L, lesson_lang);
        lua_setfield(L, -2, "lang");
    }
    if (lesson_answers) {
        lua_pushstring(L, lesson_answers);
        lua_setfield(L, -2, "answers");
    }
    status = repl->docall(L, 2, 3);
    if (status != LUA_OK) {
        repl->report(L, status);
        return EXIT_SCRIPT;
    }
    /* start returns ok, err, kind as Lua functions that may fail politely do; kind "usage" marks a
     * lesson that does not exist: a bad command line, not a failing lesson */
    if (!lua_toboolean(L, -3) && !lua_isnil(L, -2)) {
        int usage = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "usage") == 0;
        repl->message(luaL_tolstring(L, -2, NULL));
        lua_pop(L, 4);
        return usage ? EXIT_USAGE : EXIT_SCRIPT;
    }
    lua_pop(L, 3);
    return EXIT_OK;
}

/* --kernel FILE: serve Jupyter on this state; :reset in a cell comes back here with a fresh one.
 * -> EXIT_OK, EXIT_SCRIPT or EXIT_USAGE */
int repl_dokernel(lua_State *L, const repl_host *repl, int *reset) {
    if (repl->start(L) != LUA_OK) return EXIT_SCRIPT;
    repl_kernel_serving(L);
    int r = mha_kernel_serve(L, kernel_file, repl_kernel_stop, repl_kernel_stopped);
    repl_kernel_serving(NULL);
    if (r == MHA_KERNEL_RESET) *reset = 1;
    return r == MHA_KERNEL_ERROR ? EXIT_USAGE : EXIT_OK;
}

/* --lesson N --batch --export FILE: require("mha.notebook").export_lesson(name, lang, file). */
/* The lesson's transcript goes to the notebook, not to stdout (a batch run would print it all):
 * stdout is /dev/null while the export runs, and then says the one line :export says. Errors go to
 * stderr as ever. */
int repl_doexport(lua_State *L, const repl_host *repl) {   /* -> EXIT_OK or EXIT_SCRIPT */
    if (repl->start(L) != LUA_OK) return EXIT_SCRIPT;
    lua_getglobal(L, "require");
    lua_pushliteral(L, "mha.notebook");
    int status = repl->docall(L, 1, 1);
    if (status == LUA_OK) {
        lua_getfield(L, -1, "export_lesson");
        lua_remove(L, -2);
        lua_pushstring(L, lesson_name);
        lua_pushstring(L, lesson_lang);
        lua_pushstring(L, export_file);
        fflush(stdout);
        int saved_stdout = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY);
        if (saved_stdout >= 0 && null >= 0) dup2(null, STDOUT_FILENO);
        status = repl->docall(L, 3, 2);
        fflush(stdout);
        if (saved_stdout >= 0 && null >= 0) dup2(saved_stdout, STDOUT_FILENO);
        if (null >= 0) close(null);
        if (saved_stdout >= 0) close(saved_stdout);
        if (status == LUA_OK && !lua_toboolean(L, -2)) {
            repl->message(luaL_tolstring(L, -1, NULL));
            return EXIT_SCRIPT;
        }
        if (status == LUA_OK) {   /* "wrote lesson 3 to l3.ipynb", through repl.exported */
            lua_getglobal(L, "require");
            lua_pushliteral(L, "mha.repl");
            if (repl->docall(L, 1, 1) == LUA_OK && lua_getfield(L, -1, "exported") == LUA_TFUNCTION) {
                lua_pushvalue(L, -3);   /* the lesson's number, under mha.repl and exported */
                lua_pushstring(L, export_file);
                if (repl->docall(L, 2, 1) == LUA_OK) printf("%s\n", lua_tostring(L, -1));
            }
        }
    }
    return repl->report(L, status) == LUA_OK ? EXIT_OK : EXIT_SCRIPT;
}
