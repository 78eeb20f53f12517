/* core/tensor/tensor.h - the tensor of mha-repl: float32 and bool tensors of rank 0 to
 * MHA_MAX_DIMS, each a (shape, strides, offset) view over a reference-counted storage, and every
 * operation on them. */
#ifndef MHA_TENSOR_H
#define MHA_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/alloc.h"
#include "base/status.h"

/* ---------------------------------------------------------------------------------------------
 * Conventions (read these once; every function below follows them)
 *
 * - Every function that can fail returns an mha_status. On failure it has written a message to
 *   mha_errmsg() that names the function, the argument and the shapes, e.g.
 *       "matmul: (3,4) @ (5,2): inner sizes 4 and 5 differ"
 *   and it has left every output as it found it (empty). The core never prints, exits or aborts.
 * - Outputs come first, then inputs, then sizes and options.
 * - An output tensor is an `mha_tensor` the caller owns (on its stack, in a struct, inside a Lua
 *   userdata) that must be EMPTY on entry (storage == NULL; MHA_TENSOR_EMPTY, or zeroed memory).
 *   On success it is filled and the caller must mha_release() it; on failure it is still empty.
 *   This lets a caller build the empty object before allocating into it.
 * - Views (view, transpose, permute, narrow, select, unsqueeze, squeeze, expand, split, chunk and
 *   contiguous/reshape when no copy is needed) share the input's storage: the storage's refcount
 *   goes up, so the view stays valid after the input is released.
 * - Dimensions are 0-based size_t here. Lua's 1-based and negative dimensions are converted by the
 *   bindings, which also check them, so a dimension error from the core means a bug in a caller.
 * - Sizes are size_t. A shape whose element count or byte count overflows size_t is MHA_E_NOMEM
 *   with a message saying so, as is a failed allocation. No dim is larger than MHA_MAX_SIZE, even
 *   with no element ((2^62, 0) is a tensor, (2^63, 0) is not): constructors, expand and cat refuse
 *   it.
 * - Long kernels poll mha_interrupted() at block granularity and return MHA_E_INTERRUPTED after
 *   freeing what they allocated.
 * ------------------------------------------------------------------------------------------- */

#define MHA_MAX_DIMS 8
#define MHA_MAX_SIZE ((size_t)PTRDIFF_MAX) /* the largest size of a dim: 2^63-1, as a stride or Lua
                                              integer holds */
#define MHA_ALL_DIMS ((size_t)-1) /* "reduce over every dimension" / "squeeze every size-1 dim" */

typedef enum { MHA_FLOAT32 = 0, MHA_BOOL = 1 } mha_dtype;


typedef struct mha_storage {
    size_t refcount; /* number of tensors viewing this storage */
    size_t nbytes;   /* size of data */
    void *data;      /* float[] for MHA_FLOAT32, bool[] for MHA_BOOL */
    size_t version;  /* counts in-place writes (the write rule below); the autograd checks it */
} mha_storage;

typedef struct mha_tensor {
    mha_storage *storage;             /* NULL: the tensor is empty (released or never filled) */
    mha_dtype dtype;
    size_t ndim;                      /* 0 (a scalar) to MHA_MAX_DIMS */
    size_t shape[MHA_MAX_DIMS];
    ptrdiff_t stride[MHA_MAX_DIMS];   /* in elements; 0 along an expanded (broadcast) dimension */
    size_t offset;                    /* in elements, into storage->data */
    struct mha_ag *ag;                /* autograd state (core/autograd/autograd.h); NULL: not
                                         tracked. A view or share starts untracked; mha_release
                                         drops this reference. */
} mha_tensor;

#define MHA_TENSOR_EMPTY ((mha_tensor){0})

/* What releasing a tracked tensor (t->ag not NULL) must also do: drop its autograd state. The
 * autograd (core/autograd/autograd.c) installs it when it first tracks a tensor, so this room needs
 * nothing of that one (PyTorch breaks the same loop with its AutogradMetaFactory). */
void mha_tensor_set_ag_release(void (*release)(mha_tensor *t));

/* ---- the write rule: every in-place writer of the core (mha_set, mha_copy_into, the random fills,
 * the optimizer steps of core/optim) follows it, so every caller gets it ----
 * A write into a tensor that requires grad is refused while grad mode is on
 * (its gradient would be wrong); any other write is counted in storage->version, so a graph that
 * saved this data refuses to backward through it. Whether t requires grad is the autograd's to say:
 * it installs the check when it first tracks a tensor (core/autograd/autograd.c), as it installs
 * the release hook above. check returns MHA_OK or the refusal, its message naming fname. */
void mha_tensor_set_write_check(mha_status (*check)(const mha_tensor *t, const char *fname));
/* Counts an in-place write into t's storage that needs no asking: an optimizer's step, which torch
 * makes under no_grad. NULL-safe; an empty t is ignored. */
void mha_bump_version(const mha_tensor *t);

/* ---- shapes in messages ---- */

