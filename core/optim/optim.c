/* core/optim/optim.c - the update rules of torch.optim.SGD, Adam and AdamW
 * (torch 1.13, single-tensor path) and clip_grad_norm_'s scaling, on float arrays, doing torch's
 * float32 operations in torch's order.
 *
 * torch computes these with in-place tensor ops; each line below names the op it mirrors. Where
 * torch fuses a multiply-add (add_(x, alpha=a) is fmadd(x, a, self) in ATen's ufunc/add.h;
 * addcmul_'s self + (value·t1)·t2 is contracted by the compiler that built torch 1.13) so does this
 * file (fmaf); addcdiv_ is self + (value·t1)/t2 as ATen writes it. With these, 20 steps of SGD,
 * Adam and AdamW on the fixture problem give torch's parameters bit for bit
 * (the tests allow rtol 1e-5). Scalars torch gets from Python (lr, betas, 1 − β^step) are computed
 * in double and rounded to float where torch hands them to a float32 kernel. These loops are the
 * plain reference; Adam's also runs 8 floats at a time on a CPU with AVX2 and FMA (adam_avx2): the
 * same correctly rounded operations (fused multiply-add, sqrt, division) in the same order, so the
 * same bits, without a call to libm's fmaf per element (6% of nanoGPT's CPU training step). */
#include "optim/optim.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The loop of mha_adam_step below for i in [0, n - n % 8), without maximize or amsgrad; returns the
 * count done. decoupled: AdamW's param·decay; else g + param·wd when has_wd. */
__attribute__((target("avx2,fma"))) static size_t adam_avx2(float *param, float *exp_avg, float *exp_avg_sq,
                                                            const float *grad, size_t n, bool decoupled, bool has_wd,
                                                            float wd,
                                                            float decay, float beta1, float beta2, float omb1,
                                                            float omb2, float neg_step, float bc2_sqrt, float eps) {
    const __m256 vwd = _mm256_set1_ps(wd), vdecay = _mm256_set1_ps(decay), vb1 = _mm256_set1_ps(beta1);
    const __m256 vb2 = _mm256_set1_ps(beta2), vomb1 = _mm256_set1_ps(omb1), vomb2 = _mm256_set1_ps(omb2);
    const __m256 vneg = _mm256_set1_ps(neg_step), vbc2 = _mm256_set1_ps(bc2_sqrt), veps = _mm256_set1_ps(eps);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(grad + i), p = _mm256_loadu_ps(param + i);
        if (decoupled) p = _mm256_mul_ps(p, vdecay);
        else if (has_wd) g = _mm256_fmadd_ps(p, vwd, g);
        __m256 m = _mm256_fmadd_ps(g, vomb1, _mm256_mul_ps(_mm256_loadu_ps(exp_avg + i), vb1));
        __m256 v = _mm256_fmadd_ps(_mm256_mul_ps(vomb2, g), g, _mm256_mul_ps(_mm256_loadu_ps(exp_avg_sq + i), vb2));
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), vbc2), veps);
        p = _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(vneg, m), denom));
        _mm256_storeu_ps(exp_avg + i, m);
        _mm256_storeu_ps(exp_avg_sq + i, v);
        _mm256_storeu_ps(param + i, p);
    }
    return i;
}

static bool has_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

void mha_sgd_step(float *param, float *buf, const float *grad, size_t n, const mha_sgd_options *opt, bool first) {
    const float wd = (float)opt->weight_decay, momentum = (float)opt->momentum;
    const float keep = (float)(1.0 - opt->dampening), neg_lr = (float)-opt->lr;
    for (size_t i = 0; i < n; i++) {
        float d_p = opt->maximize ? -grad[i] : grad[i];
        if (opt->weight_decay != 0) d_p = fmaf(param[i], wd, d_p);    /* d_p.add(param, alpha=wd) */
        if (opt->momentum != 0) {
            if (first) buf[i] = d_p;                                      /* buf = clone(d_p) */
            /* buf.mul_(m).add_(d_p, alpha=1-damp) */
            else buf[i] = fmaf(d_p, keep, buf[i] * momentum);
            /* d_p.add(buf, alpha=m) or buf */
            d_p = opt->nesterov ? fmaf(buf[i], momentum, d_p) : buf[i];
        }
        param[i] = fmaf(d_p, neg_lr, param[i]);                     /* param.add_(d_p, alpha=-lr) */
    }
}

