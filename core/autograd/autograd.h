/* core/autograd/autograd.h - reverse-mode automatic differentiation over mha tensors: the graph
 * that differentiable ops record, backward through it (PyTorch's user model), the no-grad mode, and
 * the plain backward kernels. */
#ifndef MHA_AUTOGRAD_H
#define MHA_AUTOGRAD_H

#include "tensor/tensor.h"

/* ---------------------------------------------------------------------------------------------
 * How it works (PyTorch's design, small):
 * - A tensor that takes part in autograd carries an mha_ag (t->ag). A LEAF (made by the user and
 *   marked with mha_requires_grad) has grad_fn NULL and accumulates its gradient in ag->grad. A
 *   tensor made by a differentiable op (core/autograd/autograd_ops.c: mha_ag_binary,
 *   mha_ag_matmul, ...) while an input requires grad gets an ag whose grad_fn is a node of the
 *   graph.
 * - A node holds its backward function, the tensors it saved, the ags of its inputs (one reference
 *   each, so the graph lives as long as its output does) and the inputs' shapes.
 * - mha_backward(root, grad) sorts the nodes reachable from root topologically, runs each backward
 *   once with the sum of the gradients flowing into it, adds the leaves' gradients to their .grad
 *   (all at the end, so a failing backward changes no .grad), then frees the graph's saved tensors:
 *   a second backward through the same graph is an error, as in PyTorch without retain_graph
 *   (with it, mha_backward_retain keeps them).
 * - In-place writes: storage->version counts them. A node remembers the version of each tensor it
 *   saved; backward refuses (naming the op) when it changed. The core's writers follow the write
 *   rule (core/tensor/tensor.h): this room installs its check, which refuses a write into a tensor
 *   that requires grad (outside no-grad mode); the tensor room counts every write it allows.
 * ------------------------------------------------------------------------------------------- */

typedef struct mha_node mha_node;

typedef struct mha_ag {
    size_t refcount;
    bool requires_grad;
    mha_tensor grad;     /* a leaf's accumulated gradient; empty: none yet (t:grad() is nil) */
    mha_tensor pending;  /* during one backward: this leaf's gradient before it is added to grad */
    mha_node *grad_fn;   /* NULL for a leaf */
    struct mha_ag *next_dying; /* while the graph is freed: the next ag to free (no recursion) */
} mha_ag;

/* Backward of one node: fills grads[i] (empty on entry) for every input i with node->inputs[i] !=
 * NULL, with the input's shape, from gout (the gradient of the node's output, the output's
 * shape). */
typedef mha_status (*mha_backward_fn)(mha_tensor *grads, const mha_node *node, const mha_tensor *gout);

#define MHA_NODE_SAVED 6
typedef struct mha_shape_rec { size_t ndim; size_t shape[MHA_MAX_DIMS]; } mha_shape_rec;

/* The engine's part of every graph node, as Lua's CommonHeader is of every object: an op's node is
 * a struct of its own whose first member is this, followed by exactly the arguments its backward
 * needs,
 *     typedef struct { mha_node base; mha_reduceop op; size_t dim; } reduce_node;
 * mha_ag_record allocates the op's whole struct (zeroed); the op's backward turns the const
 * mha_node * it is given back into its own type in one cast. An op whose backward needs no argument
 * uses mha_node itself. */
struct mha_node {
    size_t refcount;           /* the output tensors' ags pointing here */
    size_t bytes;              /* the size of the op's node struct, for freeing it */
    const char *name;          /* the op, for messages: "mul", "matmul", ... */
    mha_backward_fn backward;
    /* Optional (NULL: none), for a node of one input whose gradient is zero outside a part of it (a
     * narrow): adds that gradient into acc in place, acc being the input's gradient so far
     * (contiguous, the input's shape, seen by no other tensor), with the bits of acc + the gradient
     * backward would give, so the engine skips making that mostly-zero tensor and the sum. */
    mha_status (*backward_add)(mha_tensor *acc, const mha_node *node, const mha_tensor *gout);
    size_t n_inputs;
    mha_ag **inputs;           /* n_inputs: the input's ag when it requires grad, else NULL */
    mha_shape_rec *in_shapes;  /* n_inputs: each input's shape */
    mha_shape_rec out_shape;
    size_t n_saved;
    mha_tensor saved[MHA_NODE_SAVED];
    size_t saved_version[MHA_NODE_SAVED];
    bool freed;                /* the saved tensors went with an earlier backward */
    /* scratch of one backward */
    size_t pending_uses;
    mha_tensor gacc;
    bool visited;
};

