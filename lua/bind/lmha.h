/* lua/bind/lmha.h - the openers of the Lua-visible "mha" libraries, as lualib.h is to Lua's: what
 * mha-repl's main and each binding file's registration need from one another
 * (lua/bind/lmha.c builds mha). */
#ifndef MHA_LMHA_H
#define MHA_LMHA_H

#include <lua.h>

/* luaopen_mha_core builds the C tables only (the functions, the Tensor and MultiheadAttention
 * types) and requires nothing. luaopen_mha, the loader of "mha" (mha-repl's and mha.so's),
 * registers in package.preload every embedded Lua module (mha.display, mha.nn, mha.repl, ...),
 * "mha.core" and the lua/sys libraries (lsys.h), then runs the embedded lua/mha.lua, which
 * assembles the mha table. */
int luaopen_mha_core(lua_State *L);     /* module "mha.core": tensors, ops, attention, io in C */
int luaopen_mha(lua_State *L);          /* package "mha": mha.core with the Lua parts, as
                                           lua/mha.lua says */
int lmha_open_tensor(lua_State *L);    /* registers the mha.Tensor metatable (lua/bind/ltensor.c) */
int lmha_open_multihead(lua_State *L);  /* registers the mha.MultiheadAttention metatable
                                           (lua/bind/lmultihead.c) */
int lmha_multihead_new(lua_State *L);   /* mha.MultiheadAttention{...} (lua/bind/lmultihead.c) */
int lmha_open_positions(lua_State *L); /* adds rope, alibi_*, sliding_window_mask, sample to the
                                          table on top (lpositions.c) */
int luaopen_mha_optim_kernels(lua_State *L); /* module "mha.optim_kernels": optimizer steps
                                                (lua/bind/loptim.c) */

/* .npz checkpoints (lua/bind/lnpz.c), for mha.load and mha.save: a path ending in .npz; a table
 * with a string key (which only a .npz holds); load pushes the table name -> tensor; save writes
 * the table at value with the options at opts. */
int lmha_npz_path(const char *path);
int lmha_npz_named_table(lua_State *L, int idx);
int lmha_npz_load(lua_State *L, const char *path);
int lmha_npz_save(lua_State *L, const char *path, int value, int opts);

#endif
