/* core/tensor/tensor.c - the tensor's life cycle: storage, the write rule, element access, and the
 * views (view, transpose, permute, narrow, select, ...) that share storage. */
#include "tensor/tensor.h"
#include "tensor/tensor_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *mha_shape_str(char *buf, size_t n, const mha_tensor *t) {
    size_t used = 0;
    if (n == 0) return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, n, "(");
    for (size_t d = 0; d < t->ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, d ? ",%zu" : "%zu", t->shape[d]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}


/* ---- storage ---- */

/* False when a size of the shape is more than MHA_MAX_SIZE; the first such size in *big. */
static bool sizes_fit(size_t *big, size_t ndim, const size_t *shape) {
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] > MHA_MAX_SIZE) {
            *big = shape[d];
            return false;
        }
    }
    return true;
}

/* C-order strides of a shape (a size 0 counts as 1, as in PyTorch), computed unsigned; false when
 * one exceeds PTRDIFF_MAX. Only a shape with no element can get there - (0, 2^62, 4) has a stride
 * of 2^64 - and such a shape is refused: its strides would wrap. */
static bool contiguous_strides(ptrdiff_t *stride, size_t ndim, const size_t *shape) {
    size_t s = 1;
    for (size_t d = ndim; d-- > 0;) {
        stride[d] = (ptrdiff_t)s;
        size_t n = shape[d] ? shape[d] : 1;
        if (d > 0 && s > (size_t)PTRDIFF_MAX / n) return false;
        s *= n;
    }
    return true;
}

static void (*ag_release)(mha_tensor *t);

void mha_tensor_set_ag_release(void (*release)(mha_tensor *t)) { ag_release = release; }

/* ---- the write rule (tensor.h) ---- */

static mha_status (*ag_write_check)(const mha_tensor *t, const char *fname);

void mha_tensor_set_write_check(mha_status (*check)(const mha_tensor *t, const char *fname)) { ag_write_check = check; }

void mha_bump_version(const mha_tensor *t) {
    if (t && t->storage) t->storage->version++;
}

mha_status tensor_begin_write(const mha_tensor *t, const char *fname) {
    if (t->ag && ag_write_check) {   /* only a tracked tensor can require grad */
        mha_status st = ag_write_check(t, fname);
        if (st != MHA_OK) return st;
    }
    mha_bump_version(t);
    return MHA_OK;
}

void mha_release(mha_tensor *t) {
    if (t && t->ag) ag_release(t), t->ag = NULL;
    if (!t || !t->storage) return;
    mha_storage *s = t->storage;
    t->storage = NULL;
    if (--s->refcount == 0) {
        mha_free(s->data, s->nbytes);
        mha_free(s, sizeof *s);
    }
}

mha_status mha_empty_named(mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape, const char *fname) {
    char buf[160];
    if (ndim > MHA_MAX_DIMS)
        return mha_fail(MHA_E_ARG, "%s: %zu dimensions requested, at most %d supported", fname, ndim, MHA_MAX_DIMS);
    size_t numel;
    mha_tensor probe = {.ndim = ndim};   /* only for the shape in messages */
    if (ndim) memcpy(probe.shape, shape, ndim * sizeof *shape);
    size_t big;
    if (!sizes_fit(&big, ndim, shape))
        return mha_fail(MHA_E_ARG, "%s: shape %s: size %zu is more than 2^63-1, the largest size a dim may have",
                        fname, mha_shape_str(buf, sizeof buf, &probe), big);
    if (!shape_numel(&numel, ndim, shape, dtype_size(dtype))) {
        return mha_fail(MHA_E_NOMEM, "%s: shape %s has too many elements (size overflows)", fname,
                        mha_shape_str(buf, sizeof buf, &probe));
    }
    if (!contiguous_strides(probe.stride, ndim, shape)) {
        return mha_fail(MHA_E_ARG, "%s: shape %s: its strides overflow (sizes multiply past 2^63)", fname,
                        mha_shape_str(buf, sizeof buf, &probe));
    }
    mha_storage *s = mha_alloc(sizeof *s);
    if (!s) return mha_fail(MHA_E_NOMEM, "%s: out of memory allocating a storage", fname);
    s->nbytes = numel * dtype_size(dtype);
    s->data = mha_alloc(s->nbytes);
    if (!s->data) {
        mha_free(s, sizeof *s);
        return mha_fail(MHA_E_NOMEM, "%s: out of memory allocating %zu bytes for shape %s", fname,
                        numel * dtype_size(dtype), mha_shape_str(buf, sizeof buf, &probe));
    }
    s->refcount = 1;
    *out = MHA_TENSOR_EMPTY;
    out->storage = s;
    out->dtype = dtype;
    out->ndim = ndim;
    if (ndim) memcpy(out->shape, shape, ndim * sizeof *shape);   /* a scalar may pass shape NULL */
    memcpy(out->stride, probe.stride, sizeof out->stride);
    return MHA_OK;
}

