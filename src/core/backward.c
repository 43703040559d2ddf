/*
 * backward.c - the backward pass: seed dL/dL = 1, then walk the tape from
 * the last entry to the first, each op adding its inputs' gradients. This
 * is the chain rule, applied in reverse recording order.
 */
#include "internal.h"

ag_status ag_backward(ag_tape *tape, ag_tensor *loss)
{
    if (!tape)
        return AG_ERR_ARG;
    if (tape->status != AG_OK)
        return tape->status;
    if (!loss)
        return ag_tape_fail(tape, AG_ERR_ARG, "backward: loss is NULL");
    if (loss->size != 1) {
        char s[64];
        return ag_tape_fail(tape, AG_ERR_SHAPE, "backward: loss is %s; it must have one element",
                            ag_shape_str(loss, s, sizeof(s)));
    }
    if (tape->detect_anomaly && tape->n_entries > 0 &&
        !ag_anomaly_check_entry(tape, tape->n_entries - 1))
        return tape->status;
    if (!loss->grad)
        return ag_tape_fail(tape, AG_ERR_ARG,
                            "backward: loss does not depend on anything that needs a gradient");
    /* Op outputs start from zero on every call, so a second backward on the
     * same tape adds one more gradient into parameters and inputs (which
     * accumulate until ag_zero_grad) instead of re-adding stale ones. The
     * first backward after a reset finds them as they were made, unset. */
    if (tape->backward_ran) {
        for (size_t k = 0; k < tape->n_entries; k++) {
            ag_entry *e = &tape->entries[k];
            if (e->op != &ag_op_leaf && e->out->grad)
                ((ag_node *)e->out)->grad_unset = 1; /* an op output is a node */
        }
    }
    tape->backward_ran = 1;
    ag_grad_settle(tape, loss);
    loss->grad[0] += 1; /* a leaf loss accumulates like any leaf */
    /* Reverse order is a valid topological order: every entry's inputs were
     * made before it, so all contributions to an output's gradient have
     * arrived by the time its entry is reached. An unset gradient is zero
     * until written (ag_grad_first): an output nothing wrote is zeroed here,
     * and so are an op's inputs' unless the op stores its first write. */
    for (size_t k = tape->n_entries; k-- > 0;) {
        const ag_entry *e = &tape->entries[k];
        if (!e->out->grad || !e->op->backward)
            continue;
        if (ag_interrupted())
            return ag_tape_fail(tape, AG_ERR_STOPPED, "backward: stopped (interrupted)");
        ag_grad_settle(tape, e->out);
        for (int i = 0; i < e->n_in; i++)
            if (!(e->op->first_write & AG_INPUT(i)))
                ag_grad_settle(tape, e->in[i]);
        e->op->backward(tape, e);
    }
    if (tape->detect_anomaly)
        return ag_tape_find_anomaly(tape);
    return tape->status;
}
