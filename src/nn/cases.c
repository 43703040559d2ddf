/*
 * cases.c - the gradient-check rows of the layers, beside the layers: the
 * attention layer in its fused and op-by-op forms, with and without a
 * causal mask and positions; one pre-norm transformer block; a whole
 * 2-layer GPT with its tied head, through the cross-entropy loss. And the
 * whole table, the ops' rows (src/check/cases.c) then these, as
 * ag_gradcheck_case_* number them.
 */
#include "../check/cases.h"
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The layer rows' sizes: B sequences of T tokens of width D; big, a size
 * where every product and tile is shared out over the threads. The block
 * and GPT rows are wider when small (a layer norm over 4 numbers bends too
 * sharply for a step of eps), and the GPT's vocabulary is GPT_V. */
typedef struct layer_size {
    int B, T, D;
} layer_size;
static const layer_size small_size = {2, 3, 4}, big_size = {4, 64, 32};
static const layer_size gpt_small = {2, 3, 8}, gpt_big = {4, 64, 32};
enum { GPT_V = 5 };

/* The block and GPT rows' tolerance. In float, a block's result carries
 * rounding noise of about 1e-6, which the difference quotient divides by
 * 2 eps = 0.04: measured over seeds 1 to 100, the largest relative error
 * is 2.3e-2 for the block and 1e-2 for the GPT (a wrong backward gives
 * 1). Double checks them at its usual 1e-6 (largest measured: 1.3e-7). */
#ifdef AG_REAL_DOUBLE
#define GPT_RTOL 0
#else
#define GPT_RTOL 5e-2
#endif

typedef enum { ROW_ATTENTION, ROW_BLOCK, ROW_GPT } row_kind;

typedef struct layer_row {
    const char *op;    /* the op its tape records (what --op selects) */
    const char *name;  /* the row's label */
    ag_build_fn build; /* build(tape, inputs, setup) */
    int heads, causal;
    ag_posenc_kind posenc;
    int op_by_op; /* the layer's op-by-op form instead of the fused op */
    row_kind kind;
} layer_row;

/* in: x (B,T,d), then the layer's wq, wk, wv, wo, then pos when learned */
static ag_tensor *b_layer(ag_tape *t, ag_tensor *const *in, void *setup)
{
    ag_case_setup *s = setup;
    return ag_attention_forward(t, s->att, ag_posenc_apply(t, s->pe, in[0]), NULL);
}

/* in: x (B,T,C), then block 0's weights: ln_1, wq, wk, wv, wo, ln_2, w_fc, w_proj */
static ag_tensor *b_block(ag_tape *t, ag_tensor *const *in, void *setup)
{
    ag_case_setup *s = setup;
    return ag_gpt_block(t, s->gpt, 0, in[0], NULL);
}

/* in: every weight of the GPT; the loss of its fixed tokens, (B,T) = the
 * config's seq and ids's count */
static ag_tensor *b_gpt(ag_tape *t, ag_tensor *const *in, void *setup)
{
    (void)in;
    ag_case_setup *s = setup;
    int T = ag_gpt_get_config(s->gpt)->seq;
    return ag_gpt_loss(t, s->gpt, s->ids, s->targets, s->n_ids / T, T, NULL, NULL);
}

#define LAYER(name, h, causal, pe)                                                                 \
    {                                                                                              \
        "attention", name, b_layer, h, causal, pe, 0, ROW_ATTENTION                                \
    }
#define LAYER_OPS(name, h, causal)                                                                 \
    {                                                                                              \
        "attention", name, b_layer, h, causal, AG_POSENC_NONE, 1, ROW_ATTENTION                    \
    }

