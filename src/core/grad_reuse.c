/*
 * grad_reuse.c - backward handing on gradient buffers it is done with
 * (ag_tape_reuse_grads): a speed-up beside the chain rule, not part of it;
 * backward.c calls the three functions below around each entry.
 *
 * Every op output's gradient has a buffer of its own, made in forward, and
 * a GPT step's are tens of megabytes: more than the caches, so each one
 * backward first writes comes from memory. Yet once an entry's backward
 * has run, its output's gradient is read no more. Reusing, backward hands
 * that buffer on: the next input gradient of the same size to be written
 * takes it (the last handed on, the likeliest still in cache), and the
 * output reads as unset (zero) from then on. The arithmetic is the same,
 * so the parameters' gradients are the same bits.
 */
#include "internal.h"

#include <string.h>

/* Whether this backward reuses buffers: asked for, and nothing reads the
 * intermediate gradients afterwards (anomaly detection does). Makes room
 * for a spare buffer per entry. */
int ag_reuse_start(ag_tape *tape)
{
    if (!tape->reuse_grads || tape->detect_anomaly || tape->bug != AG_BUG_NONE)
        return 0;
    tape->n_spare = 0;
    if (tape->cap_spare < tape->n_entries) {
        ag_spare *grown = ag_realloc(tape->spare, tape->n_entries * sizeof(*grown));
        if (!grown)
            return 0; /* out of memory: keep every buffer, as without reuse */
        tape->spare = grown;
        tape->cap_spare = tape->n_entries;
    }
    return 1;
}

/* Before entry e's backward: each input gradient it will write first (an
 * op output's, still unset) takes the spare buffer of its size handed on
 * last, if there is one. */
void ag_reuse_take(ag_tape *tape, const ag_entry *e)
{
    for (int i = 0; i < e->n_in; i++) {
        ag_tensor *t = e->in[i];
        if (!ag_grad_is_unset(tape, t) || t->grad != ((ag_node *)t)->own_grad)
            continue; /* written, not an op output's, or it took one already */
        for (size_t k = tape->n_spare; k-- > 0;)
            if (tape->spare[k].size == t->size) {
                t->grad = tape->spare[k].buf;
                tape->n_spare--;
                memmove(tape->spare + k, tape->spare + k + 1,
                        (tape->n_spare - k) * sizeof(*tape->spare));
                break;
            }
    }
}

/* After entry e's backward: its output's gradient is done with. (The
 * loss's stays: dL/dL = 1 is the caller's to read.) */
void ag_reuse_give(ag_tape *tape, const ag_entry *e, const ag_tensor *loss)
{
    ag_node *n = (ag_node *)e->out;
    if (e->out == loss || e->op == &ag_op_leaf)
        return;
    tape->spare[tape->n_spare++] = (ag_spare){e->out->grad, e->out->size};
    e->out->grad = n->own_grad;
    n->grad_unset = 1;
}

void ag_tape_reuse_grads(ag_tape *tape, int on)
{
    if (tape)
        tape->reuse_grads = on != 0;
}
