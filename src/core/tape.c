/*
 * tape.c - the tape (a Wengert list of one step's ops), its arena, the
 * sticky error, and the backward pass: a reverse loop over the entries.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {
    "ok", "shape", "argument", "nomem", "io", "format", "numeric",
};

const char *ag_status_name(ag_status status)
{
    if ((unsigned)status >= sizeof(status_names) / sizeof(status_names[0]))
        return "unknown";
    return status_names[status];
}

/* ---- arena ---- */

static ag_block *block_new(size_t cap)
{
    ag_block *b = ag_malloc(sizeof(*b));
    if (!b)
        return NULL;
    cap = (cap + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    b->mem = ag_aligned_alloc_large(AG_ALIGN, cap); /* huge pages: a step walks all of it */
    if (!b->mem) {
        free(b);
        return NULL;
    }
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

static void blocks_free(ag_block *b)
{
    while (b) {
        ag_block *next = b->next;
        free(b->mem);
        free(b);
        b = next;
    }
}

void *ag_arena_alloc(ag_tape *tape, size_t bytes)
{
    if (bytes > SIZE_MAX - AG_ALIGN) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "arena: %zu bytes do not fit in memory", bytes);
        return NULL;
    }
    size_t need = (bytes + AG_ALIGN - 1) / AG_ALIGN * AG_ALIGN;
    if (need == 0)
        need = AG_ALIGN;
    ag_block *b = tape->cur;
    while (b && b->cap - b->used < need)
        b = b->next; /* later blocks are empty after a reset */
    if (!b) {
        /* Grow geometrically so a step needs few blocks; reset merges them. */
        size_t cap = tape->cur ? tape->cur->cap * 2 : (size_t)1 << 16;
        if (cap < need)
            cap = need;
        b = block_new(cap);
        if (!b) {
            ag_tape_fail(tape, AG_ERR_NOMEM, "arena: out of memory allocating %zu bytes", bytes);
            return NULL;
        }
        if (tape->cur) {
            b->next = tape->cur->next;
            tape->cur->next = b;
        } else {
            tape->first = b;
        }
        tape->n_blocks++;
    }
    tape->cur = b;
    void *p = b->mem + b->used;
    b->used += need;
    tape->used += need;
    if (tape->used > tape->peak)
        tape->peak = tape->used;
    return p;
}

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
    blocks_free(tape->first);
    free(tape->entries);
    free(tape);
}

void ag_tape_reset(ag_tape *tape)
{
    if (!tape)
        return;
    /* A step that needed several blocks gets one block the size of the most
     * any step has used (not their total: geometric growth overshoots), so
     * from the next step on, a step of the same shape never calls malloc. */
    if (tape->n_blocks > 1) {
        ag_block *merged = block_new(tape->peak);
        if (merged) {
            blocks_free(tape->first);
            tape->first = merged;
            tape->n_blocks = 1;
        }
    }
    for (ag_block *b = tape->first; b; b = b->next)
        b->used = 0;
    tape->cur = tape->first;
    tape->used = 0;
    tape->backward_ran = 0;
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
    return tape ? tape->peak : 0;
}

ag_status ag_tape_fail(ag_tape *tape, ag_status status, const char *fmt, ...)
{
    if (!tape)
        return AG_ERR_ARG;
    if (tape->status == AG_OK && status != AG_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tape->error, sizeof(tape->error), fmt, ap);
        va_end(ap);
        tape->status = status;
    }
    return tape->status;
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

/* ---- backward ---- */

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
                e->out->grad_unset = 1;
        }
    }
    tape->backward_ran = 1;
    ag_grad_settle(loss);
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
        ag_grad_settle(e->out);
        for (int i = 0; i < e->n_in; i++)
            if (!(e->op->first_write & AG_INPUT(i)))
                ag_grad_settle(e->in[i]);
        e->op->backward(tape, e);
    }
    if (tape->detect_anomaly)
        return ag_tape_find_anomaly(tape);
    return tape->status;
}
