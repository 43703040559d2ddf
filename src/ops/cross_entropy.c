/*
 * cross_entropy.c - softmax cross-entropy, fused: the mean over rows of
 *   -log softmax(z)[target] = logsumexp(z) - z[target].
 * Fusing the softmax with the log keeps it stable (logsumexp subtracts the
 * row max, so nothing overflows and no log(0) appears) and makes the backward
 * one line: dz = (softmax(z) - onehot(target)) / rows.
 */
#include "../core/internal.h"

#include <math.h>
#include <string.h>

static void cross_entropy_backward(ag_tape *tape, const ag_entry *e);
static const ag_op cross_entropy_op = {"cross_entropy", cross_entropy_backward, 0};

/* What backward needs, in the arena. */
typedef struct ce_saved {
    int *targets;      /* (rows) copied from the caller; AG_IGNORE_INDEX skips a row */
    ag_real *probs;    /* (rows, C) softmax of the logits, or NULL without a gradient */
    size_t counted;    /* rows that are not ignored: the mean's denominator */
} ce_saved;

ag_tensor *ag_cross_entropy(ag_tape *tape, const ag_tensor *logits, const int *targets,
                            size_t n_targets)
{
    const ag_tensor *in[1] = {logits};
    if (!ag_op_begin(tape, "cross_entropy", 1, in))
        return NULL;
    char s[64];
    size_t C = (size_t)logits->shape[logits->ndim - 1], rows = ag_rows(logits);
    if (!targets) {
        ag_tape_fail(tape, AG_ERR_ARG, "cross_entropy: targets is NULL");
        return NULL;
    }
    if (n_targets != rows) {
        ag_tape_fail(tape, AG_ERR_SHAPE,
                     "cross_entropy: logits are %s (%zu rows of %zu classes), %zu targets: one per row",
                     ag_shape_str(logits, s, sizeof(s)), rows, C, n_targets);
        return NULL;
    }
    size_t counted = 0;
    for (size_t r = 0; r < rows; r++) {
        if (targets[r] == AG_IGNORE_INDEX)
            continue;
        if (targets[r] < 0 || (size_t)targets[r] >= C) {
            ag_tape_fail(tape, AG_ERR_ARG,
                         "cross_entropy: target %d at row %zu is out of range [0, %zu) for logits %s",
                         targets[r], r, C, ag_shape_str(logits, s, sizeof(s)));
            return NULL;
        }
        counted++;
    }
    int needs_grad = ag_any_grad(1, in);
    ag_tensor *out = ag_tensor_make(tape, 1, (int[]){1}, 0, needs_grad);
    ce_saved *sv = ag_arena_alloc(tape, sizeof(*sv));
    int *tg = ag_arena_alloc(tape, rows * sizeof(int));   /* rows * C reals fit, so this fits */
    ag_real *probs = needs_grad ? ag_arena_alloc(tape, logits->size * sizeof(ag_real)) : NULL;
    if (!out || !sv || !tg || (needs_grad && !probs))
        return NULL;
    ag_entry *e = ag_tape_push(tape, &cross_entropy_op, out, 1, in);
    if (!e)
        return NULL;
    memcpy(tg, targets, rows * sizeof(int));
    sv->targets = tg;
    sv->probs = probs;
    sv->counted = counted;
    e->saved = sv;

    double acc = 0;
    for (size_t r = 0; r < rows; r++) {
        if (tg[r] == AG_IGNORE_INDEX)
            continue;
        const ag_real *z = logits->data + r * C;
        double max = z[0];
        for (size_t j = 1; j < C; j++)
            if (z[j] > max)
                max = z[j];
        double sum = 0;
        for (size_t j = 0; j < C; j++)
            sum += exp((double)z[j] - max);
        /* sum >= 1: the max's own term is exp(0) */
        /* cppcheck-suppress invalidFunctionArg */
        acc += log(sum) + max - (double)z[tg[r]];
        if (probs)
            for (size_t j = 0; j < C; j++)
                probs[r * C + j] = (ag_real)(exp((double)z[j] - max) / sum);
    }
    out->data[0] = counted ? (ag_real)(acc / (double)counted) : 0;
    return out;
}

static void cross_entropy_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: L = sum_r (logsumexp(z_r) - z_r[t_r]) / N over the N counted rows.
     * d logsumexp(z)/dz_j = softmax(z)_j and d z[t]/dz_j = [j == t], so
     * dz_r,j += (p_r,j - [j == t_r]) / N * dL; ignored rows get nothing.
     */
    (void)tape;
    ag_tensor *z = e->in[0];
    const ce_saved *sv = e->saved;
    if (!z->grad || sv->counted == 0)
        return;
    size_t C = (size_t)z->shape[z->ndim - 1], rows = ag_rows(z);
    ag_real g = (ag_real)(e->out->grad[0] / (double)sv->counted);
    for (size_t r = 0; r < rows; r++) {
        int t = sv->targets[r];
        if (t == AG_IGNORE_INDEX)
            continue;
        const ag_real *p = sv->probs + r * C;
        ag_real *dz = z->grad + r * C;
        for (size_t j = 0; j < C; j++)
            dz[j] += g * (p[j] - (j == (size_t)t ? 1 : 0));
    }
}
