/* lua/bind/lmha.h - what the Lua binding files share: the userdata types' names, the check/push helpers
 * for tensors, and the luaopen_ functions of each Lua-visible library. */
#ifndef MHA_LMHA_H
#define MHA_LMHA_H

#include <lua.h>
#include <lauxlib.h>
#include "tensor.h"
#include "attention.h"

#define MHA_TENSOR_T     "mha.Tensor"              /* metatable name: errors read "mha.Tensor expected" */
#define MHA_MULTIHEAD_T  "mha.MultiheadAttention"

/* The userdata of a tensor is the mha_tensor itself (liolib.c's LStream shape): it is created empty,
 * then filled by a core call, so a failing call leaves an empty tensor that __gc ignores. */
#define totensor(L, i) ((mha_tensor *)luaL_checkudata(L, i, MHA_TENSOR_T))

mha_tensor *lmha_checktensor(lua_State *L, int arg);       /* a tensor, or an error naming arg */
mha_tensor *lmha_testtensor(lua_State *L, int arg);        /* a tensor or NULL */
mha_tensor *lmha_newtensor(lua_State *L);                  /* pushes an empty tensor userdata */
/* Pushes the result of a core call into the empty userdata at the top, or raises the core's
 * message as a Lua error when status != MHA_OK (the userdata stays empty and is collected). */
int lmha_result(lua_State *L, mha_status status);
/* Raises the core's message for status (never MHA_OK), then hint (or nothing when NULL). Out of memory
 * is reported under fname (NULL: the name Lua called this function by), never under the core function
 * that allocated ("empty: out of memory ..." from a call the student did not make). */
int lmha_fail(lua_State *L, mha_status status, const char *fname, const char *hint);
/* Raises an error naming fname when t has elements sharing one memory location (a stride 0 along a dim of
 * size > 1, as expand() makes): PyTorch refuses copy_ and the random fills into such a tensor. */
void lmha_checkwritable(lua_State *L, const mha_tensor *t, const char *fname);
/* A 1-based or negative Lua dimension for a tensor of ndim dims -> 0-based; error names arg. */
size_t lmha_checkdim(lua_State *L, int arg, size_t ndim, const char *fname);
/* A tensor from a tensor, a number (a scalar tensor) or a nested table of numbers/booleans. */
mha_tensor *lmha_totensor(lua_State *L, int arg, const char *fname);

/* As lmha_checkdim, for a dim of t among `positions` places (t->ndim, or t->ndim+1 where a new dim may
 * go, as in unsqueeze); the error shows t's shape. lmha_opttdim gives def when the argument is absent. */
size_t lmha_checktdim(lua_State *L, int arg, const mha_tensor *t, size_t positions, const char *fname);
size_t lmha_opttdim(lua_State *L, int arg, const mha_tensor *t, size_t def, const char *fname);
/* Sizes given as arguments first..last, or as one table at first: f(2,3) or f{2,3}. Returns ndim. */
size_t lmha_checkshape(lua_State *L, int first, int last, size_t *shape, const char *fname);
#define LMHA_SHAPE_BUF 200                              /* room for "(s1,...,s8)" of any sizes */
const char *lmha_shape(char *buf, const mha_tensor *t); /* "(2,3)"; buf has LMHA_SHAPE_BUF bytes */
#define LMHA_LIB_KEY "mha.lib"  /* registry field holding the mha table (tostring finds "format" there) */
int lmha_multihead_new(lua_State *L);   /* mha.MultiheadAttention{...} (lua/lmultihead.c) */
/* .npz checkpoints (lua/bind/lnpz.c): a path ending in .npz; a file starting like a zip; a table with a
 * string key (which only a .npz holds); load pushes the table name -> tensor;
 * save writes the table at value with the options at opts. */
int lmha_npz_path(const char *path);
int lmha_npz_is_archive(const char *path);
int lmha_npz_named_table(lua_State *L, int idx);
int lmha_npz_load(lua_State *L, const char *path);
int lmha_npz_save(lua_State *L, const char *path, int value, int opts);
/* a op b for the values at 1 and 2: tensors, numbers (either side) or nested tables; pushes the result. */
int lmha_arith(lua_State *L, mha_binop op, const char *fname);
/* Options tables: an error naming fname and listing `names` (NULL-terminated) for an unknown key;
 * typed reads that name the option when its value has the wrong type. idx may hold nil (no options). */
void lmha_checkoptions(lua_State *L, int idx, const char *fname, const char *const names[]);
int lmha_optboolean(lua_State *L, int idx, const char *key, int def, const char *fname);
const mha_tensor *lmha_opttensor(lua_State *L, int idx, const char *key, const char *fname);

/* luaopen_mha builds the "mha" table, stores it in package.loaded["mha"] at once (so the Lua helpers
 * it loads can require it), registers in package.preload every embedded Lua module (mha.display,
 * mha.plot, mha.lesson, mha.repl, mha.help, ...) and the C libraries below, then requires
 * "mha.display", which adds show/format/printoptions/heat to the table. */
int luaopen_mha(lua_State *L);          /* module "mha": tensors, ops, attention, modules, io */
int luaopen_mha_gnuplot(lua_State *L);  /* module "mha.gnuplot": gnuplot processes behind pipes (lua/lgnuplot.c) */
int luaopen_mha_term(lua_State *L);     /* module "mha.term": isatty, columns, display width (lua/lterm.c) */
int luaopen_mha_optim_kernels(lua_State *L); /* module "mha.optim_kernels": optimizer steps (lua/bind/loptim.c) */
int lmha_open_tensor(lua_State *L);     /* registers the mha.Tensor metatable (called by luaopen_mha) */
int lmha_open_multihead(lua_State *L);  /* registers the mha.MultiheadAttention metatable */

#endif
