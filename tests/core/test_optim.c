/* tests/core/test_optim.c - the update rules of core/optim/optim.c against torch 1.13's torch.optim: for each
 * configuration in tests/fixtures/optim/cases.txt, 20 steps fed the gradients torch's autograd gave
 * (so no autograd is needed here) must end at torch's parameters (rtol 1e-5); clip_grad_norm_'s total
 * norm and clipped gradients must equal torch's (rtol 1e-6). */

#include "check.h"
#include "optim/optim.h"

#include <stdlib.h>
#include <string.h>

#define CASES "tests/fixtures/optim/cases.txt"
#define STEPS 20
#define N_W 12  /* W (3,4) */
#define N_B 3   /* b (3) */

/* ---- reading cases.txt ---- */

/* n floats after the word count at p; false when the count differs from n. */
static int read_floats(const char *p, float *out, size_t n) {
    char *end;
    size_t count = strtoull(p, &end, 10);
    if (count != n) return 0;
    for (size_t i = 0; i < n; i++) out[i] = strtof(end, &end);
    return 1;
}

/* value of "key=" in a case line as a double; def when absent. */
static double option(const char *line, const char *key, double def) {
    char pattern[40];
    snprintf(pattern, sizeof pattern, " %s=", key);
    const char *p = strstr(line, pattern);
    return p ? strtod(p + strlen(pattern), NULL) : def;
}

typedef struct optim_case {
    char name[64], kind[16];
    char line[512];
    float init_W[N_W], init_b[N_B], final_W[N_W], final_b[N_B];
    float grad_W[STEPS][N_W], grad_b[STEPS][N_B];
} optim_case;

/* Runs one case through our kernels; checks the final parameters. */
static void run_case(const optim_case *c) {
    float W[N_W], b[N_B];
    float m_W[N_W] = {0}, m_b[N_B] = {0}, v_W[N_W] = {0}, v_b[N_B] = {0}, vmax_W[N_W] = {0}, vmax_b[N_B] = {0};
    memcpy(W, c->init_W, sizeof W);
    memcpy(b, c->init_b, sizeof b);
    bool sgd = strcmp(c->kind, "sgd") == 0;
    mha_sgd_options so = {option(c->line, "lr", 0), option(c->line, "momentum", 0), option(c->line, "dampening", 0),
                          option(c->line, "weight_decay", 0), option(c->line, "nesterov", 0) != 0,
                          option(c->line, "maximize", 0) != 0};
    mha_adam_options ao = {option(c->line, "lr", 0), option(c->line, "beta1", 0), option(c->line, "beta2", 0),
                           option(c->line, "eps", 0), option(c->line, "weight_decay", 0),
                           option(c->line, "amsgrad", 0) != 0, option(c->line, "maximize", 0) != 0,
                           strcmp(c->kind, "adamw") == 0};
    for (size_t step = 1; step <= STEPS; step++) {
        if (sgd) {
            mha_sgd_step(W, so.momentum != 0 ? m_W : NULL, c->grad_W[step - 1], N_W, &so, step == 1);
            mha_sgd_step(b, so.momentum != 0 ? m_b : NULL, c->grad_b[step - 1], N_B, &so, step == 1);
        } else {
            mha_adam_step(W, m_W, v_W, ao.amsgrad ? vmax_W : NULL, c->grad_W[step - 1], N_W, &ao, step);
            mha_adam_step(b, m_b, v_b, ao.amsgrad ? vmax_b : NULL, c->grad_b[step - 1], N_B, &ao, step);
        }
    }
    char name[96];
    snprintf(name, sizeof name, "%s_W_after_20_steps", c->name);
    check_close_array(name, W, c->final_W, N_W, 1e-5, 1e-7);
    snprintf(name, sizeof name, "%s_b_after_20_steps", c->name);
    check_close_array(name, b, c->final_b, N_B, 1e-5, 1e-7);
}

/* clip MAX TOTAL 15 grads... 15 clipped...: our norm and scaling against torch's clip_grad_norm_. */
static void run_clip(const char *line, size_t index) {
    char *p;
    double max_norm = strtod(line + 5, &p);
    double want_total = strtod(p, &p);
    float grads[N_W + N_B], want[N_W + N_B];
    if (!read_floats(p, grads, N_W + N_B)) { CHECK("clip_parse", 0, "bad clip line %zu", index); return; }
    for (size_t i = 0; i < 1 + N_W + N_B; i++) strtod(p, &p); /* past the count and the grads */
    if (!read_floats(p, want, N_W + N_B)) { CHECK("clip_parse", 0, "bad clip line %zu", index); return; }
    /* torch: the norm of each gradient, then the norm of those norms */
    float norm_W = (float)sqrt(mha_sum_squares(grads, N_W)), norm_b = (float)sqrt(mha_sum_squares(grads + N_W, N_B));
    float total = (float)sqrt((double)norm_W * norm_W + (double)norm_b * norm_b);
    float coef = mha_clip_coef(total, max_norm);
    mha_scale(grads, N_W, coef);
    mha_scale(grads + N_W, N_B, coef);
    char name[64];
    snprintf(name, sizeof name, "clip_%zu_total_norm", index);
    CHECK(name, check_close_value(total, want_total, 1e-6, 0), "total %.9g, torch %.9g", (double)total, want_total);
    snprintf(name, sizeof name, "clip_%zu_grads", index);
    check_close_array(name, grads, want, N_W + N_B, 1e-6, 1e-9);
}

