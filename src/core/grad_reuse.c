/*
 * grad_reuse.c - backward handing on gradient buffers it is done with
 * (ag_tape_reuse_grads): a speed-up beside the chain rule, not part of it;
 * backward.c's walk calls ag_reuse_take and ag_reuse_give around each entry.
 *
 * Every op output's gradient has a buffer of its own, made in forward, and
 * a GPT step's are tens of megabytes: more than the caches, so each one
 * backward first writes comes from memory. Yet once an entry's backward
 * has run, its output's gradient is read no more. Reusing, backward hands
 * that buffer on: the next input gradient of the same size to be written
 * takes it (the last handed on, the likeliest still in cache), and the
 * output reads as unset (zero) from then on. The arithmetic is the same,
 * so the parameters' gradients are the same bits. Likewise what an entry's
 * backward takes from the arena for itself (scratch: the attention's
 * per-chunk buffers, layer norm's partial sums) is free again once it has
 * run, so the next entry's scratch is the same memory, still in cache.
 */
#include "internal.h"

#include <string.h>

/* Grow the spare and own arrays to n entries; 0 when out of memory. */
static int reuse_room(ag_tape *tape, size_t n)
{
    if (tape->cap_spare >= n)
        return 1;
    ag_spare *spare = ag_realloc(tape->spare, n * sizeof(*spare));
    if (spare)
        tape->spare = spare;
    ag_real **own = spare ? ag_realloc(tape->own, n * sizeof(*own)) : NULL;
    if (own)
        tape->own = own;
    if (!spare || !own)
        return 0;
    tape->cap_spare = n;
    return 1;
}

/* Whether this backward, asked to reuse buffers, does: when nothing reads
 * the intermediate gradients afterwards (anomaly detection does). Notes
 * each entry's own buffer, for ag_reuse_undo. */
int ag_reuse_start(ag_tape *tape)
{
    if (tape->detect_anomaly)
        return 0;
    if (!reuse_room(tape, tape->n_entries))
        return 0; /* out of memory: keep every buffer, as without reuse */
    for (size_t k = 0; k < tape->n_entries; k++)
        tape->own[k] = tape->entries[k].out->grad;
    tape->n_own = tape->n_entries;
    tape->n_spare = 0;
    return 1;
}

void ag_reuse_undo(ag_tape *tape)
{
    for (size_t k = 0; k < tape->n_own; k++)
        if (tape->own[k]) /* (a gradient made since by ag_requires_grad stays) */
            tape->entries[k].out->grad = tape->own[k];
    tape->n_own = 0;
}

/* Before entry e's backward: each input gradient it may write first (an
 * op output's, still unset: nothing in it yet) takes the spare buffer of
 * its size handed on last, if there is one; the arena's place is noted. */
void ag_reuse_take(ag_tape *tape, const ag_entry *e)
{
    tape->scratch = ag_arena_here(&tape->arena);
    for (int i = 0; i < e->n_in; i++) {
        ag_tensor *t = e->in[i];
        if (!ag_grad_is_unset(tape, t))
            continue; /* written already, or not an op output's */
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

/* After entry e's backward: its scratch is free again, and its output's
 * gradient is done with, reading as unset (zero) from now on. (The loss's
 * stays: dL/dL = 1 is the caller's to read.) */
void ag_reuse_give(ag_tape *tape, const ag_entry *e, const ag_tensor *loss)
{
    ag_arena_back(&tape->arena, tape->scratch);
    if (e->out == loss)
        return;
    tape->spare[tape->n_spare++] = (ag_spare){e->out->grad, e->out->size};
    ((ag_node *)e->out)->grad_unset = 1; /* an op output is a node */
}

void ag_tape_reuse_grads(ag_tape *tape, int on)
{
    if (tape)
        tape->reuse_grads = on != 0;
}
