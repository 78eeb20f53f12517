/* lua/repl/completion.h - readline's side of Tab completion at the prompt (completion.c); the
 * candidates themselves come from repl.complete in Lua (repl.c asks it). */
#ifndef MHA_REPL_COMPLETION_H
#define MHA_REPL_COMPLETION_H

#include <stddef.h>
#include <stdio.h>

#include <readline/readline.h>

/* Installs complete as readline's completion function, with the REPL's word breaks and quotes, and
 * file names inside a string: a backslash and the string's own quote escaped ("it's \"q\".npz"),
 * escapes typed before Tab undone before names are matched, an escaped quote not taken for the
 * string's end; a Tab that can add nothing lists the candidates. */
void repl_completion_setup(rl_completion_func_t *complete);

/* readline's matches for text among list[0..n) (strings copied), or NULL when n is 0. */
char **repl_completion_matches(const char *text, const char *const *list, size_t n);

#endif
