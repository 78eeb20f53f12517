/* core/attention/multihead.c - nn.MultiheadAttention (batch_first=True) computed in PyTorch 1.13's
 * order: parameters and their initialisation, the forward pass in named passes, and the trace of
 * every intermediate. */
#include "attention/multihead.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "nn/nn.h"
#include "attention/attention_internal.h"
#include "kernels/kernels.h"
#include "attention/sdpa.h"

/* ---------------------------------------------------------------------------------------------
 * nn.MultiheadAttention
 * ------------------------------------------------------------------------------------------- */

const char *const mha_multihead_param_names[] = {
    "in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight",
    "out_proj_weight", "out_proj_bias", "bias_k", "bias_v", NULL,
};

/* The slot of each name in mha_multihead_param_names, in the same order. */
static mha_tensor *param_slot(const mha_multihead *cm, size_t i) {
    mha_multihead *m = (mha_multihead *)cm; /* the caller decides whether to write through it */
    mha_tensor *slots[] = {&m->in_proj_weight, &m->in_proj_bias, &m->q_proj_weight, &m->k_proj_weight,
                           &m->v_proj_weight, &m->out_proj_weight, &m->out_proj_bias, &m->bias_k, &m->bias_v};
    return slots[i];
}

void mha_multihead_release(mha_multihead *m) {
    if (m == NULL) return;
    for (size_t i = 0; mha_multihead_param_names[i]; i++) mha_release(param_slot(m, i));
}

mha_status mha_multihead_init(mha_multihead *m, const mha_multihead_options *opt) {
    static const char *const mname = "MultiheadAttention";
    if (m == NULL || opt == NULL) return mha_fail(MHA_E_ARG, "MultiheadAttention: no module or no options given");
    const size_t E = opt->embed_dim, H = opt->num_heads;
    if (E == 0) return mha_fail(MHA_E_ARG, "MultiheadAttention: embed_dim must be positive, got 0");
    if (H == 0) return mha_fail(MHA_E_ARG, "MultiheadAttention: num_heads must be positive, got 0");
    if (E % H != 0)
        return mha_fail(MHA_E_ARG, "MultiheadAttention: embed_dim %zu is not divisible by num_heads %zu", E, H);
    m->embed_dim = E;
    m->num_heads = H;
    m->head_dim = E / H;
    m->kdim = opt->kdim ? opt->kdim : E;
    m->vdim = opt->vdim ? opt->vdim : E;
    m->bias = opt->bias;
    m->add_bias_kv = opt->add_bias_kv;
    m->add_zero_attn = opt->add_zero_attn;
    m->same_embed_dim = m->kdim == E && m->vdim == E;

    mha_status st = MHA_OK;
    size_t shape[3];
    if (m->same_embed_dim) {
        shape[0] = 3 * E, shape[1] = E;
        if ((st = mha_empty_named(&m->in_proj_weight, MHA_FLOAT32, 2, shape, mname)) != MHA_OK) goto fail;
        if ((st = mha_xavier_uniform_(&m->in_proj_weight, 1.0f)) != MHA_OK) goto fail;
    } else {
        mha_tensor *w[3] = {&m->q_proj_weight, &m->k_proj_weight, &m->v_proj_weight};
        size_t in[3] = {E, m->kdim, m->vdim};
        for (int i = 0; i < 3; i++) {
            shape[0] = E, shape[1] = in[i];
            if ((st = mha_empty_named(w[i], MHA_FLOAT32, 2, shape, mname)) != MHA_OK) goto fail;
            if ((st = mha_xavier_uniform_(w[i], 1.0f)) != MHA_OK) goto fail;
        }
    }
    /* out_proj is an nn.Linear: kaiming_uniform_(a=√5) is U(-1/√E, 1/√E) */
    shape[0] = E, shape[1] = E;
    float bound = (float)(1.0 / sqrt((double)E));
    if ((st = mha_empty_named(&m->out_proj_weight, MHA_FLOAT32, 2, shape, mname)) != MHA_OK) goto fail;
    if ((st = mha_uniform_(&m->out_proj_weight, -bound, bound)) != MHA_OK) goto fail;
    if (m->bias) {
        shape[0] = 3 * E;
        if ((st = mha_empty_named(&m->in_proj_bias, MHA_FLOAT32, 1, shape, mname)) != MHA_OK) goto fail;
        memset(mha_f32(&m->in_proj_bias), 0, 3 * E * sizeof(float));
        shape[0] = E;
        if ((st = mha_empty_named(&m->out_proj_bias, MHA_FLOAT32, 1, shape, mname)) != MHA_OK) goto fail;
        memset(mha_f32(&m->out_proj_bias), 0, E * sizeof(float));
    }
    if (m->add_bias_kv) {
        shape[0] = 1, shape[1] = 1, shape[2] = E;
        if ((st = mha_empty_named(&m->bias_k, MHA_FLOAT32, 3, shape, mname)) != MHA_OK) goto fail;
        if ((st = mha_xavier_normal_(&m->bias_k, 1.0f)) != MHA_OK) goto fail;
        if ((st = mha_empty_named(&m->bias_v, MHA_FLOAT32, 3, shape, mname)) != MHA_OK) goto fail;
        if ((st = mha_xavier_normal_(&m->bias_v, 1.0f)) != MHA_OK) goto fail;
    }
    return MHA_OK;
fail:
    mha_multihead_release(m);
    return st;
}

/* "in_proj_weight, in_proj_bias, ..." : the parameters m has, for messages. */
static void present_names(char *buf, size_t n, const mha_multihead *m) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; mha_multihead_param_names[i] && used < n; i++)
        if (param_slot(m, i)->storage)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", mha_multihead_param_names[i]);
}

