/*
 * init.c - weight initialisation. Glorot/Xavier uniform keeps the variance of
 * activations (forward) and of gradients (backward) roughly equal across a
 * linear map y = x W, which is what lets a freshly made layer learn at all.
 */
#include "../core/internal.h"

#include <math.h>

void ag_fill_glorot(ag_tensor *w, ag_rng *rng)
{
    if (!w || !rng)
        return;
    /* y = x W with W (d_in, d_out): fan_in is the rows, fan_out the columns */
    double fan_out = (double)w->shape[w->ndim - 1];
    double fan_in = (double)ag_rows(w);
    double limit = sqrt(6.0 / (fan_in + fan_out));
    ag_fill_uniform(w, rng, -limit, limit);
}
