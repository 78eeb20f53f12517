/* core/autograd/autograd.c - the autograd graph: leaves and their gradients, nodes recorded by
 * differentiable ops, backward (topological order, gradients summed, leaves updated at the end),
 * no-grad mode, in-place checks. */
#include "autograd/autograd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local size_t no_grad_depth = 0;

void mha_no_grad_enter(void) { no_grad_depth++; }
void mha_no_grad_exit(void) {
    if (no_grad_depth) no_grad_depth--;
}
bool mha_grad_enabled(void) { return no_grad_depth == 0; }

/* ---- ag and node life cycle ---- */

static mha_status ag_check_write(const mha_tensor *t, const char *fname);

static mha_ag *ag_new(void) {
    mha_tensor_set_ag_release(mha_ag_drop);   /* from now on mha_release drops what this tracks */
    mha_tensor_set_write_check(ag_check_write); /* and the tensor room's writers ask before
                                                   writing */
    mha_ag *ag = mha_alloc(sizeof *ag);
    if (!ag) return NULL;
    memset(ag, 0, sizeof *ag);
    ag->refcount = 1;
    return ag;
}

static void node_free_saved(mha_node *n) {
    for (size_t i = 0; i < n->n_saved; i++) mha_release(&n->saved[i]);
    n->n_saved = 0;
}

/* Drops one reference to ag; what reaches no references is freed: its gradients, its node
 * (saved tensors and all) and, in turn, the inputs only that node held. A worklist threaded through
 * the dying ags (next_dying) instead of recursion, so dropping a chain of a million ops needs no
 * deeper C stack than dropping one. */
static void ag_unref(mha_ag *ag) {
    mha_ag *dying = NULL;
    if (--ag->refcount == 0) ag->next_dying = dying, dying = ag;
    while (dying) {
        mha_ag *a = dying;
        dying = a->next_dying;
        mha_node *n = a->grad_fn;
        mha_release(&a->grad);
        mha_release(&a->pending);
        mha_free(a, sizeof *a);
        if (!n || --n->refcount > 0) continue;
        node_free_saved(n);
        mha_release(&n->gacc);
        for (size_t i = 0; i < n->n_inputs; i++) {
            mha_ag *in = n->inputs[i];
            if (in && --in->refcount == 0) in->next_dying = dying, dying = in;
        }
        mha_free(n->inputs, n->n_inputs * sizeof *n->inputs);
        mha_free(n->in_shapes, n->n_inputs * sizeof *n->in_shapes);
        mha_free(n, n->bytes);
    }
}

void mha_ag_drop(mha_tensor *t) {
    mha_ag *ag = t->ag;
    t->ag = NULL;
    if (ag) ag_unref(ag);
}

/* ---- the user's model ---- */

bool mha_ag_requires(const mha_tensor *t) { return t && t->ag && t->ag->requires_grad; }
bool mha_ag_is_leaf(const mha_tensor *t) { return !t->ag || !t->ag->grad_fn; }
const char *mha_ag_fn_name(const mha_tensor *t) { return t->ag && t->ag->grad_fn ? t->ag->grad_fn->name : NULL; }

mha_status mha_requires_grad(mha_tensor *t, bool flag) {
    char shape[MHA_SHAPE_BUF];
    if (!t->storage) return mha_fail(MHA_E_ARG, "requires_grad: the tensor is empty (released)");
    if (t->ag && t->ag->grad_fn) {
        if (flag) return MHA_OK;
        return mha_fail(MHA_E_ARG,
                        "requires_grad: this %s tensor was made by %s from tensors that require grad; only a leaf's "
                        "flag can be changed (use detach() for a tensor outside the graph)",
                        mha_shape_str(shape, sizeof shape, t), t->ag->grad_fn->name);
    }
    if (flag && t->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "requires_grad: only float tensors can require gradients, this %s tensor is bool",
                        mha_shape_str(shape, sizeof shape, t));
    if (!t->ag) {
        if (!flag) return MHA_OK;
        t->ag = ag_new();
        if (!t->ag) return mha_fail(MHA_E_NOMEM, "requires_grad: out of memory");
    }
    t->ag->requires_grad = flag;
    return MHA_OK;
}

