/*
 * gpt_ref.h - a GPT's attention weights computed the plain way, in double,
 * straight from the model's parameters: every product a loop, no tape, no
 * tiles, no SIMD. The reference the library's forward (ag_gpt_attention)
 * and `attograd attend --out` are held to. Bias-free models with every part
 * (the default GPT).
 */
#ifndef AG_TEST_GPT_REF_H
#define AG_TEST_GPT_REF_H

#include "attograd.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline const ag_real *gpt_ref_param(ag_gpt *g, const char *fmt, int layer)
{
    char name[64];
    snprintf(name, sizeof(name), fmt, layer);
    const ag_tensor *t = ag_gpt_param(g, name);
    ck_assert_msg(t != NULL, "no parameter %s", name);
    return t->data;
}

/* y (T, n) = x (T, m) W (m, n) */
static inline void gpt_ref_matmul(const double *x, const ag_real *w, double *y, int T, int m, int n)
{
    for (int t = 0; t < T; t++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < m; k++)
                s += x[t * m + k] * (double)w[k * n + j];
            y[t * n + j] = s;
        }
}

/* y = layernorm(x) w over each row of C, eps 1e-5 */
static inline void gpt_ref_norm(const double *x, const ag_real *w, double *y, int T, int C)
{
    for (int t = 0; t < T; t++) {
        double m = 0, v = 0;
        for (int c = 0; c < C; c++)
            m += x[t * C + c] / C;
        for (int c = 0; c < C; c++)
            v += (x[t * C + c] - m) * (x[t * C + c] - m) / C;
        for (int c = 0; c < C; c++)
            y[t * C + c] = (x[t * C + c] - m) / sqrt(v + 1e-5) * (double)w[c];
    }
}

/* attn (layers, heads, T, T) for the T ids, as the model computes them. */
static inline void gpt_ref_attention(ag_gpt *g, const int *ids, int T, double *attn)
{
    const ag_gpt_config *cfg = ag_gpt_get_config(g);
    int C = cfg->dim, H = cfg->heads, dh = C / H, C4 = 4 * C;
    ck_assert(!cfg->bias && !cfg->no_residual && !cfg->no_layernorm && !cfg->no_mlp &&
              !cfg->no_posenc);
    double *x = calloc((size_t)T * C, sizeof(double)), *n = calloc((size_t)T * C, sizeof(double));
    double *q = calloc((size_t)T * C, sizeof(double)), *k = calloc((size_t)T * C, sizeof(double));
    double *v = calloc((size_t)T * C, sizeof(double)), *o = calloc((size_t)T * C, sizeof(double));
    double *a = calloc((size_t)T * C, sizeof(double)), *f = calloc((size_t)T * C4, sizeof(double));
    ck_assert(x && n && q && k && v && o && a && f);
    const ag_real *wte = gpt_ref_param(g, "wte", 0), *wpe = gpt_ref_param(g, "wpe", 0);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            x[t * C + c] = (double)wte[ids[t] * C + c] + (double)wpe[t * C + c];
    for (int l = 0; l < cfg->layers; l++) {
        gpt_ref_norm(x, gpt_ref_param(g, "h.%d.ln_1.weight", l), n, T, C);
        gpt_ref_matmul(n, gpt_ref_param(g, "h.%d.attn.wq", l), q, T, C, C);
        gpt_ref_matmul(n, gpt_ref_param(g, "h.%d.attn.wk", l), k, T, C, C);
        gpt_ref_matmul(n, gpt_ref_param(g, "h.%d.attn.wv", l), v, T, C, C);
        for (int h = 0; h < H; h++) {
            double *p = attn + (((size_t)l * H + h) * T) * T;
            for (int i = 0; i < T; i++) {
                /* scores of query i against keys 0..i, softmaxed stably */
                double max = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int d = 0; d < dh; d++)
                        s += q[i * C + h * dh + d] * k[j * C + h * dh + d];
                    p[i * T + j] = s / sqrt((double)dh);
                    max = fmax(max, p[i * T + j]);
                }
                for (int j = 0; j <= i; j++)
                    sum += p[i * T + j] = exp(p[i * T + j] - max);
                for (int j = 0; j < T; j++)
                    p[i * T + j] = j <= i ? p[i * T + j] / sum : 0;
                for (int d = 0; d < dh; d++) {
                    double s = 0;
                    for (int j = 0; j <= i; j++)
                        s += p[i * T + j] * v[j * C + h * dh + d];
                    o[i * C + h * dh + d] = s;
                }
            }
        }
        gpt_ref_matmul(o, gpt_ref_param(g, "h.%d.attn.wo", l), a, T, C, C);
        for (int i = 0; i < T * C; i++)
            x[i] += a[i];
        gpt_ref_norm(x, gpt_ref_param(g, "h.%d.ln_2.weight", l), n, T, C);
        gpt_ref_matmul(n, gpt_ref_param(g, "h.%d.mlp.w_fc", l), f, T, C, C4);
        for (int i = 0; i < T * C4; i++)
            f[i] = 0.5 * f[i] * (1 + erf(f[i] / sqrt(2.0)));
        gpt_ref_matmul(f, gpt_ref_param(g, "h.%d.mlp.w_proj", l), a, T, C4, C);
        for (int i = 0; i < T * C; i++)
            x[i] += a[i];
    }
    free(x), free(n), free(q), free(k), free(v), free(o), free(a), free(f);
}

#endif /* AG_TEST_GPT_REF_H */
