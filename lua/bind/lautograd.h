/* lua/bind/lautograd.h - what the other binding files need of the autograd binding: the function
 * that adds the gradient methods and functions to mha. */
#ifndef MHA_LAUTOGRAD_H
#define MHA_LAUTOGRAD_H

#include <lua.h>

/* Adds requires_grad, grad, backward, detach, ... to the tensor methods and no_grad, *_backward,
 * ... to the mha table at the top of the stack. */
void lmha_open_autograd(lua_State *L);

#endif
