/* lua/bind/lmha.h - the openers of the Lua-visible "mha" libraries, as lualib.h is to Lua's: what
 * mha-repl's main and each binding file's registration need from one another (lua/bind/lmha.c builds mha). */
#ifndef MHA_LMHA_H
#define MHA_LMHA_H

#include <lua.h>

/* luaopen_mha builds the "mha" table, stores it in package.loaded["mha"] at once (so the Lua helpers
 * it loads can require it), registers in package.preload every embedded Lua module (mha.display,
 * mha.plot, mha.lesson, mha.repl, mha.help, ...) and the lua/sys libraries (lsys.h), then requires
 * "mha.display", which adds show/format/printoptions/heat to the table. */
int luaopen_mha(lua_State *L);          /* module "mha": tensors, ops, attention, modules, io */
int lmha_open_tensor(lua_State *L);     /* registers the mha.Tensor metatable (lua/bind/ltensor.c) */
int lmha_open_multihead(lua_State *L);  /* registers the mha.MultiheadAttention metatable (lua/bind/lmultihead.c) */
int lmha_multihead_new(lua_State *L);   /* mha.MultiheadAttention{...} (lua/bind/lmultihead.c) */

#endif
