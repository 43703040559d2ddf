/*
 * relu.c - the rectifier, y = max(x, 0), elementwise: the simplest
 * nonlinearity between two linear maps. (A GPT's MLP uses GELU, gelu.c.)
 */
#include "../kernels/kernels.h"

static void relu_backward(ag_tape *tape, const ag_entry *e);
static const ag_op relu_op = {"relu", relu_backward, 0, 0};

ag_tensor *ag_relu(ag_tape *tape, const ag_tensor *x)
{
    const ag_tensor *in[1] = {x};
    if (!ag_op_begin(tape, "relu", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, x->ndim, x->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &relu_op, out, 1, in))
        return NULL;
    /* x < 0 rather than max(x, 0): a NaN fails the comparison and stays
     * NaN, for anomaly detection to find */
    if (ag_reference_kernels())
        for (size_t i = 0; i < x->size; i++)
            out->data[i] = x->data[i] < 0 ? 0 : x->data[i];
    else
        ag_fast_relu(x->data, out->data, x->size);
    return out;
}

static void relu_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = max(x, 0), so dy/dx = 1 where x > 0 and 0 elsewhere (0 at
     * x = 0 itself, as PyTorch): dx += dy [x > 0] */
    (void)tape;
    ag_tensor *x = e->in[0];
    if (!x->grad)
        return;
    const ag_real *dy = e->out->grad;
    if (ag_reference_kernels())
        for (size_t i = 0; i < x->size; i++)
            x->grad[i] += x->data[i] > 0 ? dy[i] : 0;
    else
        ag_fast_relu_grad(x->data, dy, x->grad, x->size);
}
