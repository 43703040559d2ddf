/*
 * cases.c - the library's own gradient checks, one table row each: every
 * op's backward, the losses and the attention layer. `attograd gradcheck`
 * prints them as a table; the tests run every row through ag_gradcheck and
 * through "backward accumulates" (the row's result built twice). Adding an
 * op adds its row here.
 */
#include "../core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct gc_row {
    const char *op;    /* the op these rows check (what --op selects) */
    const char *name;  /* the row's label */
    ag_build_fn build; /* build(tape, inputs, setup) */
    int n_in;          /* random inputs, named by names (layer rows: 0) */
    const char *names[3];
    int ndim[3];
    int shape[3][AG_MAX_DIMS];
    double gap; /* inputs are moved at least this far from 0 (relu's kink) */
    /* layer rows */
    int heads, causal;
    ag_posenc_kind posenc;
    int op_by_op; /* the layer's op-by-op form instead of the fused op */
} gc_row;

static const int ids23[] = {1, 4, 4, 0, 2, 3}; /* (2,3) token ids into a table of 5 */
static const int targets6[] = {4, 4, 0, 2, AG_IGNORE_INDEX, 1};

#define BUILD(fn, expr)                                                                            \
    static ag_tensor *fn(ag_tape *t, ag_tensor *const *in, void *setup)                            \
    {                                                                                              \
        (void)setup;                                                                               \
        return expr;                                                                               \
    }
BUILD(b_matmul, ag_matmul(t, in[0], in[1]))
BUILD(b_matmul_bt, ag_matmul_bt(t, in[0], in[1]))
BUILD(b_transpose, ag_transpose(t, in[0]))
BUILD(b_scale, ag_scale(t, in[0], -0.7))
BUILD(b_softmax, ag_softmax(t, in[0]))
/* a plain sum instead of random weights: it tests only the upstream gradient
 * g = (1, ..., 1), where the true dL/dz is 0 (see docs/softmax-backprop.md) */
BUILD(b_softmax_sum, ag_sum(t, ag_softmax(t, in[0])))
BUILD(b_causal_softmax, ag_softmax(t, ag_causal_mask(t, in[0])))
BUILD(b_add, ag_add(t, in[0], in[1]))
BUILD(b_mul, ag_mul(t, in[0], in[1]))
BUILD(b_sum, ag_sum(t, in[0]))
BUILD(b_mean, ag_mean(t, in[0]))
BUILD(b_mse, ag_mse(t, in[0], in[1]))
BUILD(b_split, ag_split_heads(t, in[0], 2))
BUILD(b_merge, ag_merge_heads(t, in[0]))
BUILD(b_reshape, ag_reshape(t, in[0], 2, (const int[]){6, 4}))
BUILD(b_embedding, ag_embedding(t, in[0], ids23, 2, (const int[]){2, 3}))
BUILD(b_cross_entropy, ag_cross_entropy(t, in[0], targets6, 6))
BUILD(b_relu, ag_relu(t, in[0]))
BUILD(b_gelu, ag_gelu(t, in[0]))
BUILD(b_dropout, ag_dropout(t, in[0], 0.3, &(ag_rng){7})) /* the same mask on every pass */
BUILD(b_layernorm, ag_layernorm(t, in[0], NULL, NULL))
BUILD(b_layernorm_w, ag_layernorm(t, in[0], in[1], NULL))
BUILD(b_layernorm_wb, ag_layernorm(t, in[0], in[1], in[2]))
#undef BUILD

/* in: x (B,T,d), then the layer's wq, wk, wv, wo, then pos when learned */
static ag_tensor *b_layer(ag_tape *t, ag_tensor *const *in, void *setup)
{
    ag_case_setup *s = setup;
    return ag_attention_forward(t, s->att, ag_posenc_apply(t, s->pe, in[0]), NULL);
}

