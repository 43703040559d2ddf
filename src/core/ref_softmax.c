/*
 * ref_softmax.c - the reference softmax, forward and backward, one row at a
 * time, and softmax cross-entropy's row: plain loops. The fast kernels
 * (src/kernels/softmax.c, elementwise.c) do the same with vector
 * registers and threads, fall back to these for what they do not cover,
 * and are tested against them.
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
    /* z_t - max first: exact, where max + log(sum) would drop log(sum) beside a huge max */
    /* cppcheck-suppress invalidFunctionArg */
    return log(sum) - ((double)z[target] - max);
}
