/* core/attention/sdpa_batch.c - the batch of sdpa's (L,S) slices: leading dims broadcast together,
 * the query heads that share one K/V head (grouped-query attention) found by index, never by
 * copying K and V, and the forward's and backward's argument checks that find the batch. */
#include <string.h>

#include "attention/sdpa_batch.h"
#include "nn/nn_internal.h"

/* With a group of G query heads per K/V head, k and v stand in the batch with their heads dim
 * (dim -3) G times as large: the batch shape takes q's H there, and slice n reads K/V head h / G of
 * its query head h (0-based; torch's repeat_interleave order). The group is 1 without GQA: every
 * tensor is read at its own index. */

bool mha_batch_grow(size_t *nb, size_t *bshape, const mha_tensor *t, size_t group) {
    size_t lead = t->ndim > 2 ? t->ndim - 2 : 0;
    if (lead > *nb) {
        memmove(bshape + (lead - *nb), bshape, *nb * sizeof *bshape);
        for (size_t d = 0; d < lead - *nb; d++) bshape[d] = 1;
        *nb = lead;
    }
    for (size_t d = 0; d < lead; d++) {
        size_t bd = *nb - lead + d, size = t->shape[d] * (d == lead - 1 ? group : 1);
        if (bshape[bd] == 1) bshape[bd] = size;
        else if (size != 1 && size != bshape[bd]) return false;
    }
    return true;
}

mha_status mha_batch_expand(mha_tensor *out, const mha_tensor *t, size_t nb, const size_t *bshape, size_t group,
                            size_t rows, size_t cols, const char *fname, const char *arg) {
    char s[MHA_SHAPE_BUF], w[MHA_SHAPE_BUF];
    size_t shape[MHA_MAX_DIMS];
    memcpy(shape, bshape, nb * sizeof *shape);
    if (group > 1) shape[nb - 1] /= group; /* the K/V heads */
    shape[nb] = rows, shape[nb + 1] = cols;
    mha_status st = mha_expand(out, t, nb + 2, shape);
    if (st != MHA_OK) {
        mha_tensor want = {.ndim = nb + 2};
        memcpy(want.shape, shape, sizeof shape);
        return mha_fail(MHA_E_SHAPE, "%s: %s %s does not broadcast to %s", fname, arg, SHAPE(s, t), SHAPE(w, &want));
    }
    return MHA_OK;
}

ptrdiff_t mha_batch_offset(const mha_tensor *t, size_t nb, size_t n, size_t group) {
    ptrdiff_t off = 0;
    for (size_t d = nb; d-- > 0;) {
        /* the batch's size of dim d */
        const size_t g = d == nb - 1 ? group : 1, size = t->shape[d] * g;
        off += (ptrdiff_t)(n % size / g) * t->stride[d];
        n /= size;
    }
    return off;
}

mha_mask_src mha_mask_slice(const mha_tensor *mask, size_t nb, size_t n) {
    mha_mask_src m = {0};
    if (!mask) return m;
    ptrdiff_t off = mha_batch_offset(mask, nb, n, 1);
    if (mask->dtype == MHA_FLOAT32) m.f = mha_f32(mask) + off;
    else m.b = mha_bool(mask) + off;
    m.rs = mask->stride[nb];
    m.cs = mask->stride[nb + 1];
    return m;
}

mha_status mha_sdpa_group(size_t *group, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                          bool enable_gqa, const char *fname) {
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF];
    *group = 1;
    /* the shape checks report those */
    if (!enable_gqa || q->ndim < 2 || k->ndim < 2 || v->ndim < 2) return MHA_OK;
    if (q->ndim < 3 || k->ndim < 3 || v->ndim < 3)
        return mha_fail(MHA_E_SHAPE, "%s: q %s, k %s, v %s: enable_gqa needs a heads dim in each (..., H, L, E)",
                        fname, SHAPE(sq, q), SHAPE(sk, k), SHAPE(sv, v));
    const size_t H = q->shape[q->ndim - 3], H_kv = k->shape[k->ndim - 3];
    if (v->shape[v->ndim - 3] != H_kv)
        return mha_fail(MHA_E_SHAPE, "%s: k %s has %zu heads, v %s has %zu: enable_gqa needs them equal", fname,
                        SHAPE(sk, k), H_kv, SHAPE(sv, v), v->shape[v->ndim - 3]);
    if (H == H_kv) return MHA_OK;
    if (H == 0 || H_kv == 0 || H % H_kv != 0)
        return mha_fail(MHA_E_SHAPE, "%s: q %s has %zu heads, k %s has %zu: enable_gqa needs H a multiple of H_kv",
                        fname, SHAPE(sq, q), H, SHAPE(sk, k), H_kv);
    *group = H / H_kv;
    return MHA_OK;
}

