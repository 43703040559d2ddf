/*
 * adam.c - Adam with bias correction, and AdamW's decoupled weight decay
 * (Kingma & Ba 2015; Loshchilov & Hutter 2019). At step t = 1, 2, ...:
 *   m = beta1 m + (1 - beta1) g             running mean of the gradient
 *   v = beta2 v + (1 - beta2) g^2           running mean of its square
 *   m_hat = m / (1 - beta1^t),  v_hat = v / (1 - beta2^t)   (m, v start at 0)
 *   p = p - lr wd p - lr m_hat / (sqrt(v_hat) + eps)
 * Dividing by sqrt(v_hat) gives every element a step of about lr whatever
 * the gradient's scale. The decay term uses p before the update and is not
 * scaled by v_hat: that is what "decoupled" means (wd = 0 is plain Adam).
 */
#include "../kernels/clones.h"
#include "../kernels/threads.h"
#include "optim.h"

#include <math.h>

static void adam_step(ag_optim *opt);
static const ag_optim_desc adam_desc = {"adam", {"m", "v"}, adam_step};

ag_optim *ag_adam_new(ag_tensor *const *params, size_t n, double lr, double beta1, double beta2,
                      double eps, double weight_decay)
{
    if (!ag_optim_valid_lr(lr) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) ||
        !(eps > 0 && isfinite(eps)) || !(weight_decay >= 0 && isfinite(weight_decay)))
        return NULL;
    ag_optim *opt = ag_optim_alloc(&adam_desc, params, n, 2);
    if (opt) {
        opt->lr = lr;
        opt->beta1 = beta1;
        opt->beta2 = beta2;
        opt->eps = eps;
        opt->weight_decay = weight_decay;
    }
    return opt;
}

/* sqrt of this build's ag_real, a form the compiler vectorises (with
 * -fno-math-errno: see the Makefile) */
#ifdef AG_REAL_DOUBLE
#define REAL_SQRT sqrt
#else
#define REAL_SQRT sqrtf
#endif

/*
 * One parameter's update, the formula above with its per-step constants
 * folded in: m_hat / (sqrt(v_hat) + eps) = (1/c1) m / (sqrt(v) / sqrt(c2) + eps)
 * with c1 = 1 - beta1^t, c2 = 1 - beta2^t, so step = lr / c1 and rc2 =
 * 1 / sqrt(c2), and a1 = 1 - beta1, a2 = 1 - beta2, all computed in double
 * by the caller (1 - (float)0.999 is 1.3e-5 off 0.001). Returns 1 when a
 * new parameter is NaN or Inf (x - x is 0 only for a finite x), which
 * saves the caller a second pass over them to check. The loop runs in
 * ag_real with no branch and no call, so the compiler turns it into vector
 * code.
 */
static inline int adam_update(size_t n, ag_real *restrict p, const ag_real *restrict g,
                              ag_real *restrict m, ag_real *restrict v, ag_real b1, ag_real a1,
                              ag_real b2, ag_real a2, ag_real step, ag_real rc2, ag_real eps,
                              ag_real decay)
{
    int bad = 0;
    for (size_t j = 0; j < n; j++) {
        ag_real gj = g[j];
        ag_real mj = b1 * m[j] + a1 * gj;
        ag_real vj = b2 * v[j] + a2 * (gj * gj);
        m[j] = mj;
        v[j] = vj;
        ag_real pj = p[j];
        ag_real pn = pj - decay * pj - step * mj / (REAL_SQRT(vj) * rc2 + eps);
        p[j] = pn;
        bad |= !(pn - pn == 0);
    }
    return bad;
}

/* adam_update compiled once per instruction set (AG_CLONES), for parameters
 * of at least ADAM_WIDE elements; below that the call through the loader's
 * choice costs more than wider vectors save. Every version computes the
 * same values: the operations are the same and each is correctly rounded. */
#define ADAM_WIDE 64
AG_CLONES static int adam_update_wide(size_t n, ag_real *restrict p, const ag_real *restrict g,
                                      ag_real *restrict m, ag_real *restrict v, ag_real b1,
                                      ag_real a1, ag_real b2, ag_real a2, ag_real step, ag_real rc2,
                                      ag_real eps, ag_real decay)
{
    return adam_update(n, p, g, m, v, b1, a1, b2, a2, step, rc2, eps, decay);
}

/* The step's constants, for the pieces of the parameters, and per chunk
 * whether a piece of it made a parameter non-finite. */
typedef struct adam_job {
    const ag_optim *opt;
    ag_real b1, a1, b2, a2, step, rc2, eps, decay;
    unsigned char bad[AG_PARAMS_CHUNKS];
} adam_job;

/* Elements per chunk of the update shared out over the threads. */
#define ADAM_GRAIN 16384

static void adam_piece(void *ctx, size_t chunk, size_t i, size_t lo, size_t hi)
{
    adam_job *j = ctx;
    ag_tensor *p = j->opt->params[i];
    ag_real *m = j->opt->state[2 * i] + lo, *v = j->opt->state[2 * i + 1] + lo;
    int bad;
    if (p->size >= ADAM_WIDE)
        bad = adam_update_wide(hi - lo, p->data + lo, p->grad + lo, m, v, j->b1, j->a1, j->b2,
                               j->a2, j->step, j->rc2, j->eps, j->decay);
    else
        bad = adam_update(hi - lo, p->data + lo, p->grad + lo, m, v, j->b1, j->a1, j->b2, j->a2,
                          j->step, j->rc2, j->eps, j->decay);
    j->bad[chunk] |= (unsigned char)bad;
}

static void adam_step(ag_optim *opt)
{
    long t = ++opt->steps;
    /* in double: 1 - beta2^t is tiny for small t and float would lose it */
    double c1 = 1 - pow(opt->beta1, (double)t), c2 = 1 - pow(opt->beta2, (double)t);
    adam_job j = {
        .opt = opt,
        .step = (ag_real)(opt->lr / c1),
        .rc2 = (ag_real)(1 / sqrt(c2)),
        .decay = (ag_real)(opt->lr * opt->weight_decay),
        .eps = (ag_real)opt->eps,
        .b1 = (ag_real)opt->beta1,
        .a1 = (ag_real)(1 - opt->beta1),
        .b2 = (ag_real)opt->beta2,
        .a2 = (ag_real)(1 - opt->beta2),
    };
    /* each element's update is independent: any split gives the same values */
    size_t chunks = ag_params_range(opt->params, opt->n, ADAM_GRAIN, adam_piece, &j);
    opt->left_finite = 1;
    for (size_t c = 0; c < chunks; c++)
        if (j.bad[c])
            opt->left_finite = 0;
}
