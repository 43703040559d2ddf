/*
 * mul.c - elementwise a * b, broadcasting b like add does.
 */
#include "../core/internal.h"

static void mul_backward(ag_tape *tape, const ag_entry *e);
static const ag_op mul_op = {"mul", mul_backward, 0, 0};

ag_tensor *ag_mul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    const ag_tensor *in[2] = {a, b};
    if (!ag_op_begin(tape, "mul", 2, in) || !ag_broadcast_check(tape, "mul", a, b))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, &mul_op, out, 2, in))
        return NULL;
    /* b repeats every n elements: a loop per repeat, no division per element */
    size_t n = b->size;
    for (size_t r = 0; r < a->size; r += n)
        for (size_t j = 0; j < n; j++)
            out->data[r + j] = a->data[r + j] * b->data[j];
    return out;
}

static void mul_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = a * b, so da += dy * b and db += dy * a (summed over repeats) */
    (void)tape;
    ag_tensor *a = e->in[0], *b = e->in[1];
    const ag_real *dy = e->out->grad;
    size_t n = b->size;
    if (a->grad)
        for (size_t r = 0; r < a->size; r += n)
            for (size_t j = 0; j < n; j++)
                a->grad[r + j] += dy[r + j] * b->data[j];
    if (b->grad)
        for (size_t r = 0; r < a->size; r += n)
            for (size_t j = 0; j < n; j++)
                b->grad[j] += dy[r + j] * a->data[r + j];
}
