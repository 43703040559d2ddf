/*
 * anomaly.c - find the first op that produced NaN or Inf, like PyTorch's
 * detect_anomaly. Two ways in: ag_tape_detect_anomaly makes every op check
 * the output of the op before it (the tape stops at the first bad value),
 * and ag_tape_find_anomaly scans a finished step after the fact, which costs
 * nothing until a loss turns non-finite.
 */
#include "internal.h"
#include "../kernels/threads.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A finite value has an exponent field short of all ones. */
#ifdef AG_REAL_DOUBLE
typedef uint64_t real_bits;
#define EXP_MASK ((uint64_t)0x7ff << 52)
#else
typedef uint32_t real_bits;
#define EXP_MASK ((uint32_t)0xff << 23)
#endif

size_t ag_first_nonfinite(const ag_real *v, size_t n)
{
    if (!v)
        return n;
    /* 64 values at a time through the exponent bits (a loop without an
     * exit the compiler turns into vector code), then the block that has
     * one, value by value */
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        real_bits b[64], bad = 0;
        memcpy(b, v + i, sizeof(b));
        for (int k = 0; k < 64; k++)
            bad |= (b[k] & EXP_MASK) == EXP_MASK;
        if (bad)
            break;
    }
    for (; i < n; i++)
        if (!isfinite(v[i]))
            return i;
    return n;
}

/* Elements per chunk of the scan shared out over threads. */
#define SCAN_GRAIN 32768

typedef struct scan_job {
    ag_tensor *const *params;
    size_t p[AG_PARAMS_CHUNKS], elem[AG_PARAMS_CHUNKS]; /* each chunk's first bad one */
} scan_job;

static void scan_piece(void *ctx, size_t chunk, size_t p, size_t lo, size_t hi)
{
    scan_job *j = ctx;
    if (j->p[chunk] != SIZE_MAX || !j->params[p]->data)
        return; /* an earlier piece of this chunk had one, or nothing to scan */
    size_t i = lo + ag_first_nonfinite(j->params[p]->data + lo, hi - lo);
    if (i < hi) {
        j->p[chunk] = p;
        j->elem[chunk] = i;
    }
}

long ag_first_nonfinite_param(ag_tensor *const *params, size_t n, size_t *elem)
{
    scan_job j = {.params = params};
    for (size_t c = 0; c < AG_PARAMS_CHUNKS; c++)
        j.p[c] = SIZE_MAX;
    size_t chunks = ag_params_range(params, n, SCAN_GRAIN, scan_piece, &j);
    for (size_t c = 0; c < chunks; c++)
        if (j.p[c] != SIZE_MAX) {
            *elem = j.elem[c];
            return (long)j.p[c];
        }
    return -1;
}

/* The first bad element of a buffer, or -1. A causal mask's -inf entries
 * are intended, so for that op only NaN counts. */
static long first_bad(const ag_real *v, size_t n, int allow_inf)
{
    size_t i = ag_first_nonfinite(v, n);
    for (; i < n; i += 1 + ag_first_nonfinite(v + i + 1, n - i - 1))
        if (!allow_inf || isnan(v[i]))
            return (long)i;
    return -1;
}

static ag_status report(ag_tape *tape, size_t k, const char *what, const ag_real *v, long i)
{
    const ag_entry *e = &tape->entries[k];
    char shape[64];
    return ag_tape_fail(tape, AG_ERR_NUMERIC,
                        "anomaly: %s of op %s (tape entry %zu, %s) is %s at element %ld", what,
                        e->op->name, k, ag_shape_str(e->out, shape, sizeof(shape)),
                        isnan(v[i]) ? "NaN" : "Inf", i);
}

int ag_anomaly_check_entry(ag_tape *tape, size_t k)
{
    const ag_entry *e = &tape->entries[k];
    long i = first_bad(e->out->data, e->out->size, e->op->flags & AG_OP_MASKS);
    if (i < 0)
        return 1;
    report(tape, k, e->op == &ag_op_leaf ? "the input" : "the output", e->out->data, i);
    return 0;
}

void ag_tape_detect_anomaly(ag_tape *tape, int on)
{
    if (tape)
        tape->detect_anomaly = on != 0;
}

ag_status ag_tape_find_anomaly(ag_tape *tape)
{
    if (!tape)
        return AG_ERR_ARG;
    /* values, in the order the forward pass made them */
    for (size_t k = 0; k < tape->n_entries; k++)
        if (!ag_anomaly_check_entry(tape, k))
            return tape->status;
    /* gradients, in the order the backward pass made them */
    for (size_t k = tape->n_entries; k-- > 0;) {
        const ag_entry *e = &tape->entries[k];
        if (e->out->grad_unset)
            continue; /* not written yet: zero */
        long i = first_bad(e->out->grad, e->out->size, 0);
        if (i >= 0)
            return report(tape, k, "the gradient of the output", e->out->grad, i);
    }
    return AG_OK;
}