/* The rules in closed form on one element, where the arithmetic is easy to follow by hand. */
static void test_by_hand(void) {
    float p = 1.0f, buf = 0, g = 0.5f;
    mha_sgd_options sgd = {.lr = 0.1, .momentum = 0.9};
    mha_sgd_step(&p, &buf, &g, 1, &sgd, true);  /* buf = 0.5; p = 1 - 0.1·0.5 */
    mha_sgd_step(&p, &buf, &g, 1, &sgd, false); /* buf = 0.9·0.5 + 0.5 = 0.95; p -= 0.095 */
    CHECK("sgd_momentum_by_hand", check_close_value(p, 1.0 - 0.05 - 0.095, 1e-6, 0) && check_close_value(buf, 0.95, 1e-6, 0),
          "p %.9g buf %.9g", (double)p, (double)buf);
    /* Adam's first step moves each parameter by lr·sign(g) (m̂ = g, v̂ = g², eps negligible) */
    float q[2] = {0.0f, 0.0f}, m[2] = {0}, v[2] = {0}, gq[2] = {3.0f, -0.001f};
    mha_adam_options adam = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    mha_adam_step(q, m, v, NULL, gq, 2, &adam, 1);
    CHECK("adam_first_step_is_lr_sign", check_close_value(q[0], -0.01, 1e-5, 0) && check_close_value(q[1], 0.01, 1e-4, 0),
          "%.9g %.9g", (double)q[0], (double)q[1]);
    /* AdamW with a zero gradient only decays: p·(1 - lr·wd) */
    float r = 2.0f, mr = 0, vr = 0, zero = 0;
    mha_adam_options adamw = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5, .decoupled = true};
    mha_adam_step(&r, &mr, &vr, NULL, &zero, 1, &adamw, 1);
    CHECK("adamw_decay_only", r == 2.0f * (float)(1 - 0.1 * 0.5), "%.9g", (double)r);
    CHECK("clip_coef_clamped", mha_clip_coef(0.0f, 1.0) == 1.0f && mha_clip_coef(4.0f, 2.0) < 0.5f, "%s", "");
}


/* Adam's vector path (no amsgrad) gives the bits of its plain loop (amsgrad, its running max reset
 * to 0 before each step, takes the plain loop and, as v >= 0, Adam's values), for Adam with and without weight decay and
 * AdamW, on 1003 floats (a ragged tail) over 5 steps. */
static void test_adam_vector_bits(void) {
    enum { N = 1003 };
    static float p[2][N], m[2][N], v[2][N], vmax[N], g[N];
    const mha_adam_options base[3] = {
        {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8},
        {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1},
        {.lr = 0.003, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.01, .decoupled = true}};
    bool same = true;
    for (int c = 0; c < 3; c++) {
        uint32_t seed = 7u + (uint32_t)c;
        for (size_t i = 0; i < N; i++) {
            seed = seed * 1664525u + 1013904223u;
            p[0][i] = p[1][i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
            m[0][i] = m[1][i] = v[0][i] = v[1][i] = vmax[i] = 0.0f;
        }
        for (size_t step = 1; step <= 5; step++) {
            for (size_t i = 0; i < N; i++) {
                seed = seed * 1664525u + 1013904223u;
                g[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * (float)(1u << (seed & 7)) * 1e-3f;
            }
            mha_adam_options plain = base[c];
            plain.amsgrad = true;
            memset(vmax, 0, sizeof vmax);   /* max(v, 0) = v: amsgrad's step is then Adam's */
            mha_adam_step(p[0], m[0], v[0], vmax, g, N, &plain, step);
            mha_adam_step(p[1], m[1], v[1], NULL, g, N, &base[c], step);
        }
        same = same && memcmp(p[0], p[1], sizeof p[0]) == 0 && memcmp(m[0], m[1], sizeof m[0]) == 0 &&
               memcmp(v[0], v[1], sizeof v[0]) == 0;
    }
    CHECK("adam_step: the vector path gives the plain loop's bits (Adam, Adam + weight decay, AdamW)", same, "%s",
          "differ");
}

int main(void) {
    test_adam_vector_bits();
    FILE *f = fopen(CASES, "r");
    if (!f) { CHECK("cases", 0, "cannot open " CASES); CHECK_DONE(); }
    static optim_case c;
    bool open_case = false;
    size_t cases = 0, clips = 0;
    char *line = NULL;
    size_t cap = 0;
    int ok = 1;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char word[16], name[64];
        size_t step;
        if (sscanf(line, "case %63s %15s", c.name, c.kind) == 2) {
            snprintf(c.line, sizeof c.line, "%s", line);
            open_case = true;
        } else if (sscanf(line, "init %63s", name) == 1) {
            ok &= read_floats(line + 7, name[0] == 'W' ? c.init_W : c.init_b, name[0] == 'W' ? N_W : N_B);
        } else if (sscanf(line, "grad %zu %63s", &step, name) == 2 && step >= 1 && step <= STEPS) {
            const char *p = strchr(line + 5, ' ') + 3;
            ok &= read_floats(p, name[0] == 'W' ? c.grad_W[step - 1] : c.grad_b[step - 1], name[0] == 'W' ? N_W : N_B);
        } else if (sscanf(line, "final %63s", name) == 1) {
            ok &= read_floats(line + 8, name[0] == 'W' ? c.final_W : c.final_b, name[0] == 'W' ? N_W : N_B);
            if (name[0] == 'b' && open_case) { run_case(&c); cases++; open_case = false; }
        } else if (sscanf(line, "%15s", word) == 1 && strcmp(word, "clip") == 0) {
            run_clip(line, ++clips);
        }
    }
    free(line);
    fclose(f);
    CHECK("cases_read", ok && cases >= 12 && clips >= 3, "%zu cases, %zu clip cases, parse %s", cases, clips, ok ? "ok" : "failed");
    test_by_hand();
    CHECK_DONE();
}
