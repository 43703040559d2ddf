/*
 * optim.c - the fast kernels of the optimizers and of gradient clipping:
 * every parameter's elements end to end, cut into chunks fixed by their
 * sizes and shared out over the threads (threads.h, ag_params_range), the
 * element loops compiled per instruction set (clones.h). The update is the
 * plain loop of src/optim/ (ag_adam_update); the sums are taken chunk by
 * chunk and added in order, so any number of threads gives the same bits.
 */
#include "clones.h"
#include "kernels.h"
#include "square_sums.h"
#include "threads.h"

#include <math.h>

/* ---- Adam ---- */

/* ag_adam_update compiled once per instruction set (AG_CLONES), for parameters
 * of at least ADAM_WIDE elements; below that the call through the loader's
 * choice costs more than wider vectors save. Every version computes the
 * same values: the operations are the same and each is correctly rounded. */
#define ADAM_WIDE 64
AG_CLONES static int adam_update_wide(size_t n, ag_real *restrict p, const ag_real *restrict g,
                                      ag_real *restrict m, ag_real *restrict v, ag_real b1,
                                      ag_real a1, ag_real b2, ag_real a2, ag_real step, ag_real rc2,
                                      ag_real eps, ag_real decay)
{
    return ag_adam_update(n, p, g, m, v, b1, a1, b2, a2, step, rc2, eps, decay);
}

typedef struct adam_job {
    ag_tensor *const *params;
    ag_real *const *state; /* m, v of parameter i at 2 i, 2 i + 1 */
    ag_adam_consts c;
    unsigned char bad[AG_PARAMS_CHUNKS]; /* a piece of the chunk made a parameter non-finite */
} adam_job;

/* Elements per chunk of the update shared out over the threads. */
#define ADAM_GRAIN 16384

/* Elements [lo, hi) of parameter p with its state m, v; 1 if one became
 * non-finite. */
static int adam_part(ag_tensor *p, ag_real *m, ag_real *v, size_t lo, size_t hi,
                     const ag_adam_consts *c)
{
    if (p->size >= ADAM_WIDE)
        return adam_update_wide(hi - lo, p->data + lo, p->grad + lo, m + lo, v + lo, c->b1, c->a1,
                                c->b2, c->a2, c->step, c->rc2, c->eps, c->decay);
    return ag_adam_update(hi - lo, p->data + lo, p->grad + lo, m + lo, v + lo, c->b1, c->a1, c->b2,
                          c->a2, c->step, c->rc2, c->eps, c->decay);
}

static void adam_piece(void *ctx, size_t chunk, size_t i, size_t lo, size_t hi)
{
    adam_job *j = ctx;
    int bad = adam_part(j->params[i], j->state[2 * i], j->state[2 * i + 1], lo, hi, &j->c);
    j->bad[chunk] |= (unsigned char)bad;
}

int ag_fast_adam(ag_tensor *const *params, size_t n, ag_real *const *state, const ag_adam_consts *c)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += params[i]->size;
    if (total <= ADAM_GRAIN) { /* one chunk (small layers): no tasks, no calls per piece */
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            bad |= adam_part(params[i], state[2 * i], state[2 * i + 1], 0, params[i]->size, c);
        return !bad;
    }
    adam_job j = {.params = params, .state = state, .c = *c};
    /* each element's update is independent: any split gives the same values */
    size_t chunks = ag_params_range(params, n, ADAM_GRAIN, adam_piece, &j);
    for (size_t k = 0; k < chunks; k++)
        if (j.bad[k])
            return 0;
    return 1;
}

/* ---- clipping ---- */

/* The sums and the scaling, in chunks of AG_CLIP_GRAIN elements (kernels.h)
 * shared out over the threads. */
typedef struct clip_job {
    ag_tensor *const *params;
    double sq[AG_PARAMS_CHUNKS]; /* each chunk's sum of squares */
    double scale;
} clip_job;

/* square_sums.h's loop, compiled per instruction set */
AG_CLONES static void square_sums(const ag_real *restrict g, size_t n, double *restrict s)
{
    ag_square_sums(g, n, s);
}

static void square_piece(void *ctx, size_t chunk, size_t i, size_t lo, size_t hi)
{
    clip_job *j = ctx;
    const ag_real *g = j->params[i]->grad;
    if (!g)
        return;
    double s[8] = {0};
    square_sums(g + lo, hi - lo, s);
    ag_square_sums_fold(&j->sq[chunk], s);
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

double ag_fast_grad_sq_sum(ag_tensor *const *params, size_t n)
{
    clip_job j = {.params = params};
    size_t chunks = ag_params_range(params, n, AG_CLIP_GRAIN, square_piece, &j);
    return ag_square_sums_total(j.sq, chunks);
}

void ag_fast_grad_scale(ag_tensor *const *params, size_t n, double scale)
{
    clip_job j = {.params = params, .scale = scale};
    ag_params_range(params, n, AG_CLIP_GRAIN, scale_piece, &j);
}
