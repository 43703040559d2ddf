/*
 * cases.c - the gradient-check rows of the layers, beside the layers: the
 * attention layer in its fused and op-by-op forms, with and without a
 * causal mask and positions. And the whole table, the ops' rows
 * (src/check/cases.c) then these, as ag_gradcheck_case_* number them.
 */
#include "../check/cases.h"
#include "nn.h"

#include <stdio.h>
#include <string.h>

typedef struct layer_row {
    const char *op;    /* the op its tape records (what --op selects) */
    const char *name;  /* the row's label */
    ag_build_fn build; /* build(tape, inputs, setup) */
    int heads, causal;
    ag_posenc_kind posenc;
    int op_by_op; /* the layer's op-by-op form instead of the fused op */
} layer_row;

/* in: x (B,T,d), then the layer's wq, wk, wv, wo, then pos when learned */
static ag_tensor *b_layer(ag_tape *t, ag_tensor *const *in, void *setup)
{
    ag_case_setup *s = setup;
    return ag_attention_forward(t, s->att, ag_posenc_apply(t, s->pe, in[0]), NULL);
}

#define LAYER(name, h, causal, pe)                                                                 \
    {                                                                                              \
        "attention", name, b_layer, h, causal, pe, 0                                               \
    }
#define LAYER_OPS(name, h, causal)                                                                 \
    {                                                                                              \
        "attention", name, b_layer, h, causal, AG_POSENC_NONE, 1                                   \
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
};
#define N_LAYER_ROWS (sizeof(layer_rows) / sizeof(layer_rows[0]))

/* The layer rows' sizes: B sequences of T tokens of width D; big, a size
 * where every product and tile is shared out over the threads. */
typedef struct layer_size {
    int B, T, D;
} layer_size;
static const layer_size small_size = {2, 3, 4}, big_size = {4, 64, 32};

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
    return setup_layer(l, big ? &big_size : &small_size, &rng, s, err, errlen);
}

ag_status ag_gradcheck_case_setup(size_t i, uint64_t seed, ag_case_setup *s, char *err,
                                  size_t errlen)
{
    return ag_case_setup_sized(i, seed, 0, s, err, errlen);
}
