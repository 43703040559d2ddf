/*
 * causal_mask.c - hide the future: over the last two axes (..., Tq, Tk),
 * entries with key index j > query index i become -inf, so the softmax that
 * follows gives them weight 0.
 */
#include "../core/internal.h"

#include <math.h>

static void causal_mask_backward(ag_tape *tape, const ag_entry *e);
static const ag_op causal_mask_op = {"causal_mask", causal_mask_backward, AG_OP_MASKS, 0};

ag_tensor *ag_causal_mask(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "causal_mask", 1, in))
        return NULL;
    if (a->ndim < 2) {
        char s[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "causal_mask: a is %s: needs at least 2 dims",
                     ag_shape_str(a, s, sizeof(s)));
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &causal_mask_op, out, 1, in))
        return NULL;
    size_t tq = (size_t)a->shape[a->ndim - 2], tk = (size_t)a->shape[a->ndim - 1];
    size_t rows = ag_rows(a);
    for (size_t r = 0; r < rows; r++) {
        size_t i = r % tq;
        for (size_t j = 0; j < tk; j++)
            out->data[r * tk + j] = j > i ? -INFINITY : a->data[r * tk + j];
    }
    return out;
}

static void causal_mask_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = x where j <= i, -inf (a constant) elsewhere; so dx = dy or 0 */
    (void)tape;
    ag_tensor *a = e->in[0];
    if (!a->grad)
        return;
    size_t tq = (size_t)a->shape[a->ndim - 2], tk = (size_t)a->shape[a->ndim - 1];
    size_t rows = ag_rows(a);
    for (size_t r = 0; r < rows; r++) {
        size_t i = r % tq;
        for (size_t j = 0; j <= i && j < tk; j++)
            a->grad[r * tk + j] += e->out->grad[r * tk + j];
    }
}
