/*
 * layernorm.c - layer normalisation over the last axis (PyTorch's LayerNorm):
 *   y = (x - mean) / sqrt(var + eps) * weight + bias
 * per row of C values, var biased (divided by C), eps = AG_LAYERNORM_EPS.
 * It keeps every position's vector at one scale whatever the layers before
 * it did, which is what lets a deep stack of residual blocks train.
 * Backward works from each row's mean and 1/std, saved by the forward. The
 * row is ag_ref_layernorm (src/core/ref_rows.c); the fast kernel shares
 * blocks of rows out over the threads (src/kernels/layernorm.c).
 */
#include "../kernels/kernels.h"

static void layernorm_backward(ag_tape *tape, const ag_entry *e);
static const ag_op layernorm_op = {"layernorm", layernorm_backward, 0, 0};

/* Which optional inputs an entry has (its iarg); in[] holds x, then the
 * weight when there is one, then the bias. */
enum { HAS_WEIGHT = 1, HAS_BIAS = 2 };

static int check_param(ag_tape *tape, const ag_tensor *x, const ag_tensor *p, const char *name)
{
    int C = x->shape[x->ndim - 1];
    if (!p || (p->ndim == 1 && p->shape[0] == C))
        return 1;
    char sx[64], sp[64];
    ag_tape_fail(tape, AG_ERR_SHAPE, "layernorm: x is %s, %s is %s: %s must be [%d]",
                 ag_shape_str(x, sx, sizeof(sx)), name, ag_shape_str(p, sp, sizeof(sp)), name, C);
    return 0;
}

ag_tensor *ag_layernorm(ag_tape *tape, const ag_tensor *x, const ag_tensor *weight,
                        const ag_tensor *bias)
{
    const ag_tensor *in[3] = {x, weight, bias};
    int n_in = 1;
    if (!ag_op_begin(tape, "layernorm", 1, in) || !check_param(tape, x, weight, "weight") ||
        !check_param(tape, x, bias, "bias"))
        return NULL;
    if (weight)
        in[n_in++] = weight;
    if (bias)
        in[n_in++] = bias;
    size_t rows = ag_rows(x), C = (size_t)x->shape[x->ndim - 1];
    ag_tensor *out = ag_tensor_make(tape, x->ndim, x->shape, 0, ag_any_grad(n_in, in));
    /* each row's mean and 1/std: 2 * rows reals fit, x holds rows * C >= rows */
    ag_real *stats = out ? ag_arena_alloc(tape, 2 * rows * sizeof(ag_real)) : NULL;
    ag_entry *e = stats ? ag_tape_push(tape, &layernorm_op, out, n_in, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = (weight ? HAS_WEIGHT : 0) | (bias ? HAS_BIAS : 0);
    e->saved = stats;
    const ag_real *w = weight ? weight->data : NULL, *b = bias ? bias->data : NULL;
    if (ag_reference_kernels())
        for (size_t r = 0; r < rows; r++)
            ag_ref_layernorm(x->data + r * C, w, b, out->data + r * C, stats + 2 * r, C);
    else
        ag_fast_layernorm(x->data, w, b, out->data, stats, rows, C);
    return out;
}

static void layernorm_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: y_i = xhat_i w_i + b_i, xhat_i = (x_i - mean) r, r = 1 / sqrt(var + eps),
     * mean and var over the row's C values. With g = dL/dxhat = dy * w, the
     * Jacobian dxhat_i/dx_j = r (delta_ij - 1/C - xhat_i xhat_j / C) gives
     *   dx_j += r (g_j - mean(g) - xhat_j mean(g * xhat)),
     * and dw += dy * xhat, db += dy, summed over the rows.
     */
    ag_tensor *x = e->in[0];
    ag_tensor *w = e->iarg & HAS_WEIGHT ? e->in[1] : NULL;
    ag_tensor *b = e->iarg & HAS_BIAS ? e->in[e->n_in - 1] : NULL;
    size_t rows = ag_rows(x), C = (size_t)x->shape[x->ndim - 1];
    ag_real *dw = w ? w->grad : NULL, *db = b ? b->grad : NULL;
    if (!x->grad && !dw && !db)
        return;
    const ag_real *stats = e->saved, *dy = e->out->grad;
    if (!ag_reference_kernels()) {
        ag_fast_layernorm_backward(tape, x->data, w ? w->data : NULL, stats, dy, x->grad, dw, db,
                                   rows, C);
        return;
    }
    for (size_t r = 0; r < rows; r++)
        ag_ref_layernorm_backward(x->data + r * C, w ? w->data : NULL, stats + 2 * r, dy + r * C,
                                  x->grad ? x->grad + r * C : NULL, dw, db, C);
}
