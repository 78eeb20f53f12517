/* lua/repl/lazy.h - the REPL's lazy globals (lua/repl/lazy.c): names in _G that load their module
 * on first use. */
#ifndef MHA_REPL_LAZY_H
#define MHA_REPL_LAZY_H

#include <lua.h>

/* Gives _G a metatable whose __index loads `plot` and `help` on first use
 * (and stores them with rawset); its __lazy field lists those names, so completion can offer them
 * before they are loaded. */
void repl_lazy_globals(lua_State *L);

#endif
