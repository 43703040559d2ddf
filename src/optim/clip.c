/*
 * clip.c - global gradient-norm clipping: when the norm of all gradients
 * taken together, sqrt(sum over every element of g^2), exceeds max_norm,
 * every gradient is scaled by max_norm / norm. The direction is kept; only
 * an occasional huge step (a spike in the loss) is tamed.
 */
#include "../kernels/threads.h"
#include "optim.h"

#include <math.h>

/* Elements per chunk of the sums and the scaling shared out over threads. */
#define CLIP_GRAIN 16384

typedef struct clip_job {
    ag_tensor *const *params;
    double sq[AG_PARAMS_CHUNKS]; /* each chunk's sum of squares */
    double scale;
} clip_job;

static void square_piece(void *ctx, size_t chunk, size_t i, size_t lo, size_t hi)
{
    clip_job *j = ctx;
    const ag_real *g = j->params[i]->grad;
    if (!g)
        return;
    /* eight running sums, element k into sum k mod 8 (a vector of them, not
     * one chain of dependent adds), then added in order */
    double s[8] = {0};
    size_t k = lo;
    for (; k + 8 <= hi; k += 8)
        for (int l = 0; l < 8; l++)
            s[l] += (double)g[k + l] * (double)g[k + l];
    for (int l = 0; k < hi; k++, l++)
        s[l] += (double)g[k] * (double)g[k];
    double sq = j->sq[chunk];
    for (int l = 0; l < 8; l++)
        sq += s[l];
    j->sq[chunk] = sq;
}

static void scale_piece(void *ctx, size_t chunk, size_t i, size_t lo, size_t hi)
{
    (void)chunk;
    const clip_job *j = ctx;
    ag_real *g = j->params[i]->grad;
    if (!g)
        return;
    for (size_t k = lo; k < hi; k++)
        g[k] = (ag_real)(g[k] * j->scale);
}

double ag_clip_grad_norm(ag_tensor *const *params, size_t n, double max_norm)
{
    if (!params)
        return 0;
    /* the sum of squares chunk by chunk, the chunks' sums added in order:
     * the chunks depend on the sizes alone, so any number of threads gives
     * the same norm */
    clip_job j = {.params = params};
    size_t chunks = ag_params_range(params, n, CLIP_GRAIN, square_piece, &j);
    double sq = 0;
    for (size_t c = 0; c < chunks; c++)
        sq += j.sq[c];
    double norm = sqrt(sq);
    if (max_norm > 0 && isfinite(norm) && norm > max_norm) {
        j.scale = max_norm / norm;
        ag_params_range(params, n, CLIP_GRAIN, scale_piece, &j);
    }
    return norm;
}
