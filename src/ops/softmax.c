/*
 * softmax.c - softmax over the last axis: s_i = exp(z_i - max) / sum_j exp(z_j - max).
 * Subtracting the row max keeps exp from overflowing; -inf entries (masked
 * keys) get weight exactly 0; a row with no finite entry gives all zeros;
 * +inf entries share all the weight (the limit), never NaN. The row itself
 * is ag_ref_softmax (src/core/ref_softmax.c); the fast kernel does the same
 * with vector registers and threads (src/kernels/softmax.c).
 */
#include "../kernels/kernels.h"

static void softmax_backward(ag_tape *tape, const ag_entry *e);
static const ag_op softmax_op = {"softmax", softmax_backward, 0, 0};

ag_tensor *ag_softmax(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "softmax", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &softmax_op, out, 1, in))
        return NULL;
    size_t n = (size_t)a->shape[a->ndim - 1], rows = ag_rows(a);
    if (ag_reference_kernels())
        for (size_t r = 0; r < rows; r++)
            ag_ref_softmax(a->data + r * n, out->data + r * n, n);
    else
        ag_fast_softmax(a->data, out->data, rows, n);
    return out;
}

static void softmax_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: s = softmax(z). The Jacobian is ds_i/dz_j = s_i (delta_ij - s_j),
     * so dz_j = sum_i ds_i s_i (delta_ij - s_j) = s_j (ds_j - <ds, s>).
     * Masked entries have s_j = 0 and so get no gradient.
     */
    ag_tensor *a = e->in[0], *s = e->out;
    if (!a->grad)
        return;
    size_t n = (size_t)a->shape[a->ndim - 1], rows = ag_rows(a);
    int wrong = tape->bug == AG_BUG_SOFTMAX; /* the deliberate bug, for gradcheck */
    if (ag_reference_kernels())
        for (size_t r = 0; r < rows; r++)
            ag_softmax_backward_row(s->data + r * n, s->grad + r * n, a->grad + r * n, n, wrong);
    else
        ag_fast_softmax_backward(s->data, s->grad, a->grad, rows, n, wrong);
}
