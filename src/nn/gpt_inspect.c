/*
 * gpt_inspect.c - looking inside a GPT: the attention weights of every head
 * for one text (what `attograd attend` shows), and how the gradient and the
 * signal travel through the blocks while it trains (the gradient flow that
 * `attograd train --task text --log` records at each evaluation).
 */
#include "gpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLOW_STREAM 0xf10bULL

ag_status ag_gpt_attention(ag_gpt *g, const int *ids, int seq, ag_real *attn, char *err,
                           size_t errlen)
{
    if (!g || !ids || !attn)
        return ag_err(AG_ERR_ARG, err, errlen, "gpt attention: a NULL argument");
    int L = g->cfg.layers;
    ag_tape *tape = ag_tape_new();
    ag_tensor **p = ag_calloc(L > 0 ? (size_t)L : 1, sizeof(*p));
    if (!tape || !p) {
        ag_tape_free(tape);
        free(p);
        return ag_err(AG_ERR_NOMEM, err, errlen, "gpt attention: out of memory");
    }
    ag_gpt_taps taps = {p, NULL};
    ag_gpt_grads_off(g);
    ag_tensor *logits = ag_gpt_forward_taps(tape, g, ids, 1, seq, NULL, &taps);
    ag_gpt_grads_on(g);
    ag_status st = logits ? AG_OK : ag_tape_status(tape);
    if (st != AG_OK) {
        ag_err(st, err, errlen, "%s", ag_tape_error(tape));
    } else {
        /* block l's P is (1,H,T,T): its heads one after the other */
        size_t per_layer = (size_t)g->cfg.heads * (size_t)seq * (size_t)seq;
        for (int l = 0; l < L; l++)
            memcpy(attn + (size_t)l * per_layer, p[l]->data, per_layer * sizeof(ag_real));
    }
    ag_tape_free(tape);
    free(p);
    return st;
}

/* sqrt(mean(v^2)) over n values, in double. */
static double rms(const ag_real *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)v[i] * (double)v[i];
    return n ? sqrt(s / (double)n) : 0;
}

ag_status ag_gpt_trainer_flow(ag_gpt_trainer *t, double *grad_norm, double *resid_rms, char *err,
                              size_t errlen)
{
    if (!t || !grad_norm || !resid_rms)
        return ag_err(AG_ERR_ARG, err, errlen, "gradient flow: a NULL argument");
    ag_gpt *g = t->g;
    int B = t->cfg.batch, T = g->cfg.seq, L = g->cfg.layers;
    ag_tensor **resid = ag_calloc(L > 0 ? (size_t)L : 1, sizeof(*resid));
    if (!resid)
        return ag_err(AG_ERR_NOMEM, err, errlen, "gradient flow: out of memory");
    /* the same windows at every call: the curves then follow the model, not the batch */
    ag_rng rng = ag_rng_new(t->cfg.seed ^ FLOW_STREAM);
    ag_text_batch(t->text, AG_SPLIT_TRAIN, B, T, &rng, t->x, t->y);
    ag_zero_grad(g->params, g->n_params);
    ag_gpt_taps taps = {NULL, resid};
    ag_tensor *logits = ag_gpt_forward_taps(t->tape, g, t->x, B, T, NULL, &taps);
    ag_tensor *loss = ag_cross_entropy(t->tape, logits, t->y, (size_t)B * (size_t)T);
    for (int l = 0; loss && l < L; l++)
        resid_rms[l] = rms(resid[l]->data, resid[l]->size);
    ag_status st = ag_backward(t->tape, loss);
    if (st != AG_OK)
        ag_err(st, err, errlen, "gradient flow: %s", ag_tape_error(t->tape));
    ag_tape_reset(t->tape);
    free(resid);
    if (st != AG_OK)
        return st;
    /* block l's parameters are the ones named "h.l." */
    for (int l = 0; l < L; l++) {
        char prefix[24];
        int n = snprintf(prefix, sizeof(prefix), "h.%d.", l);
        double s = 0;
        for (size_t i = 0; i < g->n_params; i++) {
            const ag_tensor *p = g->params[i];
            if (strncmp(g->names[i], prefix, (size_t)n) != 0)
                continue;
            for (size_t k = 0; k < p->size; k++)
                s += (double)p->grad[k] * (double)p->grad[k];
        }
        grad_norm[l] = sqrt(s);
    }
    return AG_OK;
}
