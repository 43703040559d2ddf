/*
 * gelu.c - GELU, exact, as PyTorch's default: y = x Phi(x), Phi the normal
 * distribution's CDF, Phi(x) = (1 + erf(x / sqrt 2)) / 2. The nonlinearity
 * inside a GPT's MLP. The plain loop is ag_ref_gelu (src/core/ref_rows.c);
 * the fast kernel computes erf with vector registers and shares the work
 * out over the threads (src/kernels/gelu.c).
 */
#include "../kernels/kernels.h"

#include <string.h>

static void gelu_backward(ag_tape *tape, const ag_entry *e);
static const ag_op gelu_op = {"gelu", gelu_backward, 0, AG_INPUT(0)};

ag_tensor *ag_gelu(ag_tape *tape, const ag_tensor *x)
{
    const ag_tensor *in[1] = {x};
    if (!ag_op_begin(tape, "gelu", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, x->ndim, x->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &gelu_op, out, 1, in))
        return NULL;
    if (ag_reference_kernels())
        ag_ref_gelu(x->data, out->data, x->size);
    else
        ag_fast_gelu(x->data, out->data, x->size);
    return out;
}

static void gelu_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: y = x Phi(x). Elementwise, so the Jacobian is diagonal:
     * dy/dx = Phi(x) + x Phi'(x) = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi), and
     * dx += dy (Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi)).
     */
    ag_tensor *x = e->in[0];
    if (!x->grad)
        return;
    int set = ag_grad_first(tape, x); /* dx unset: store into it */
    if (ag_reference_kernels()) {
        if (set)
            memset(x->grad, 0, x->size * sizeof(ag_real));
        ag_ref_gelu_backward(x->data, e->out->grad, x->grad, x->size);
    } else {
        ag_fast_gelu_backward(x->data, e->out->grad, x->grad, x->size, set);
    }
}
