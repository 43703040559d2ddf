/*
 * seed_attention.c - attention as a soft lookup, in a few library calls.
 *
 * Three words, each a 2-d vector. Every word asks "which words are like
 * me?" (dot products), turns the answers into weights that sum to 1
 * (softmax), and takes the weighted blend of the words. Here the query,
 * the key and the value of a word are all the word itself: Q = K = V = x.
 *
 * The numpy version this mirrors:
 *     x = np.array([[1, 0], [0, 1], [1, 1]])      # cat, sat, mat
 *     scores = x @ x.T / np.sqrt(2)
 *     weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
 *     output = weights @ x
 *
 * Build and run:  make && ./build/float/examples/seed_attention
 */
#include <math.h>
#include <stdio.h>

#include "attograd.h"

int main(void)
{
    /* The tape records the ops and owns every tensor they make. */
    ag_tape *tape = ag_tape_new();
    if (!tape)
        return 1;

    const ag_real words[] = {1, 0,  /* cat */
                             0, 1,  /* sat */
                             1, 1}; /* mat */
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){3, 2}, words);

    /* scores[i][j] = x_i . x_j / sqrt(d): how much word i looks like word j.
     * matmul_bt(a, b) is a @ b^T, so this is Q K^T with Q = K = x. */
    ag_tensor *scores = ag_scale(tape, ag_matmul_bt(tape, x, x), 1 / sqrt(2.0));

    /* Each row becomes weights that are positive and sum to 1. */
    ag_tensor *weights = ag_softmax(tape, scores);

    /* Each word's output is the weighted sum of the values (V = x). */
    ag_tensor *output = ag_matmul(tape, weights, x);

    /* Ops never abort: after a mistake they return NULL and the tape keeps
     * the first error, so one check at the end is enough. */
    if (!output) {
        fprintf(stderr, "seed_attention: %s\n", ag_tape_error(tape));
        ag_tape_free(tape);
        return 1;
    }

    printf("weights:\n");
    ag_tensor_print(stdout, weights, 2);
    printf("output:\n");
    ag_tensor_print(stdout, output, 2);

    ag_tape_free(tape); /* frees x, scores, weights and output at once */
    return 0;
}
