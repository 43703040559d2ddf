/*
 * cross_entropy.c - softmax cross-entropy, fused: the mean over rows of
 *   -log softmax(z)[target] = logsumexp(z) - z[target].
 * Fusing the softmax with the log keeps it stable (logsumexp subtracts the
 * row max, so nothing overflows and no log(0) appears) and makes the backward
 * one line: dz = (softmax(z) - onehot(target)) / rows. Each row is
 * ag_cross_entropy_row (src/core/ref_softmax.c); the fast kernel shares the
 * rows out over the threads.
 */
#include "../kernels/kernels.h"

#include <string.h>

static void cross_entropy_backward(ag_tape *tape, const ag_entry *e);
static const ag_op cross_entropy_op = {"cross_entropy", cross_entropy_backward, 0, AG_INPUT(0)};

/* What backward needs, in the arena. */
typedef struct ce_saved {
    int *targets;   /* (rows) copied from the caller; AG_IGNORE_INDEX skips a row */
    ag_real *probs; /* (rows, C) softmax of the logits, or NULL without a gradient */
    size_t counted; /* rows that are not ignored: the mean's denominator */
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
        ag_tape_fail(
            tape, AG_ERR_SHAPE,
            "cross_entropy: logits are %s (%zu rows of %zu classes), %zu targets: one per row",
            ag_shape_str(logits, s, sizeof(s)), rows, C, n_targets);
        return NULL;
    }
    size_t counted = 0;
    for (size_t r = 0; r < rows; r++) {
        if (targets[r] == AG_IGNORE_INDEX)
            continue;
        if (targets[r] < 0 || (size_t)targets[r] >= C) {
            ag_tape_fail(
                tape, AG_ERR_ARG,
                "cross_entropy: target %d at row %zu is out of range [0, %zu) for logits %s",
                targets[r], r, C, ag_shape_str(logits, s, sizeof(s)));
            return NULL;
        }
        counted++;
    }
    int needs_grad = ag_any_grad(1, in);
    ag_tensor *out = ag_tensor_make(tape, 1, (int[]){1}, 0, needs_grad);
    ce_saved *sv = ag_arena_alloc(tape, sizeof(*sv));
    int *tg = ag_arena_alloc(tape, rows * sizeof(int)); /* rows * C reals fit, so this fits */
    ag_real *probs = needs_grad ? ag_arena_alloc(tape, logits->size * sizeof(ag_real)) : NULL;
    size_t loss_bytes;
    if (!ag_mul_size(rows, sizeof(double), &loss_bytes)) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "cross_entropy: logits %s are too large",
                     ag_shape_str(logits, s, sizeof(s)));
        return NULL;
    }
    double *loss = ag_arena_alloc(tape, loss_bytes); /* each row's */
    if (!out || !sv || !tg || (needs_grad && !probs) || !loss)
        return NULL;
    ag_entry *e = ag_tape_push(tape, &cross_entropy_op, out, 1, in);
    if (!e)
        return NULL;
    memcpy(tg, targets, rows * sizeof(int));
    sv->targets = tg;
    sv->probs = probs;
    sv->counted = counted;
    e->saved = sv;

    if (ag_reference_kernels()) {
        for (size_t r = 0; r < rows; r++)
            if (tg[r] != AG_IGNORE_INDEX)
                loss[r] = ag_cross_entropy_row(logits->data + r * C, C, tg[r],
                                               probs ? probs + r * C : NULL);
    } else {
        ag_fast_cross_entropy(logits->data, tg, probs, loss, rows, C);
    }
    double acc = 0; /* the rows' losses in order: the same on any number of threads */
    for (size_t r = 0; r < rows; r++)
        if (tg[r] != AG_IGNORE_INDEX)
            acc += loss[r];
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
    /* an unset dz (ag_grad_first) is stored into: 0 + ..., as adding to zeros */
    int set = ag_grad_first(tape, z);
    for (size_t r = 0; r < rows; r++) {
        int t = sv->targets[r];
        ag_real *dz = z->grad + r * C;
        if (t == AG_IGNORE_INDEX) {
            if (set)
                memset(dz, 0, C * sizeof(ag_real));
            continue;
        }
        const ag_real *p = sv->probs + r * C;
        for (size_t j = 0; j < C; j++)
            dz[j] = (set ? 0 : dz[j]) + g * (p[j] - (j == (size_t)t ? 1 : 0));
    }
}
