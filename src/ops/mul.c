/*
 * mul.c - elementwise a * b, broadcasting b like add does.
 */
#include "../core/internal.h"

static void mul_backward(ag_tape *tape, const ag_entry *e);
static const ag_op mul_op = {"mul", mul_backward, 0};

ag_tensor *ag_mul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    const ag_tensor *in[2] = {a, b};
    if (!ag_op_begin(tape, "mul", 2, in) || !ag_broadcast_check(tape, "mul", a, b))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, &mul_op, out, 2, in))
        return NULL;
    for (size_t i = 0; i < a->size; i++)
        out->data[i] = a->data[i] * b->data[i % b->size];
    return out;
}

static void mul_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = a * b, so da += dy * b and db += dy * a (summed over repeats) */
    (void)tape;
    ag_tensor *a = e->in[0], *b = e->in[1];
    const ag_real *dy = e->out->grad;
    if (a->grad)
        for (size_t i = 0; i < a->size; i++)
            a->grad[i] += dy[i] * b->data[i % b->size];
    if (b->grad)
        for (size_t i = 0; i < a->size; i++)
            b->grad[i % b->size] += dy[i] * a->data[i];
}
