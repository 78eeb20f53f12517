/* core/attention/multihead_grad.c - MultiheadAttention's forward composed of differentiable ops
 * (linear, narrow, cat, views, sdpa), taken when gradients are wanted, so its backward is the chain
 * of theirs; parameters as autograd leaves. */
#include "attention/multihead_grad.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention/attention_internal.h"
#include "autograd/autograd_ops.h"
#include "nn/nn.h"
#include "attention/attention.h"

/* The nine parameter slots, present or not, in mha_multihead_param_names' order. */
#define N_SLOTS 9
static void param_slots(mha_tensor **out, mha_multihead *m) {
    mha_tensor *all[N_SLOTS] = {&m->in_proj_weight, &m->in_proj_bias, &m->q_proj_weight, &m->k_proj_weight,
                                &m->v_proj_weight, &m->out_proj_weight, &m->out_proj_bias, &m->bias_k, &m->bias_v};
    memcpy(out, all, sizeof all);
}

mha_status mha_multihead_requires_grad(mha_multihead *m, bool flag) {
    mha_tensor *all[N_SLOTS];
    param_slots(all, m);
    for (size_t i = 0; i < N_SLOTS; i++) {
        if (!all[i]->storage) continue;
        mha_status st = mha_requires_grad(all[i], flag);
        if (st != MHA_OK) return st;
    }
    return MHA_OK;
}

void mha_multihead_zero_grad(mha_multihead *m) {
    mha_tensor *all[N_SLOTS];
    param_slots(all, m);
    for (size_t i = 0; i < N_SLOTS; i++) mha_zero_grad(all[i]);
}

/* A mask as an additive float tensor: bool true -> -inf, float as it is
 * (the same tensor: a float mask that requires grad gets its gradient through what is built from it
 * here). */
static mha_status additive(mha_tensor *out, const mha_tensor *mask) {
    if (mask->dtype == MHA_FLOAT32) return mha_ag_alias(out, mask);
    mha_tensor zeros = MHA_TENSOR_EMPTY;
    mha_status st = mha_zeros(&zeros, MHA_FLOAT32, mask->ndim, mask->shape);
    if (st == MHA_OK) st = mha_masked_fill(out, &zeros, mask, -INFINITY);
    mha_release(&zeros);
    return st;
}

/* The one additive mask (N|1, H|1, L, S') of attn_mask + key_padding_mask
 * (+ causal, when keys were appended: the appended columns are never masked, as torch pads its
 * masks with zeros). Empty when there is nothing. Built of differentiable ops, so a float mask that
 * requires grad gets its gradient (as in torch). */