void mha_adam_step(float *param, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, const float *grad,
                   size_t n, const mha_adam_options *opt, size_t step) {
    const float wd = (float)opt->weight_decay, beta1 = (float)opt->beta1, beta2 = (float)opt->beta2;
    const float one_minus_beta1 = (float)(1.0 - opt->beta1), one_minus_beta2 = (float)(1.0 - opt->beta2);
    const float decay = (float)(1.0 - opt->lr * opt->weight_decay);
    const double bias_correction1 = 1.0 - pow(opt->beta1, (double)step);
    const double bias_correction2 = 1.0 - pow(opt->beta2, (double)step);
    const float neg_step_size = (float)-(opt->lr / bias_correction1);
    const float bias_correction2_sqrt = (float)sqrt(bias_correction2);
    const float eps = (float)opt->eps;
    size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!opt->maximize && !opt->amsgrad && has_avx2_fma())
        i = adam_avx2(param, exp_avg, exp_avg_sq, grad, n, opt->decoupled, opt->weight_decay != 0, wd, decay, beta1,
                      beta2, one_minus_beta1, one_minus_beta2, neg_step_size, bias_correction2_sqrt, eps);
#endif
    for (; i < n; i++) {
        float g = opt->maximize ? -grad[i] : grad[i];
        if (opt->decoupled) param[i] *= decay;                           /* param.mul_(1 - lr*wd) */
        else if (opt->weight_decay != 0) g = fmaf(param[i], wd, g);  /* grad.add(param, alpha=wd) */
        /* m.mul_(b1).add_(g, alpha=1-b1) */
        exp_avg[i] = fmaf(g, one_minus_beta1, exp_avg[i] * beta1);
        /* v.mul_(b2).addcmul_(g, g, value=1-b2): addcmul is self + (value·t1)·t2, which torch's
         * build fuses */
        exp_avg_sq[i] = fmaf(one_minus_beta2 * g, g, exp_avg_sq[i] * beta2);
        float v = exp_avg_sq[i];
        if (opt->amsgrad) {                                   /* torch.maximum(vmax, v, out=vmax) */
            /* NaN propagates, as in torch */
            if (isnan(v) || isnan(max_exp_avg_sq[i])) max_exp_avg_sq[i] = NAN;
            else if (v > max_exp_avg_sq[i]) max_exp_avg_sq[i] = v;
            v = max_exp_avg_sq[i];
        }
        float denom = sqrtf(v) / bias_correction2_sqrt + eps;  /* (v.sqrt() / bc2_sqrt).add_(eps) */
        /* param.addcdiv_(m, denom, value=-step_size) */
        param[i] = param[i] + neg_step_size * exp_avg[i] / denom;
    }
}

/* Over 8 running sums, sum j taking the elements i ≡ j (mod 8), then the sums added in halves
 * (sum j + 4 into sum j, then j + 2, then j + 1): the same order on every CPU and build. The 8 sums
 * sit in four registers of two doubles, which every x86-64 has (a float's square is exact in
 * double, so a fused multiply-add gives the bits too). One sum in sequence waited on each
 * addition's latency: nanoGPT's 0.8M gradients took 1.4% of a training step. */
typedef double sum_v2 __attribute__((vector_size(2 * sizeof(double))));
static sum_v2 squares2(const float *x) { return (sum_v2){(double)x[0] * x[0], (double)x[1] * x[1]}; }
double mha_sum_squares(const float *x, size_t n) {
    sum_v2 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    float rest[8] = {0};   /* the last few, then +0s: the sums past n stay as they were */
    size_t i = 0;
    for (;; i += 8) {
        const float *p = x + i;
        if (i + 8 > n) {
            for (size_t k = 0; i + k < n; k++) rest[k] = x[i + k];
            p = rest;
        }
        s0 += squares2(p), s1 += squares2(p + 2), s2 += squares2(p + 4), s3 += squares2(p + 6);
        if (p == rest) break;
    }
    s0 += s2, s1 += s3;
    s0 += s1;
    return s0[0] + s0[1];
}

float mha_clip_coef(float total_norm, double max_norm) {
    /* max_norm / (total_norm + 1e-6): a number over a tensor is tensor.reciprocal() * number in
     * torch */
    float coef = (1.0f / (total_norm + 1e-6f)) * (float)max_norm;
    return coef < 1.0f ? coef : 1.0f;                                     /* clamp(coef, max=1.0) */
}

