/*
 * backward.c - the backward pass: seed dL/dL = 1, then walk the tape from
 * the last entry to the first, each op adding its inputs' gradients. This
 * is the chain rule, applied in reverse recording order.
 */
#include "internal.h"

#include <string.h>

/* What backward needs before it starts: a tape without an error, and a
 * loss of one element that something needing a gradient flows into. */
static ag_status check_loss(ag_tape *tape, const ag_tensor *loss)
{
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
    return AG_OK;
}

/* Every op output's gradient starts as zero: marked unset, to be stored by
 * its first write rather than cleared first (ag_grad_first). On the first
 * backward after a reset they are that way from when they were made; a
 * second backward marks them again, so that parameters and inputs (which
 * accumulate until ag_zero_grad) get one more gradient, not stale ones,
 * each in its own buffer again (the last backward may have reused them). */
static void start_gradients(ag_tape *tape)
{
    if (tape->backward_ran) {
        ag_reuse_undo(tape);
        for (size_t k = 0; k < tape->n_entries; k++) {
            ag_entry *e = &tape->entries[k];
            if (e->op != &ag_op_leaf && e->out->grad)
                ((ag_node *)e->out)->grad_unset = 1; /* an op output is a node */
        }
    }
    tape->backward_ran = 1;
}

/* The first-write bookkeeping before entry e's backward: what nothing has
 * written reads as 0, so its output's gradient, if still unset, is zeroed,
 * and so are its inputs' unless the op stores its first write itself. */
static void settle_unwritten(ag_tape *tape, const ag_entry *e)
{
    ag_grad_settle(tape, e->out);
    for (int i = 0; i < e->n_in; i++)
        if (!(e->op->first_write & AG_INPUT(i)))
            ag_grad_settle(tape, e->in[i]);
}

/* Entry e's backward as a gradient check with AG_BUG_SCALE runs it: with
 * dL/dout times 1.25, so that every gradient it adds is a quarter too big.
 * (Backward is linear in dL/dout.) dL/dout is put back afterwards. */
static void backward_scaled(ag_tape *tape, const ag_entry *e)
{
    ag_real *dout = e->out->grad, *keep = ag_arena_alloc(tape, e->out->size * sizeof(ag_real));
    if (!keep)
        return;
    for (size_t i = 0; i < e->out->size; i++) {
        keep[i] = dout[i];
        dout[i] *= (ag_real)1.25;
    }
    e->op->backward(tape, e);
    for (size_t i = 0; i < e->out->size; i++)
        dout[i] = keep[i];
}

/* Entry e's own backward: each op adds its inputs' share of the gradient. */
static void backward_entry(ag_tape *tape, const ag_entry *e)
{
    if (tape->bug == AG_BUG_SCALE && tape->bug_op && strcmp(e->op->name, tape->bug_op) == 0)
        backward_scaled(tape, e);
    else
        e->op->backward(tape, e);
}

/*
 * The chain rule, entry by entry from the last: when entry e is reached,
 * every entry that used its output has run (they were recorded after it),
 * so dL/dout is complete, and e adds dL/din = dL/dout dout/din into each
 * input's gradient. A tensor used twice simply gets two shares. With reuse
 * (a constant: the walk is compiled once without it), gradient buffers are
 * handed on around each entry (grad_reuse.c).
 */
static inline ag_status walk(ag_tape *tape, const ag_tensor *loss, const int reuse)
{
    for (size_t k = tape->n_entries; k-- > 0;) {
        const ag_entry *e = &tape->entries[k];
        if (!e->out->grad || !e->op->backward)
            continue; /* no gradient flows through it */
        if (ag_interrupted())
            return ag_tape_fail(tape, AG_ERR_STOPPED, "backward: stopped (interrupted)");
        if (reuse)
            ag_reuse_take(tape, e);
        settle_unwritten(tape, e);
        backward_entry(tape, e);
        if (reuse)
            ag_reuse_give(tape, e, loss);
    }
    return AG_OK;
}

ag_status ag_backward(ag_tape *tape, ag_tensor *loss)
{
    if (!tape)
        return AG_ERR_ARG;
    ag_status st = check_loss(tape, loss);
    if (st != AG_OK)
        return st;
    start_gradients(tape);
    ag_grad_settle(tape, loss);
    loss->grad[0] += 1; /* dL/dL = 1 (a leaf loss accumulates like any leaf) */
    st = tape->reuse_grads && ag_reuse_start(tape) ? walk(tape, loss, 1) : walk(tape, loss, 0);
    if (st != AG_OK)
        return st;
    if (tape->detect_anomaly)
        return ag_tape_find_anomaly(tape);
    return tape->status;
}
