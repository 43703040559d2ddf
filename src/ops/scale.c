/*
 * scale.c - multiply by a constant, as in scores / sqrt(dh).
 */
#include "../core/internal.h"

#include <math.h>

static void scale_backward(ag_tape *tape, const ag_entry *e);
static const ag_op scale_op = {"scale", scale_backward, AG_OP_SHOWS_ARG, 0};

ag_tensor *ag_scale(ag_tape *tape, const ag_tensor *a, double c)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "scale", 1, in))
        return NULL;
    if (!isfinite(c)) {
        ag_tape_fail(tape, AG_ERR_ARG, "scale: factor %g is not finite", c);
        return NULL;
    }
    if (!isfinite((ag_real)c)) { /* 1e39 is a double but not a float */
        ag_tape_fail(tape, AG_ERR_ARG, "scale: factor %g does not fit in %s", c, AG_REAL_NAME);
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(1, in));
    ag_entry *e = out ? ag_tape_push(tape, &scale_op, out, 1, in) : NULL;
    if (!e)
        return NULL;
    e->arg = c;
    ag_real cr = (ag_real)c;
    for (size_t i = 0; i < a->size; i++)
        out->data[i] = cr * a->data[i];
    return out;
}

static void scale_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = c x, so dx += c dy */
    (void)tape;
    ag_tensor *a = e->in[0];
    if (!a->grad)
        return;
    ag_real c = (ag_real)e->arg;
    for (size_t i = 0; i < a->size; i++)
        a->grad[i] += c * e->out->grad[i];
}