static const layer_row layer_rows[] = {
    LAYER("attention H=1", 1, 0, AG_POSENC_NONE),
    LAYER("attention H=1 sinusoidal", 1, 0, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=1 learned", 1, 0, AG_POSENC_LEARNED),
    LAYER("attention H=1 causal", 1, 1, AG_POSENC_NONE),
    LAYER("attention H=1 causal sinusoidal", 1, 1, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=1 causal learned", 1, 1, AG_POSENC_LEARNED),
    LAYER("attention H=2", 2, 0, AG_POSENC_NONE),
    LAYER("attention H=2 sinusoidal", 2, 0, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=2 learned", 2, 0, AG_POSENC_LEARNED),
    LAYER("attention H=2 causal", 2, 1, AG_POSENC_NONE),
    LAYER("attention H=2 causal sinusoidal", 2, 1, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=2 causal learned", 2, 1, AG_POSENC_LEARNED),
    LAYER_OPS("attention H=2 op by op", 2, 0),
    LAYER_OPS("attention H=2 causal op by op", 2, 1),
    {"block", "block pre-norm, H=2", b_block, 2, 1, AG_POSENC_NONE, 0, ROW_BLOCK},
    {"gpt", "gpt 2 layers, cross-entropy", b_gpt, 2, 1, AG_POSENC_LEARNED, 0, ROW_GPT},
};
#define N_LAYER_ROWS (sizeof(layer_rows) / sizeof(layer_rows[0]))


size_t ag_gradcheck_case_count(void)
{
    return ag_op_rows_n + N_LAYER_ROWS;
}

static const layer_row *layer_row_of(size_t i)
{
    return i >= ag_op_rows_n && i - ag_op_rows_n < N_LAYER_ROWS ? &layer_rows[i - ag_op_rows_n]
                                                                : NULL;
}

const char *ag_gradcheck_case_op(size_t i)
{
    const layer_row *l = layer_row_of(i);
    return i < ag_op_rows_n ? ag_op_rows[i].op : l ? l->op : NULL;
}

const char *ag_gradcheck_case_name(size_t i)
{
    const layer_row *l = layer_row_of(i);
    return i < ag_op_rows_n ? ag_op_rows[i].name : l ? l->name : NULL;
}

void ag_gradcheck_case_free(ag_case_setup *s)
{
    if (!s)
        return;
    for (int k = 0; k < 3; k++)
        ag_param_free(s->own[k]);
    ag_attention_free(s->att);
    ag_posenc_free(s->pe);
    ag_gpt_free(s->gpt);
    memset(s, 0, sizeof(*s));
}

/* The layer rows: x, then the layer's weights (and learned positions). */
static ag_status setup_layer(const layer_row *r, const layer_size *z, ag_rng *rng, ag_case_setup *s,
                             char *err, size_t errlen)
{
    s->att = ag_attention_new(z->D, r->heads, r->causal, rng, err, errlen);
    ag_attention_set_fused(s->att, !r->op_by_op);
    s->build = r->build;
    s->ctx = s;
    s->pe = s->att ? ag_posenc_new(r->posenc, z->T, z->D, rng, err, errlen) : NULL;
    s->own[0] = s->inputs[0] = ag_param_new(3, (const int[]){z->B, z->T, z->D});
    if (!s->att || !s->pe || !s->inputs[0]) {
        if (s->att && s->pe)
            snprintf(err, errlen, "out of memory");
        ag_gradcheck_case_free(s);
        return AG_ERR_NOMEM;
    }
    ag_fill_normal(s->inputs[0], rng, 0, 1);
    s->names[0] = "x";
    ag_attention_params(s->att, s->inputs + 1, s->names + 1, 4);
    s->n_inputs = 5;
    if (ag_posenc_params(s->pe, s->inputs + 5, s->names + 5, 1) == 1) {
        /* learned positions start at std 0.02; make them big enough to matter */
        ag_fill_normal(s->inputs[5], rng, 0, 0.5);
        s->n_inputs = 6;
    }
    return AG_OK;
}

/* The block and GPT rows: a small GPT (1 layer for the block, 2 for the
 * whole model) whose weights are large enough to bend every function:
 * GPT-2's initial 0.02 would make the check nearly linear, unable to tell a
 * wrong formula from a right one. The block's inputs are x and block 0's
 * weights; the GPT's are all its weights (the token table is also the
 * head), checked through the cross-entropy of fixed tokens. */
static ag_status setup_gpt(const layer_row *r, const layer_size *z, ag_rng *rng, ag_case_setup *s,
                           char *err, size_t errlen)
{
    ag_gpt_config c = ag_gpt_defaults(GPT_V);
    c.layers = r->kind == ROW_GPT ? 2 : 1;
    c.heads = r->heads, c.dim = z->D, c.seq = z->T;
    s->gpt = ag_gpt_new(&c, rng, err, errlen);
    s->build = r->build;
    s->ctx = s;
    s->rtol = GPT_RTOL;
    if (!s->gpt) {
        ag_gradcheck_case_free(s);
        return AG_ERR_NOMEM;
    }
    ag_tensor *p[AG_CASE_MAX_INPUTS];
    const char *names[AG_CASE_MAX_INPUTS];
    size_t n = ag_gpt_params(s->gpt, p, names, AG_CASE_MAX_INPUTS);
    /* layer norms about 1, the rest about 0; the embeddings (the stream the
     * first layer norm reads) at 1, so that a step of eps is small beside it;
     * the other weights at 0.4 for width 8, scaled as 1/sqrt(width) so that
     * a wider row's products are no larger */
    double w = 0.4 * sqrt(8.0 / z->D);
    for (size_t k = 0; k < n; k++)
        ag_fill_normal(p[k], rng, p[k]->ndim == 1 ? 1 : 0, p[k]->ndim == 1 ? 0.3 : k < 2 ? 1 : w);
    if (r->kind == ROW_GPT) {
        s->n_ids = z->B * z->T;
        for (int t = 0; t < s->n_ids; t++) {
            s->ids[t] = (int)ag_rng_below(rng, GPT_V);
            s->targets[t] = (int)ag_rng_below(rng, GPT_V);
        }
        for (size_t k = 0; k < n; k++)
            s->inputs[k] = p[k], s->names[k] = names[k];
        s->n_inputs = (int)n;
        return AG_OK;
    }
    static const char *const block_names[8] = {"ln_1", "wq",   "wk",   "wv",
                                               "wo",   "ln_2", "w_fc", "w_proj"};
    s->own[0] = s->inputs[0] = ag_param_new(3, (const int[]){z->B, z->T, z->D});
    if (!s->inputs[0]) {
        ag_gradcheck_case_free(s);
        return ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
    }
    ag_fill_normal(s->inputs[0], rng, 0, 1);
    s->names[0] = "x";
    for (int k = 0; k < 8; k++) /* wte, wpe, then block 0's eight */
        s->inputs[1 + k] = p[2 + k], s->names[1 + k] = block_names[k];
    s->n_inputs = 9;
    return AG_OK;
}

ag_status ag_case_setup_sized(size_t i, uint64_t seed, int big, ag_case_setup *s, char *err,
                              size_t errlen)
{
    if (!s)
        return AG_ERR_ARG;
    memset(s, 0, sizeof(*s));
    ag_rng rng = ag_rng_new(seed);
    if (i < ag_op_rows_n)
        return ag_op_row_setup(&ag_op_rows[i], &rng, big, s, err, errlen);
    const layer_row *l = layer_row_of(i);
    if (!l)
        return ag_err(AG_ERR_ARG, err, errlen, "gradcheck case %zu: there are %zu", i,
                      ag_gradcheck_case_count());
    if (l->kind != ROW_ATTENTION)
        return setup_gpt(l, big ? &gpt_big : &gpt_small, &rng, s, err, errlen);
    return setup_layer(l, big ? &big_size : &small_size, &rng, s, err, errlen);
}

ag_status ag_gradcheck_case_setup(size_t i, uint64_t seed, ag_case_setup *s, char *err,
                                  size_t errlen)
{
    return ag_case_setup_sized(i, seed, 0, s, err, errlen);
}