#define IN1_GAP(gap, nm, n0, ...) 1, {nm, NULL, NULL}, {n0, 0, 0}, {{__VA_ARGS__}, {0}, {0}}, gap
#define IN1(nm, n0, ...) IN1_GAP(0, nm, n0, __VA_ARGS__)
#define IN2(nm0, nm1, n0, n1, s0, s1) 2, {nm0, nm1, NULL}, {n0, n1, 0}, {s0, s1, {0}}, 0
#define IN3(nm0, nm1, nm2, n0, n1, n2, s0, s1, s2) 3, {nm0, nm1, nm2}, {n0, n1, n2}, {s0, s1, s2}, 0
#define S(...)                                                                                     \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
#define LAYER(name, h, causal, pe)                                                                 \
    {                                                                                              \
        "attention", name, b_layer, 0, {NULL}, {0}, {{0}}, 0, h, causal, pe, 0                     \
    }
#define LAYER_OPS(name, h, causal)                                                                 \
    {                                                                                              \
        "attention", name, b_layer, 0, {NULL}, {0}, {{0}}, 0, h, causal, AG_POSENC_NONE, 1         \
    }

static const gc_row rows[] = {
    {"matmul", "matmul 2-D", b_matmul, IN2("a", "b", 2, 2, S(3, 4), S(4, 5)), 0, 0, 0, 0},
    {"matmul", "matmul shared b", b_matmul, IN2("a", "b", 3, 2, S(2, 3, 4), S(4, 5)), 0, 0, 0, 0},
    {"matmul", "matmul batched", b_matmul, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 4, 5)), 0, 0, 0, 0},
    {"matmul_bt", "matmul_bt shared b", b_matmul_bt, IN2("a", "b", 3, 2, S(2, 3, 4), S(5, 4)), 0, 0,
     0, 0},
    {"matmul_bt", "matmul_bt batched", b_matmul_bt, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 5, 4)), 0,
     0, 0, 0},
    {"transpose", "transpose", b_transpose, IN1("a", 3, 2, 3, 4), 0, 0, 0, 0},
    {"scale", "scale by -0.7", b_scale, IN1("a", 2, 3, 4), 0, 0, 0, 0},
    {"softmax", "softmax", b_softmax, IN1("z", 2, 4, 5), 0, 0, 0, 0},
    {"softmax", "softmax 3-D", b_softmax, IN1("z", 3, 2, 3, 4), 0, 0, 0, 0},
    {"softmax", "softmax large (sampled)", b_softmax, IN1("z", 2, 8, 40), 0, 0, 0, 0},
    {"softmax", "softmax through a plain sum", b_softmax_sum, IN1("z", 2, 4, 5), 0, 0, 0, 0},
    {"causal_mask", "causal_mask + softmax", b_causal_softmax, IN1("s", 3, 2, 4, 4), 0, 0, 0, 0},
    {"add", "add", b_add, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 3, 4)), 0, 0, 0, 0},
    {"add", "add broadcast", b_add, IN2("a", "b", 3, 1, S(2, 3, 4), S(4)), 0, 0, 0, 0},
    {"mul", "mul", b_mul, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 3, 4)), 0, 0, 0, 0},
    {"mul", "mul broadcast", b_mul, IN2("a", "b", 3, 2, S(2, 3, 4), S(3, 4)), 0, 0, 0, 0},
    {"sum", "sum", b_sum, IN1("a", 2, 3, 4), 0, 0, 0, 0},
    {"mean", "mean", b_mean, IN1("a", 2, 3, 4), 0, 0, 0, 0},
    {"mse", "mse loss", b_mse, IN2("pred", "y", 3, 3, S(2, 3, 4), S(2, 3, 4)), 0, 0, 0, 0},
    {"cross_entropy", "cross_entropy loss", b_cross_entropy, IN1("z", 3, 2, 3, 5), 0, 0, 0, 0},
    {"split_heads", "split_heads into 2", b_split, IN1("x", 3, 2, 3, 4), 0, 0, 0, 0},
    {"merge_heads", "merge_heads", b_merge, IN1("x", 4, 2, 2, 3, 2), 0, 0, 0, 0},
    {"reshape", "reshape to [6x4]", b_reshape, IN1("a", 3, 2, 3, 4), 0, 0, 0, 0},
    {"embedding", "embedding (table)", b_embedding, IN1("table", 2, 5, 3), 0, 0, 0, 0},
    {"relu", "relu", b_relu, IN1_GAP(0.1, "x", 3, 2, 3, 4), 0, 0, 0, 0},
    {"gelu", "gelu", b_gelu, IN1("x", 3, 2, 3, 4), 0, 0, 0, 0},
    {"dropout", "dropout p=0.3", b_dropout, IN1("x", 2, 4, 5), 0, 0, 0, 0},
    {"layernorm", "layernorm", b_layernorm, IN1("x", 2, 4, 6), 0, 0, 0, 0},
    {"layernorm", "layernorm weight", b_layernorm_w, IN2("x", "w", 3, 1, S(2, 3, 5), S(5)), 0, 0, 0,
     0},
    {"layernorm", "layernorm weight bias", b_layernorm_wb,
     IN3("x", "w", "b", 3, 1, 1, S(2, 2, 20), S(20), S(20)), 0, 0, 0, 0},
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
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