/* dst[i] = dst[i] + src[i] for i < n (src NULL: + 0, which turns -0 into +0 and leaves every other
 * value as it is): each the one float addition, in place; a backward_add's sums. */
void mha_ag_add_into(float *dst, const float *src, size_t n);
/* dst[i] = src[i] where dst[i] is +0 (no gradient there yet), else dst[i] + src[i]: a piece of
 * split or chunk put in its place, its -0 kept (torch's backward of split is a cat). */
void mha_ag_place_into(float *dst, const float *src, size_t n);

/* ---- the user's model ---- */

/* Marks t as a leaf that requires grad (flag true), or clears the flag (false). Only a leaf's flag
 * may be changed (an op's result requires grad because its input does): MHA_E_ARG otherwise, naming
 * the op. */
mha_status mha_requires_grad(mha_tensor *t, bool flag);
bool mha_ag_requires(const mha_tensor *t);           /* t takes part in the graph */
bool mha_ag_is_leaf(const mha_tensor *t);        /* no grad_fn (untracked tensors are leaves too) */
const char *mha_ag_fn_name(const mha_tensor *t);      /* "mul", or NULL for a leaf */
/* The accumulated gradient (a share of it) or an empty out when there is none. */
mha_status mha_grad(mha_tensor *out, const mha_tensor *t);
void mha_zero_grad(mha_tensor *t);                 /* forget the gradient (t:grad() is nil again) */
/* Sets t's gradient to a copy of g (same shape), as torch's t.grad = g; g NULL forgets it. */
mha_status mha_set_grad(mha_tensor *t, const mha_tensor *g);
/* Backward from root. gout NULL means a gradient of 1: root must then have one element. */
mha_status mha_backward(const mha_tensor *root, const mha_tensor *gout);
/* The same; with retain_graph the graph keeps its saved tensors, so a later backward can run
 * through it again (torch's retain_graph=True): the gradients then accumulate once more. */
mha_status mha_backward_retain(const mha_tensor *root, const mha_tensor *gout, bool retain_graph);
/* A share of t's data outside the graph (requires_grad false), as torch's detach(). */
mha_status mha_detach(mha_tensor *out, const mha_tensor *t);
/* A second handle on t with the same autograd identity: a share of its data that IS t in the graph
 * (MultiheadAttention's in_proj_weight seen as its q, k, v slices is the parameter itself). */
mha_status mha_ag_alias(mha_tensor *out, const mha_tensor *t);

/* No-grad mode: nested; while on, ops record nothing. */
void mha_no_grad_enter(void);
void mha_no_grad_exit(void);
bool mha_grad_enabled(void);

/* ---- for differentiable ops (core/autograd/autograd_ops.c) ---- */

/* True when grad mode is on and one of the n inputs (NULLs allowed) requires grad. */
bool mha_ag_wants(const mha_tensor *const *inputs, size_t n);
/* Makes out (just computed from inputs) the output of a new node of node_bytes
 * (the size of the op's node struct, at least sizeof(mha_node)), zeroed but for the engine's part;
 * *node gets it to save tensors and set the op's arguments. On failure out is released. */
mha_status mha_ag_record(mha_node **node, size_t node_bytes, mha_tensor *out, const char *name,
                         mha_backward_fn backward, const mha_tensor *const *inputs, size_t n);
void mha_ag_save(mha_node *node, const mha_tensor *t);   /* saved[n_saved++] := a share of t */
/* mha_ag_save when the backward reads t, else an empty slot (the slots keep their places): a node
 * keeps only what its derivative needs (an add none of its operands, as torch's), so that what no
 * later op reads is freed in the forward. */
void mha_ag_save_if(mha_node *node, const mha_tensor *t, bool needed);
void mha_ag_drop(mha_tensor *t);                          /* mha_release's hook: drops t->ag */

/* Gradient helpers: g summed over the dims it was broadcast along, to shape (ndim, shape). */
mha_status mha_sum_to(mha_tensor *out, const mha_tensor *g, size_t ndim, const size_t *shape);

#endif
