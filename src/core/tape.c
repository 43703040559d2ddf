/*
 * tape.c - the tape: a Wengert list of one step's ops, appended in the
 * order the forward runs (ag_tape_push), and the leaves a step starts from
 * (ag_tensor_new, ag_tensor_from). Its memory is the arena (arena.c), its
 * error is sticky (error.c), and ag_backward (backward.c) walks it back.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- tape ---- */

ag_tape *ag_tape_new(void)
{
    ag_tape *tape = ag_calloc(1, sizeof(*tape));
    return tape;
}

void ag_tape_free(ag_tape *tape)
{
    if (!tape)
        return;
    ag_arena_free(&tape->arena);
    free(tape->entries);
    free(tape->spare);
    free(tape->own);
    free(tape);
}

void ag_tape_reset(ag_tape *tape)
{
    if (!tape)
        return;
    ag_arena_rewind(&tape->arena);
    tape->backward_ran = 0;
    tape->n_own = 0; /* the buffers a reusing backward noted were in the arena */
    tape->n_entries = 0;
    tape->status = AG_OK;
    tape->error[0] = '\0';
}

ag_status ag_tape_status(const ag_tape *tape)
{
    return tape ? tape->status : AG_ERR_ARG;
}

const char *ag_tape_error(const ag_tape *tape)
{
    return tape ? tape->error : "tape is NULL";
}

size_t ag_tape_size(const ag_tape *tape)
{
    return tape ? tape->n_entries : 0;
}

size_t ag_tape_peak_bytes(const ag_tape *tape)
{
    return tape ? tape->arena.peak : 0;
}

ag_entry *ag_tape_push(ag_tape *tape, const ag_op *op, ag_tensor *out, int n_in,
                       const ag_tensor *const *in)
{
    if (tape->n_entries == tape->cap_entries) {
        size_t cap = tape->cap_entries ? tape->cap_entries * 2 : 64;
        ag_entry *grown = cap > SIZE_MAX / sizeof(*grown)
                              ? NULL
                              : ag_realloc(tape->entries, cap * sizeof(*grown));
        if (!grown) {
            ag_tape_fail(tape, AG_ERR_NOMEM, "%s: out of memory growing the tape", op->name);
            return NULL;
        }
        tape->entries = grown;
        tape->cap_entries = cap;
    }
    ag_entry *e = &tape->entries[tape->n_entries++];
    memset(e, 0, sizeof(*e));
    e->op = op;
    e->out = out;
    e->n_in = n_in;
    for (int i = 0; i < n_in; i++)
        e->in[i] = (ag_tensor *)in[i]; /* backward writes into inputs' gradients */
    return e;
}

int ag_op_begin(ag_tape *tape, const char *op, int n_in, const ag_tensor *const *in)
{
    if (!tape)
        return 0;
    if (tape->status != AG_OK)
        return 0;
    if (ag_interrupted()) {
        ag_tape_fail(tape, AG_ERR_STOPPED, "%s: stopped (interrupted)", op);
        return 0;
    }
    /* In anomaly mode, the op before this one must have produced finite values. */
    if (tape->detect_anomaly && tape->n_entries > 0 &&
        !ag_anomaly_check_entry(tape, tape->n_entries - 1))
        return 0;
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) {
            ag_tape_fail(tape, AG_ERR_ARG, "%s: input %d is NULL", op, i + 1);
            return 0;
        }
    }
    return 1;
}

int ag_any_grad(int n_in, const ag_tensor *const *in)
{
    for (int i = 0; i < n_in; i++)
        if (in[i]->grad)
            return 1;
    return 0;
}

/* ---- leaves: the data a step starts from ---- */

/* A leaf entry's tensor, zeroed or (when its data is about to be copied in) not. */
static ag_tensor *leaf_new(ag_tape *tape, int ndim, const int *shape, int zero_data)
{
    if (!tape || tape->status != AG_OK)
        return NULL;
    ag_tensor *t = ag_tensor_make(tape, ndim, shape, zero_data, 0);
    if (t)
        ag_tape_push(tape, &ag_op_leaf, t, 0, NULL);
    return tape->status == AG_OK ? t : NULL;
}

ag_tensor *ag_tensor_new(ag_tape *tape, int ndim, const int *shape)
{
    return leaf_new(tape, ndim, shape, 1);
}

ag_tensor *ag_tensor_from(ag_tape *tape, int ndim, const int *shape, const ag_real *data)
{
    if (!tape || tape->status != AG_OK)
        return NULL;
    if (!data) {
        ag_tape_fail(tape, AG_ERR_ARG, "tensor_from: data is NULL");
        return NULL;
    }
    ag_tensor *t = leaf_new(tape, ndim, shape, 0);
    if (t)
        memcpy(t->data, data, t->size * sizeof(ag_real));
    return t;
}

ag_tensor *ag_requires_grad(ag_tape *tape, ag_tensor *t)
{
    if (!tape || tape->status != AG_OK)
        return NULL;
    if (!t) {
        ag_tape_fail(tape, AG_ERR_ARG, "requires_grad: tensor is NULL");
        return NULL;
    }
    if (!t->grad) {
        t->grad = ag_arena_alloc(tape, t->size * sizeof(ag_real));
        if (!t->grad)
            return NULL;
        memset(t->grad, 0, t->size * sizeof(ag_real));
    }
    return t;
}
