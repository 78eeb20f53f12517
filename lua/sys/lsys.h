/* lua/sys/lsys.h - what the OS gives the REPL and the Lua helpers: the terminal (lterm.c: size, the
 * one colour policy, display widths), gnuplot (lgnuplot.c), folders (ldir.c), programs (lproc.c) */
#ifndef MHA_LSYS_H
#define MHA_LSYS_H

#include <lua.h>

/* The one colour policy, asked by repl.c and (as term.colour) by every Lua helper: colour on fd
 * only when it is a terminal, NO_COLOR is unset or empty (no-color.org), and TERM is set and not
 * "dumb". An unset TERM means no colour: nothing then says the terminal understands escapes (a cron
 * job, `env -i`, an editor's pipe), which is how GNU ls --color=auto and ncurses read it too. */
int mha_term_colour(int fd);

int luaopen_mha_term(lua_State *L);     /* module "mha.term": isatty, colour, columns, text width */
int luaopen_mha_gnuplot(lua_State *L);  /* module "mha.gnuplot": gnuplot processes behind pipes */
int luaopen_mha_dir(lua_State *L);      /* module "mha.dir": a folder's names, without a shell */
/* module "mha.proc": run a program by argument list, never a shell; where the program and its
 * lessons/, models/ are */
int luaopen_mha_proc(lua_State *L);

#endif