mha_status mha_multihead_param(mha_tensor **slot, const mha_multihead *m, const char *name) {
    char have[256];
    if (m == NULL || name == NULL) return mha_fail(MHA_E_ARG, "MultiheadAttention: no module or no parameter name given");
    for (size_t i = 0; mha_multihead_param_names[i]; i++) {
        if (strcmp(name, mha_multihead_param_names[i]) != 0) continue;
        if (param_slot(m, i)->storage == NULL) {
            present_names(have, sizeof have, m);
            return mha_fail(MHA_E_ARG, "MultiheadAttention: this module has no %s (its options leave it out); it has %s",
                            name, have);
        }
        *slot = param_slot(m, i);
        return MHA_OK;
    }
    present_names(have, sizeof have, m);
    return mha_fail(MHA_E_ARG, "MultiheadAttention: no parameter named '%s'; this module has %s", name, have);
}

mha_status mha_multihead_set_param(mha_multihead *m, const char *name, const mha_tensor *value) {
    char sv[MHA_SHAPE_BUF], sp[MHA_SHAPE_BUF];
    mha_tensor *slot;
    mha_status st = mha_multihead_param(&slot, m, name);
    if (st != MHA_OK) return st;
    if (value == NULL || value->storage == NULL)
        return mha_fail(MHA_E_ARG, "MultiheadAttention: %s: the new value is an empty (released) tensor", name);
    if (value->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_DTYPE, "MultiheadAttention: %s must be float32, got a bool tensor %s", name,
                        SHAPE(sv, value));
    if (!mha_same_shape(value, slot))
        return mha_fail(MHA_E_SHAPE, "MultiheadAttention: %s: expected %s, got %s", name, SHAPE(sp, slot),
                        SHAPE(sv, value));
    mha_tensor copy = MHA_TENSOR_EMPTY;
    if ((st = nomem_under(mha_clone(&copy, value), "MultiheadAttention")) != MHA_OK) return st;
    mha_release(slot);
    *slot = copy;
    return MHA_OK;
}

void mha_trace_release(mha_trace *trace) {
    if (trace == NULL) return;
    for (size_t i = 0; i < trace->count; i++) mha_release(&trace->tensors[i]);
    trace->count = 0;
}

const mha_tensor *mha_trace_get(const mha_trace *trace, const char *name) {
    for (size_t i = 0; i < trace->count; i++)
        if (strcmp(trace->names[i], name) == 0) return &trace->tensors[i];
    return NULL;
}

/* Records t under name: batched tensors as they are, unbatched ones without their leading N of
 * 1. */
static mha_status trace_put(mha_trace *trace, const char *name, const mha_tensor *t, bool batched) {
    if (trace == NULL) return MHA_OK;
    if (trace->count >= MHA_TRACE_MAX)
        return mha_fail(MHA_E_ARG, "MultiheadAttention.forward: trace: more than %d entries", MHA_TRACE_MAX);
    mha_tensor *slot = &trace->tensors[trace->count];
    mha_status st = batched ? mha_share(slot, t) : mha_select(slot, t, 0, 0);
    if (st != MHA_OK) return st;
    trace->names[trace->count++] = name;
    return MHA_OK;
}

/* The shape checks of torch's _mha_shape_check and multi_head_attention_forward, with messages that
 * name the argument and its shape (attention_internal.h: the composed forward asks them too). */
mha_status mha_multihead_check(const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                                const mha_tensor *value, const mha_forward_options *opt) {
    static const char *fn = "MultiheadAttention.forward";
    char sq[MHA_SHAPE_BUF], sk[MHA_SHAPE_BUF], sv[MHA_SHAPE_BUF], sm[MHA_SHAPE_BUF];
    mha_status st;
    if (m == NULL || m->out_proj_weight.storage == NULL)
        return mha_fail(MHA_E_ARG, "%s: the module is not initialised (or was released)", fn);
    if ((st = check_float(query, fn, "query")) != MHA_OK || (st = check_float(key, fn, "key")) != MHA_OK ||
        (st = check_float(value, fn, "value")) != MHA_OK)
        return st;
    if (query->ndim != 2 && query->ndim != 3)
        return mha_fail(MHA_E_SHAPE, "%s: query %s must be (N,L,E) batched or (L,E) unbatched", fn, SHAPE(sq, query));
    if (key->ndim != query->ndim || value->ndim != query->ndim)
        return mha_fail(MHA_E_SHAPE, "%s: query %s is %s, so key and value must be %zu-D, got key %s and value %s", fn,
                        SHAPE(sq, query), query->ndim == 3 ? "batched" : "unbatched", query->ndim, SHAPE(sk, key),
                        SHAPE(sv, value));
    const size_t lead = query->ndim == 3; /* 1 when there is a batch dim in front */
    const size_t b = lead;                /* index of the length dim */
    if (query->shape[b + 1] != m->embed_dim)
        return mha_fail(MHA_E_SHAPE, "%s: query %s: last size %zu is not embed_dim %zu", fn, SHAPE(sq, query),
                        query->shape[b + 1], m->embed_dim);
    if (key->shape[b + 1] != m->kdim)
        return mha_fail(MHA_E_SHAPE, "%s: key %s: last size %zu is not kdim %zu", fn, SHAPE(sk, key),
                        key->shape[b + 1], m->kdim);
    if (value->shape[b + 1] != m->vdim)
        return mha_fail(MHA_E_SHAPE, "%s: value %s: last size %zu is not vdim %zu", fn, SHAPE(sv, value),
                        value->shape[b + 1], m->vdim);
    if (key->shape[b] != value->shape[b] || (lead && key->shape[0] != value->shape[0]))
        return mha_fail(MHA_E_SHAPE, "%s: key %s and value %s: batch or length differ", fn, SHAPE(sk, key),
                        SHAPE(sv, value));
    if (lead && query->shape[0] != key->shape[0])
        return mha_fail(MHA_E_SHAPE, "%s: query %s and key %s: batch sizes %zu and %zu differ", fn, SHAPE(sq, query),
                        SHAPE(sk, key), query->shape[0], key->shape[0]);
    const size_t N = lead ? query->shape[0] : 1, L = query->shape[b], S = key->shape[b], H = m->num_heads;
    const mha_tensor *kpm = opt->key_padding_mask, *am = opt->attn_mask;
    if (kpm != NULL) {
        if (kpm->storage == NULL) return mha_fail(MHA_E_ARG, "%s: key_padding_mask is an empty (released) tensor", fn);
        bool ok = lead ? kpm->ndim == 2 && kpm->shape[0] == N && kpm->shape[1] == S : kpm->ndim == 1 && kpm->shape[0] == S;
        if (!ok) {
            if (lead) return mha_fail(MHA_E_SHAPE, "%s: key_padding_mask: expected (%zu,%zu), got %s", fn, N, S, SHAPE(sm, kpm));
            return mha_fail(MHA_E_SHAPE, "%s: key_padding_mask: expected (%zu) for unbatched query %s, got %s", fn, S,
                            SHAPE(sq, query), SHAPE(sm, kpm));
        }
    }
    if (am != NULL) {
        if (am->storage == NULL) return mha_fail(MHA_E_ARG, "%s: attn_mask is an empty (released) tensor", fn);
        bool ok = (am->ndim == 2 && am->shape[0] == L && am->shape[1] == S) ||
                  (am->ndim == 3 && am->shape[0] == N * H && am->shape[1] == L && am->shape[2] == S);
        if (!ok)
            return mha_fail(MHA_E_SHAPE, "%s: attn_mask: expected (%zu,%zu) or (%zu,%zu,%zu), got %s", fn, L, S, N * H, L,
                            S, SHAPE(sm, am));
    }
    return MHA_OK;
}

