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
#include "../kernels/kernels.h"
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

static void adam_step(ag_optim *opt)
{
    long t = ++opt->steps;
    /* the step's constants in double: 1 - beta2^t is tiny for small t and
     * float would lose it (and 1 - (float)0.999 is 1.3e-5 off 0.001) */
    double c1 = 1 - pow(opt->beta1, (double)t), c2 = 1 - pow(opt->beta2, (double)t);
    ag_adam_consts c = {
        .b1 = (ag_real)opt->beta1,
        .a1 = (ag_real)(1 - opt->beta1),
        .b2 = (ag_real)opt->beta2,
        .a2 = (ag_real)(1 - opt->beta2),
        .step = (ag_real)(opt->lr / c1),
        .rc2 = (ag_real)(1 / sqrt(c2)),
        .eps = (ag_real)opt->eps,
        .decay = (ag_real)(opt->lr * opt->weight_decay),
    };
    if (!ag_reference_kernels()) {
        opt->left_finite = ag_fast_adam(opt->params, opt->n, opt->state, &c);
        return;
    }
    int bad = 0;
    for (size_t i = 0; i < opt->n; i++) {
        ag_tensor *p = opt->params[i];
        bad |= ag_adam_update(p->size, p->data, p->grad, opt->state[2 * i], opt->state[2 * i + 1],
                              c.b1, c.a1, c.b2, c.a2, c.step, c.rc2, c.eps, c.decay);
    }
    opt->left_finite = !bad;
}
