/* core/tensor/tensor_internal.h - what the files of the tensor room share and no other room needs:
 * the size and name of a dtype, the element count of a shape, the write rule every in-place
 * writer here asks first, and how a long write stops for Ctrl-C. */
#ifndef MHA_TENSOR_INTERNAL_H
#define MHA_TENSOR_INTERNAL_H

#include <stdint.h>

#include "tensor/tensor.h"

static inline size_t dtype_size(mha_dtype dtype) { return dtype == MHA_BOOL ? sizeof(bool) : sizeof(float); }
static inline const char *dtype_name(mha_dtype dtype) { return dtype == MHA_BOOL ? "bool" : "float32"; }

/* Element count of a shape, or false when it overflows size_t
 * (or its byte size, elsize bytes an element, would). A size 0 anywhere makes it 0, whatever the
 * sizes before it: (2^62, 4, 0) holds nothing. */
static inline bool shape_numel(size_t *numel, size_t ndim, const size_t *shape, size_t elsize) {
    size_t n = 1;
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *numel = 0;
            return true;
        }
    }
    for (size_t d = 0; d < ndim; d++) {
        if (n > SIZE_MAX / shape[d]) return false;
        n *= shape[d];
    }
    if (n > SIZE_MAX / elsize) return false;
    *numel = n;
    return true;
}

/* The write rule (core/tensor/tensor.c), asked by every writer of this room before it writes into t
 * on behalf of fname (set, copy_, fill_, uniform_, ...): a tensor that requires grad is refused
 * while grad mode is on, with a message naming fname; any other write is counted in the storage's
 * version (mha_bump_version), so a graph that saved this data refuses to backward through it. A
 * write that then fails on another argument still counts: such a graph is refused rather than
 * trusted. */
mha_status tensor_begin_write(const mha_tensor *t, const char *fname);

/* The failure of fname stopped by Ctrl-C (mha_interrupted()). */
static inline mha_status interrupted(const char *fname) { return mha_fail(MHA_E_INTERRUPTED, "%s: interrupted", fname); }

/* fill(ctx, first, count) over elements [0, n) in runs, with Ctrl-C polled between them: writing a
 * tensor of gigabytes takes seconds (its pages fault in), and Ctrl-C must stop it. A run is a
 * multiple of 2 elements (random normals come in pairs, so the runs give one fill's numbers).
 * MHA_E_INTERRUPTED, "fname: interrupted", when Ctrl-C came; the caller releases the tensor. */
typedef void (*tensor_fill_fn)(void *ctx, size_t first, size_t count);
mha_status tensor_fill_runs(tensor_fill_fn fill, void *ctx, size_t n, const char *fname);

#endif
