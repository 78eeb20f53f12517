/* lua/repl/history.h - the REPL's input history kept across sessions (lua/repl/history.c): loaded
 * into readline at start, each complete input added, merged into the file under a lock at exit. */
#ifndef MHA_REPL_HISTORY_H
#define MHA_REPL_HISTORY_H

#define HISTORY_DEFAULT  ".mha_repl_history"   /* in $HOME, when MHA_REPL_HISTORY is not set */

/* Chooses the file ($MHA_REPL_HISTORY, else ~/.mha_repl_history; empty or not a regular file: none)
 * and loads it into readline's history. program starts the one warning a failure prints. */
void repl_history_load(const char *program);
/* Adds a complete input (a multi-line one stays one entry), unless it repeats the previous
 * entry. */
void repl_history_add(const char *entry);
/* Merges this session's entries into the file, atomically; for atexit, so os.exit() keeps them
 * too. */
void repl_history_save(void);

#endif
