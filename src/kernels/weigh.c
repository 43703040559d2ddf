/*
 * weigh.c - the GPT trainer's two halves of a batch made one: their two
 * sets of gradients weighed into one, and its sum of squares (for the
 * clip) taken in the same pass, chunk by chunk and lane by lane as optim.c
 * takes it, so the norm is the same bits. (A file of its own, linked after
 * the others of this folder: in optim.c it moved the thread pool's code,
 * and the smallest attention step measured 3% slower for it.)
 */
#include "clones.h"
#include "kernels.h"
#include "square_sums.h"
#include "threads.h"

typedef struct weigh_job {
    ag_tensor *const *a, *const *b;
    ag_real wa, wb;
    double sq[AG_PARAMS_CHUNKS]; /* each chunk's sum of squares, as clip_job's */
} weigh_job;

/* a = wa a + wb b, b = 0, over n elements, then the new a's squares added
 * into s (square_sums.h), compiled per instruction set: the same two
 * products and sum, each rounded, in every version. */
AG_CLONES static void weigh(ag_real *restrict a, ag_real *restrict b, size_t n, ag_real wa,
                            ag_real wb, double *restrict s)
{
    for (size_t k = 0; k < n; k++) {
        a[k] = wa * a[k] + wb * b[k];
        b[k] = 0;
    }
    ag_square_sums(a, n, s);
}

/* Elements weighed, then summed while still in L1: a multiple of 8, so
 * that ag_square_sums gives every element the lane one call over the
 * whole piece would. */
#define WEIGH_BLOCK 2048

static void weigh_piece(void *ctx, size_t chunk, size_t i, size_t lo, size_t hi)
{
    weigh_job *j = ctx;
    ag_real *a = j->a[i]->grad, *b = j->b[i]->grad;
    if (!a || !b)
        return;
    double s[8] = {0};
    for (size_t k = lo; k < hi; k += WEIGH_BLOCK) {
        size_t m = hi - k < WEIGH_BLOCK ? hi - k : WEIGH_BLOCK;
        weigh(a + k, b + k, m, j->wa, j->wb, s);
    }
    ag_square_sums_fold(&j->sq[chunk], s);
}

double ag_fast_grad_weigh(ag_tensor *const *a, ag_tensor *const *b, size_t n, ag_real wa,
                          ag_real wb)
{
    weigh_job j = {.a = a, .b = b, .wa = wa, .wb = wb};
    /* the chunks of ag_fast_grad_sq_sum, so the same sum */
    size_t chunks = ag_params_range(a, n, AG_CLIP_GRAIN, weigh_piece, &j);
    return ag_square_sums_total(j.sq, chunks);
}