/* "(3,4)" for a (3,4) tensor, "()" for a scalar; writes at most n bytes, returns buf. MHA_SHAPE_BUF
 * bytes hold any shape: "(" + MHA_MAX_DIMS sizes of up to 20 digits + commas + ")\0". */
#define MHA_SHAPE_BUF 200
char *mha_shape_str(char *buf, size_t n, const mha_tensor *t);

/* ---- life cycle ---- */

void mha_release(mha_tensor *t);                /* drop t's reference; t becomes empty; NULL-safe */
mha_status mha_empty(mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape);
/* mha_empty for a caller that allocates on behalf of a function of its own: a failure is named
 * fname ("softmax: out of memory allocating ..."), the function the user called, never "empty". */
mha_status mha_empty_named(mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape, const char *fname);
/* An empty float tensor of like's shape, dense, its dims laid out in like's order (by falling
 * stride, ties in dim order: as torch's empty_like keeps a dense tensor's strides, and as
 * TensorIterator lays out the output of a strided one); contiguous when like is. Failures name
 * fname. */
mha_status mha_empty_like_named(mha_tensor *out, const mha_tensor *like, const char *fname);
mha_status mha_zeros(mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape);
mha_status mha_full(mha_tensor *out, size_t ndim, const size_t *shape, float value);
mha_status mha_eye(mha_tensor *out, size_t n, size_t m);                        /* (n,m) float */
mha_status mha_arange(mha_tensor *out, double start, double stop, double step); /* [start,stop) */
mha_status mha_share(mha_tensor *out, const mha_tensor *t);     /* a second reference to t's view */
mha_status mha_clone(mha_tensor *out, const mha_tensor *t);     /* a contiguous copy */
mha_status mha_contiguous(mha_tensor *out, const mha_tensor *t); /* shares if t is contiguous */
/* a copy's failure names fname */
mha_status mha_contiguous_named(mha_tensor *out, const mha_tensor *t, const char *fname);
mha_status mha_to_dtype(mha_tensor *out, const mha_tensor *t, mha_dtype dtype); /* bool<->1/0 */
mha_status mha_copy_into(mha_tensor *dst, const mha_tensor *src); /* dst[...] = src, broadcasting
                                                                     src */
/* mha_copy_into on behalf of a function of the caller's own (copy_, fill_, zero_): the write rule's
 * refusal names fname; a dtype or shape mismatch is still a "copy:" error. */
mha_status mha_copy_into_named(mha_tensor *dst, const mha_tensor *src, const char *fname);
/* t's slice index along dim (select's view) := src, broadcasting src: Lua's t[i] = v. The write is
 * into t, so the write rule asks about t (a tensor that requires grad), not about the slice
 * (a view outside the graph); its refusal names fname. */
mha_status mha_copy_into_slice(mha_tensor *t, size_t dim, size_t index, const mha_tensor *src, const char *fname);

size_t mha_numel(const mha_tensor *t);
bool mha_is_contiguous(const mha_tensor *t);      /* C order, no gaps */
bool mha_same_shape(const mha_tensor *a, const mha_tensor *b);
/* Pointer to the first element (storage->data + offset). Only walk it linearly when contiguous. */
float *mha_f32(const mha_tensor *t);
bool *mha_bool(const mha_tensor *t);
/* One element by 0-based index (ndim entries); bool reads as 0/1. Index is checked. */
mha_status mha_get(double *value, const mha_tensor *t, const size_t *index);
/* follows the write rule as "set" */
mha_status mha_set(mha_tensor *t, const size_t *index, double value);

/* ---- views: share storage, never copy ---- */

/* shape may hold one -1, inferred. Fails on a non-contiguous t whose strides cannot express the
 * new shape, explaining why and pointing to contiguous()/reshape(), as PyTorch does. */
mha_status mha_view(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape);
/* view, else copy */
mha_status mha_reshape(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape);
mha_status mha_transpose(mha_tensor *out, const mha_tensor *t, size_t dim0, size_t dim1);
/* t->ndim entries */
mha_status mha_permute(mha_tensor *out, const mha_tensor *t, const size_t *perm);
mha_status mha_narrow(mha_tensor *out, const mha_tensor *t, size_t dim, size_t start, size_t length);
/* drops dim */
mha_status mha_select(mha_tensor *out, const mha_tensor *t, size_t dim, size_t index);
mha_status mha_unsqueeze(mha_tensor *out, const mha_tensor *t, size_t dim);  /* dim in [0, ndim] */
mha_status mha_squeeze(mha_tensor *out, const mha_tensor *t, size_t dim);    /* or MHA_ALL_DIMS */
/* broadcast view */
mha_status mha_expand(mha_tensor *out, const mha_tensor *t, size_t ndim, const size_t *shape);
/* Views of consecutive pieces along dim: pieces of split_size (the last may be smaller), or
 * `chunks` near-equal pieces as torch.chunk. Writes up to max_out tensors, sets *n_out. */
