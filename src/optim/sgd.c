/*
 * sgd.c - stochastic gradient descent with momentum (PyTorch's form):
 *   v = momentum v + g,   p = p - lr v
 * With momentum 0 this is p = p - lr g and keeps no state. Momentum lets
 * steps build up along directions the gradient keeps pointing in.
 */
#include "optim.h"

#include <math.h>

static void sgd_step(ag_optim *opt);
static const ag_optim_desc sgd_desc = {"sgd", {"velocity", NULL}, sgd_step};

ag_optim *ag_sgd_new(ag_tensor *const *params, size_t n, double lr, double momentum)
{
    if (!ag_optim_valid_lr(lr) || !(momentum >= 0 && momentum < 1))
        return NULL;
    ag_optim *opt = ag_optim_alloc(&sgd_desc, params, n, momentum > 0 ? 1 : 0);
    if (opt) {
        opt->lr = lr;
        opt->momentum = momentum;
    }
    return opt;
}

/* One parameter's update; v is NULL without momentum. restrict (data,
 * gradient and velocity never overlap) lets the compiler vectorise the
 * loops without checking at run time. */
static void sgd_update(size_t n, ag_real *restrict p, const ag_real *restrict g,
                       ag_real *restrict v, ag_real lr, ag_real mu)
{
    if (!v) {
        for (size_t j = 0; j < n; j++)
            p[j] -= lr * g[j];
        return;
    }
    for (size_t j = 0; j < n; j++) {
        v[j] = mu * v[j] + g[j];
        p[j] -= lr * v[j];
    }
}

static void sgd_step(ag_optim *opt)
{
    ag_real lr = (ag_real)opt->lr, mu = (ag_real)opt->momentum;
    for (size_t i = 0; i < opt->n; i++) {
        ag_tensor *p = opt->params[i];
        sgd_update(p->size, p->data, p->grad, opt->slots ? opt->state[i] : NULL, lr, mu);
    }
    opt->steps++;
}
