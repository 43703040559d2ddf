/*
 * sgd.c - stochastic gradient descent with momentum (PyTorch's form):
 *   v = momentum v + g,   p = p - lr v
 * With momentum 0 this is p = p - lr g and keeps no state. Momentum lets
 * steps build up along directions the gradient keeps pointing in.
 */
#include "optim.h"

#include <math.h>

ag_optim *ag_sgd_new(ag_tensor *const *params, size_t n, double lr, double momentum)
{
    if (!isfinite(lr) || lr < 0 || !(momentum >= 0 && momentum < 1))
        return NULL;
    ag_optim *opt = ag_optim_alloc(AG_OPTIM_SGD, params, n, momentum > 0 ? 1 : 0);
    if (opt) {
        opt->lr = lr;
        opt->momentum = momentum;
    }
    return opt;
}

void ag_sgd_step(ag_optim *opt)
{
    ag_real lr = (ag_real)opt->lr, mu = (ag_real)opt->momentum;
    for (size_t i = 0; i < opt->n; i++) {
        ag_tensor *p = opt->params[i];
        if (opt->slots == 0) {
            for (size_t j = 0; j < p->size; j++)
                p->data[j] -= lr * p->grad[j];
            continue;
        }
        ag_real *v = opt->state[i];
        for (size_t j = 0; j < p->size; j++) {
            v[j] = mu * v[j] + p->grad[j];
            p->data[j] -= lr * v[j];
        }
    }
    opt->steps++;
}
