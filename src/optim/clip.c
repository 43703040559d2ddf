/*
 * clip.c - global gradient-norm clipping: when the norm of all gradients
 * taken together, sqrt(sum over every element of g^2), exceeds max_norm,
 * every gradient is scaled by max_norm / norm. The direction is kept; only
 * an occasional huge step (a spike in the loss) is tamed.
 */
#include "optim.h"

#include <math.h>

double ag_clip_grad_norm(ag_tensor *const *params, size_t n, double max_norm)
{
    if (!params)
        return 0;
    double sq = 0;
    for (size_t i = 0; i < n; i++) {
        if (!params[i] || !params[i]->grad)
            continue;
        for (size_t j = 0; j < params[i]->size; j++)
            sq += (double)params[i]->grad[j] * (double)params[i]->grad[j];
    }
    double norm = sqrt(sq);
    if (max_norm > 0 && isfinite(norm) && norm > max_norm) {
        double scale = max_norm / norm;
        for (size_t i = 0; i < n; i++) {
            if (!params[i] || !params[i]->grad)
                continue;
            for (size_t j = 0; j < params[i]->size; j++)
                params[i]->grad[j] = (ag_real)(params[i]->grad[j] * scale);
        }
    }
    return norm;
}