mha_status mha_sdpa_group_sum(mha_tensor *out, const mha_tensor *g, size_t nb, size_t group) {
    ptrdiff_t shape[MHA_MAX_DIMS];
    if (nb + 3 > MHA_MAX_DIMS)
        return mha_fail(MHA_E_SHAPE, "sdpa_backward: enable_gqa with %zu batch dims: at most %d supported", nb,
                        MHA_MAX_DIMS - 3);
    for (size_t d = 0; d + 1 < nb; d++) shape[d] = (ptrdiff_t)g->shape[d];
    shape[nb - 1] = (ptrdiff_t)(g->shape[nb - 1] / group), shape[nb] = (ptrdiff_t)group;
    shape[nb + 1] = (ptrdiff_t)g->shape[nb], shape[nb + 2] = (ptrdiff_t)g->shape[nb + 1];
    mha_tensor grouped = MHA_TENSOR_EMPTY;
    mha_status st = mha_view(&grouped, g, nb + 3, shape); /* (..., H_kv, G, rows, cols) */
    if (st == MHA_OK) st = mha_reduce(out, MHA_SUM, &grouped, nb, false);
    mha_release(&grouped);
    return st;
}

mha_status mha_sdpa_check(mha_sdpa_sizes *z, const mha_tensor *q, const mha_tensor *k, const mha_tensor *v,
                          const mha_tensor *mask, bool enable_gqa) {
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF], sm[MHA_SHAPE_BUF];
    mha_status st;
    if ((st = check_float(q, "sdpa", "q")) != MHA_OK || (st = check_float(k, "sdpa", "k")) != MHA_OK ||
        (st = check_float(v, "sdpa", "v")) != MHA_OK)
        return st;
    if (mask != NULL && mask->storage == NULL)
        return mha_fail(MHA_E_ARG, "sdpa: attn_mask is an empty (released) tensor");
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return mha_fail(MHA_E_SHAPE, "sdpa: q %s, k %s, v %s: each needs at least 2 dims (..., length, dim)",
                        SHAPE(sq, q), SHAPE(sk, k), SHAPE(sv, v));
    const size_t L = q->shape[q->ndim - 2], D = q->shape[q->ndim - 1];
    const size_t S = k->shape[k->ndim - 2], Dv = v->shape[v->ndim - 1];
    if (k->shape[k->ndim - 1] != D)
        return mha_fail(MHA_E_SHAPE, "sdpa: q %s and k %s: head dims %zu and %zu differ", SHAPE(sq, q), SHAPE(sk, k), D,
                        k->shape[k->ndim - 1]);
    if (v->shape[v->ndim - 2] != S)
        return mha_fail(MHA_E_SHAPE, "sdpa: k %s and v %s: key and value lengths %zu and %zu differ", SHAPE(sk, k),
                        SHAPE(sv, v), S, v->shape[v->ndim - 2]);
    if ((st = mha_sdpa_group(&z->group, q, k, v, enable_gqa, "sdpa")) != MHA_OK) return st;
    z->L = L, z->S = S, z->D = D, z->Dv = Dv, z->nb = 0;
    /* the batch shape: q's, k's, v's (and the mask's) leading dims broadcast together */
    if (!mha_batch_grow(&z->nb, z->bshape, q, 1) || !mha_batch_grow(&z->nb, z->bshape, k, z->group) ||
        !mha_batch_grow(&z->nb, z->bshape, v, z->group))
        return mha_fail(MHA_E_SHAPE, "sdpa: q %s, k %s, v %s: leading (batch) dims do not broadcast", SHAPE(sq, q),
                        SHAPE(sk, k), SHAPE(sv, v));
    if (mask != NULL) {
        const size_t mask_cols = mask->ndim >= 1 ? mask->shape[mask->ndim - 1] : 1;
        const size_t mask_rows = mask->ndim >= 2 ? mask->shape[mask->ndim - 2] : 1;
        if ((mask_rows != 1 && mask_rows != L) || (mask_cols != 1 && mask_cols != S) ||
            !mha_batch_grow(&z->nb, z->bshape, mask, 1)) {
            mha_tensor want = {.ndim = z->nb + 2};
            memcpy(want.shape, z->bshape, z->nb * sizeof *z->bshape);
            want.shape[z->nb] = L;
            want.shape[z->nb + 1] = S;
            return mha_fail(MHA_E_SHAPE, "sdpa: attn_mask %s does not broadcast to the scores %s", SHAPE(sm, mask),
                            SHAPE(sk, &want));
        }
    }
    if (z->nb + 2 > MHA_MAX_DIMS)
        return mha_fail(MHA_E_SHAPE, "sdpa: %zu batch dims: at most %d supported", z->nb, MHA_MAX_DIMS - 2);
    return MHA_OK;
}

