/*
 * gpt_twin.c - a GPT's twin: the same model (its parameters' values are
 * the original's, borrowed), with gradients of its own. The trainer runs
 * the two halves of a batch through the model and its twin, so that each
 * half's backward adds into its own gradients: on two threads the halves
 * run at once, on one they run in turn, and the sum is the same.
 */
#include "gpt.h"

#include <string.h>

/* p's twin: the twin's parameter at p's index in g, or NULL for NULL. */
static ag_tensor *twin_of(const ag_gpt *g, const ag_gpt *tw, const ag_tensor *p)
{
    for (size_t i = 0; p && i < g->n_params; i++)
        if (g->params[i] == p)
            return tw->params[i];
    return NULL;
}

/* Parameter i's twin: a new one, or, for an attention weight, the twin
 * layer's own (the layers are twinned first). */
static ag_tensor *make_param(const ag_gpt *g, const ag_gpt *tw, size_t i)
{
    if (!g->borrowed[i])
        return ag_param_twin(g->params[i]);
    for (int l = 0; l < g->cfg.layers; l++) {
        ag_tensor *mine[4], *twins[4];
        size_t n = ag_attention_params(g->h[l].attn, mine, NULL, 4);
        ag_attention_params(tw->h[l].attn, twins, NULL, 4);
        for (size_t k = 0; k < n; k++)
            if (mine[k] == g->params[i])
                return twins[k];
    }
    return NULL;
}

/* The twin's named fields, pointed at its parameters. */
static void point_fields(const ag_gpt *g, ag_gpt *tw)
{
    tw->wte = twin_of(g, tw, g->wte);
    tw->wpe = twin_of(g, tw, g->wpe);
    tw->lnf_w = twin_of(g, tw, g->lnf_w);
    tw->lnf_b = twin_of(g, tw, g->lnf_b);
    for (int l = 0; l < g->cfg.layers; l++) {
        const ag_gpt_layer *a = &g->h[l];
        ag_gpt_layer *b = &tw->h[l];
        ag_tensor **mine[] = {&b->ln1_w, &b->ln1_b, &b->bq,   &b->bk,   &b->bv,     &b->bo,
                              &b->ln2_w, &b->ln2_b, &b->w_fc, &b->b_fc, &b->w_proj, &b->b_proj};
        const ag_tensor *theirs[] = {a->ln1_w, a->ln1_b, a->bq,   a->bk,   a->bv,     a->bo,
                                     a->ln2_w, a->ln2_b, a->w_fc, a->b_fc, a->w_proj, a->b_proj};
        for (size_t k = 0; k < sizeof(mine) / sizeof(mine[0]); k++)
            *mine[k] = twin_of(g, tw, theirs[k]);
    }
}

ag_gpt *ag_gpt_twin(const ag_gpt *g)
{
    size_t n = g->n_params, L = g->cfg.layers > 0 ? (size_t)g->cfg.layers : 1;
    ag_gpt *tw = ag_calloc(1, sizeof(*tw));
    if (!tw)
        return NULL;
    tw->cfg = g->cfg;
    tw->params = ag_calloc(n ? n : 1, sizeof(*tw->params));
    tw->names = ag_calloc(n ? n : 1, sizeof(*tw->names));
    tw->stash = ag_calloc(n ? n : 1, sizeof(*tw->stash));
    tw->borrowed = ag_calloc(n ? n : 1, 1);
    tw->h = ag_calloc(L, sizeof(*tw->h));
    tw->positions = ag_malloc((size_t)g->cfg.seq * sizeof(int));
    if (!tw->params || !tw->names || !tw->stash || !tw->borrowed || !tw->h || !tw->positions)
        goto fail;
    memcpy(tw->positions, g->positions, (size_t)g->cfg.seq * sizeof(int));
    memcpy(tw->names, g->names, n * sizeof(*tw->names));
    memcpy(tw->borrowed, g->borrowed, n);
    for (int l = 0; l < g->cfg.layers; l++)
        if (!(tw->h[l].attn = ag_attention_twin(g->h[l].attn)))
            goto fail;
    for (; tw->n_params < n; tw->n_params++)
        if (!(tw->params[tw->n_params] = make_param(g, tw, tw->n_params)))
            goto fail;
    point_fields(g, tw);
    return tw;
fail:
    ag_gpt_free(tw);
    return NULL;
}

void ag_gpt_twin_sync(ag_gpt *tw, const ag_gpt *g)
{
    tw->cfg = g->cfg;
    for (int l = 0; l < g->cfg.layers; l++)
        ag_attention_set_fused(tw->h[l].attn, ag_attention_is_fused(g->h[l].attn));
}
