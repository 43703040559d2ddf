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
#include "optim.h"

#include <math.h>

ag_optim *ag_adam_new(ag_tensor *const *params, size_t n, double lr, double beta1, double beta2,
                      double eps, double weight_decay)
{
    if (!isfinite(lr) || lr < 0 || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) ||
        !(eps > 0 && isfinite(eps)) || !(weight_decay >= 0 && isfinite(weight_decay)))
        return NULL;
    ag_optim *opt = ag_optim_alloc(AG_OPTIM_ADAM, params, n, 2);
    if (opt) {
        opt->lr = lr;
        opt->beta1 = beta1;
        opt->beta2 = beta2;
        opt->eps = eps;
        opt->weight_decay = weight_decay;
    }
    return opt;
}

void ag_adam_step(ag_optim *opt)
{
    long t = ++opt->steps;
    /* in double: 1 - beta2^t is tiny for small t and float would lose it */
    double b1 = opt->beta1, b2 = opt->beta2;
    double c1 = 1 - pow(b1, (double)t), c2 = 1 - pow(b2, (double)t);
    double lr = opt->lr, decay = opt->lr * opt->weight_decay, eps = opt->eps;
    for (size_t i = 0; i < opt->n; i++) {
        ag_tensor *p = opt->params[i];
        ag_real *m = opt->state[2 * i], *v = opt->state[2 * i + 1];
        for (size_t j = 0; j < p->size; j++) {
            double g = p->grad[j];
            double mj = b1 * m[j] + (1 - b1) * g;
            double vj = b2 * v[j] + (1 - b2) * g * g;
            m[j] = (ag_real)mj;
            v[j] = (ag_real)vj;
            double pj = p->data[j];
            p->data[j] = (ag_real)(pj - decay * pj - lr * (mj / c1) / (sqrt(vj / c2) + eps));
        }
    }
}
