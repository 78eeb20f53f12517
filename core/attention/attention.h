/* core/attention/attention.h - the attention layer of mha-repl in one include, for the bindings and tests:
 * functional.h (softmax, linear, ...), sdpa.h (scaled dot-product attention), multihead.h. */
#ifndef MHA_ATTENTION_H
#define MHA_ATTENTION_H

#include "nn/functional.h"
#include "attention/sdpa.h"
#include "attention/multihead.h"

#endif
