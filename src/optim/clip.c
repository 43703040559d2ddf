/*
 * clip.c - global gradient-norm clipping: when the norm of all gradients
 * taken together, sqrt(sum over every element of g^2), exceeds max_norm,
 * every gradient is scaled by max_norm / norm. The direction is kept; only
 * an occasional huge step (a spike in the loss) is tamed.
 */
#include "../kernels/kernels.h"
#include "optim.h"

#include <math.h>

double ag_clip_grad_norm(ag_tensor *const *params, size_t n, double max_norm)
{
    if (!params)
        return 0;
    double sq = 0;
    if (!ag_reference_kernels())
        sq = ag_fast_grad_sq_sum(params, n);
    else
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; params[i] && params[i]->grad && k < params[i]->size; k++)
                sq += (double)params[i]->grad[k] * (double)params[i]->grad[k];
    return ag_clip_to(params, n, max_norm, sqrt(sq));
}

double ag_clip_to(ag_tensor *const *params, size_t n, double max_norm, double norm)
{
    if (!params || !(max_norm > 0 && isfinite(norm) && norm > max_norm))
        return norm;
    double scale = max_norm / norm;
    if (!ag_reference_kernels()) {
        ag_fast_grad_scale(params, n, scale);
        return norm;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; params[i] && params[i]->grad && k < params[i]->size; k++)
            params[i]->grad[k] = (ag_real)(params[i]->grad[k] * scale);
    return norm;
}
