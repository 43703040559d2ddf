/*
 * mean.c - the mean of every element, as a one-element tensor.
 */
#include "../core/internal.h"

static void mean_backward(ag_tape *tape, const ag_entry *e);
static const ag_op mean_op = {"mean", mean_backward, 0, 0};

ag_tensor *ag_mean(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "mean", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, 1, (int[]){1}, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &mean_op, out, 1, in))
        return NULL;
    double acc = 0;
    for (size_t i = 0; i < a->size; i++)
        acc += a->data[i];
    out->data[0] = (ag_real)(acc / (double)a->size);
    return out;
}

static void mean_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = sum_i x_i / n, so dx_i += dy / n */
    (void)tape;
    ag_tensor *a = e->in[0];
    if (!a->grad)
        return;
    ag_real g = (ag_real)(e->out->grad[0] / (double)a->size);
    for (size_t i = 0; i < a->size; i++)
        a->grad[i] += g;
}