static mha_status combined_mask(mha_tensor *out, const mha_forward_options *opt, size_t N, size_t H, size_t L, size_t S,
                                size_t S2, bool causal_here) {
    const mha_tensor *am = opt->attn_mask, *kpm = opt->key_padding_mask;
    if (!am && !kpm && !causal_here) return MHA_OK;
    enum { A, P, A4, P4, SUM, CAUSAL, MASKED, ROWS, PAD, NT };
    mha_tensor t[NT];
    for (int i = 0; i < NT; i++) t[i] = MHA_TENSOR_EMPTY;
    mha_status st = MHA_OK;
    if (am) { /* (L,S) -> (1,1,L,S); (N·H,L,S) -> (N,H,L,S) */
        ptrdiff_t shape[4] = {am->ndim == 3 ? (ptrdiff_t)N : 1, am->ndim == 3 ? (ptrdiff_t)H : 1, (ptrdiff_t)L, (ptrdiff_t)S};
        st = additive(&t[A], am);
        if (st == MHA_OK) st = mha_ag_reshape(&t[A4], &t[A], 4, shape);
    }
    if (st == MHA_OK && kpm) { /* (N,S) or (S) -> (N,1,1,S) */
        ptrdiff_t shape[4] = {(ptrdiff_t)N, 1, 1, (ptrdiff_t)S};
        st = additive(&t[P], kpm);
        if (st == MHA_OK) st = mha_ag_reshape(&t[P4], &t[P], 4, shape);
    }
    if (st == MHA_OK) {
        if (am && kpm) st = mha_ag_binary(&t[SUM], MHA_ADD, &t[A4], &t[P4]);
        else if (am) st = mha_ag_alias(&t[SUM], &t[A4]);
        else if (kpm) st = mha_ag_alias(&t[SUM], &t[P4]);
        else {
            size_t shape[4] = {1, 1, L, S};
            st = mha_zeros(&t[SUM], MHA_FLOAT32, 4, shape);
        }
    }
    if (st == MHA_OK && causal_here) { /* + (L,S) with -inf where j > i */
        size_t shape[2] = {L, S};
        st = mha_zeros(&t[CAUSAL], MHA_FLOAT32, 2, shape);
        if (st == MHA_OK) {
            float *f = mha_f32(&t[CAUSAL]);
            for (size_t i = 0; i < L; i++)
                for (size_t j = i + 1; j < S; j++) f[i * S + j] = -INFINITY;
            st = mha_ag_binary(&t[MASKED], MHA_ADD, &t[SUM], &t[CAUSAL]);
        }
    } else if (st == MHA_OK) {
        st = mha_ag_alias(&t[MASKED], &t[SUM]);
    }
    if (st == MHA_OK && S2 > S) { /* the appended keys' columns: 0 */
        /* a key padding row (.., 1, S) spread */
        size_t shape[4] = {t[MASKED].shape[0], t[MASKED].shape[1], L, S};
        st = mha_ag_expand(&t[ROWS], &t[MASKED], 4, shape);
        shape[3] = S2 - S;
        if (st == MHA_OK) st = mha_zeros(&t[PAD], MHA_FLOAT32, 4, shape);
        const mha_tensor *parts[2] = {&t[ROWS], &t[PAD]};
        if (st == MHA_OK) st = mha_ag_cat(out, parts, 2, 3);
    } else if (st == MHA_OK) {
        st = mha_ag_alias(out, &t[MASKED]);
    }
    for (int i = 0; i < NT; i++) mha_release(&t[i]);
    return st;
}

/* The weights' head mean avg (N,L,S') = (Σ_h w[:,h]) / H of w (N,H,L,S'), as torch's sum over dim 1
 * then / H, recorded as the one node of that division. mha_head_mean sums in double (wide): the
 * very bits of mha_reduce's sum over dim 1 (double accumulators) followed by the float division,
 * without the (N,L,S') sum and the reduction's L·S' doubles in memory. Backward: div's then sum's,
 * g / H spread over the heads (a broadcast view). */

static mha_status head_mean_backward(mha_tensor *grads, const mha_node *n, const mha_tensor *g) {
    const mha_shape_rec *in = &n->in_shapes[0];
    ptrdiff_t one_head[4] = {(ptrdiff_t)in->shape[0], 1, (ptrdiff_t)in->shape[2], (ptrdiff_t)in->shape[3]};
    mha_tensor scaled = MHA_TENSOR_EMPTY, rows = MHA_TENSOR_EMPTY;
    mha_status st = mha_binary_scalar(&scaled, MHA_DIV, g, (float)in->shape[1], false); /* / H */
    if (st == MHA_OK) st = mha_reshape(&rows, &scaled, 4, one_head);
    if (st == MHA_OK) st = mha_expand(&grads[0], &rows, 4, in->shape);
    mha_release(&scaled), mha_release(&rows);
    return st;
}

static mha_status head_mean(mha_tensor *avg, const mha_tensor *w) { /* w contiguous: sdpa made it */
    const size_t N = w->shape[0], H = w->shape[1], LS = w->shape[2] * w->shape[3];
    size_t shape[3] = {N, w->shape[2], w->shape[3]};
    mha_status st = mha_empty(avg, MHA_FLOAT32, 3, shape);
    if (st != MHA_OK) return st;
    const size_t per_batch = mha_head_stretches(LS);
    for (size_t n = 0; n < N && LS > 0; n++) { /* no position: nothing to walk, however many
                                                  batches */
        if (mha_interrupted()) {
            mha_release(avg);
            return mha_fail(MHA_E_INTERRUPTED, "MultiheadAttention.forward: interrupted averaging the weights of batch %zu", n);
        }
        mha_head_mean(mha_f32(avg), mha_f32(w), H, LS, n * per_batch, (n + 1) * per_batch, true);
    }
    const mha_tensor *in[1] = {w};
    if (!mha_ag_wants(in, 1)) return MHA_OK;
    mha_node *node;
    if ((st = mha_ag_record(&node, sizeof(mha_node), avg, "div", head_mean_backward, in, 1)) != MHA_OK) {
        mha_release(avg);
        return st;
    }
    return MHA_OK;
}