/* Four lanes at a time (each product the scalar's): one at a time, 0.8% of nanoGPT's step. */
typedef float scale_v4 __attribute__((vector_size(4 * sizeof(float))));
void mha_scale(float *x, size_t n, float s) {
    const scale_v4 sv = {s, s, s, s};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        scale_v4 v;
        memcpy(&v, x + i, sizeof v);
        v *= sv;
        memcpy(x + i, &v, sizeof v);
    }
    for (; i < n; i++) x[i] *= s;
}

/* ---- the steps on tensors ---- */

/* t is a contiguous float32 tensor of ref's shape (ref itself when ref is NULL), or an error naming
 * fname. */
static mha_status check_operand(const mha_tensor *t, const mha_tensor *ref, const char *fname, const char *what) {
    char a[MHA_SHAPE_BUF], b[MHA_SHAPE_BUF];
    if (!t || !t->storage) return mha_fail(MHA_E_ARG, "%s: the %s is empty (released)", fname, what);
    if (t->dtype != MHA_FLOAT32 || !mha_is_contiguous(t) || (ref && !mha_same_shape(t, ref)))
        return mha_fail(MHA_E_ARG, "%s: the %s %s must be a contiguous float32 tensor%s%s", fname, what,
                        mha_shape_str(a, sizeof a, t), ref ? " of the parameter's shape " : "",
                        ref ? mha_shape_str(b, sizeof b, ref) : "");
    return MHA_OK;
}

mha_status mha_sgd_step_tensor(mha_tensor *param, mha_tensor *buf, const mha_tensor *grad, const mha_sgd_options *opt,
                               bool first) {
    mha_status st = check_operand(param, NULL, "sgd_step", "parameter");
    if (st == MHA_OK) st = check_operand(grad, param, "sgd_step", "gradient");
    if (st == MHA_OK && opt->momentum != 0) st = check_operand(buf, param, "sgd_step", "momentum buffer");
    if (st != MHA_OK) return st;
    float *b = opt->momentum != 0 ? mha_f32(buf) : NULL;
    mha_sgd_step(mha_f32(param), b, mha_f32(grad), mha_numel(param), opt, first);
    mha_bump_version(param);
    if (b) mha_bump_version(buf);
    return MHA_OK;
}

mha_status mha_adam_step_tensor(mha_tensor *param, mha_tensor *exp_avg, mha_tensor *exp_avg_sq,
                                mha_tensor *max_exp_avg_sq, const mha_tensor *grad, const mha_adam_options *opt,
                                size_t step) {
    mha_status st = check_operand(param, NULL, "adam_step", "parameter");
    if (st == MHA_OK) st = check_operand(grad, param, "adam_step", "gradient");
    if (st == MHA_OK) st = check_operand(exp_avg, param, "adam_step", "exp_avg");
    if (st == MHA_OK) st = check_operand(exp_avg_sq, param, "adam_step", "exp_avg_sq");
    if (st == MHA_OK && opt->amsgrad) st = check_operand(max_exp_avg_sq, param, "adam_step", "max_exp_avg_sq");
    if (st != MHA_OK) return st;
    float *vmax = opt->amsgrad ? mha_f32(max_exp_avg_sq) : NULL;
    mha_adam_step(mha_f32(param), mha_f32(exp_avg), mha_f32(exp_avg_sq), vmax, mha_f32(grad), mha_numel(param), opt,
                  step);
    mha_bump_version(param);
    mha_bump_version(exp_avg);
    mha_bump_version(exp_avg_sq);
    if (vmax) mha_bump_version(max_exp_avg_sq);
    return MHA_OK;
}

mha_status mha_scale_tensor(mha_tensor *g, float s) {
    if (!g || !g->storage || g->dtype != MHA_FLOAT32)
        return mha_fail(MHA_E_ARG, "scale: the gradient must be a float32 tensor holding data");
    if (mha_is_contiguous(g)) {
        mha_scale(mha_f32(g), mha_numel(g), s);
        mha_bump_version(g);
        return MHA_OK;
    }
    /* a strided gradient: scale a copy, write it back through a share outside the graph
     * (no refusal) */
    mha_tensor copy = MHA_TENSOR_EMPTY, into = MHA_TENSOR_EMPTY;
    mha_status st = mha_clone(&copy, g);
    if (st == MHA_OK) st = mha_share(&into, g);
    if (st == MHA_OK) {
        mha_scale(mha_f32(&copy), mha_numel(&copy), s);
        st = mha_copy_into(&into, &copy);
    }
    mha_release(&copy);
    mha_release(&into);
    return st;
}