mha_status mha_empty(mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape) {
    return mha_empty_named(out, dtype, ndim, shape, "empty");
}

/* t's dims by falling stride, ties in dim order (insertion sort: stable). */
static void stride_order(size_t *order, const mha_tensor *t) {
    for (size_t d = 0; d < t->ndim; d++) order[d] = d;
    for (size_t i = 1; i < t->ndim; i++)
        for (size_t j = i; j > 0 && t->stride[order[j]] > t->stride[order[j - 1]]; j--) {
            size_t was = order[j];
            order[j] = order[j - 1], order[j - 1] = was;
        }
}

/* The output of heads split by a permuted view (N,H,L,D) of (N,L,E) - or of a third of (N,L,3E),
 * self-attention's one projection - is then written with the heads side by side, so merging them
 * back, (N,L,H,D) -> (N,L,E), is a view; and so is each head's gradient in sdpa's backward. */
mha_status mha_empty_like_named(mha_tensor *out, const mha_tensor *like, const char *fname) {
    size_t order[MHA_MAX_DIMS], inverse[MHA_MAX_DIMS], block_shape[MHA_MAX_DIMS];
    stride_order(order, like);
    for (size_t p = 0; p < like->ndim; p++) block_shape[p] = like->shape[order[p]], inverse[order[p]] = p;
    mha_tensor block = MHA_TENSOR_EMPTY;
    mha_status st = mha_empty_named(&block, MHA_FLOAT32, like->ndim, block_shape, fname);
    if (st == MHA_OK) st = mha_permute(out, &block, inverse);
    mha_release(&block);
    return st;
}

/* 16M elements (64 MiB of floats) a run: about 10 ms of writing, a Ctrl-C's wait at most. */
enum { FILL_RUN = (size_t)1 << 24 };

mha_status tensor_fill_runs(tensor_fill_fn fill, void *ctx, size_t n, const char *fname) {
    for (size_t first = 0; first < n; first += FILL_RUN) {
        if (first > 0 && mha_interrupted()) return interrupted(fname);
        fill(ctx, first, n - first < FILL_RUN ? n - first : FILL_RUN);
    }
    return MHA_OK;
}

static void fill_zero_bytes(void *ctx, size_t first, size_t count) { memset((char *)ctx + first, 0, count); }

/* out's storage set to zero bytes (0.0f, false), or out released when Ctrl-C stopped it. */
static mha_status zero_storage(mha_tensor *out, const char *fname) {
    mha_status st = tensor_fill_runs(fill_zero_bytes, out->storage->data, out->storage->nbytes, fname);
    if (st != MHA_OK) mha_release(out);
    return st;
}

mha_status mha_zeros(mha_tensor *out, mha_dtype dtype, size_t ndim, const size_t *shape) {
    mha_status st = mha_empty_named(out, dtype, ndim, shape, "zeros");
    return st == MHA_OK ? zero_storage(out, "zeros") : st;
}

typedef struct float_fill {
    float *p;
    float value;
} float_fill;

static void fill_value(void *ctx, size_t first, size_t count) {
    const float_fill *f = ctx;
    for (size_t i = first; i < first + count; i++) f->p[i] = f->value;
}

mha_status mha_full(mha_tensor *out, size_t ndim, const size_t *shape, float value) {
    mha_status st = mha_empty_named(out, MHA_FLOAT32, ndim, shape, "full");
    if (st != MHA_OK) return st;
    float_fill f = {mha_f32(out), value};
    if ((st = tensor_fill_runs(fill_value, &f, mha_numel(out), "full")) != MHA_OK) mha_release(out);
    return st;
}

mha_status mha_eye(mha_tensor *out, size_t n, size_t m) {
    size_t shape[2] = {n, m};
    mha_status st = mha_empty_named(out, MHA_FLOAT32, 2, shape, "eye");
    if (st != MHA_OK || (st = zero_storage(out, "eye")) != MHA_OK) return st;
    float *p = mha_f32(out);
    for (size_t i = 0; i < n && i < m; i++) p[i * m + i] = 1.0f;
    return MHA_OK;
}