static mha_status composed_forward(mha_tensor *out, mha_tensor *weights, const mha_multihead *m, const mha_tensor *query,
                                   const mha_tensor *key, const mha_tensor *value, const mha_forward_options *opt) {
    const bool batched = query->ndim == 3;
    const size_t E = m->embed_dim, H = m->num_heads, D = m->head_dim;
    const size_t N = batched ? query->shape[0] : 1, L = query->shape[batched], S = key->shape[batched];
    const size_t S2 = S + m->add_bias_kv + m->add_zero_attn;
    const bool want_weights = opt->need_weights && weights != NULL;
    enum { IN_Q, IN_K, IN_V, QKV, W_Q, W_K, W_V, B_Q, B_K, B_V, Q, K, V, KX, VX, QS, QH, KH, VH, MASK, HEAD_OUT, HEAD_W,
           MERGED, CONCAT, OUTPUT, AVG, NT };
    mha_tensor t[NT];
    for (int i = 0; i < NT; i++) t[i] = MHA_TENSOR_EMPTY;
    mha_status st = MHA_OK;
    const mha_tensor *inputs[3] = {query, key, value};
    for (int i = 0; i < 3 && st == MHA_OK; i++) /* step 1: (N,X,·); unbatched is a batch of one */
        st = batched ? mha_ag_alias(&t[IN_Q + i], inputs[i]) : mha_ag_unsqueeze(&t[IN_Q + i], inputs[i], 0);
    /* step 2: the in-projection; self-attention one product chunked into Q, K and V, as torch's
     * (one pass over x; the gradient of x one product over 3E, not three summed; the thirds'
     * gradients side by side) */
    const bool self = mha_self_attention(m, query, key, value);
    if (st == MHA_OK && self) {
        size_t thirds = 0;
        st = mha_ag_linear(&t[QKV], &t[IN_Q], &m->in_proj_weight, m->bias ? &m->in_proj_bias : NULL);
        if (st == MHA_OK) st = mha_ag_chunk(&t[Q], 3, &thirds, &t[QKV], 3, 2);
    }
    for (int i = 0; i < 3 && st == MHA_OK && !self; i++) {
        if (m->same_embed_dim) st = mha_ag_narrow(&t[W_Q + i], &m->in_proj_weight, 0, (size_t)i * E, E);
        else st = mha_ag_alias(&t[W_Q + i], i == 0 ? &m->q_proj_weight : i == 1 ? &m->k_proj_weight : &m->v_proj_weight);
        if (st == MHA_OK && m->bias) st = mha_ag_narrow(&t[B_Q + i], &m->in_proj_bias, 0, (size_t)i * E, E);
        if (st == MHA_OK) st = mha_ag_linear(&t[Q + i], &t[IN_Q + i], &t[W_Q + i], m->bias ? &t[B_Q + i] : NULL);
    }
    /* step 3: bias_k/v and the zero key appended; step 4: q / √D, as torch 1.13 scales q first */
    if (st == MHA_OK) st = mha_append_kv_rows(&t[KX], &t[K], m->add_bias_kv ? &m->bias_k : NULL, m->add_zero_attn, true);
    if (st == MHA_OK) st = mha_append_kv_rows(&t[VX], &t[V], m->add_bias_kv ? &m->bias_v : NULL, m->add_zero_attn, true);
    if (st == MHA_OK) st = mha_ag_binary_scalar(&t[QS], MHA_DIV, &t[Q], (float)sqrt((double)D), false);
    if (st == MHA_OK) st = mha_split_heads(&t[QH], &t[QS], H, true);
    if (st == MHA_OK) st = mha_split_heads(&t[KH], &t[KX], H, true);
    if (st == MHA_OK) st = mha_split_heads(&t[VH], &t[VX], H, true);
    /* step 5: the masks as one additive mask; the kernel the plain forward would pick
     * (fused or not). A bool causal attn_mask goes to sdpa as is_causal (mha_mask_as_rule), not
     * as an (L,S) float mask added per slice. */
    const bool fused = !want_weights && mha_masks_fuse(opt, S2 > S);
    mha_forward_options as_rule;
    if (st == MHA_OK) opt = mha_mask_as_rule(opt, S2 > S, &t[Q], &t[K], D, &as_rule);
    const bool causal_in_mask = opt->is_causal && S2 > S; /* sdpa's causal flag would mask the
                                                             appended keys too */
    if (st == MHA_OK) st = combined_mask(&t[MASK], opt, N, H, L, S, S2, causal_in_mask);
    if (st == MHA_OK) { /* step 6: attention per (batch, head) */
        mha_sdpa_options so = {.attn_mask = t[MASK].storage ? &t[MASK] : NULL, .is_causal = opt->is_causal && !causal_in_mask,
                               .scale = 1.0f};
        st = mha_ag_sdpa(&t[HEAD_OUT], fused ? NULL : &t[HEAD_W], &t[QH], &t[KH], &t[VH], &so);
    }
    if (st == MHA_OK) { /* step 7: heads side by side, then the out-projection */
        static const size_t perm[4] = {0, 2, 1, 3};
        ptrdiff_t shape[3] = {(ptrdiff_t)N, (ptrdiff_t)L, (ptrdiff_t)E};
        st = mha_ag_permute(&t[MERGED], &t[HEAD_OUT], perm);
        if (st == MHA_OK) st = mha_ag_reshape(&t[CONCAT], &t[MERGED], 3, shape);
        if (st == MHA_OK)
            st = mha_ag_linear(&t[OUTPUT], &t[CONCAT], &m->out_proj_weight, m->bias ? &m->out_proj_bias : NULL);
    }
    /* step 8: the weights, averaged over heads (sum / H, as torch) or per head */
    const mha_tensor *ret = &t[HEAD_W];
    if (st == MHA_OK && want_weights && opt->average_attn_weights) {
        st = head_mean(&t[AVG], &t[HEAD_W]);
        ret = &t[AVG];
    }
    if (st == MHA_OK && want_weights) st = batched ? mha_ag_alias(weights, ret) : mha_ag_select(weights, ret, 0, 0);
    if (st == MHA_OK) {
        st = batched ? mha_ag_alias(out, &t[OUTPUT]) : mha_ag_select(out, &t[OUTPUT], 0, 0);
        if (st != MHA_OK && want_weights) mha_release(weights);
    }
    for (int i = 0; i < NT; i++) mha_release(&t[i]);
    return st;
}