mha_status mha_grad(mha_tensor *out, const mha_tensor *t) {
    if (!t->ag || !t->ag->grad.storage) return MHA_OK;
    return mha_share(out, &t->ag->grad);
}

void mha_zero_grad(mha_tensor *t) {
    if (t->ag) mha_release(&t->ag->grad);
}

mha_status mha_set_grad(mha_tensor *t, const mha_tensor *g) {
    char a[MHA_SHAPE_BUF], b[MHA_SHAPE_BUF];
    if (!g) {
        mha_zero_grad(t);
        return MHA_OK;
    }
    if (!mha_same_shape(t, g) || g->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_SHAPE, "set_grad: the gradient %s must be a float tensor of the tensor's shape %s",
                        mha_shape_str(a, sizeof a, g), mha_shape_str(b, sizeof b, t));
    if (!t->ag) {
        t->ag = ag_new();
        if (!t->ag) return mha_fail(MHA_E_NOMEM, "set_grad: out of memory");
    }
    mha_tensor copy = MHA_TENSOR_EMPTY;
    mha_status st = mha_clone(&copy, g);
    if (st != MHA_OK) return st;
    mha_release(&t->ag->grad);
    t->ag->grad = copy;
    return MHA_OK;
}

mha_status mha_detach(mha_tensor *out, const mha_tensor *t) { return mha_share(out, t); }

mha_status mha_ag_alias(mha_tensor *out, const mha_tensor *t) {
    mha_status st = mha_share(out, t);
    if (st == MHA_OK && t->ag) {
        out->ag = t->ag;
        out->ag->refcount++;
    }
    return st;
}

/* The write rule's check (tensor.h, mha_tensor_set_write_check): refuses an in-place write into a
 * tensor that requires grad while grad mode is on; the tensor room counts every write it allows. */
static mha_status ag_check_write(const mha_tensor *t, const char *fname) {
    char shape[MHA_SHAPE_BUF];
    if (mha_ag_requires(t) && mha_grad_enabled()) {
        if (t->ag->grad_fn)
            return mha_fail(MHA_E_ARG,
                            "%s: this %s tensor was made by %s and is part of the autograd graph; writing into it "
                            "would make the gradient wrong (write into t:detach():clone() instead)",
                            fname, mha_shape_str(shape, sizeof shape, t), t->ag->grad_fn->name);
        return mha_fail(MHA_E_ARG,
                        "%s: this %s tensor requires grad (a leaf of the autograd graph); an in-place write would make "
                        "its gradients wrong: write inside mha.no_grad(function() ... end), or into t:detach()",
                        fname, mha_shape_str(shape, sizeof shape, t));
    }
    return MHA_OK;
}

/* ---- recording ---- */

bool mha_ag_wants(const mha_tensor *const *inputs, size_t n) {
    if (!mha_grad_enabled()) return false;
    for (size_t i = 0; i < n; i++)
        if (mha_ag_requires(inputs[i])) return true;
    return false;
}

static void shape_rec(mha_shape_rec *r, const mha_tensor *t) {
    memset(r, 0, sizeof *r);
    if (!t) return;
    r->ndim = t->ndim;
    memcpy(r->shape, t->shape, t->ndim * sizeof *t->shape);
}

