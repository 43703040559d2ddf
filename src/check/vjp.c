/*
 * vjp.c - the vector-Jacobian product of a function built from ops, the
 * quantity every backward pass computes: for y = f(inputs) and an upstream
 * gradient g of y's shape, the gradient of L = <g, y> with respect to each
 * input, g^T J. For showing a backward pass with chosen numbers (`attograd
 * explain`) and for checking one by hand.
 */
#include "../core/internal.h"

#include <string.h>

ag_status ag_vjp(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n_inputs,
                 const ag_real *g, ag_real *y, size_t size, char *err, size_t errlen)
{
    if (!build || !g || n_inputs < 0 || (n_inputs > 0 && !inputs)) {
        if (err && errlen)
            snprintf(err, errlen, "vjp: %s",
                     !build ? "build is NULL"
                     : !g   ? "g is NULL"
                            : "bad inputs");
        return AG_ERR_ARG;
    }
    ag_tape *tape = ag_tape_new();
    if (!tape) {
        if (err && errlen)
            snprintf(err, errlen, "vjp: out of memory");
        return AG_ERR_NOMEM;
    }
    ag_zero_grad(inputs, (size_t)n_inputs);
    ag_tensor *out = build(tape, inputs, ctx);
    if (!out && ag_tape_status(tape) == AG_OK)
        ag_tape_fail(tape, AG_ERR_ARG, "vjp: the build function returned NULL");
    if (out && out->size != size)
        ag_tape_fail(tape, AG_ERR_SHAPE, "vjp: the result has %zu elements, g %zu", out->size,
                     size);
    ag_tensor *gt = out ? ag_tensor_from(tape, out->ndim, out->shape, g) : NULL;
    ag_status st = ag_backward(tape, ag_sum(tape, ag_mul(tape, out, gt)));
    if (st == AG_OK && y && out)
        memcpy(y, out->data, size * sizeof(ag_real));
    if (st != AG_OK && err && errlen)
        snprintf(err, errlen, "%s", ag_tape_error(tape));
    ag_tape_free(tape);
    return st;
}