mha_status mha_arange(mha_tensor *out, double start, double stop, double step) {
    if (isnan(start) || isnan(stop) || isnan(step))
        return mha_fail(MHA_E_ARG, "arange: %s is NaN (start %g, stop %g, step %g)",
                        isnan(start) ? "start" : isnan(stop) ? "stop" : "step", start, stop, step);
    if (step == 0) return mha_fail(MHA_E_ARG, "arange: step must not be 0 (start %g, stop %g)", start, stop);
    if (isinf(start) || (isinf(stop) && (stop > 0) == (step > 0)))
        return mha_fail(MHA_E_ARG, "arange: start %g, stop %g, step %g would never end", start, stop, step);
    double count = ceil((stop - start) / step);
    if (!(count >= 0)) count = 0;   /* stop behind start, or NaN (inf / -inf: a step away) */
    if (count > 1e9)
        return mha_fail(MHA_E_ARG, "arange: %g elements from start %g, stop %g, step %g is too many", count, start, stop, step);
    size_t n = (size_t)count;
    mha_status st = mha_empty_named(out, MHA_FLOAT32, 1, &n, "arange");
    if (st != MHA_OK) return st;
    float *p = mha_f32(out);
    for (size_t i = 0; i < n; i++) p[i] = (float)(start + (double)i * step);
    return MHA_OK;
}

mha_status mha_share(mha_tensor *out, const mha_tensor *t) {
    if (!t->storage) return mha_fail(MHA_E_ARG, "share: the tensor is empty (released)");
    *out = *t;
    out->ag = NULL; /* a share is a new tensor to the autograd, as torch's views and detach() */
    out->storage->refcount++;
    return MHA_OK;
}