mha_status mha_ag_record(mha_node **node, size_t node_bytes, mha_tensor *out, const char *name,
                         mha_backward_fn backward, const mha_tensor *const *inputs, size_t n) {
    *node = NULL;
    if (node_bytes < sizeof(mha_node)) node_bytes = sizeof(mha_node);
    mha_node *nd = mha_alloc(node_bytes);
    mha_ag *ag = ag_new();
    mha_ag **ins = mha_alloc((n ? n : 1) * sizeof *ins);
    mha_shape_rec *shapes = mha_alloc((n ? n : 1) * sizeof *shapes);
    if (!nd || !ag || !ins || !shapes) {
        mha_free(nd, node_bytes);
        mha_free(ag, sizeof *ag);
        mha_free(ins, (n ? n : 1) * sizeof *ins);
        mha_free(shapes, (n ? n : 1) * sizeof *shapes);
        mha_release(out);
        return mha_fail(MHA_E_NOMEM, "%s: out of memory recording the autograd graph", name);
    }
    memset(nd, 0, node_bytes);
    nd->refcount = 1;
    nd->bytes = node_bytes;
    nd->name = name;
    nd->backward = backward;
    nd->n_inputs = n;
    nd->inputs = ins;
    nd->in_shapes = shapes;
    for (size_t i = 0; i < n; i++) {
        ins[i] = NULL;
        shape_rec(&shapes[i], inputs[i]);
        if (mha_ag_requires(inputs[i])) {
            ins[i] = inputs[i]->ag;
            ins[i]->refcount++;
        }
    }
    shape_rec(&nd->out_shape, out);
    ag->requires_grad = true;
    ag->grad_fn = nd;
    if (out->ag) mha_ag_drop(out);
    out->ag = ag;
    *node = nd;
    return MHA_OK;
}

void mha_ag_save(mha_node *node, const mha_tensor *t) {
    size_t i = node->n_saved++;
    node->saved[i] = MHA_TENSOR_EMPTY;
    mha_share(&node->saved[i], t); /* cannot fail: t holds data */
    node->saved_version[i] = t->storage->version;
}

void mha_ag_save_if(mha_node *node, const mha_tensor *t, bool needed) {
    if (needed) mha_ag_save(node, t);
    else node->n_saved++;   /* saved[i] stays empty, as mha_ag_record zeroed it */
}

/* ---- gradient helpers ---- */

mha_status mha_sum_to(mha_tensor *out, const mha_tensor *g, size_t ndim, const size_t *shape) {
    char a[MHA_SHAPE_BUF];
    if (g->ndim < ndim) return mha_fail(MHA_E_SHAPE, "sum_to: gradient %s has fewer dims than %zu", mha_shape_str(a, sizeof a, g), ndim);
    mha_tensor cur = MHA_TENSOR_EMPTY;
    mha_status st = mha_share(&cur, g);
    for (size_t lead = g->ndim - ndim; st == MHA_OK && lead > 0; lead--) {
        mha_tensor next = MHA_TENSOR_EMPTY;
        st = mha_reduce(&next, MHA_SUM, &cur, 0, false);
        mha_release(&cur);
        cur = next;
    }
    for (size_t d = 0; st == MHA_OK && d < ndim; d++) {
        if (cur.shape[d] == shape[d]) continue;
        if (shape[d] != 1) {
            mha_release(&cur);
            return mha_fail(MHA_E_SHAPE, "sum_to: gradient %s does not broadcast from size %zu at dim %zu",
                            mha_shape_str(a, sizeof a, g), shape[d], d);
        }
        mha_tensor next = MHA_TENSOR_EMPTY;
        st = mha_reduce(&next, MHA_SUM, &cur, d, true);
        mha_release(&cur);
        cur = next;
    }
    if (st != MHA_OK) {
        mha_release(&cur);
        return st;
    }
    *out = cur;
    return MHA_OK;
}

typedef float add_vec __attribute__((vector_size(16))); /* 4 floats, a GCC vector */

void mha_ag_add_into(float *dst, const float *src, size_t n) {
    const add_vec zero = {0.0f, 0.0f, 0.0f, 0.0f};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        add_vec a, b = zero;
        memcpy(&a, dst + i, sizeof a);
        if (src) memcpy(&b, src + i, sizeof b);
        a = a + b;
        memcpy(dst + i, &a, sizeof a);
    }
    for (; i < n; i++) dst[i] = dst[i] + (src ? src[i] : 0.0f);
}

