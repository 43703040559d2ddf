/*
 * reshape.c - the same elements in the same row-major order under another
 * shape of the same size, e.g. logits (B,T,2*C) -> (B,T,2,C) so that a
 * position with two answers gives cross-entropy two rows. A copy, not a view
 * (the tape's tensors own their data).
 */
#include "../core/internal.h"

#include <string.h>

static void reshape_backward(ag_tape *tape, const ag_entry *e);
static const ag_op reshape_op = {"reshape", reshape_backward, 0, 0};

ag_tensor *ag_reshape(ag_tape *tape, const ag_tensor *a, int ndim, const int *shape)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "reshape", 1, in))
        return NULL;
    if (!shape) {
        ag_tape_fail(tape, AG_ERR_ARG, "reshape: shape is NULL");
        return NULL;
    }
    size_t size;
    if (!ag_shape_size(ndim, shape, &size) || size != a->size) {
        char sa[64], sb[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "reshape: a is %s (%zu elements), cannot become %s",
                     ag_shape_str(a, sa, sizeof(sa)), a->size,
                     ag_dims_str(ndim, shape, sb, sizeof(sb)));
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, ndim, shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &reshape_op, out, 1, in))
        return NULL;
    memcpy(out->data, a->data, a->size * sizeof(ag_real));
    return out;
}

static void reshape_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y[i] = x[i] in flat order (only the shape changed), so the
     * Jacobian is the identity: dx[i] += dy[i] */
    (void)tape;
    ag_tensor *a = e->in[0];
    if (!a->grad)
        return;
    for (size_t i = 0; i < a->size; i++)
        a->grad[i] += e->out->grad[i];
}
