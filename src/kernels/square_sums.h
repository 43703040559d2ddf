/*
 * square_sums.h - the sum of squares of a run of gradient elements, in
 * double, as the clip takes it (optim.c) and as the GPT trainer's weighing
 * of its halves takes it (weigh.c): both must give the same bits, so both
 * inline this one loop into their own per-instruction-set functions
 * (clones.h; each lane adds in the same order in every version), and add
 * up its lanes and chunks with the two below.
 */
#ifndef AG_SQUARE_SUMS_H
#define AG_SQUARE_SUMS_H

#include "attograd.h"

#include <stddef.h>

/* s[l] += g[k]^2 for the elements k = l mod 8 of g[0, n): eight running
 * sums (a vector of them, not one chain of dependent adds). */
static inline void ag_square_sums(const ag_real *restrict g, size_t n, double *restrict s)
{
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++)
            s[l] += (double)g[k + l] * (double)g[k + l];
    for (int l = 0; k < n; k++, l++)
        s[l] += (double)g[k] * (double)g[k];
}

/* A piece's eight sums added in order into its chunk's sum. */
static inline void ag_square_sums_fold(double *chunk_sq, const double s[8])
{
    double sq = *chunk_sq;
    for (int l = 0; l < 8; l++)
        sq += s[l];
    *chunk_sq = sq;
}

/* The chunks' sums added in order: the chunks depend on the sizes alone
 * (threads.h, ag_params_range), so any number of threads gives this sum. */
static inline double ag_square_sums_total(const double *chunk_sq, size_t chunks)
{
    double sq = 0;
    for (size_t c = 0; c < chunks; c++)
        sq += chunk_sq[c];
    return sq;
}

#endif /* AG_SQUARE_SUMS_H */
