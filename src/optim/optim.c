/*
 * optim.c - what every optimizer shares: the handle over a borrowed array of
 * parameters, its state buffers (one allocation, made at creation, so a
 * step never allocates), the step counter, and access to the state so a
 * checkpoint can save and restore training exactly.
 */
#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ag_optim *ag_optim_alloc(const ag_optim_desc *desc, ag_tensor *const *params, size_t n, int slots)
{
    if (!params || n == 0)
        return NULL;
    size_t total = 0; /* elements over all parameters */
    for (size_t i = 0; i < n; i++) {
        if (!params[i] || !params[i]->grad || params[i]->size > SIZE_MAX - total)
            return NULL;
        total += params[i]->size;
    }
    size_t n_state, buf_elems, buf_bytes, ptr_bytes;
    if (!ag_mul_size(n, (size_t)slots, &n_state) ||
        !ag_mul_size(total, (size_t)slots, &buf_elems) ||
        !ag_mul_size(buf_elems, sizeof(ag_real), &buf_bytes) ||
        !ag_mul_size(n, sizeof(ag_tensor *), &ptr_bytes))
        return NULL;
    ag_optim *opt = ag_calloc(1, sizeof(*opt));
    if (!opt)
        return NULL;
    opt->desc = desc;
    opt->n = n;
    opt->slots = slots;
    opt->params = ag_malloc(ptr_bytes);
    if (slots > 0) {
        opt->state = ag_calloc(n_state, sizeof(ag_real *));
        opt->buf = ag_calloc(buf_elems, sizeof(ag_real));
    }
    if (!opt->params || (slots > 0 && (!opt->state || !opt->buf))) {
        ag_optim_free(opt);
        return NULL;
    }
    memcpy(opt->params, params, ptr_bytes);
    ag_real *p = opt->buf;
    for (size_t i = 0; i < n; i++)
        for (int s = 0; s < slots; s++) {
            opt->state[i * (size_t)slots + (size_t)s] = p;
            p += params[i]->size;
        }
    return opt;
}

void ag_optim_free(ag_optim *opt)
{
    if (!opt)
        return;
    free(opt->params);
    free(opt->state);
    free(opt->buf);
    free(opt);
}

void ag_optim_step(ag_optim *opt)
{
    if (!opt)
        return;
    opt->left_finite = 0;
    opt->desc->step(opt);
}

int ag_optim_left_finite(const ag_optim *opt)
{
    return opt && opt->left_finite;
}

ag_status ag_optim_set_lr(ag_optim *opt, double lr)
{
    if (!opt || !ag_optim_valid_lr(lr))
        return AG_ERR_ARG;
    opt->lr = lr;
    return AG_OK;
}

double ag_optim_lr(const ag_optim *opt)
{
    return opt ? opt->lr : 0;
}

const char *ag_optim_name(const ag_optim *opt)
{
    if (!opt)
        return "none";
    return opt->desc->name;
}

size_t ag_optim_n_params(const ag_optim *opt)
{
    return opt ? opt->n : 0;
}

long ag_optim_steps(const ag_optim *opt)
{
    return opt ? opt->steps : 0;
}

ag_status ag_optim_set_steps(ag_optim *opt, long steps)
{
    /* at most what a checkpoint may hold: far from where ++steps would overflow */
    if (!opt || steps < 0 || steps > AG_TRAIN_MAX_STEP)
        return AG_ERR_ARG;
    opt->steps = steps;
    return AG_OK;
}

int ag_optim_slots(const ag_optim *opt)
{
    return opt ? opt->slots : 0;
}

const char *ag_optim_slot_name(const ag_optim *opt, int slot)
{
    if (!opt || slot < 0 || slot >= opt->slots)
        return NULL;
    return opt->desc->slot_names[slot];
}

ag_real *ag_optim_state(ag_optim *opt, size_t param_index, int slot)
{
    if (!opt || param_index >= opt->n || slot < 0 || slot >= opt->slots)
        return NULL;
    return opt->state[param_index * (size_t)opt->slots + (size_t)slot];
}
