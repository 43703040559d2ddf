/*
 * anomaly.c - find the first op that produced NaN or Inf, like PyTorch's
 * detect_anomaly. Two ways in: ag_tape_detect_anomaly makes every op check
 * the output of the op before it (the tape stops at the first bad value),
 * and ag_tape_find_anomaly scans a finished step after the fact, which costs
 * nothing until a loss turns non-finite.
 */
#include "internal.h"

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

long ag_first_nonfinite_param(ag_tensor *const *params, size_t n, size_t *elem)
{
    for (size_t p = 0; params && p < n; p++) {
        if (!params[p] || !params[p]->data)
            continue;
        size_t i = ag_first_nonfinite(params[p]->data, params[p]->size);
        if (i < params[p]->size) {
            *elem = i;
            return (long)p;
        }
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
        if (ag_grad_is_unset(tape, e->out))
            continue; /* not written yet: zero */
        long i = first_bad(e->out->grad, e->out->size, 0);
        if (i >= 0)
            return report(tape, k, "the gradient of the output", e->out->grad, i);
    }
    return AG_OK;
}
