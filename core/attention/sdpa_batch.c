/* core/attention/sdpa_batch.c - the batch of sdpa's (L,S) slices: leading dims broadcast together,
 * and the query heads that share one K/V head (grouped-query attention) found by index, never by
 * copying K and V. */
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