mha_status mha_sdpa_backward_check(mha_sdpa_sizes *z, const mha_tensor *const all[8], bool enable_gqa, bool dmask) {
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF];
    const mha_tensor *q = all[0], *k = all[1], *v = all[2], *dout = all[4], *dweights = all[5], *weights = all[6];
    const char *names[] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        if (!all[i] || !all[i]->storage || all[i]->dtype != MHA_FLOAT32 || all[i]->ndim < 2)
            return mha_fail(MHA_E_ARG, "sdpa_backward: %s must be a float tensor of at least 2 dims (..., length, dim)",
                            names[i]);
    }
    const char *given[] = {"dout", "the weights' gradient", "weights", "out"};
    for (int i = 4; i < 8; i++)
        if (all[i] && (!all[i]->storage || all[i]->dtype != MHA_FLOAT32))
            return mha_fail(MHA_E_DTYPE, "sdpa_backward: %s %s must be a float32 tensor", given[i - 4],
                            all[i]->storage ? SHAPE(sq, all[i]) : "(released)");
    z->L = q->shape[q->ndim - 2], z->D = q->shape[q->ndim - 1], z->S = k->shape[k->ndim - 2];
    z->Dv = v->shape[v->ndim - 1];
    if (k->shape[k->ndim - 1] != z->D || v->shape[v->ndim - 2] != z->S)
        return mha_fail(MHA_E_SHAPE, "sdpa_backward: q %s, k %s, v %s do not fit (..., L, D), (..., S, D), (..., S, Dv)",
                        SHAPE(sq, q), SHAPE(sk, k), SHAPE(sv, v));
    if (!weights && dweights)
        return mha_fail(MHA_E_ARG, "sdpa_backward: a gradient of the weights needs the weights (the plain path)");
    if (!weights && dout && !all[7])
        return mha_fail(MHA_E_ARG, "sdpa_backward: the fused path (no weights) needs the forward's output out");
    if (dmask && (!all[3] || all[3]->dtype != MHA_FLOAT32))
        return mha_fail(MHA_E_ARG, "sdpa_backward: a gradient of the mask needs a float (additive) attn_mask");
    mha_status st = mha_sdpa_group(&z->group, q, all[1], all[2], enable_gqa, "sdpa_backward");
    if (st != MHA_OK) return st;
    z->nb = 0;
    for (size_t i = 0; i < 8; i++)
        if (all[i] && !mha_batch_grow(&z->nb, z->bshape, all[i], i == 1 || i == 2 ? z->group : 1))
            return mha_fail(MHA_E_SHAPE, "sdpa_backward: q %s, k %s, v %s: leading (batch) dims do not broadcast",
                            SHAPE(sq, q), SHAPE(sk, k), SHAPE(sv, v));
    return MHA_OK;
}
