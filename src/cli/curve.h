/*
 * curve.h - a training run's numbers kept for a plot (train's --plot).
 */
#ifndef AG_CLI_CURVE_H
#define AG_CLI_CURVE_H

#include "attograd.h"

/*
 * A curve holds at most cap rows of (step, width values), allocated by
 * ag_curve_init, so adding never allocates. Thinning: ag_curve_add keeps
 * step s only when (s - 1) % stride == 0 (steps count from 1); a run of N steps keeps its whole shape
 * in cap points with stride ceil(N / cap). Stride 1 keeps every row added
 * until the curve is full.
 *
 *     ag_curve loss;
 *     if (ag_curve_init_thinned(&loss, 1, steps, 10000) != AG_OK) ...
 *     for (long s = 1; s <= steps; s++) ag_curve_add(&loss, s, &l);
 *     ag_curve_write(&loss, f);   // gnuplot's '-' data: "step value" per line
 *     ag_curve_free(&loss);
 * ------------------------------------------------------------------------ */
typedef struct ag_curve {
    double *rows; /* (cap, 1 + width): a step, then its values; n of them filled */
    size_t n, cap;
    int width;
    long stride;
} ag_curve;

/* AG_ERR_ARG for width, cap or stride below 1 (or a size that overflows),
 * AG_ERR_NOMEM; either way *c is then empty (adding keeps nothing). */
ag_status ag_curve_init(ag_curve *c, int width, size_t cap, long stride);
/* For a run of steps steps (from 1) in at most max_points rows: cap
 * min(steps, max_points) and stride ceil(steps / cap), the rule above.
 * AG_ERR_ARG when steps or max_points is below 1. */
ag_status ag_curve_init_thinned(ag_curve *c, int width, long steps, size_t max_points);
/* Keep (step, values[0..width)) when the stride takes step and there is
 * room: returns 1, else 0. */
int ag_curve_add(ag_curve *c, long step, const double *values);
/* The rows as text, one a line: the step (%.0f), then each value (%.9g). */
void ag_curve_write(const ag_curve *c, FILE *f);
void ag_curve_free(ag_curve *c); /* the rows; *c is then empty (NULL does nothing) */


#endif /* AG_CLI_CURVE_H */