void mha_ag_place_into(float *dst, const float *src, size_t n) {
    typedef int32_t add_bits __attribute__((vector_size(16)));
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        add_vec a, b;
        memcpy(&a, dst + i, sizeof a);
        memcpy(&b, src + i, sizeof b);
        const add_bits empty = (add_bits)a == 0;   /* +0: no gradient there yet */
        a = (add_vec)((empty & (add_bits)b) | (~empty & (add_bits)(a + b)));
        memcpy(dst + i, &a, sizeof a);
    }
    for (; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &dst[i], sizeof bits);
        dst[i] = bits == 0 ? src[i] : dst[i] + src[i];
    }
}

/* t is the only view of its storage and fills all of it in order: it may become a .grad as it is,
 * or be added to in place */
static bool sole_whole(const mha_tensor *t) {
    return t->storage && t->storage->refcount == 1 && t->offset == 0 && t->dtype == MHA_FLOAT32 && !t->ag &&
           mha_is_contiguous(t) && t->storage->nbytes == mha_numel(t) * sizeof(float);
}

/* acc += g (acc empty: acc := g). g has acc's shape. Never writes into g's storage, nor into acc's
 * when another tensor shares it (the sum is then a new tensor); an acc no other tensor sees takes
 * the sum in place, the same float additions in the same order (acc[i] + g[i]), without a new
 * tensor's memory. */
static mha_status accumulate(mha_tensor *acc, const mha_tensor *g) {
    if (!acc->storage) return mha_share(acc, g);
    if (sole_whole(acc) && g->dtype == MHA_FLOAT32 && mha_is_contiguous(g) && mha_same_shape(acc, g) &&
        g->storage != acc->storage) {
        mha_ag_add_into(mha_f32(acc), mha_f32(g), mha_numel(acc));
        return MHA_OK;
    }
    mha_tensor sum = MHA_TENSOR_EMPTY;
    mha_status st = mha_binary(&sum, MHA_ADD, acc, g);
    if (st != MHA_OK) return st;
    mha_release(acc);
    *acc = sum;
    return MHA_OK;
}

/* ---- backward ---- */

/* A growing list of pointers (nodes to visit, leaves to update), in mha_alloc'd memory. */
typedef struct ptr_list {
    void **items;
    size_t count, cap;
} ptr_list;

static bool list_push(ptr_list *l, void *p) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        void **items = mha_alloc(cap * sizeof *items);
        if (!items) return false;
        if (l->count) memcpy(items, l->items, l->count * sizeof *items);
        mha_free(l->items, l->cap * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->count++] = p;
    return true;
}

static void list_free(ptr_list *l) { mha_free(l->items, l->cap * sizeof *l->items); }

/* Every node reachable from root, each once; pending_uses counts the edges into it. */
static mha_status collect(ptr_list *all, mha_node *root) {
    ptr_list stack = {0};
    mha_status st = MHA_OK;
    root->visited = true;
    if (!list_push(all, root) || !list_push(&stack, root)) st = mha_fail(MHA_E_NOMEM, "backward: out of memory");
    while (st == MHA_OK && stack.count) {
        mha_node *n = (mha_node *)stack.items[--stack.count];
        for (size_t i = 0; i < n->n_inputs; i++) {
            mha_ag *in = n->inputs[i];
            if (!in || !in->grad_fn) continue;
            mha_node *child = in->grad_fn;
            child->pending_uses++;
            if (child->visited) continue;
            child->visited = true;
            if (!list_push(all, child) || !list_push(&stack, child)) {
                st = mha_fail(MHA_E_NOMEM, "backward: out of memory");
                break;
            }
        }
    }
    list_free(&stack);
    return st;
}

