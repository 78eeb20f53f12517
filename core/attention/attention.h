/* core/attention/attention.h - the attention layer of mha-repl in one include, for the bindings and
 * tests: nn/nn.h (softmax, linear, ...), the masks and positions, sdpa.h, multihead.h. No file of
 * the room uses it. */
#ifndef MHA_ATTENTION_H
#define MHA_ATTENTION_H

#include "nn/nn.h"
#include "attention/masks.h"
#include "attention/positions.h"
#include "attention/sdpa.h"
#include "attention/multihead.h"

#endif