/* Step 6 of the forward for every (batch, head) slice: what one head reads and writes, as pointers
 * into the forward's tensors. Slices write disjoint parts of concat, weights and the trace, so with
 * MHA_THREADS they are shared out over threads (heads_part) and the output is the same to the
 * bit. */
typedef struct heads_job {
    size_t N, H, L, S, S2, E, D;        /* S2 = S' the keys after bias_k and the zero key */
    float *concat;                      /* (N,L,E) the head outputs side by side */
    const float *q, *q_scaled;          /* Q and Q/√D (N,L,E) */
    const float *k, *v;                 /* K, V with the appended rows (N,S',E) */
    size_t ld_kv;                       /* their row stride: E, or 3E as views of the (N,L,3E)
                                           self-attention projection (project_inputs) */
    const float *am_f;              /* attn_mask (L,S) or (N·H,L,S), float or bool; NULL for none */
    const bool *am_b;
    bool am_per_head;                   /* (N·H,L,S) */
    const float *kpm_f;                 /* key_padding_mask (N,S), float or bool; NULL for none */
    const bool *kpm_b;
    const float *pad_rows;          /* (N,S') the key padding as float rows, for the fused kernel */
    bool causal, fused;
    float *weights;                     /* (N,H,L,S') when kept, else NULL */
    float *scores, *scaled, *masked;    /* (N,H,L,S') for the trace, else NULL */
    /* (nparts,L,S') when neither weights nor fused: one slice per part; (nparts,ROW_BLOCK,S') for
     * the head mean */
    float *scratch;
    float *mean;                   /* (N,L,S') the weights averaged over heads, made by mean_part */
    float *packed;       /* for mean_part, per (batch, head): Kᵀ then V packed (mha_sgemm_pack_b) */
    size_t packed_k, packed_v;          /* their sizes in floats */
    atomic_bool failed;                 /* a part failed: the others stop at their next slice */
} heads_job;

/* Head h of batch n, queries row0 .. row0 + rows - 1, as the plain path reads it: pointers into the
 * forward's tensors and the masks at those rows. */
static mha_head_args head_args(const heads_job *job, size_t n, size_t h, size_t row0, size_t rows) {
    const size_t H = job->H, L = job->L, S = job->S, S2 = job->S2, E = job->E, D = job->D;
    mha_head_args head = {
        .out = job->concat + (n * L + row0) * E + h * D, .ld_out = E,
        .q = job->q_scaled + (n * L + row0) * E + h * D, .ld_q = E,
        .k = job->k + n * S2 * job->ld_kv + h * D, .ld_k = job->ld_kv,
        .v = job->v + n * S2 * job->ld_kv + h * D, .ld_v = job->ld_kv,
        .mask_cols = S, .causal = job->causal, .row0 = row0, .scale = 1.0f, .L = rows, .S = S2, .D = D, .Dv = D,
    };
    if (job->am_f || job->am_b) {
        size_t off = (job->am_per_head ? (n * H + h) * L * S : 0) + row0 * S;
        head.attn.rs = (ptrdiff_t)S, head.attn.cs = 1;
        if (job->am_f) head.attn.f = job->am_f + off;
        else head.attn.b = job->am_b + off;
    }
    if (job->kpm_f || job->kpm_b) {
        head.pad.rs = 0, head.pad.cs = 1;
        if (job->kpm_f) head.pad.f = job->kpm_f + n * S;
        else head.pad.b = job->kpm_b + n * S;
    }
    return head;
}

/* One head h of batch n: the plain attention of mha_attention_plain
 * (scores, softmax, ·V into concat), or the fused kernel's online softmax giving the same head
 * output. */
static mha_status forward_head(const heads_job *job, size_t n, size_t h, float *scratch) {
    const size_t H = job->H, L = job->L, S2 = job->S2, E = job->E, D = job->D;
    const size_t slice = (n * H + h) * L * S2;
    mha_head_args head = head_args(job, n, h, 0, L);
    if (job->fused) {
        bool pad = job->kpm_f || job->kpm_b;
        mha_attn_args args = {
            .out = head.out, .ld_out = E, .q = head.q, .ld_q = E, .k = head.k, .ld_k = head.ld_k, .v = head.v,
            .ld_v = head.ld_v,
            .mask = pad ? job->pad_rows + n * S2 : head.attn.f, .mask_rs = pad ? 0 : head.attn.rs,
            .mask_cs = 1, .causal = job->causal, .scale = 1.0f, .L = L, .S = S2, .D = D, .Dv = D,
        };
        return mha_attention_fused(&args);
    }
    if (job->scores != NULL) { /* raw scores Q·Kᵀ, for the trace only: the output flows from the
                                  scaled ones */
        mha_status st = mha_sgemm(job->scores + slice, S2, job->q + n * L * E + h * D, (ptrdiff_t)E, 1, head.k, 1,
                                  (ptrdiff_t)E, L, S2, D, false);
        if (st != MHA_OK) return st;
    }
    return mha_attention_plain(&head, &mha_attn_fast, job->weights ? job->weights + slice : scratch,
                               job->scaled ? job->scaled + slice : NULL, job->masked ? job->masked + slice : NULL);
}