static mha_status check_saved(const mha_node *n) {
    char shape[MHA_SHAPE_BUF];
    if (n->freed)
        return mha_fail(MHA_E_ARG,
                        "backward: the graph through %s was already used by an earlier backward and freed; to "
                        "backward through it a second time pass retain_graph to the first: loss:backward{retain_graph "
                        "= true} (torch's retain_graph=True), or run the forward again",
                        n->name);
    for (size_t i = 0; i < n->n_saved; i++)
        if (n->saved[i].storage && n->saved[i].storage->version != n->saved_version[i])
            return mha_fail(MHA_E_ARG,
                            "backward: a %s tensor that %s saved for its gradient was changed in place after the "
                            "forward (by set, copy_, fill_ or an assignment); run the forward again after changing it",
                            mha_shape_str(shape, sizeof shape, &n->saved[i]), n->name);
    return MHA_OK;
}

/* Runs node n with its accumulated gradient; routes the input gradients. */
static mha_status run_node(mha_node *n, ptr_list *ready, ptr_list *leaves) {
    char a[MHA_SHAPE_BUF], b[MHA_SHAPE_BUF];
    mha_status st = check_saved(n);
    if (st != MHA_OK) return st;
    mha_ag *sole = n->n_inputs == 1 ? n->inputs[0] : NULL;
    mha_tensor *acc = !sole ? NULL : sole->grad_fn ? &sole->grad_fn->gacc : &sole->pending;
    /* the input's gradient so far takes this one in place */
    if (n->backward_add && acc && sole_whole(acc)) {
        st = n->backward_add(acc, n, &n->gacc);
        mha_release(&n->gacc);
        if (st == MHA_OK && sole->grad_fn && --sole->grad_fn->pending_uses == 0 && !list_push(ready, sole->grad_fn))
            st = mha_fail(MHA_E_NOMEM, "backward: out of memory");
        return st;
    }
    mha_tensor *grads = mha_alloc(n->n_inputs * sizeof *grads + 1);
    if (!grads) return mha_fail(MHA_E_NOMEM, "backward: out of memory in %s", n->name);
    for (size_t i = 0; i < n->n_inputs; i++) grads[i] = MHA_TENSOR_EMPTY;
    st = n->backward(grads, n, &n->gacc);
    mha_release(&n->gacc);
    for (size_t i = 0; st == MHA_OK && i < n->n_inputs; i++) {
        mha_ag *in = n->inputs[i];
        if (!in) continue;
        const mha_shape_rec *want = &n->in_shapes[i];
        mha_tensor probe = {.ndim = want->ndim};
        memcpy(probe.shape, want->shape, sizeof probe.shape);
        if (!grads[i].storage || !mha_same_shape(&grads[i], &probe)) {
            st = mha_fail(MHA_E_SHAPE, "backward: %s gave a gradient of shape %s for an input of shape %s (a bug)",
                          n->name, grads[i].storage ? mha_shape_str(a, sizeof a, &grads[i]) : "none",
                          mha_shape_str(b, sizeof b, &probe));
            break;
        }
        if (in->grad_fn) {
            st = accumulate(&in->grad_fn->gacc, &grads[i]);
            if (st == MHA_OK && --in->grad_fn->pending_uses == 0 && !list_push(ready, in->grad_fn))
                st = mha_fail(MHA_E_NOMEM, "backward: out of memory");
        } else {
            if (!in->pending.storage && !list_push(leaves, in)) st = mha_fail(MHA_E_NOMEM, "backward: out of memory");
            if (st == MHA_OK) st = accumulate(&in->pending, &grads[i]);
        }
    }
    for (size_t i = 0; i < n->n_inputs; i++) mha_release(&grads[i]);
    mha_free(grads, n->n_inputs * sizeof *grads + 1);
    return st;
}

/* a leaf's pending gradient joins its .grad, as a contiguous tensor of its own: without a .grad, a
 * pending gradient no other tensor sees moves there whole (no copy), else the sum or a copy */
