/*
 * softmax.c - softmax over the last axis: s_i = exp(z_i - max) / sum_j exp(z_j - max).
 * Subtracting the row max keeps exp from overflowing; -inf entries (masked
 * keys) get weight exactly 0; a row with no finite entry gives all zeros;
 * +inf entries share all the weight (the limit), never NaN.
 */
#include "../core/internal.h"

#include <math.h>

ag_tensor *ag_softmax(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "softmax", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, AG_OP_SOFTMAX, out, 1, in))
        return NULL;
    size_t n = (size_t)a->shape[a->ndim - 1], rows = ag_rows(a);
    for (size_t r = 0; r < rows; r++) {
        const ag_real *z = a->data + r * n;
        ag_real *s = out->data + r * n;
        ag_real max = -INFINITY;
        for (size_t j = 0; j < n; j++)
            if (z[j] > max)
                max = z[j];
        if (max == -INFINITY) {
            /* fully masked row: attends to nothing */
            for (size_t j = 0; j < n; j++)
                s[j] = 0;
            continue;
        }
        if (max == INFINITY) {
            /* the limit as those logits grow: all weight on the +inf entries
             * (exp(inf - inf) would be NaN) */
            size_t count = 0;
            for (size_t j = 0; j < n; j++)
                count += z[j] == INFINITY;
            for (size_t j = 0; j < n; j++)
                s[j] = z[j] == INFINITY ? (ag_real)1 / (ag_real)count : 0;
            continue;
        }
        ag_real sum = 0;
        for (size_t j = 0; j < n; j++) {
            s[j] = AG_EXP(z[j] - max);
            sum += s[j];
        }
        ag_real inv = 1 / sum;
        for (size_t j = 0; j < n; j++)
            s[j] *= inv;
    }
    return out;
}

void ag_softmax_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: s = softmax(z). The Jacobian is ds_i/dz_j = s_i (delta_ij - s_j),
     * so dz_j = sum_i ds_i s_i (delta_ij - s_j) = s_j (ds_j - <ds, s>).
     * Masked entries have s_j = 0 and so get no gradient.
     */
    ag_tensor *a = e->in[0], *out = e->out;
    if (!a->grad)
        return;
    int wrong = tape->bug == AG_BUG_SOFTMAX;
    size_t n = (size_t)a->shape[a->ndim - 1], rows = ag_rows(a);
    for (size_t r = 0; r < rows; r++) {
        const ag_real *s = out->data + r * n, *ds = out->grad + r * n;
        ag_real *dz = a->grad + r * n;
        ag_real dot = 0;
        for (size_t j = 0; j < n; j++)
            dot += ds[j] * s[j];
        if (wrong)
            dot = 0;   /* the deliberate bug: the - s s^T term dropped */
        for (size_t j = 0; j < n; j++)
            dz[j] += s[j] * (ds[j] - dot);
    }
}
