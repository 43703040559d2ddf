/*
 * mse.c - mean squared error: L = mean over every element of (pred - target)^2.
 */
#include "../core/internal.h"

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
    if (!out || !ag_tape_push(tape, AG_OP_MSE, out, 2, in))
        return NULL;
    double acc = 0;
    for (size_t i = 0; i < pred->size; i++) {
        double d = (double)pred->data[i] - (double)target->data[i];
        acc += d * d;
    }
    out->data[0] = (ag_real)(acc / (double)pred->size);
    return out;
}

void ag_mse_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: L = sum_i (p_i - t_i)^2 / n, so dp_i += 2 (p_i - t_i) / n dL, dt_i -= the same */
    (void)tape;
    ag_tensor *p = e->in[0], *t = e->in[1];
    ag_real g = (ag_real)(2.0 * e->out->grad[0] / (double)p->size);
    for (size_t i = 0; i < p->size; i++) {
        ag_real d = g * (p->data[i] - t->data[i]);
        if (p->grad)
            p->grad[i] += d;
        if (t->grad)
            t->grad[i] -= d;
    }
}