/* Slices part, part + nparts, ... in (batch, head) order; each polls the interrupt flag first. */
static mha_status heads_part(void *ctx, size_t part, size_t nparts) {
    heads_job *job = ctx;
    float *scratch = job->scratch ? job->scratch + part * job->L * job->S2 : NULL;
    mha_status st = MHA_OK;
    for (size_t slice = part; slice < job->N * job->H && st == MHA_OK; slice += nparts) {
        if (atomic_load(&job->failed)) break; /* the part that failed reports it */
        const size_t n = slice / job->H, h = slice % job->H;
        if (mha_interrupted())
            st = mha_fail(MHA_E_INTERRUPTED, "MultiheadAttention.forward: interrupted at batch %zu, head %zu", n, h);
        else
            st = forward_head(job, n, h, scratch);
    }
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

/* Slices part, part + nparts, ...: each head's Kᵀ and V packed once, for every block of rows of
 * mean_part. */
static mha_status pack_part(void *ctx, size_t part, size_t nparts) {
    heads_job *job = ctx;
    for (size_t slice = part; slice < job->N * job->H; slice += nparts) {
        const size_t n = slice / job->H, h = slice % job->H, ld = job->ld_kv;
        float *kt = job->packed + slice * (job->packed_k + job->packed_v);
        const float *k = job->k + n * job->S2 * ld + h * job->D, *v = job->v + n * job->S2 * ld + h * job->D;
        mha_sgemm_pack_b(kt, k, 1, (ptrdiff_t)ld, job->S2, job->D);                  /* kᵀ (D,S') */
        mha_sgemm_pack_b(kt + job->packed_k, v, (ptrdiff_t)ld, 1, job->D, job->S2);  /* v (S',D) */
    }
    return MHA_OK;
}

/* The weights averaged over heads, without the per-head weights (N,H,L,S'): a block of ROW_BLOCK
 * queries runs through every head in turn, head 0 first, its softmax writing the block's weights
 * into scratch (in L2) and adding them into the mean as it writes them; then the mean block is
 * divided by H. That is the very sum and rounding of averaging the per-head weights after, without
 * writing and reading H·L·S' floats. Parts (threads) take whole blocks, so any split gives the same
 * bits. ROW_BLOCK: a block's weights and mean, 2·48·S' floats, stay in L2 (512 KB) up to S' =
 * 1024. */
enum { ROW_BLOCK = 48 };

static mha_status mean_part(void *ctx, size_t part, size_t nparts) {
    heads_job *job = ctx;
    const size_t L = job->L, S2 = job->S2, H = job->H, blocks = (L + ROW_BLOCK - 1) / ROW_BLOCK;
    float *weights = job->scratch + part * ROW_BLOCK * S2;
    mha_status st = MHA_OK;
    for (size_t unit = part; unit < job->N * blocks && st == MHA_OK; unit += nparts) {
        const size_t n = unit / blocks, row0 = unit % blocks * ROW_BLOCK;
        const size_t rows = L - row0 < ROW_BLOCK ? L - row0 : ROW_BLOCK;
        float *mean = job->mean + (n * L + row0) * S2;
        memset(mean, 0, rows * S2 * sizeof *mean);
        for (size_t h = 0; h < H && st == MHA_OK; h++) {
            if (atomic_load(&job->failed)) return MHA_OK; /* the part that failed reports it */
            if (mha_interrupted()) {
                st = mha_fail(MHA_E_INTERRUPTED, "MultiheadAttention.forward: interrupted at batch %zu, head %zu", n, h);
                break;
            }
            mha_head_args head = head_args(job, n, h, row0, rows);
            head.weights_sum = mean, head.ld_sum = S2;
            head.k_packed = job->packed + (n * H + h) * (job->packed_k + job->packed_v);
            head.v_packed = head.k_packed + job->packed_k;
            st = mha_attention_plain(&head, &mha_attn_fast, weights, NULL, NULL);
        }
        for (size_t x = 0; st == MHA_OK && x < rows * S2; x++) mean[x] /= (float)H;
    }
    if (st != MHA_OK) atomic_store(&job->failed, true);
    return st;
}

/* One forward pass in the making: its sizes, its choices, and every tensor it makes (t[], by name)
 * so one exit releases them all. The passes below each fill some of t[] from what earlier ones
 * left. */
enum { IN_Q, IN_K, IN_V, W_Q, W_K, W_V, B_Q, B_K, B_V, Q, K, V, KX, VX, QS, SCORES, SCALED, MASKED, WEIGHTS,
       CONCAT, OUTPUT, AVG, HEADS, AM, KPM, PAD_ROWS, QKV, NTENSORS };
typedef struct forward_pass {
    const mha_multihead *m;
    const mha_forward_options *opt;
    mha_trace *trace;                     /* NULL: nothing recorded */
    const char *fn;          /* the name allocation failures carry: forward, or trace when traced */
    bool batched, keep_weights, fused;
    bool mean_rows;                      /* the head mean made block of rows by block (mean_part) */
    size_t N, H, L, S, S2, E, D;          /* S2 = S' the keys after bias_k and the zero key */
    mha_tensor t[NTENSORS];
    /* (nparts,L,S') scores slices, when neither weights nor fused; (nparts,ROW_BLOCK,S') with
     * mean_rows */
    float *scratch;
    float *packed;                    /* with mean_rows: every head's Kᵀ and V packed (pack_part) */
    size_t scratch_bytes, nparts;
    size_t packed_k, packed_v, packed_bytes; /* packed: floats per head of Kᵀ and of V, bytes in
                                                all */
} forward_pass;

/* The bytes of the attention weights the plan forms: the per-head weights (N,H,L,S') when it keeps
 * them, their head mean (N,L,S') when only that is returned, 0 when nobody looks at them. */
static double forward_weights_bytes(const forward_pass *f) {
    const double LS = (double)f->N * (double)f->L * (double)f->S2 * sizeof(float);
    return f->keep_weights ? LS * (double)f->H : f->mean_rows ? LS : 0.0;
}

/* Every byte the passes below allocate, pass by pass (mha_multihead_forward_bytes). */
static double forward_total_bytes(const forward_pass *f, bool want_weights) {
    const double N = (double)f->N, H = (double)f->H, L = (double)f->L, S = (double)f->S, S2 = (double)f->S2;
    const double E = (double)f->E, fl = sizeof(float);
    const mha_tensor *am = f->opt->attn_mask, *kpm = f->opt->key_padding_mask;
    double bytes = (N * L * E + 2 * N * S * E) * fl;                  /* pass 1: Q, K, V */
    if (f->S2 > f->S) bytes += 2 * N * S2 * E * fl;              /*   K, V with the appended rows */
    bytes += N * L * E * fl;                                          /* pass 2: Q/√D */
    bytes += forward_weights_bytes(f);                      /*   weights (N,H,L,S') or their mean */
    if (f->trace) bytes += 3 * N * H * L * S2 * fl;                   /*   the trace's scores */
    /* block, K, V */
    if (f->mean_rows) bytes += (double)f->nparts * ROW_BLOCK * S2 * fl + (double)f->packed_bytes;
    else if (!f->keep_weights && !f->fused && f->L * f->S2 > 0) bytes += (double)f->nparts * L * S2 * fl; /* scratch */
    bytes += N * L * E * fl;                                          /*   concat */
    const mha_tensor *masks[2] = {am, kpm};                  /* pass 3: masks copied when strided */
    for (int i = 0; i < 2; i++)
        if (masks[i] && !mha_is_contiguous(masks[i]))
            bytes += (double)mha_numel(masks[i]) * (masks[i]->dtype == MHA_BOOL ? sizeof(bool) : fl);
    if (kpm && f->fused) bytes += N * S2 * fl;                        /*   key padding rows */
    bytes += N * L * E * fl;                                          /* pass 5: output */
    /* pass 6: the mean */
    if (want_weights && f->opt->average_attn_weights && !f->mean_rows) bytes += N * L * S2 * fl;
    return bytes;
}

/* pass 1: the inputs as (N,X,·) (an unbatched input is a batch of one), then the in-projection
 * Q = query·W_qᵀ + b_q (W_q the first E rows of in_proj_weight, or q_proj_weight), likewise K and
 * V. Self-attention with one in_proj_weight, untraced: one product x·W_inᵀ + b_in (N,L,3E), Q, K
 * and V its column thirds (row stride 3E) - each element the same dot product in the same order as
 * in three products, so the same bits, one pass over x and one call instead of three. */
static mha_status project_inputs(forward_pass *f, const mha_tensor *const inputs[3]) {
    const mha_multihead *m = f->m;
    mha_tensor *t = f->t;
    mha_status st;
    for (int i = 0; i < 3; i++) {
        st = f->batched ? mha_share(&t[IN_Q + i], inputs[i]) : mha_unsqueeze(&t[IN_Q + i], inputs[i], 0);
        if (st != MHA_OK) return st;
    }
    if ((st = trace_put(f->trace, "query", &t[IN_Q], f->batched)) != MHA_OK ||
        (st = trace_put(f->trace, "key", &t[IN_K], f->batched)) != MHA_OK ||
        (st = trace_put(f->trace, "value", &t[IN_V], f->batched)) != MHA_OK)
        return st;
    const bool self = f->trace == NULL && mha_self_attention(m, inputs[0], inputs[1], inputs[2]);
    if (self) {
        st = mha_linear(&t[QKV], &t[IN_Q], &m->in_proj_weight, m->bias ? &m->in_proj_bias : NULL);
        for (int i = 0; st == MHA_OK && i < 3; i++) st = mha_narrow(&t[Q + i], &t[QKV], 2, (size_t)i * f->E, f->E);
        if ((st = nomem_under(st, f->fn)) != MHA_OK) return st;
    }
    for (int i = 0; !self && i < 3; i++) {
        const size_t E = f->E;
        if (m->same_embed_dim) st = mha_narrow(&t[W_Q + i], &m->in_proj_weight, 0, (size_t)i * E, E);
        else st = mha_share(&t[W_Q + i], i == 0 ? &m->q_proj_weight : i == 1 ? &m->k_proj_weight : &m->v_proj_weight);
        if (st == MHA_OK && m->bias) st = mha_narrow(&t[B_Q + i], &m->in_proj_bias, 0, (size_t)i * E, E);
        if (st == MHA_OK) st = mha_linear(&t[Q + i], &t[IN_Q + i], &t[W_Q + i], m->bias ? &t[B_Q + i] : NULL);
        st = nomem_under(st, f->fn);
        if (st != MHA_OK) return st;
    }
    if ((st = trace_put(f->trace, "Q", &t[Q], f->batched)) != MHA_OK ||
        (st = trace_put(f->trace, "K", &t[K], f->batched)) != MHA_OK ||
        (st = trace_put(f->trace, "V", &t[V], f->batched)) != MHA_OK)
        return st;
    /* bias_k/bias_v appended as one more key and value, then the zero key and value
     * (torch appends the zeros after the head split; per head it is the same row) */
    if ((st = mha_append_kv_rows(&t[KX], &t[K], m->add_bias_kv ? &m->bias_k : NULL, m->add_zero_attn, false)) != MHA_OK)
        return nomem_under(st, f->fn);
    return nomem_under(mha_append_kv_rows(&t[VX], &t[V], m->add_bias_kv ? &m->bias_v : NULL, m->add_zero_attn, false),
                       f->fn);
}

/* "28.8 GB": a byte count for people (decimal units, as memory is sold), one decimal, rounded
 * down. */
static void human_bytes(char *buf, size_t n, double bytes) {
    if (bytes >= 1e12) snprintf(buf, n, "%.1f TB", floor(bytes / 1e11) / 10);
    else if (bytes >= 1e9) snprintf(buf, n, "%.1f GB", floor(bytes / 1e8) / 10);
    else snprintf(buf, n, "%.1f MB", floor(bytes / 1e5) / 10);
}

/* The weights did not fit: the per-head weights (N,H,L,S') or their head mean (N,L,S'). They grow
 * as L·S', and need_weights asks for them. Says how much they need and how to do without them. */
static mha_status weights_failed(const forward_pass *f, mha_status st) {
    if (st != MHA_E_NOMEM) return st;
    char shape[MHA_SHAPE_BUF], size[32];
    /* only its shape, to print */
    mha_tensor heads = {.ndim = 4, .shape = {f->N, f->H, f->L, f->S2}};
    mha_tensor mean = {.ndim = 3, .shape = {f->N, f->L, f->S2}};
    human_bytes(size, sizeof size, forward_weights_bytes(f));
    return mha_fail(st, "%s: out of memory: the %s%s attention weights need %s; pass need_weights=false to use the "
                        "fused path, which never forms them", f->fn, SHAPE(shape, f->mean_rows ? &mean : &heads),
                    f->mean_rows ? " head-averaged" : "", size);
}

/* pass 2: the head split's buffers. q scaled before q·kᵀ, as torch 1.13 does: q_scaled = Q / √D;
 * the per-head weights (N,H,L,S') and the trace's scores; the (L,S') scratch; concat (N,L,E) where
 * the heads write their outputs side by side (the head split itself is a matter of pointers:
 * forward_head). */
static mha_status split_heads_buffers(forward_pass *f) {
    mha_tensor *t = f->t;
    const size_t N = f->N, L = f->L, E = f->E, S2 = f->S2;
    mha_status st;
    if ((st = mha_empty_named(&t[QS], MHA_FLOAT32, 3, t[Q].shape, f->fn)) != MHA_OK) return st;
    const float root = (float)sqrt((double)f->D);
    const float *src = mha_f32(&t[Q]);
    const size_t ld_q = (size_t)t[Q].stride[1]; /* E, or 3E: a view of the (N,L,3E) projection */
    float *dst = mha_f32(&t[QS]);
    for (size_t row = 0; row < N * L; row++)
        for (size_t e = 0; e < E; e++) dst[row * E + e] = src[row * ld_q + e] / root;

    size_t shape4[4] = {N, f->H, L, S2};
    if (f->keep_weights && (st = mha_empty_named(&t[WEIGHTS], MHA_FLOAT32, 4, shape4, f->fn)) != MHA_OK)
        return f->trace ? st : weights_failed(f, st);
    if (f->trace != NULL) {
        if ((st = mha_empty_named(&t[SCORES], MHA_FLOAT32, 4, shape4, f->fn)) != MHA_OK ||
            (st = mha_empty_named(&t[SCALED], MHA_FLOAT32, 4, shape4, f->fn)) != MHA_OK ||
            (st = mha_empty_named(&t[MASKED], MHA_FLOAT32, 4, shape4, f->fn)) != MHA_OK)
            return st;
    }
    if (f->mean_rows) { /* the mean (N,L,S'), and one block of rows' weights per part */
        size_t shape_mean[3] = {N, L, S2};
        if ((st = mha_empty_named(&t[AVG], MHA_FLOAT32, 3, shape_mean, f->fn)) != MHA_OK) return weights_failed(f, st);
        f->scratch_bytes = f->nparts * ROW_BLOCK * S2 * sizeof(float);
        if (f->scratch_bytes > 0 && (f->scratch = mha_alloc(f->scratch_bytes)) == NULL) {
            f->scratch_bytes = 0;
            return mha_fail(MHA_E_NOMEM, "%s: out of memory allocating %zu bytes for the weights of %zu queries "
                            "(%zu keys) at a time", f->fn, f->nparts * ROW_BLOCK * S2 * sizeof(float),
                            (size_t)ROW_BLOCK, S2);
        }
        if (f->packed_bytes > 0 && (f->packed = mha_alloc(f->packed_bytes)) == NULL) {
            size_t bytes = f->packed_bytes;
            f->packed_bytes = 0;
            return mha_fail(MHA_E_NOMEM, "%s: out of memory allocating %zu bytes for the packed keys and values",
                            f->fn, bytes);
        }
    } else if (!f->keep_weights && !f->fused && L * S2 > 0) { /* one (L,S') slice per part, reused
                                                                 for each of its heads */
        f->scratch_bytes = f->nparts * L * S2 * sizeof(float);
        if ((f->scratch = mha_alloc(f->scratch_bytes)) == NULL) {
            f->scratch_bytes = 0;
            return mha_fail(MHA_E_NOMEM, "%s: out of memory allocating %zu bytes for the (%zu,%zu) scores of %zu "
                            "heads at a time", f->fn, f->nparts * L * S2 * sizeof(float), L, S2, f->nparts);
        }
    }
    size_t shape3[3] = {N, L, E};
    return mha_empty_named(&t[CONCAT], MHA_FLOAT32, 3, shape3, f->fn);
}

/* pass 3: attention, per batch and head: the masks read where the caller left them, then the plain
 * attention of mha_attention_plain (scores, softmax, ·V into concat), or the fused kernel's online
 * softmax giving the same head output (forward_head), the slices shared out over threads.
 * attn_mask (L,S) or (N·H,L,S) and key_padding_mask (N,S) add up (bool: true -> -inf); the appended
 * keys are never masked (torch pads the masks with 0). The fused kernel gets the key padding as
 * float rows (N,S'), the padding columns 0. */
static mha_status attend(forward_pass *f) {
    mha_tensor *t = f->t;
    const mha_tensor *am = f->opt->attn_mask, *kpm = f->opt->key_padding_mask;
    const size_t N = f->N, S = f->S, S2 = f->S2;
    mha_status st;
    if (am && (st = mha_contiguous_named(&t[AM], am, f->fn)) != MHA_OK) return st;
    if (kpm && (st = mha_contiguous_named(&t[KPM], kpm, f->fn)) != MHA_OK) return st;
    if (kpm && f->fused) {
        size_t shape_rows[2] = {N, S2};
        if ((st = mha_empty_named(&t[PAD_ROWS], MHA_FLOAT32, 2, shape_rows, f->fn)) != MHA_OK) return st;
        float *rows = mha_f32(&t[PAD_ROWS]);
        for (size_t n = 0; n < N; n++)
            for (size_t j = 0; j < S2; j++)
                rows[n * S2 + j] = j >= S ? 0.0f
                                   : kpm->dtype == MHA_FLOAT32 ? mha_f32(&t[KPM])[n * S + j]
                                   : mha_bool(&t[KPM])[n * S + j] ? -INFINITY : 0.0f;
    }
    heads_job job = {
        .N = N, .H = f->H, .L = f->L, .S = S, .S2 = S2, .E = f->E, .D = f->D,
        .concat = mha_f32(&t[CONCAT]), .q = mha_f32(&t[Q]), .q_scaled = mha_f32(&t[QS]),
        .k = mha_f32(&t[KX]), .v = mha_f32(&t[VX]), .ld_kv = (size_t)t[KX].stride[1],
        .am_f = am && am->dtype == MHA_FLOAT32 ? mha_f32(&t[AM]) : NULL,
        .am_b = am && am->dtype == MHA_BOOL ? mha_bool(&t[AM]) : NULL, .am_per_head = am && am->ndim == 3,
        .kpm_f = kpm && kpm->dtype == MHA_FLOAT32 ? mha_f32(&t[KPM]) : NULL,
        .kpm_b = kpm && kpm->dtype == MHA_BOOL ? mha_bool(&t[KPM]) : NULL,
        .pad_rows = kpm && f->fused ? mha_f32(&t[PAD_ROWS]) : NULL,
        .causal = f->opt->is_causal, .fused = f->fused,
        .weights = f->keep_weights ? mha_f32(&t[WEIGHTS]) : NULL,
        .scores = f->trace ? mha_f32(&t[SCORES]) : NULL, .scaled = f->trace ? mha_f32(&t[SCALED]) : NULL,
        .masked = f->trace ? mha_f32(&t[MASKED]) : NULL, .scratch = f->scratch,
        .mean = f->mean_rows ? mha_f32(&t[AVG]) : NULL,
        .packed = f->packed, .packed_k = f->packed_k, .packed_v = f->packed_v,
    };
    atomic_init(&job.failed, false);
    if (N * f->L == 0) return MHA_OK;   /* no query: N·H empty heads are not walked */
    if (f->mean_rows && (st = mha_run_parts(pack_part, &job, f->nparts)) != MHA_OK) return st;
    return nomem_under(mha_run_parts(f->mean_rows ? mean_part : heads_part, &job, f->nparts), f->fn);
}

/* pass 4 (merge) needs nothing: the heads wrote concat (N,L,E) side by side. pass 5:
 * out-projection, output = concat·W_oᵀ + b_o. */
static mha_status project_output(forward_pass *f) {
    const mha_multihead *m = f->m;
    return nomem_under(mha_linear(&f->t[OUTPUT], &f->t[CONCAT], &m->out_proj_weight, m->bias ? &m->out_proj_bias : NULL),
                       f->fn);
}

/* The trace's entries after the projections: the heads as views (N,H,X,D), the scores and weights,
 * the head outputs, concat and the output. */
static mha_status record_trace(forward_pass *f) {
    mha_tensor *t = f->t;
    mha_trace *trace = f->trace;
    const bool batched = f->batched;
    const char *names[3] = {"Q_heads", "K_heads", "V_heads"};
    const int from[3] = {Q, KX, VX};
    mha_status st;
    for (int i = 0; i < 3; i++) {
        st = mha_split_heads(&t[HEADS], &t[from[i]], f->H, false);
        if (st == MHA_OK) st = trace_put(trace, names[i], &t[HEADS], batched);
        mha_release(&t[HEADS]);
        if (st != MHA_OK) return st;
    }
    if ((st = trace_put(trace, "scores", &t[SCORES], batched)) != MHA_OK ||
        (st = trace_put(trace, "scaled_scores", &t[SCALED], batched)) != MHA_OK ||
        (st = trace_put(trace, "masked_scores", &t[MASKED], batched)) != MHA_OK ||
        (st = trace_put(trace, "weights", &t[WEIGHTS], batched)) != MHA_OK)
        return st;
    st = mha_split_heads(&t[HEADS], &t[CONCAT], f->H, false);
    if (st == MHA_OK) st = trace_put(trace, "head_outputs", &t[HEADS], batched);
    if (st != MHA_OK || (st = trace_put(trace, "concat", &t[CONCAT], batched)) != MHA_OK)
        return st;
    return trace_put(trace, "output", &t[OUTPUT], batched);
}

/* pass 6: the weights returned: mean over heads (torch: sum over heads / H) into t[AVG], summed in
 * float head after head (mha_head_mean), or every head. Parts (threads) take whole stretches, so
 * any split gives the same bits. *ret points at the tensor to hand back. */
typedef struct average_job {
    float *avg;        /* (N,L,S') */
    const float *w;    /* (N,H,L,S') */
    size_t H, LS, stretches;
} average_job;

static mha_status average_part(void *ctx, size_t part, size_t nparts) {
    const average_job *job = ctx;
    mha_head_mean(job->avg, job->w, job->H, job->LS, job->stretches * part / nparts,
                  job->stretches * (part + 1) / nparts, false);
    return MHA_OK;
}

static mha_status average_weights(forward_pass *f, const mha_tensor **ret) {
    mha_tensor *t = f->t;
    *ret = f->mean_rows ? &t[AVG] : &t[WEIGHTS];
    if (!f->opt->average_attn_weights || f->mean_rows) return MHA_OK; /* mean_part made it
                                                                         already */
    const size_t N = f->N, H = f->H, LS = f->L * f->S2;
    size_t shape_avg[3] = {N, f->L, f->S2};
    mha_status st = mha_empty_named(&t[AVG], MHA_FLOAT32, 3, shape_avg, f->fn);
    if (st != MHA_OK) return st;
    average_job job = {mha_f32(&t[AVG]), mha_f32(&t[WEIGHTS]), H, LS, N * mha_head_stretches(LS)};
    /* a pass bound by memory, not arithmetic: a float read here is weighed as 8 FLOPs of the matrix
     * kernels, so that from L = 2048 (8 heads, 134 MB read) on it is split over the threads */
    const size_t nparts = mha_kernels_parts(job.stretches, 8.0 * (double)N * (double)H * (double)LS);
    if ((st = mha_run_parts(average_part, &job, nparts)) != MHA_OK) return st;
    *ret = &t[AVG];
    return MHA_OK;
}

/* The sizes and choices of a forward, from checked arguments. */
static void forward_plan(forward_pass *f, const mha_multihead *m, const mha_tensor *query, const mha_tensor *key,
                         const mha_forward_options *opt, bool want_weights, mha_trace *trace) {
    f->m = m, f->opt = opt, f->trace = trace;
    f->fn = trace ? "MultiheadAttention.trace" : "MultiheadAttention.forward";
    f->batched = query->ndim == 3;
    f->E = m->embed_dim, f->H = m->num_heads, f->D = m->head_dim;
    f->N = f->batched ? query->shape[0] : 1, f->L = query->shape[f->batched], f->S = key->shape[f->batched];
    f->S2 = f->S + m->add_bias_kv + m->add_zero_attn;
    /* Only the head mean returned (torch's default), and more than one head to average: the mean is
     * made block of rows by block and the per-head weights never exist (mean_part). With one head
     * the mean is that head's weights, which the plain path writes as they are. */
    f->mean_rows = want_weights && opt->average_attn_weights && trace == NULL && f->H > 1;
    f->keep_weights = (want_weights && !f->mean_rows) || trace != NULL;
    /* when nobody looks at the (L,S') weights, the fused kernel runs wherever the masks let it */
    f->fused = !f->keep_weights && !f->mean_rows && mha_masks_fuse(opt, f->S2 > f->S);
    /* the (batch, head) slices - or with mean_rows the (batch, block of rows) units - shared out
     * over threads (MHA_THREADS), by the FLOPs of q·kᵀ and weights·v */
    const size_t units = f->mean_rows ? f->N * ((f->L + ROW_BLOCK - 1) / ROW_BLOCK) : f->N * f->H;
    f->nparts = mha_kernels_parts(units, 4.0 * (double)(f->N * f->H) * (double)f->L * (double)f->S2 * (double)f->D);
    for (int i = 0; i < NTENSORS; i++) f->t[i] = MHA_TENSOR_EMPTY;
    f->scratch = NULL, f->scratch_bytes = 0;
    f->packed = NULL, f->packed_k = f->packed_v = f->packed_bytes = 0;
    if (f->mean_rows) {
        f->packed_k = mha_sgemm_packed_b_size(f->S2, f->D), f->packed_v = mha_sgemm_packed_b_size(f->D, f->S2);
        f->packed_bytes = f->N * f->H * (f->packed_k + f->packed_v) * sizeof(float);
    }
}

static void forward_release(forward_pass *f) {
    for (int i = 0; i < NTENSORS; i++) mha_release(&f->t[i]);
    mha_free(f->scratch, f->scratch_bytes);
    mha_free(f->packed, f->packed_bytes);
}

mha_status mha_multihead_forward(mha_tensor *out, mha_tensor *weights, const mha_multihead *m,
                                 const mha_tensor *query, const mha_tensor *key, const mha_tensor *value,
                                 const mha_forward_options *opt, mha_trace *trace) {
    const mha_forward_options defaults = {.need_weights = true, .average_attn_weights = true};
    if (opt == NULL) opt = &defaults;
    mha_status st = mha_multihead_check(m, query, key, value, opt);
    if (st != MHA_OK) return st;
    const bool want_weights = opt->need_weights && weights != NULL;
    forward_pass f;
    forward_plan(&f, m, query, key, opt, want_weights, trace);
    const mha_tensor *const inputs[3] = {query, key, value};
    const mha_tensor *ret = NULL;
    mha_forward_options as_rule;   /* a bool causal mask as is_causal; the plan stays opt's */
    if ((st = project_inputs(&f, inputs)) != MHA_OK) goto fail;
    f.opt = mha_mask_as_rule(opt, f.S2 > f.S, &f.t[Q], &f.t[K], f.D, &as_rule);
    if ((st = split_heads_buffers(&f)) != MHA_OK ||
        (st = attend(&f)) != MHA_OK || (st = project_output(&f)) != MHA_OK ||
        (trace != NULL && (st = record_trace(&f)) != MHA_OK) ||
        (want_weights && (st = average_weights(&f, &ret)) != MHA_OK))
        goto fail;
    if (want_weights && (st = f.batched ? mha_share(weights, ret) : mha_select(weights, ret, 0, 0)) != MHA_OK) goto fail;
    if ((st = f.batched ? mha_share(out, &f.t[OUTPUT]) : mha_select(out, &f.t[OUTPUT], 0, 0)) != MHA_OK) {
        if (want_weights) mha_release(weights);
        goto fail;
    }
    forward_release(&f);
    return MHA_OK;
fail:
    forward_release(&f);
    mha_trace_release(trace);
    return st;
}

mha_status mha_multihead_forward_bytes(mha_forward_bytes *need, const mha_multihead *m, const mha_tensor *query,
                                       const mha_tensor *key, const mha_tensor *value,
                                       const mha_forward_options *opt, bool weights_out, bool traced) {
    const mha_forward_options defaults = {.need_weights = true, .average_attn_weights = true};
    if (opt == NULL) opt = &defaults;
    mha_status st = mha_multihead_check(m, query, key, value, opt);
    if (st != MHA_OK) return st;
    mha_trace plan_only; /* forward_plan reads only whether there is a trace */
    const bool want_weights = opt->need_weights && weights_out;
    forward_pass f;
    forward_plan(&f, m, query, key, opt, want_weights, traced ? &plan_only : NULL);
    need->weights = forward_weights_bytes(&f);
    need->total = forward_total_bytes(&f, want_weights);
    return MHA_OK;
}
