/*
 * ref_rows.c - the reference kernels of the ops that work along a row:
 * softmax, GELU and layer normalisation, forward and backward, as plain
 * loops. The fast kernels (src/kernels/softmax.c, gelu.c, layernorm.c) do
 * the same with vector registers and threads, fall back to these for what
 * they do not cover, and are tested against them.
 */
#include "internal.h"

#include <math.h>

/* ---- softmax ---- */

void ag_ref_softmax(const ag_real *z, ag_real *s, size_t n)
{
    ag_real max = -INFINITY;
    for (size_t j = 0; j < n; j++)
        if (z[j] > max)
            max = z[j];
    if (max == -INFINITY) {
        /* fully masked row: attends to nothing */
        for (size_t j = 0; j < n; j++)
            s[j] = 0;
        return;
    }
    if (max == INFINITY) {
        /* the limit as those logits grow: all weight on the +inf entries
         * (exp(inf - inf) would be NaN) */
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            count += z[j] == INFINITY;
        for (size_t j = 0; j < n; j++)
            s[j] = z[j] == INFINITY ? (ag_real)1 / (ag_real)count : 0;
        return;
    }
    /* subtracting the max keeps every exp in (0, 1]: no overflow */
    ag_real sum = 0;
    for (size_t j = 0; j < n; j++) {
        s[j] = AG_EXP(z[j] - max);
        sum += s[j];
    }
    ag_real inv = 1 / sum;
    for (size_t j = 0; j < n; j++)
        s[j] *= inv;
}

void ag_softmax_backward_row(const ag_real *s, const ag_real *ds, ag_real *dz, size_t n, int wrong)
{
    /* ds_i/dz_j = s_i (delta_ij - s_j), so dz_j = s_j (ds_j - <ds, s>) */
    ag_real dot = 0;
    for (size_t j = 0; j < n; j++)
        dot += ds[j] * s[j];
    if (wrong)
        dot = 0; /* the deliberate bug (AG_BUG_SOFTMAX): the - s s^T term dropped */
    for (size_t j = 0; j < n; j++)
        dz[j] += s[j] * (ds[j] - dot);
}

void ag_ref_softmax_backward(const ag_real *s, const ag_real *ds, ag_real *dz, size_t n)
{
    ag_softmax_backward_row(s, ds, dz, n, 0);
}

/* ---- GELU ---- */

#ifdef AG_REAL_DOUBLE
#define ERFC erfc
#else
#define ERFC erfcf
#endif

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, written with erfc so that it keeps
 * its relative accuracy far into the left tail (1 + erf would round to 0) */
static ag_real normal_cdf(ag_real x)
{
    return (ag_real)0.5 * ERFC(-x * (ag_real)0.707106781186547524);
}

void ag_ref_gelu(const ag_real *x, ag_real *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] * normal_cdf(x[i]);
}

void ag_ref_gelu_backward(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n)
{
    /* dy/dx = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
    for (size_t i = 0; i < n; i++) {
        ag_real pdf = AG_EXP((ag_real)-0.5 * x[i] * x[i]) * (ag_real)0.398942280401432678;
        dx[i] += dy[i] * (normal_cdf(x[i]) + x[i] * pdf);
    }
}

/* ---- layer normalisation ---- */

void ag_ref_layernorm(const ag_real *x, const ag_real *w, const ag_real *b, ag_real *y,
                      ag_real *stats, size_t C)
{
    /* the mean first, then the variance around it: a one-pass E[x^2] -
     * mean^2 loses every digit when the mean is large against the spread */
    double sum = 0, sq = 0;
    for (size_t c = 0; c < C; c++)
        sum += x[c];
    double mean = sum / (double)C;
    for (size_t c = 0; c < C; c++)
        sq += (x[c] - mean) * (x[c] - mean);
    double rstd = 1 / sqrt(sq / (double)C + AG_LAYERNORM_EPS);
    for (size_t c = 0; c < C; c++)
        y[c] = (ag_real)((x[c] - mean) * rstd) * (w ? w[c] : 1) + (b ? b[c] : 0);
    stats[0] = (ag_real)mean;
    stats[1] = (ag_real)rstd;
}

void ag_ref_layernorm_backward(const ag_real *x, const ag_real *w, const ag_real *stats,
                               const ag_real *dy, ag_real *dx, ag_real *dw, ag_real *db, size_t C)
{
    /* with xhat = (x - mean) r and g = dy w:
     *   dx_j += r (g_j - mean(g) - xhat_j mean(g xhat)), dw += dy xhat, db += dy */
    double mean = stats[0], r = stats[1], g_sum = 0, gx_sum = 0;
    for (size_t c = 0; c < C; c++) {
        double xhat = (x[c] - mean) * r, g = (double)dy[c] * (w ? w[c] : 1);
        g_sum += g;
        gx_sum += g * xhat;
        if (dw)
            dw[c] += (ag_real)(dy[c] * xhat);
        if (db)
            db[c] += dy[c];
    }
    for (size_t c = 0; dx && c < C; c++) {
        double xhat = (x[c] - mean) * r, g = (double)dy[c] * (w ? w[c] : 1);
        dx[c] += (ag_real)(r * (g - g_sum / (double)C - xhat * gx_sum / (double)C));
    }
}

/* ---- softmax cross-entropy ---- */

/* Classes whose exps a row keeps (on the stack) for its probabilities;
 * wider rows take each exp twice. */
#define CE_KEEP 512

double ag_cross_entropy_row(const ag_real *z, size_t C, int target, ag_real *probs)
{
    /* logsumexp(z) = max + log sum_j exp(z_j - max): nothing overflows, and
     * sum >= 1 (the max's own term is exp(0)), so no log(0) */
    double e[CE_KEEP];
    double max = z[0];
    for (size_t j = 1; j < C; j++)
        if (z[j] > max)
            max = z[j];
    double sum = 0;
    for (size_t j = 0; j < C; j++) {
        double x = exp((double)z[j] - max);
        if (j < CE_KEEP)
            e[j] = x;
        sum += x;
    }
    if (probs)
        for (size_t j = 0; j < C; j++)
            probs[j] = (ag_real)((j < CE_KEEP ? e[j] : exp((double)z[j] - max)) / sum);
    /* cppcheck-suppress invalidFunctionArg */
    return log(sum) + max - (double)z[target];
}
