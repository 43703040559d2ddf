/*
 * gpt_ops.c - time the transformer block's own ops on the GPT's shapes
 * (4 layers, C = 128, batch 12 x 64 positions, so rows = 768): layernorm
 * over (768, 128) with a weight, gelu and relu over the MLP's (768, 512),
 * dropout p = 0.1 over (768, 128). Forward is the op call (making its output
 * included); backward is the entry's backward given dy, as ag_backward
 * would call it. Each is the median of many repetitions, on one thread and
 * then on two. Not part of the build; from the repository root:
 *
 *   make
 *   cc -O2 -Iinclude -Isrc bench/gpt_ops.c build/float/libattograd.a -lm -lpthread \
 *      -o build/gpt_ops
 *   build/gpt_ops [REPS]      # default 200
 *
 * One line per op and thread count:
 *   bench: op=gelu shape=768x512 threads=1 forward_us=... backward_us=...
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, whatever -std says */

#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { LAYERNORM, GELU, RELU, DROPOUT, N_OPS };
static const char *const names[N_OPS] = {"layernorm", "gelu", "relu", "dropout"};
static const int cols[N_OPS] = {128, 512, 512, 128};

static ag_tensor *record(int op, ag_tape *tape, ag_tensor *x, ag_tensor *w, ag_rng *rng)
{
    switch (op) {
    case LAYERNORM: return ag_layernorm(tape, x, w, NULL);
    case GELU: return ag_gelu(tape, x);
    case RELU: return ag_relu(tape, x);
    default: return ag_dropout(tape, x, 0.1, rng);
    }
}

static int run(int op, int reps)
{
    int rows = 768, shape[2] = {rows, cols[op]};
    ag_rng rng = ag_rng_new(1);
    ag_tensor *x = ag_param_new(2, shape), *w = ag_param_new(1, &shape[1]);
    ag_real *dy = malloc((size_t)rows * (size_t)cols[op] * sizeof(ag_real));
    double *fwd = malloc((size_t)reps * sizeof(double)),
           *bwd = malloc((size_t)reps * sizeof(double));
    ag_tape *tape = ag_tape_new();
    if (!x || !w || !dy || !fwd || !bwd || !tape) {
        fprintf(stderr, "gpt_ops: out of memory\n");
        return 1;
    }
    ag_fill_normal(x, &rng, 0, 1);
    ag_fill_normal(w, &rng, 1, 0.1);
    for (size_t i = 0; i < x->size; i++)
        dy[i] = (ag_real)ag_rng_normal(&rng);
    for (int r = -3; r < reps; r++) { /* three to size the arena and warm the caches */
        double t0 = now_seconds();
        ag_tensor *y = record(op, tape, x, w, &rng);
        double t1 = now_seconds();
        if (!y) {
            fprintf(stderr, "gpt_ops: %s\n", ag_tape_error(tape));
            return 1;
        }
        memcpy(y->grad, dy, y->size * sizeof(ag_real));
        const ag_entry *e = &tape->entries[tape->n_entries - 1];
        double t2 = now_seconds();
        e->op->backward(tape, e);
        double t3 = now_seconds();
        if (r >= 0) {
            fwd[r] = t1 - t0;
            bwd[r] = t3 - t2;
        }
        ag_tape_reset(tape);
    }
    printf("bench: op=%s shape=%dx%d threads=%d forward_us=%.1f backward_us=%.1f\n", names[op],
           rows, cols[op], ag_get_threads(), 1e6 * ag_median(fwd, (size_t)reps),
           1e6 * ag_median(bwd, (size_t)reps));
    ag_tape_free(tape);
    ag_param_free(x);
    ag_param_free(w);
    free(dy);
    free(fwd);
    free(bwd);
    return 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1) {
        fprintf(stderr, "usage: gpt_ops [REPS]\n");
        return 2;
    }
    for (int t = 1; t <= 2; t++) {
        ag_set_threads(t);
        for (int op = 0; op < N_OPS; op++)
            if (run(op, reps))
                return 1;
    }
    return 0;
}