static mha_status commit_leaf(mha_ag *ag) {
    if (!ag->grad.storage && sole_whole(&ag->pending)) {
        ag->grad = ag->pending;
        ag->pending = MHA_TENSOR_EMPTY;
        return MHA_OK;
    }
    mha_tensor sum = MHA_TENSOR_EMPTY;
    mha_status st = ag->grad.storage ? mha_binary(&sum, MHA_ADD, &ag->grad, &ag->pending) : mha_clone(&sum, &ag->pending);
    if (st != MHA_OK) return st;
    mha_release(&ag->grad);
    ag->grad = sum;
    return MHA_OK;
}

mha_status mha_backward(const mha_tensor *root, const mha_tensor *gout) {
    return mha_backward_retain(root, gout, false);
}

mha_status mha_backward_retain(const mha_tensor *root, const mha_tensor *gout, bool retain_graph) {
    char a[MHA_SHAPE_BUF], b[MHA_SHAPE_BUF];
    if (!root->storage) return mha_fail(MHA_E_ARG, "backward: the tensor is empty (released)");
    if (!mha_ag_requires(root))
        return mha_fail(MHA_E_ARG,
                        "backward: this %s tensor does not require grad and has no grad_fn: mark a leaf with "
                        "t:requires_grad(true) before the forward (and not inside mha.no_grad)",
                        mha_shape_str(a, sizeof a, root));
    mha_tensor seed = MHA_TENSOR_EMPTY;
    mha_status st;
    if (!gout) {
        if (mha_numel(root) != 1)
            return mha_fail(MHA_E_ARG,
                            "backward: the tensor has shape %s; a gradient of 1 is only implied for one element: "
                            "give the gradient, y:backward(grad), with grad of shape %s",
                            mha_shape_str(a, sizeof a, root), mha_shape_str(b, sizeof b, root));
        st = mha_full(&seed, root->ndim, root->shape, 1.0f);
    } else {
        if (!mha_same_shape(root, gout) || gout->dtype != MHA_FLOAT32)
            return mha_fail(MHA_E_SHAPE, "backward: the gradient %s must be a float tensor of the output's shape %s",
                            mha_shape_str(a, sizeof a, gout), mha_shape_str(b, sizeof b, root));
        st = mha_share(&seed, gout);
    }
    if (st != MHA_OK) return st;
    mha_ag *rag = root->ag;
    if (!rag->grad_fn) { /* a leaf's backward is its own gradient */
        rag->pending = seed;
        st = commit_leaf(rag);
        mha_release(&rag->pending);
        return st;
    }
    ptr_list all = {0}, ready = {0};
    ptr_list leaves = {0};
    st = collect(&all, rag->grad_fn);
    if (st == MHA_OK) {
        rag->grad_fn->gacc = seed;
        seed = MHA_TENSOR_EMPTY;
        if (!list_push(&ready, rag->grad_fn)) st = mha_fail(MHA_E_NOMEM, "backward: out of memory");
    }
    while (st == MHA_OK && ready.count) {
        mha_node *n = (mha_node *)ready.items[--ready.count];
        st = run_node(n, &ready, &leaves);
        if (st == MHA_OK && mha_interrupted()) st = mha_fail(MHA_E_INTERRUPTED, "backward: interrupted in %s", n->name);
    }
    for (size_t i = 0; st == MHA_OK && i < leaves.count; i++) { /* only now do the .grads change */
        st = commit_leaf((mha_ag *)leaves.items[i]);
    }
    for (size_t i = 0; i < leaves.count; i++) mha_release(&((mha_ag *)leaves.items[i])->pending);
    for (size_t i = 0; i < all.count; i++) {
        mha_node *n = (mha_node *)all.items[i];
        mha_release(&n->gacc);
        n->visited = false;
        n->pending_uses = 0;
        if (st == MHA_OK && !retain_graph) { /* the graph is spent: its saved tensors go now */
            node_free_saved(n);
            n->freed = true;
        }
    }
    mha_release(&seed);
    list_free(&all);
    list_free(&ready);
    list_free(&leaves);
    return st;
}
