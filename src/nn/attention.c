/*
 * attention.c - the multi-head attention layer: four (d, d) weights and a
 * forward pass in one of two forms with the same math (docs/attention-layer.md).
 * Fused (the default) records one op, src/ops/attention_fused.c, computed tile
 * by tile, that keeps no (B,H,T,T) tensor: fast and lean. Op by op
 * records each step (products, split heads, scale, mask, softmax, merge) so
 * that every intermediate and its gradient can be inspected. Either way the
 * softmax weights P are handed back to a caller who asks for them.
 */
#include "nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ag_attention {
    int d_model;     /* d */
    int n_heads;     /* H; divides d */
    int causal;      /* 1: key j > query i is masked out */
    int fused;       /* 1: one fused op; 0: op by op */
    ag_tensor *w[4]; /* wq, wk, wv, wo: (d, d) each, owned by the layer */
};

enum { WQ, WK, WV, WO, N_WEIGHTS };
static const char *const weight_names[N_WEIGHTS] = {"wq", "wk", "wv", "wo"};

int ag_nn_check_heads(int dim, int heads, char *err, size_t errlen)
{
    if (dim < 1)
        ag_err(AG_ERR_ARG, err, errlen, "dim %d must be at least 1", dim);
    else if (heads < 1)
        ag_err(AG_ERR_ARG, err, errlen, "heads %d must be at least 1", heads);
    else if (dim % heads != 0)
        ag_err(AG_ERR_ARG, err, errlen, "heads %d does not divide dim %d", heads, dim);
    else
        return 1;
    return 0;
}

ag_attention *ag_attention_new(int d_model, int n_heads, int causal, ag_rng *rng, char *err,
                               size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!ag_nn_check_heads(d_model, n_heads, err, errlen))
        return NULL;
    ag_attention *layer = ag_calloc(1, sizeof(*layer));
    if (!layer) {
        ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
        return NULL;
    }
    layer->d_model = d_model;
    layer->n_heads = n_heads;
    layer->causal = causal != 0;
    layer->fused = 1;
    for (int i = 0; i < N_WEIGHTS; i++) {
        layer->w[i] = ag_param_new(2, (int[]){d_model, d_model});
        if (!layer->w[i]) {
            ag_err(AG_ERR_NOMEM, err, errlen, "out of memory for weights of dim %d", d_model);
            ag_attention_free(layer);
            return NULL;
        }
        /* in the order wq, wk, wv, wo, so a seed fixes every weight */
        ag_fill_glorot(layer->w[i], rng);
    }
    return layer;
}

ag_attention *ag_attention_twin(const ag_attention *layer)
{
    ag_attention *twin = ag_calloc(1, sizeof(*twin));
    if (!twin)
        return NULL;
    *twin = *layer;
    for (int i = 0; i < N_WEIGHTS; i++)
        if (!(twin->w[i] = ag_param_twin(layer->w[i]))) {
            while (i-- > 0)
                ag_param_free(twin->w[i]);
            free(twin);
            return NULL;
        }
    return twin;
}

void ag_attention_free(ag_attention *layer)
{
    if (!layer)
        return;
    for (int i = 0; i < N_WEIGHTS; i++)
        ag_param_free(layer->w[i]);
    free(layer);
}

int ag_attention_dim(const ag_attention *layer)
{
    return layer ? layer->d_model : 0;
}

int ag_attention_heads(const ag_attention *layer)
{
    return layer ? layer->n_heads : 0;
}

int ag_attention_causal(const ag_attention *layer)
{
    return layer ? layer->causal : 0;
}

void ag_attention_set_fused(ag_attention *layer, int fused)
{
    if (layer)
        layer->fused = fused != 0;
}

int ag_attention_is_fused(const ag_attention *layer)
{
    return layer ? layer->fused : 0;
}

ag_tensor *ag_attention_param(ag_attention *layer, const char *name)
{
    if (!layer || !name)
        return NULL;
    for (int i = 0; i < N_WEIGHTS; i++)
        if (strcmp(name, weight_names[i]) == 0)
            return layer->w[i];
    return NULL;
}

size_t ag_attention_params(ag_attention *layer, ag_tensor **params, const char **names, size_t max)
{
    if (!layer)
        return 0;
    for (size_t i = 0; i < N_WEIGHTS && i < max; i++) {
        if (params)
            params[i] = layer->w[i];
        if (names)
            names[i] = weight_names[i];
    }
    return N_WEIGHTS;
}

ag_tensor *ag_attention_forward(ag_tape *tape, ag_attention *layer, const ag_tensor *x,
                                ag_tensor **attn_out)
{
    if (attn_out)
        *attn_out = NULL;
    if (!tape || ag_tape_status(tape) != AG_OK)
        return NULL;
    if (!layer || !x) {
        ag_tape_fail(tape, AG_ERR_ARG, "attention: %s is NULL", layer ? "x" : "layer");
        return NULL;
    }
    int d = layer->d_model, H = layer->n_heads;
    if (x->ndim != 3 || x->shape[2] != d) {
        char s[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "attention: x is %s: needs (B,T,%d) for a layer of dim %d",
                     ag_shape_str(x, s, sizeof(s)), d, d);
        return NULL;
    }
    ag_tensor *const *w = layer->w;
    if (layer->fused)
        return ag_attention_fused(tape, x, w[WQ], w[WK], w[WV], w[WO], H, layer->causal, attn_out);
    /* Q = x wq, K = x wk, V = x wv: (B,T,d) @ (d,d) -> (B,T,d), weights shared over B */
    ag_tensor *q = ag_matmul(tape, x, w[WQ]);
    ag_tensor *k = ag_matmul(tape, x, w[WK]);
    ag_tensor *v = ag_matmul(tape, x, w[WV]);
    ag_tensor *o = ag_nn_attend(tape, q, k, v, H, layer->causal, attn_out); /* (B,T,d) */
    /* out = O wo: (B,T,d) */
    ag_tensor *out = ag_matmul(tape, o, w[WO]);
    if (!out && attn_out)
        *attn_out = NULL;
    return out;
}

ag_tensor *ag_nn_attend(ag_tape *tape, const ag_tensor *q, const ag_tensor *k, const ag_tensor *v,
                        int heads, int causal, ag_tensor **p_out)
{
    if (p_out)
        *p_out = NULL;
    /* head h takes columns h*dh .. h*dh+dh-1: (B,T,d) -> (B,H,T,dh) */
    ag_tensor *qh = ag_split_heads(tape, q, heads);
    ag_tensor *kh = ag_split_heads(tape, k, heads);
    ag_tensor *vh = ag_split_heads(tape, v, heads);
    /* S_h = Q_h K_h^T / sqrt(dh): (B,H,T,T), row i = query i, column j = key j */
    int dh = qh ? qh->shape[3] : 1;
    ag_tensor *s = ag_scale(tape, ag_matmul_bt(tape, qh, kh), 1.0 / sqrt((double)dh));
    if (causal)
        s = ag_causal_mask(tape, s); /* j > i -> -inf */
    /* P_h = softmax(S_h) over keys; O_h = P_h V_h: (B,H,T,dh) */
    ag_tensor *p = ag_softmax(tape, s);
    ag_tensor *o = ag_merge_heads(tape, ag_matmul(tape, p, vh)); /* (B,T,d) */
    if (o && p_out)
        *p_out = p;
    return o;
}
