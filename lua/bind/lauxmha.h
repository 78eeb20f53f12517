/* lua/bind/lauxmha.h - what every mha binding file shares, as lauxlib.h is to Lua's libraries: the
 * userdata types' names and the check/push/option helpers for tensors (lua/bind/lauxmha.c). */
#ifndef MHA_LAUXMHA_H
#define MHA_LAUXMHA_H

#include <stddef.h>
#include <lua.h>
#include <lauxlib.h>
#include "tensor/tensor.h"

#define MHA_TENSOR_T     "mha.Tensor"        /* metatable name: errors read "mha.Tensor expected" */
#define MHA_MULTIHEAD_T  "mha.MultiheadAttention"
#define LMHA_LIB_KEY "mha.lib"  /* registry field holding the mha table (tostring finds "format"
                                   there) */

/* The userdata of a tensor is the mha_tensor itself (liolib.c's LStream shape): it is created
 * empty, then filled by a core call, so a failing call leaves an empty tensor that __gc ignores. */
#define totensor(L, i) ((mha_tensor *)lmha_checkudata(L, i, MHA_TENSOR_T))

/* luaL_checkudata, except for a method called with a dot (x.item(), m.forward(x)), Python's habit:
 * argument 1 is then missing or another type, and the error says "item is a method: call it with a
 * colon: x:item()". */
void *lmha_checkudata(lua_State *L, int arg, const char *tname);

mha_tensor *lmha_checktensor(lua_State *L, int arg);       /* a tensor, or an error naming arg */
mha_tensor *lmha_testtensor(lua_State *L, int arg);        /* a tensor or NULL */
mha_tensor *lmha_newtensor(lua_State *L);                  /* pushes an empty tensor userdata */
/* Pushes the result of a core call into the empty userdata at the top, or raises the core's
 * message as a Lua error when status != MHA_OK (the userdata stays empty and is collected). */
int lmha_result(lua_State *L, mha_status status);
/* Raises the core's message for status (never MHA_OK), then hint (or nothing when NULL). The core
 * names allocation failures by the function that allocated; an out-of-memory message that does not
 * start with fname (NULL: the name Lua called this function by) gets it in front:
 * "ones: full: out of memory ...". With fname NULL, a message that names the function by another of
 * its keys in the mha table (the core's "sdpa:") names it as it was called. */
int lmha_fail(lua_State *L, mha_status status, const char *fname, const char *hint);
/* The name the calling Lua code called the running C function by, else dflt (a call from C, a
 * tail call). Cheap enough for every call: no search of the mha table. */
const char *lmha_called_name(lua_State *L, const char *dflt);
/* Raises an error naming fname when t has elements sharing one memory location
 * (a stride 0 along a dim of size > 1, as expand() makes): PyTorch refuses copy_ and the random
 * fills into such a tensor. */
void lmha_checkwritable(lua_State *L, const mha_tensor *t, const char *fname);
/* A value's type as a message says it: "nil", "a number", "a table"
 * ("t[2] is nil, but t[1] is a number"). */
const char *lmha_typename(lua_State *L, int idx);
/* A Lua index d (1..n, or -n..-1 from the end) -> 0..n-1; SIZE_MAX when out of range. */
size_t lmha_luaindex(lua_Integer d, size_t n);
/* A tensor from a tensor, a number (a scalar tensor) or a nested table of numbers/booleans. */
mha_tensor *lmha_totensor(lua_State *L, int arg, const char *fname);

/* A 1-based or negative Lua dimension of t among `positions` places
 * (t->ndim, or t->ndim+1 where a new dim may go, as in unsqueeze); the error shows t's shape.
 * lmha_opttdim gives def when the argument is absent. */
size_t lmha_checktdim(lua_State *L, int arg, const mha_tensor *t, size_t positions, const char *fname);
size_t lmha_opttdim(lua_State *L, int arg, const mha_tensor *t, size_t def, const char *fname);
/* An element index along dim of t (1-based or negative) at arg -> 0-based; the error shows t's
 * shape. */
size_t lmha_checkindex(lua_State *L, int arg, const mha_tensor *t, size_t dim, const char *fname);
/* Sizes at first..last (or one table at first) into shape; a -1 ("infer this size") only when
 * allow_infer. */
size_t lmha_checksizes(lua_State *L, int first, int last, ptrdiff_t *shape, int allow_infer, const char *fname);
/* Sizes given as arguments first..last, or as one table at first: f(2,3) or f{2,3}. Returns
 * ndim. */
size_t lmha_checkshape(lua_State *L, int first, int last, size_t *shape, const char *fname);
const char *lmha_shape(char *buf, const mha_tensor *t); /* "(2,3)"; buf has MHA_SHAPE_BUF bytes */
/* a op b for the values at 1 and 2: tensors, numbers (either side) or nested tables; pushes the
 * result. */
int lmha_arith(lua_State *L, mha_binop op, const char *fname);
/* Options tables: an error naming fname and listing `names` (NULL-terminated) for an unknown key;
 * typed reads that name the option when its value has the wrong type. idx may hold nil
 * (no options). */
void lmha_checkoptions(lua_State *L, int idx, const char *fname, const char *const names[]);
int lmha_optboolean(lua_State *L, int idx, const char *key, int def, const char *fname);
const mha_tensor *lmha_opttensor(lua_State *L, int idx, const char *key, const char *fname);
/* A number ("must be a number, got string"). */
double lmha_optnumber(lua_State *L, int idx, const char *key, double def, const char *fname);
/* A finite number > 0 ("must be a positive number, got inf"), as sdpa's scale. */
double lmha_optpositive(lua_State *L, int idx, const char *key, double def, const char *fname);
/* A whole number >= least ("must be a whole number >= 0, got -1"); context (or "") ends the
 * error, e.g. " (x of shape (3,4))". */
lua_Integer lmha_optcount(lua_State *L, int idx, const char *key, lua_Integer def,
                          lua_Integer least, const char *fname, const char *context);
/* A positive integer, a size ("must be a positive integer, got 4.5"); def 0 makes it required:
 * "option embed_dim is required, e.g. <example>". */
size_t lmha_optsize(lua_State *L, int idx, const char *key, size_t def, const char *fname,
                    const char *example);

#endif