/* The layer rows' sizes: B sequences of T tokens of width D. */
enum { LAYER_B = 2, LAYER_T = 3, LAYER_D = 4 };

size_t ag_gradcheck_case_count(void)
{
    return N_ROWS;
}

const char *ag_gradcheck_case_op(size_t i)
{
    return i < N_ROWS ? rows[i].op : NULL;
}

const char *ag_gradcheck_case_name(size_t i)
{
    return i < N_ROWS ? rows[i].name : NULL;
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

const char *ag_gradcheck_case_inputs(const ag_case_setup *s, char *buf, size_t len)
{
    size_t used = 0;
    if (!buf || len == 0)
        return buf;
    buf[0] = '\0';
    for (int i = 0; s && i < s->n_inputs;) {
        int j = i; /* inputs i..j have one shape */
        while (j + 1 < s->n_inputs && ag_same_shape(s->inputs[i], s->inputs[j + 1]))
            j++;
        char shape[64];
        ag_shape_str(s->inputs[i], shape, sizeof(shape));
        int n;
        if (j == i)
            n = snprintf(buf + used, len - used, "%s%s%s", used ? " " : "", s->names[i], shape);
        else
            n = snprintf(buf + used, len - used, "%s%s%s%s%s", used ? " " : "", s->names[i],
                         j == i + 1 ? "," : "..", s->names[j], shape);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
        i = j + 1;
    }
    return buf;
}

/* The layer rows: x, then the layer's weights (and learned positions). */
static ag_status setup_layer(const gc_row *r, ag_rng *rng, ag_case_setup *s, char *err,
                             size_t errlen)
{
    s->att = ag_attention_new(LAYER_D, r->heads, r->causal, rng, err, errlen);
    ag_attention_set_fused(s->att, !r->op_by_op);
    s->pe = s->att ? ag_posenc_new(r->posenc, LAYER_T, LAYER_D, rng, err, errlen) : NULL;
    s->own[0] = s->inputs[0] = ag_param_new(3, (const int[]){LAYER_B, LAYER_T, LAYER_D});
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

ag_status ag_gradcheck_case_setup(size_t i, uint64_t seed, ag_case_setup *s, char *err,
                                  size_t errlen)
{
    if (!s)
        return AG_ERR_ARG;
    memset(s, 0, sizeof(*s));
    if (i >= N_ROWS) {
        snprintf(err, errlen, "gradcheck case %zu: there are %zu", i, (size_t)N_ROWS);
        return AG_ERR_ARG;
    }
    const gc_row *r = &rows[i];
    ag_rng rng = ag_rng_new(seed);
    s->build = r->build;
    s->ctx = s;
    if (r->build == b_layer)
        return setup_layer(r, &rng, s, err, errlen);
    for (int k = 0; k < r->n_in; k++) {
        s->own[k] = s->inputs[k] = ag_param_new(r->ndim[k], r->shape[k]);
        if (!s->inputs[k]) {
            snprintf(err, errlen, "out of memory");
            ag_gradcheck_case_free(s);
            return AG_ERR_NOMEM;
        }
        ag_tensor *in = s->inputs[k];
        ag_fill_normal(in, &rng, 0, 1);
        for (size_t j = 0; j < in->size; j++)
            if (fabs(in->data[j]) < r->gap)
                in->data[j] += in->data[j] < 0 ? (ag_real)-r->gap : (ag_real)r->gap;
        s->names[k] = r->names[k];
    }
    s->n_inputs = r->n_in;
    return AG_OK;
}
