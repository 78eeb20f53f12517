/* lua/bind/lautograd.h - what the other binding files need of the autograd binding: the in-place write
 * check, and the function that adds the gradient methods and functions to mha. */
#ifndef MHA_LAUTOGRAD_H
#define MHA_LAUTOGRAD_H

#include <lua.h>
#include "tensor/tensor.h"

/* Raises fname's error when t may not be written in place (it requires grad, outside mha.no_grad);
 * otherwise counts the write, so a graph that saved t's data refuses a stale backward. */
void lmha_checkgradwrite(lua_State *L, const mha_tensor *t, const char *fname);
/* Adds requires_grad, grad, backward, detach, ... to the tensor methods and no_grad, *_backward, ... to
 * the mha table at the top of the stack. */
void lmha_open_autograd(lua_State *L);

#endif