mha_status mha_ag_multihead_forward(mha_tensor *out, mha_tensor *weights, const mha_multihead *m, const mha_tensor *query,
                                    const mha_tensor *key, const mha_tensor *value, const mha_forward_options *opt) {
    const mha_forward_options defaults = {.need_weights = true, .average_attn_weights = true};
    if (!opt) opt = &defaults;
    if (!m) return mha_multihead_forward(out, weights, m, query, key, value, opt, NULL);
    /* q, k, v, the parameters and the masks (a float mask that requires grad gets its gradient) */
    const mha_tensor *tracked[5 + N_SLOTS] = {query, key, value, opt->attn_mask, opt->key_padding_mask};
    param_slots((mha_tensor **)tracked + 5, (mha_multihead *)m);
    /* nothing to record, or input the plain forward refuses in its words: it runs (and says why) */
    if (!mha_ag_wants(tracked, 5 + N_SLOTS) || mha_multihead_check(m, query, key, value, opt) != MHA_OK)
        return mha_multihead_forward(out, weights, m, query, key, value, opt, NULL);
    mha_status st = composed_forward(out, weights, m, query, key, value, opt);
    if (st == MHA_OK || st == MHA_E_INTERRUPTED) return st;
    /* When the plain forward fails too (out of memory for the weights, say), its message names the
     * problem in the layer's words; otherwise the composed path's own failure stands. */
    char why[512];
    snprintf(why, sizeof why, "%s", mha_errmsg());
    mha_tensor plain_out = MHA_TENSOR_EMPTY, plain_weights = MHA_TENSOR_EMPTY;
    mha_status plain = mha_multihead_forward(&plain_out, weights ? &plain_weights : NULL, m, query, key, value, opt, NULL);
    if (plain != MHA_OK) return plain;
    mha_release(&plain_out), mha_release(&plain_weights);
    return mha_fail(st, "%s", why);
}
