/*
 * optim.h - the optimizer handle shared by sgd.c, adam.c and optim.c. Not
 * installed: callers see ag_optim as opaque.
 */
#ifndef AG_OPTIM_H
#define AG_OPTIM_H

#include "../core/internal.h"

#include <math.h>

/* What an optimizer is, as an op's descriptor is for an op: each optimizer
 * file defines its own (static const, beside its step) and its handles
 * point at it, so adding one touches no central list. */
typedef struct ag_optim_desc {
    const char *name;            /* "sgd", "adam" */
    const char *slot_names[2];   /* its state buffers per parameter, by slot */
    void (*step)(ag_optim *opt); /* one update of every parameter */
} ag_optim_desc;

struct ag_optim {
    const ag_optim_desc *desc;
    ag_tensor **params; /* (n) borrowed parameters; the array itself is a copy */
    size_t n;
    double lr;
    double momentum;     /* SGD */
    double beta1, beta2; /* Adam: decay of the first and second moment */
    double eps;          /* Adam: added to sqrt(v_hat) */
    double weight_decay; /* Adam: decoupled (AdamW); 0 = plain Adam */
    long steps;          /* steps taken; Adam's bias correction uses it */
    int slots;           /* state buffers per parameter: 0, 1 (velocity) or 2 (m, v) */
    ag_real **state;     /* (n * slots): state[i * slots + s] is (params[i]->size) */
    ag_real *buf;        /* one allocation behind every state buffer, zeroed */
    int left_finite;     /* 1: the last step checked, as it wrote them, that every
                          * parameter is finite (Adam); 0: not known (SGD, or one was not) */
};

/* Allocate the handle, copy the parameter pointers and make `slots` zeroed
 * buffers per parameter. NULL when an argument is bad or memory runs out. */
ag_optim *ag_optim_alloc(const ag_optim_desc *desc, ag_tensor *const *params, size_t n, int slots);

/* A learning rate every optimizer accepts: finite and >= 0. */
static inline int ag_optim_valid_lr(double lr)
{
    return isfinite(lr) && lr >= 0;
}

#endif /* AG_OPTIM_H */
