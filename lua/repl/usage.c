/* lua/repl/usage.c - the words of mha-repl's command line: the usage line a bad option prints,
 * --help's text and -v's version (repl.c's collectargs decides which). */
#include <stdio.h>
#include <string.h>

#include <readline/readline.h>
#include <lua.h>

#include "history.h"
#include "modes.h"
#include "usage.h"

void repl_print_usage(const char *progname, const char *badoption) {
    if (badoption) {
        fprintf(stderr, "%s: ", progname);
        if (strcmp(badoption, "-e") == 0 || strcmp(badoption, "-l") == 0 || repl_mode_option(badoption))
            fprintf(stderr, "'%s' needs an argument\n", badoption);
        else
            fprintf(stderr, "unrecognized option '%s'\n", badoption);
    }
    fprintf(stderr, "usage: %s [options] [script [args]]   (%s --help explains)\n", progname, progname);
}

void repl_print_help(const char *progname) {
    printf(
        "usage: %s [options] [script [args]]\n"
        "  (no arguments)   the interactive REPL (when stdin is not a terminal: stdin run\n"
        "                   as a script)\n"
        "  script [args]    run a Lua script with the global 'arg' holding its arguments\n"
        "  -                run a script read from stdin (no prompt, no colour)\n"
        "  -e chunk         run the Lua chunk\n"
        "  -l name          require library 'name' into global 'name'\n"
        "  -i               enter the REPL after running the script or chunks (exit\n"
        "                   status 1 when an input typed there raised an error)\n"
        "  -v, --version    show the version\n"
        "  --lesson NAME|NUMBER|PATH [--batch] [--lang en|zh] [--answers FILE]\n"
        "                   open a lesson (by name, number, or a lesson file's path);\n"
        "                   --batch runs it straight through; --answers FILE (batch)\n"
        "                   answers its exercises with FILE's lines, one Lua expression\n"
        "                   per attempt\n"
        "  --lesson N --batch --export FILE.ipynb|FILE.html\n"
        "                   write the lesson as a Jupyter notebook or one HTML page\n"
        "  --lang en|zh     without --lesson: the REPL's language, as MHA_LANG\n"
        "  --kernel CONNECTION_FILE\n"
        "                   serve as a Jupyter kernel (make install-kernel registers it)\n"
        "  --help           this text\n"
        "  --               stop handling options\n"
        "exit status: 0 success, 1 an error in the script, 2 a bad command line.\n"
        "environment: MHA_REPL_HISTORY (history file, default ~/%s),\n"
        "  NO_COLOR, MHA_LANG (en|zh), MHA_LESSONS (folders of lesson files NN_name.lua,\n"
        "  ':'-separated, searched before ./lessons).\n"
        "In the REPL, type ? for its commands and help() for the functions.\n",
        progname, HISTORY_DEFAULT);
}

void repl_print_version(const char *name, const char *version) {
    printf("%s %s (%s, GNU Readline %s)\n", name, version, LUA_RELEASE, rl_library_version);
    fflush(stdout);
}
