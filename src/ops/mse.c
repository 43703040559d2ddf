/*
 * mse.c - mean squared error: L = mean over every element of (pred - target)^2.
 */
#include "../kernels/kernels.h"

static void mse_backward(ag_tape *tape, const ag_entry *e);
static const ag_op mse_op = {"mse", mse_backward, 0, 0};

ag_tensor *ag_mse(ag_tape *tape, const ag_tensor *pred, const ag_tensor *target)
{
    const ag_tensor *in[2] = {pred, target};
    if (!ag_op_begin(tape, "mse", 2, in))
        return NULL;
    if (!ag_same_shape(pred, target)) {
        char sa[64], sb[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "mse: pred is %s, target is %s: shapes differ",
                     ag_shape_str(pred, sa, sizeof(sa)), ag_shape_str(target, sb, sizeof(sb)));
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, 1, (int[]){1}, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, &mse_op, out, 2, in))
        return NULL;
    double sum = 0;
    if (ag_reference_kernels())
        for (size_t i = 0; i < pred->size; i++) {
            double d = (double)pred->data[i] - (double)target->data[i];
            sum += d * d;
        }
    else
        sum = ag_fast_sq_diff_sum(pred->size, pred->data, target->data);
    out->data[0] = (ag_real)(sum / (double)pred->size);
    return out;
}

/* dx_i += s (p_i - t_i): one input's gradient, s = +-2 dL / n */
static void mse_grad(size_t n, ag_real *dx, const ag_real *p, const ag_real *t, ag_real s)
{
    if (!ag_reference_kernels()) {
        ag_fast_mse_grad(n, dx, p, t, s);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dx[i] += s * (p[i] - t[i]);
}

static void mse_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: L = sum_i (p_i - t_i)^2 / n, so dp_i += 2 (p_i - t_i) / n dL, dt_i -= the same */
    (void)tape;
    ag_tensor *p = e->in[0], *t = e->in[1];
    ag_real g = (ag_real)(2.0 * e->out->grad[0] / (double)p->size);
    if (p->grad)
        mse_grad(p->size, p->grad, p->data, t->data, g);
    if (t->grad)
        mse_grad(t->size, t->grad, p->data, t->data, -g);
}
