/*
 * ref_rows.c - the reference kernels of GELU and layer normalisation,
 * forward and backward, as plain loops. The fast kernels
 * (src/kernels/gelu.c, layernorm.c) do the same with vector registers and
 * threads, fall back to these for what they do not cover, and are tested
 * against them.
 */
#include "internal.h"

#include <math.h>

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