mha_status mha_split(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t split_size, size_t dim);
mha_status mha_chunk(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t chunks, size_t dim);

/* ---- elementwise, with NumPy/PyTorch broadcasting ---- */

typedef enum { MHA_ADD, MHA_SUB, MHA_MUL, MHA_DIV, MHA_POW, MHA_MAXIMUM, MHA_MINIMUM } mha_binop;
typedef enum { MHA_EQ, MHA_NE, MHA_LT, MHA_LE, MHA_GT, MHA_GE } mha_cmpop;
typedef enum { MHA_AND, MHA_OR, MHA_XOR } mha_logicop;
typedef enum {
    MHA_NEG, MHA_ABS, MHA_EXP, MHA_LOG, MHA_SQRT, MHA_TANH, MHA_RELU,
    MHA_GELU,   /* exact: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), PyTorch's default */
    MHA_SIGMOID
} mha_unop;

/* Broadcast shape of a and b (right-aligned; sizes equal or 1), or MHA_E_SHAPE naming both. */
mha_status mha_broadcast_shape(size_t *ndim, size_t *shape, const mha_tensor *a, const mha_tensor *b, const char *fname);
mha_status mha_binary(mha_tensor *out, mha_binop op, const mha_tensor *a, const mha_tensor *b);
/* a op s, or s op a when scalar_first (for 2 - x, 1 / x). */
mha_status mha_binary_scalar(mha_tensor *out, mha_binop op, const mha_tensor *a, float s, bool scalar_first);
/* bool */
mha_status mha_compare(mha_tensor *out, mha_cmpop op, const mha_tensor *a, const mha_tensor *b);
/* bool */
mha_status mha_compare_scalar(mha_tensor *out, mha_cmpop op, const mha_tensor *a, float s);
/* bool, bool */
mha_status mha_logical(mha_tensor *out, mha_logicop op, const mha_tensor *a, const mha_tensor *b);
mha_status mha_logical_not(mha_tensor *out, const mha_tensor *a);
/* torch.equal: *equal is true when a and b have the same dtype, the same shape
 * (no broadcasting: (1,3) and (2,3) are not equal) and equal elements
 * (NaN equals nothing, itself included; -0 equals 0). */
mha_status mha_equal(bool *equal, const mha_tensor *a, const mha_tensor *b);
mha_status mha_unary(mha_tensor *out, mha_unop op, const mha_tensor *t);
mha_status mha_where(mha_tensor *out, const mha_tensor *cond, const mha_tensor *a, const mha_tensor *b);
/* out = t with value wherever mask (bool, broadcast to t's shape) is true. value may be
 * -INFINITY. */
mha_status mha_masked_fill(mha_tensor *out, const mha_tensor *t, const mha_tensor *mask, float value);

/* ---- reductions along one dimension (or MHA_ALL_DIMS) ---- */

typedef enum { MHA_SUM, MHA_MEAN, MHA_MAX, MHA_MIN, MHA_ARGMAX, MHA_ARGMIN } mha_reduceop;
/* ARGMAX/ARGMIN give 0-based indices as float (exact below 2^24); ties take the first. */
mha_status mha_reduce(mha_tensor *out, mha_reduceop op, const mha_tensor *t, size_t dim, bool keepdim);
/* Variance with Bessel's correction `correction` (1: PyTorch's default, 0: NumPy's). */
mha_status mha_var(mha_tensor *out, const mha_tensor *t, size_t dim, bool keepdim, size_t correction);

/* ---- joining ---- */
mha_status mha_cat(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim);
mha_status mha_stack(mha_tensor *out, const mha_tensor *const *ts, size_t n, size_t dim);

/* ---- matmul: torch.matmul semantics (1-D vectors, batch broadcasting over leading dims) ---- */
mha_status mha_matmul(mha_tensor *out, const mha_tensor *a, const mha_tensor *b);

/* ---- random numbers: one seeded generator per process, documented in core/tensor/rng.c ---- */
void mha_seed(uint64_t seed);
uint64_t mha_get_seed(void);
mha_status mha_rand(mha_tensor *out, size_t ndim, const size_t *shape);   /* U[0,1) */
mha_status mha_randn(mha_tensor *out, size_t ndim, const size_t *shape);  /* N(0,1) */
/* The in-place fills follow the write rule, under their own names ("uniform_", ...). */
mha_status mha_uniform_(mha_tensor *t, float lo, float hi);               /* fill in place */
mha_status mha_normal_(mha_tensor *t, float mean, float std);
/* PyTorch's nn.init: fan_in = shape[1]*rf, fan_out = shape[0]*rf (rf = product of shape[2:]) */
mha_status mha_xavier_uniform_(mha_tensor *t, float gain);  /* U(-a,a), a =
                                                               gain*sqrt(6/(fan_in+fan_out)) */
mha_status mha_xavier_normal_(mha_tensor *t, float gain);   /* N(0,s), s =
                                                               gain*sqrt(2/(fan_in+fan_out)) */

#endif
