/* lua/repl/usage.h - the words of mha-repl's command line (lua/repl/usage.c): the usage line,
 * --help's text and -v's version, as lua.c's print_usage and print_version. */
#ifndef MHA_REPL_USAGE_H
#define MHA_REPL_USAGE_H

/* The usage line to stderr, after what is wrong with badoption (none when NULL). */
void repl_print_usage(const char *progname, const char *badoption);
/* --help: every option, the exit statuses and the environment, to stdout. */
void repl_print_help(const char *progname);
/* -v: "name version (Lua 5.4.x, GNU Readline x.y)". */
void repl_print_version(const char *name, const char *version);

#endif