size_t mha_numel(const mha_tensor *t) {
    size_t n = 1;
    for (size_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

bool mha_is_contiguous(const mha_tensor *t) {
    if (mha_numel(t) == 0) return true;   /* as PyTorch: no element is out of place */
    ptrdiff_t s = 1;
    for (size_t d = t->ndim; d-- > 0;) {
        if (t->shape[d] != 1 && t->stride[d] != s) return false;
        s *= (ptrdiff_t)t->shape[d];
    }
    return true;
}

bool mha_same_shape(const mha_tensor *a, const mha_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (size_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

float *mha_f32(const mha_tensor *t) { return (float *)t->storage->data + t->offset; }
bool *mha_bool(const mha_tensor *t) { return (bool *)t->storage->data + t->offset; }

/* Offset in elements of the flat C-order index i of t (walks the strides). */
static ptrdiff_t strided_offset(const mha_tensor *t, size_t i) {
    ptrdiff_t off = 0;
    for (size_t d = t->ndim; d-- > 0;) {
        size_t n = t->shape[d];
        off += (ptrdiff_t)(i % n) * t->stride[d];
        i /= n;
    }
    return off;
}

/* dst (contiguous, same numel and dtype) = src elements in C order, through src's strides. */
static void gather(void *dst, const mha_tensor *src) {
    size_t n = mha_numel(src);
    if (src->dtype == MHA_BOOL) {
        const bool *s = mha_bool(src);
        bool *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = s[strided_offset(src, i)];
    } else {
        const float *s = mha_f32(src);
        float *d = dst;
        /* common case: walk the last dimension with its stride, recompute the row start only per
         * row */
        size_t last = src->ndim ? src->shape[src->ndim - 1] : 1;
        ptrdiff_t ls = src->ndim ? src->stride[src->ndim - 1] : 0;
        for (size_t i = 0; i < n; i += last) {
            const float *row = s + strided_offset(src, i);
            for (size_t j = 0; j < last; j++) d[i + j] = row[(ptrdiff_t)j * ls];
        }
    }
}

/* mha_clone, its allocation failure named fname. */
static mha_status clone_named(mha_tensor *out, const mha_tensor *t, const char *fname) {
    if (!t->storage) return mha_fail(MHA_E_ARG, "%s: the tensor is empty (released)", fname);
    mha_status st = mha_empty_named(out, t->dtype, t->ndim, t->shape, fname);
    if (st != MHA_OK) return st;
    if (mha_numel(t) == 0) return MHA_OK;
    if (mha_is_contiguous(t))
        memcpy(out->storage->data, (char *)t->storage->data + t->offset * dtype_size(t->dtype), out->storage->nbytes);
    else
        gather(out->storage->data, t);
    return MHA_OK;
}

mha_status mha_clone(mha_tensor *out, const mha_tensor *t) { return clone_named(out, t, "clone"); }

mha_status mha_contiguous_named(mha_tensor *out, const mha_tensor *t, const char *fname) {
    if (t->storage && mha_is_contiguous(t)) return mha_share(out, t);
    return clone_named(out, t, fname);
}

mha_status mha_contiguous(mha_tensor *out, const mha_tensor *t) { return mha_contiguous_named(out, t, "contiguous"); }

mha_status mha_to_dtype(mha_tensor *out, const mha_tensor *t, mha_dtype dtype) {
    const char *fname = dtype == MHA_FLOAT32 ? "float" : "bool"; /* torch's t.float(), t.bool() */
    if (t->dtype == dtype) return clone_named(out, t, fname);
    mha_tensor src = MHA_TENSOR_EMPTY;
    mha_status st = mha_contiguous_named(&src, t, fname);
    if (st != MHA_OK) return st;
    st = mha_empty_named(out, dtype, t->ndim, t->shape, fname);
    if (st != MHA_OK) { mha_release(&src); return st; }
    size_t n = mha_numel(t);
    if (dtype == MHA_FLOAT32) {
        const bool *s = mha_bool(&src);
        float *d = mha_f32(out);
        for (size_t i = 0; i < n; i++) d[i] = s[i] ? 1.0f : 0.0f;
    } else {
        const float *s = mha_f32(&src);
        bool *d = mha_bool(out);
        for (size_t i = 0; i < n; i++) d[i] = s[i] != 0.0f;   /* NaN is true, as in PyTorch */
    }
    mha_release(&src);
    return MHA_OK;
}

/* dst = src (expanded to dst's shape) a row at a time when each has its last dim contiguous and
 * they lie in different storages (nothing to read before it is written): a memcpy a row, the row
 * starts walked like an odometer. false: not such a pair. */
static bool copy_rows(mha_tensor *dst, const mha_tensor *src) {
    const size_t nd = dst->ndim;
    if (nd == 0 || dst->storage == src->storage || mha_numel(dst) == 0) return false;
    if ((dst->stride[nd - 1] != 1 || src->stride[nd - 1] != 1) && dst->shape[nd - 1] != 1) return false;
    const size_t es = dtype_size(dst->dtype), row_bytes = dst->shape[nd - 1] * es;
    const size_t rows = mha_numel(dst) / dst->shape[nd - 1];
    char *d = (char *)dst->storage->data + dst->offset * es;
    const char *s = (const char *)src->storage->data + src->offset * es;
    size_t index[MHA_MAX_DIMS] = {0};
    ptrdiff_t d_off = 0, s_off = 0;   /* in elements, of the row at index */
    for (size_t r = 0; r < rows; r++) {
        memcpy(d + d_off * (ptrdiff_t)es, s + s_off * (ptrdiff_t)es, row_bytes);
        for (size_t k = nd - 1; k-- > 0;) {   /* the next row: the last dims before the row first */
            d_off += dst->stride[k], s_off += src->stride[k];
            if (++index[k] < dst->shape[k]) break;
            d_off -= (ptrdiff_t)dst->shape[k] * dst->stride[k], s_off -= (ptrdiff_t)dst->shape[k] * src->stride[k];
            index[k] = 0;
        }
    }
    return true;
}

/* dst[...] = src, broadcasting src; the caller has followed the write rule. */
static mha_status copy_into(mha_tensor *dst, const mha_tensor *src) {
    char a[160], b[160];
    if (dst->dtype != src->dtype)
        return mha_fail(MHA_E_DTYPE, "copy: destination is %s, source is %s", dtype_name(dst->dtype), dtype_name(src->dtype));
    mha_tensor view = MHA_TENSOR_EMPTY, flat = MHA_TENSOR_EMPTY;
    mha_status st = mha_expand(&view, src, dst->ndim, dst->shape);
    if (st != MHA_OK)
        return mha_fail(MHA_E_SHAPE, "copy: source %s cannot broadcast to destination %s",
                        mha_shape_str(a, sizeof a, src), mha_shape_str(b, sizeof b, dst));
    if (copy_rows(dst, &view)) {
        mha_release(&view);
        return MHA_OK;
    }
    /* gather first, so an overlapping source (a view of dst) is read before it is written */
    st = clone_named(&flat, &view, "copy");
    mha_release(&view);
    if (st != MHA_OK) return st;
    size_t n = mha_numel(dst), es = dtype_size(dst->dtype);
    char *d = (char *)dst->storage->data + dst->offset * es;
    const char *s = flat.storage->data;
    for (size_t i = 0; i < n; i++) memcpy(d + strided_offset(dst, i) * (ptrdiff_t)es, s + i * es, es);
    mha_release(&flat);
    return MHA_OK;
}

mha_status mha_copy_into_named(mha_tensor *dst, const mha_tensor *src, const char *fname) {
    mha_status st = tensor_begin_write(dst, fname);
    return st == MHA_OK ? copy_into(dst, src) : st;
}

mha_status mha_copy_into(mha_tensor *dst, const mha_tensor *src) { return mha_copy_into_named(dst, src, "copy"); }

mha_status mha_copy_into_slice(mha_tensor *t, size_t dim, size_t index, const mha_tensor *src, const char *fname) {
    mha_status st = tensor_begin_write(t, fname);
    if (st != MHA_OK) return st;
    mha_tensor slice = MHA_TENSOR_EMPTY;
    st = mha_select(&slice, t, dim, index);
    if (st == MHA_OK) st = copy_into(&slice, src);
    mha_release(&slice);
    return st;
}

/* ---- element access ---- */

static mha_status element_offset(ptrdiff_t *off, const mha_tensor *t, const size_t *index, const char *fname) {
    char buf[160];
    *off = 0;
    for (size_t d = 0; d < t->ndim; d++) {
        if (index[d] >= t->shape[d])
            return mha_fail(MHA_E_ARG, "%s: index %zu out of range for dim %zu of size %zu (tensor %s)", fname,
                            index[d], d, t->shape[d], mha_shape_str(buf, sizeof buf, t));
        *off += (ptrdiff_t)index[d] * t->stride[d];
    }
    return MHA_OK;
}

mha_status mha_get(double *value, const mha_tensor *t, const size_t *index) {
    ptrdiff_t off;
    mha_status st = element_offset(&off, t, index, "get");
    if (st != MHA_OK) return st;
    *value = t->dtype == MHA_BOOL ? (mha_bool(t)[off] ? 1.0 : 0.0) : (double)mha_f32(t)[off];
    return MHA_OK;
}

mha_status mha_set(mha_tensor *t, const size_t *index, double value) {
    ptrdiff_t off;
    mha_status st = element_offset(&off, t, index, "set");
    if (st == MHA_OK) st = tensor_begin_write(t, "set");
    if (st != MHA_OK) return st;
    if (t->dtype == MHA_BOOL) mha_bool(t)[off] = value != 0.0;
    else mha_f32(t)[off] = (float)value;
    return MHA_OK;
}

/* ---- views ---- */

/* Resolve a shape with at most one -1 against numel; writes sizes to out_shape. */
static mha_status infer_shape(size_t *out_shape, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape, const char *fname) {
    char buf[160], want[160];
    size_t used = 0, known = 1, infer = MHA_MAX_DIMS;
    if (ndim > MHA_MAX_DIMS)
        return mha_fail(MHA_E_ARG, "%s: %zu dimensions requested, at most %d supported", fname, ndim, MHA_MAX_DIMS);
    used += (size_t)snprintf(want, sizeof want, "(");
    for (size_t d = 0; d < ndim; d++)
        used += (size_t)snprintf(want + used, used < sizeof want ? sizeof want - used : 0, d ? ",%td" : "%td", shape[d]);
    if (used < sizeof want) snprintf(want + used, sizeof want - used, ")");
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] == -1) {
            if (infer != MHA_MAX_DIMS) return mha_fail(MHA_E_ARG, "%s: shape %s: only one dimension can be -1", fname, want);
            infer = d;
        } else if (shape[d] < 0) {
            return mha_fail(MHA_E_ARG, "%s: shape %s: size %td is negative", fname, want, shape[d]);
        } else {
            if (shape[d] && known > SIZE_MAX / (size_t)shape[d])
                return mha_fail(MHA_E_ARG, "%s: shape %s has too many elements", fname, want);
            known *= (size_t)shape[d];
            out_shape[d] = (size_t)shape[d];
        }
    }
    size_t numel = mha_numel(t);
    if (infer != MHA_MAX_DIMS) {
        if (known == 0 || numel % known != 0)
            return mha_fail(MHA_E_SHAPE, "%s: shape %s is invalid for a tensor of shape %s (%zu elements)", fname, want,
                            mha_shape_str(buf, sizeof buf, t), numel);
        out_shape[infer] = numel / known;
    } else if (known != numel) {
        return mha_fail(MHA_E_SHAPE, "%s: shape %s is invalid for a tensor of shape %s (%zu elements)", fname, want,
                        mha_shape_str(buf, sizeof buf, t), numel);
    }
    ptrdiff_t strides[MHA_MAX_DIMS];
    if (!contiguous_strides(strides, ndim, out_shape))
        return mha_fail(MHA_E_ARG, "%s: shape %s: its strides overflow (sizes multiply past 2^63)", fname, want);
    return MHA_OK;
}

/* Strides for viewing t as new_shape without a copy, as PyTorch's computeStride: each run of old
 * dimensions that are contiguous with one another may be regrouped; false when impossible. */
static bool view_strides(ptrdiff_t *new_stride, const mha_tensor *t, size_t ndim, const size_t *new_shape) {
    if (mha_numel(t) == 0 || t->ndim == 0) return contiguous_strides(new_stride, ndim, new_shape);
    ptrdiff_t view_d = (ptrdiff_t)ndim - 1;
    ptrdiff_t chunk_base_stride = t->stride[t->ndim - 1];
    size_t tensor_numel = 1, view_numel = 1;
    for (ptrdiff_t tensor_d = (ptrdiff_t)t->ndim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= t->shape[tensor_d];
        /* end of a contiguous chunk: the next (outer) old dim does not continue this one */
        if (tensor_d == 0 || (t->shape[tensor_d - 1] != 1 &&
                               t->stride[tensor_d - 1] != (ptrdiff_t)tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
                new_stride[view_d] = (ptrdiff_t)view_numel * chunk_base_stride;
                view_numel *= new_shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (tensor_d > 0) {
                chunk_base_stride = t->stride[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

mha_status mha_view(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape) {
    char buf[160], want[160];
    size_t new_shape[MHA_MAX_DIMS];
    ptrdiff_t new_stride[MHA_MAX_DIMS];
    mha_status st = infer_shape(new_shape, t, ndim, shape, "view");
    if (st != MHA_OK) return st;
    if (!view_strides(new_stride, t, ndim, new_shape)) {
        mha_tensor probe = {.ndim = ndim};
        memcpy(probe.shape, new_shape, ndim * sizeof *new_shape);
        size_t used = (size_t)snprintf(buf, sizeof buf, "(");
        for (size_t d = 0; d < t->ndim && used < sizeof buf; d++)
            used += (size_t)snprintf(buf + used, sizeof buf - used, d ? ",%td" : "%td", t->stride[d]);
        if (used < sizeof buf) snprintf(buf + used, sizeof buf - used, ")");
        char shp[160];
        return mha_fail(MHA_E_SHAPE,
                        "view: cannot view a tensor of shape %s and strides %s as %s: its elements are not laid out "
                        "one after another in memory (it is a transposed or permuted view), so no strides can express "
                        "the new shape without copying. Call :contiguous() first to copy it into C order, or use "
                        ":reshape(), which copies when it must",
                        mha_shape_str(shp, sizeof shp, t), buf, mha_shape_str(want, sizeof want, &probe));
    }
    st = mha_share(out, t);
    if (st != MHA_OK) return st;
    out->ndim = ndim;
    memcpy(out->shape, new_shape, ndim * sizeof *new_shape);
    memcpy(out->stride, new_stride, ndim * sizeof *new_stride);
    return MHA_OK;
}

mha_status mha_reshape(mha_tensor *out, const mha_tensor *t, size_t ndim, const ptrdiff_t *shape) {
    size_t new_shape[MHA_MAX_DIMS];
    ptrdiff_t new_stride[MHA_MAX_DIMS];
    mha_status st = infer_shape(new_shape, t, ndim, shape, "reshape");
    if (st != MHA_OK) return st;
    if (view_strides(new_stride, t, ndim, new_shape)) return mha_view(out, t, ndim, shape);
    mha_tensor copy = MHA_TENSOR_EMPTY;
    st = clone_named(&copy, t, "reshape");
    if (st != MHA_OK) return st;
    st = mha_view(out, &copy, ndim, shape);
    mha_release(&copy);
    return st;
}

static mha_status check_dim(const mha_tensor *t, size_t dim, size_t limit, const char *fname, const char *arg) {
    char buf[160];
    if (dim >= limit)
        return mha_fail(MHA_E_ARG, "%s: %s %zu out of range for a tensor of shape %s", fname, arg, dim,
                        mha_shape_str(buf, sizeof buf, t));
    return MHA_OK;
}

mha_status mha_transpose(mha_tensor *out, const mha_tensor *t, size_t dim0, size_t dim1) {
    mha_status st = check_dim(t, dim0, t->ndim, "transpose", "dim0");
    if (st == MHA_OK) st = check_dim(t, dim1, t->ndim, "transpose", "dim1");
    if (st == MHA_OK) st = mha_share(out, t);
    if (st != MHA_OK) return st;
    size_t sz = out->shape[dim0]; out->shape[dim0] = out->shape[dim1]; out->shape[dim1] = sz;
    ptrdiff_t sd = out->stride[dim0]; out->stride[dim0] = out->stride[dim1]; out->stride[dim1] = sd;
    return MHA_OK;
}

mha_status mha_permute(mha_tensor *out, const mha_tensor *t, const size_t *perm) {
    bool seen[MHA_MAX_DIMS] = {false};
    for (size_t d = 0; d < t->ndim; d++) {
        mha_status st = check_dim(t, perm[d], t->ndim, "permute", "dim");
        if (st != MHA_OK) return st;
        if (seen[perm[d]]) return mha_fail(MHA_E_ARG, "permute: dim %zu appears twice in the permutation", perm[d]);
        seen[perm[d]] = true;
    }
    mha_status st = mha_share(out, t);
    if (st != MHA_OK) return st;
    for (size_t d = 0; d < t->ndim; d++) {
        out->shape[d] = t->shape[perm[d]];
        out->stride[d] = t->stride[perm[d]];
    }
    return MHA_OK;
}

mha_status mha_narrow(mha_tensor *out, const mha_tensor *t, size_t dim, size_t start, size_t length) {
    char buf[160];
    mha_status st = check_dim(t, dim, t->ndim, "narrow", "dim");
    if (st != MHA_OK) return st;
    if (start > t->shape[dim] || length > t->shape[dim] - start)
        return mha_fail(MHA_E_ARG, "narrow: start %zu + length %zu exceeds size %zu of dim %zu (tensor %s)", start,
                        length, t->shape[dim], dim, mha_shape_str(buf, sizeof buf, t));
    st = mha_share(out, t);
    if (st != MHA_OK) return st;
    out->offset = (size_t)((ptrdiff_t)out->offset + (ptrdiff_t)start * t->stride[dim]);
    out->shape[dim] = length;
    return MHA_OK;
}

mha_status mha_select(mha_tensor *out, const mha_tensor *t, size_t dim, size_t index) {
    char buf[160];
    mha_status st = check_dim(t, dim, t->ndim, "select", "dim");
    if (st != MHA_OK) return st;
    if (index >= t->shape[dim])
        return mha_fail(MHA_E_ARG, "select: index %zu out of range for dim %zu of size %zu (tensor %s)", index, dim,
                        t->shape[dim], mha_shape_str(buf, sizeof buf, t));
    st = mha_share(out, t);
    if (st != MHA_OK) return st;
    out->offset = (size_t)((ptrdiff_t)out->offset + (ptrdiff_t)index * t->stride[dim]);
    for (size_t d = dim; d + 1 < t->ndim; d++) {
        out->shape[d] = t->shape[d + 1];
        out->stride[d] = t->stride[d + 1];
    }
    out->ndim--;
    return MHA_OK;
}

mha_status mha_unsqueeze(mha_tensor *out, const mha_tensor *t, size_t dim) {
    if (t->ndim >= MHA_MAX_DIMS)
        return mha_fail(MHA_E_ARG, "unsqueeze: the tensor already has %d dimensions, the most supported", MHA_MAX_DIMS);
    mha_status st = check_dim(t, dim, t->ndim + 1, "unsqueeze", "dim");
    if (st == MHA_OK) st = mha_share(out, t);
    if (st != MHA_OK) return st;
    for (size_t d = t->ndim; d > dim; d--) {
        out->shape[d] = t->shape[d - 1];
        out->stride[d] = t->stride[d - 1];
    }
    out->shape[dim] = 1;
    /* as PyTorch: the stride the dimension would have inside the next one. A size-1 dimension's
     * stride is never stepped by, so where the product cannot be held
     * (only with no element: (2^62, 4, 0)) 1 does. */
    ptrdiff_t inner = dim < t->ndim ? t->stride[dim] : 1;
    size_t times = dim < t->ndim ? t->shape[dim] : 1;
    size_t magnitude = inner < 0 ? (size_t)0 - (size_t)inner : (size_t)inner;
    out->stride[dim] = times == 0 || magnitude <= (size_t)PTRDIFF_MAX / times ? inner * (ptrdiff_t)times : 1;
    out->ndim++;
    return MHA_OK;
}

mha_status mha_squeeze(mha_tensor *out, const mha_tensor *t, size_t dim) {
    if (dim != MHA_ALL_DIMS) {
        mha_status st = check_dim(t, dim, t->ndim, "squeeze", "dim");
        if (st != MHA_OK) return st;
    }
    mha_status st = mha_share(out, t);
    if (st != MHA_OK) return st;
    size_t k = 0;
    for (size_t d = 0; d < t->ndim; d++) {
        bool drop = t->shape[d] == 1 && (dim == MHA_ALL_DIMS || dim == d);
        if (drop) continue;
        out->shape[k] = t->shape[d];
        out->stride[k] = t->stride[d];
        k++;
    }
    out->ndim = k;
    return MHA_OK;
}

mha_status mha_expand(mha_tensor *out, const mha_tensor *t, size_t ndim, const size_t *shape) {
    char a[160], b[160];
    mha_tensor probe = {.ndim = ndim};
    if (ndim > MHA_MAX_DIMS)
        return mha_fail(MHA_E_ARG, "expand: %zu dimensions requested, at most %d supported", ndim, MHA_MAX_DIMS);
    if (ndim) memcpy(probe.shape, shape, ndim * sizeof *shape);
    if (ndim < t->ndim)
        return mha_fail(MHA_E_SHAPE, "expand: cannot expand %s to fewer dimensions %s", mha_shape_str(a, sizeof a, t),
                        mha_shape_str(b, sizeof b, &probe));
    size_t lead = ndim - t->ndim, numel;
    for (size_t d = 0; d < t->ndim; d++) {   /* the dim is named from the end: the same for C and
                                                Lua */
        if (t->shape[d] != shape[lead + d] && t->shape[d] != 1)
            return mha_fail(MHA_E_SHAPE, "expand: cannot expand %s to %s: dim -%zu has size %zu, not 1 or %zu",
                            mha_shape_str(a, sizeof a, t), mha_shape_str(b, sizeof b, &probe), t->ndim - d,
                            t->shape[d], shape[lead + d]);
    }
    size_t big;
    if (!sizes_fit(&big, ndim, shape))
        return mha_fail(MHA_E_ARG, "expand: cannot expand %s to %s: size %zu is more than 2^63-1, the largest size "
                        "a dim may have", mha_shape_str(a, sizeof a, t), mha_shape_str(b, sizeof b, &probe), big);
    /* no storage is allocated, but every later reader walks numel() elements: it must be
     * representable */
    if (!shape_numel(&numel, ndim, shape, dtype_size(t->dtype)))
        return mha_fail(MHA_E_SHAPE, "expand: shape %s has too many elements (size overflows)",
                        mha_shape_str(b, sizeof b, &probe));
    mha_status st = mha_share(out, t);
    if (st != MHA_OK) return st;
    out->ndim = ndim;
    for (size_t d = 0; d < ndim; d++) {
        out->shape[d] = shape[d];
        if (d < lead) out->stride[d] = 0;
        else out->stride[d] = t->shape[d - lead] == shape[d] ? t->stride[d - lead] : 0;
    }
    return MHA_OK;
}

/* Views of consecutive pieces of the given sizes along dim; releases what it made on failure. */
static mha_status split_pieces(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t piece,
                               size_t dim, const char *fname) {
    char buf[160];
    size_t size = t->shape[dim];
    size_t count = size == 0 ? 1 : (size + piece - 1) / piece;
    if (count > max_out)
        return mha_fail(MHA_E_ARG, "%s: %zu pieces of dim %zu (size %zu) of %s, room for only %zu", fname, count, dim,
                        size, mha_shape_str(buf, sizeof buf, t), max_out);
    for (size_t i = 0; i < count; i++) {
        size_t start = i * piece, len = size - start < piece ? size - start : piece;
        if (size == 0) start = len = 0;
        mha_status st = mha_narrow(&outs[i], t, dim, start, len);
        if (st != MHA_OK) {
            while (i-- > 0) mha_release(&outs[i]);
            return st;
        }
    }
    *n_out = count;
    return MHA_OK;
}

mha_status mha_split(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t split_size, size_t dim) {
    mha_status st = check_dim(t, dim, t->ndim, "split", "dim");
    if (st != MHA_OK) return st;
    if (split_size == 0) return mha_fail(MHA_E_ARG, "split: split_size must be positive");
    return split_pieces(outs, max_out, n_out, t, split_size, dim, "split");
}

mha_status mha_chunk(mha_tensor *outs, size_t max_out, size_t *n_out, const mha_tensor *t, size_t chunks, size_t dim) {
    mha_status st = check_dim(t, dim, t->ndim, "chunk", "dim");
    if (st != MHA_OK) return st;
    if (chunks == 0) return mha_fail(MHA_E_ARG, "chunk: chunks must be positive");
    size_t size = t->shape[dim];
    size_t piece = size == 0 ? 1 : (size + chunks - 1) / chunks;   /* torch.chunk: ceil(size /
                                                                      chunks) */
    return split_pieces(outs, max_out, n_out, t, piece, dim, "chunk");
}
