/* lua/repl/completion.c - readline's side of Tab completion at the prompt: the words it breaks at,
 * the matches from a list of candidates, and file names inside a Lua string escaped for it. */
#include "completion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

/* File names completed inside a Lua string: a backslash, and the string's own quote, escaped with a
 * backslash, so that the name reads back as itself ("it's \"q\".npz"); escapes typed before Tab are
 * undone before names are matched; an escaped quote does not end the string. */
static char *quote_file_name(char *text, int match_type, char *quote) {
    (void)match_type;
    const char q = quote && *quote ? *quote : '"';
    char *out = malloc(2 * strlen(text) + 1), *o = out;
    if (!out) return NULL;
    for (const char *c = text; *c; c++) {
        if (*c == '\\' || *c == q) *o++ = '\\';
        *o++ = *c;
    }
    *o = '\0';
    return out;
}

static char *dequote_file_name(char *text, int quote) {
    (void)quote;
    char *out = malloc(strlen(text) + 1), *o = out;
    if (!out) return NULL;
    for (const char *c = text; *c; c++) {
        if (*c == '\\' && c[1]) c++;
        *o++ = *c;
    }
    *o = '\0';
    return out;
}

static int char_is_escaped(char *line, int index) {
    int backslashes = 0;
    for (int i = index - 1; i >= 0 && line[i] == '\\'; i--) backslashes++;
    return backslashes % 2;
}

static const char *const *candidates = NULL;
static size_t ncandidates = 0, next_candidate = 0;

static char *candidate_generator(const char *text, int state) {
    (void)text;
    if (state == 0) next_candidate = 0;
    return next_candidate < ncandidates ? strdup(candidates[next_candidate++]) : NULL;
}

char **repl_completion_matches(const char *text, const char *const *list, size_t n) {
    if (n == 0) return NULL;
    candidates = list, ncandidates = n;
    char **matches = rl_completion_matches(text, candidate_generator);
    candidates = NULL, ncandidates = 0;
    return matches;
}

void repl_completion_setup(rl_completion_func_t *complete) {
    rl_attempted_completion_function = complete;
    rl_completer_word_break_characters = " \t\n\"'`><=;|&{}()[],+-*%^#~?";
    rl_completer_quote_characters = "\"'";
    rl_filename_quote_characters = "\"'\\";
    rl_filename_quoting_function = quote_file_name;
    rl_filename_dequoting_function = dequote_file_name;
    rl_char_is_quoted_p = char_is_escaped;
    /* a Tab that can add nothing lists the candidates at once (after "my<Tab>" inserted the "my "
     * of "my model.npz" and "my notebook.ipynb", the next Tab lists them, not a third) */
    rl_variable_bind("show-all-if-unmodified", "on");
}
