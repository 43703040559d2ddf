/*
 * cases.c - the gradient-check rows of every op and loss, one table row
 * each: the op, a label, its inputs' shapes and the build function. The
 * table of every check (these rows, then the layers' beside the layers in
 * src/nn/cases.c) is what `attograd gradcheck` prints and what the tests
 * run through finite differences, "backward accumulates" and an injected
 * wrong backward. Adding an op adds its row here.
 */
#include "cases.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
BUILD(b_relu, ag_relu(t, in[0]))
BUILD(b_gelu, ag_gelu(t, in[0]))
BUILD(b_dropout, ag_dropout(t, in[0], 0.3, &(ag_rng){7})) /* the same mask on every pass */
BUILD(b_layernorm, ag_layernorm(t, in[0], NULL, NULL))
BUILD(b_layernorm_w, ag_layernorm(t, in[0], in[1], NULL))
BUILD(b_layernorm_wb, ag_layernorm(t, in[0], in[1], in[2]))
#undef BUILD

/* targets6 repeated over however many rows z has (at most 1024) */
static ag_tensor *b_cross_entropy(ag_tape *t, ag_tensor *const *in, void *setup)
{
    (void)setup;
    int tg[1024];
    size_t rows = in[0]->size / (size_t)in[0]->shape[in[0]->ndim - 1];
    for (size_t r = 0; r < rows && r < 1024; r++)
        tg[r] = targets6[r % 6];
    return ag_cross_entropy(t, in[0], tg, rows);
}

#define IN1_GAP(gap, nm, n0, ...) 1, {nm, NULL, NULL}, {n0, 0, 0}, {{__VA_ARGS__}, {0}, {0}}, gap
#define IN1(nm, n0, ...) IN1_GAP(0, nm, n0, __VA_ARGS__)
#define IN2(nm0, nm1, n0, n1, s0, s1) 2, {nm0, nm1, NULL}, {n0, n1, 0}, {s0, s1, {0}}, 0
#define IN3(nm0, nm1, nm2, n0, n1, n2, s0, s1, s2) 3, {nm0, nm1, nm2}, {n0, n1, n2}, {s0, s1, s2}, 0
#define S(...)                                                                                     \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
/* The same inputs at a size where the op's fast kernel splits its work over
 * threads (for the tests of thread counts); SAME for an op whose kernel
 * has no threads. */
#define BIG(s0, s1, s2)                                                                            \
    {                                                                                              \
        s0, s1, s2                                                                                 \
    }
#define SAME                                                                                       \
    {                                                                                              \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
const ag_op_row ag_op_rows[] = {
    {"matmul", "matmul 2-D", b_matmul, IN2("a", "b", 2, 2, S(3, 4), S(4, 5)),
     BIG(S(256, 128), S(128, 128), {0})},
    {"matmul", "matmul shared b", b_matmul, IN2("a", "b", 3, 2, S(2, 3, 4), S(4, 5)),
     BIG(S(4, 64, 128), S(128, 128), {0})},
    {"matmul", "matmul batched", b_matmul, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 4, 5)),
     BIG(S(8, 64, 64), S(8, 64, 64), {0})},
    {"matmul_bt", "matmul_bt shared b", b_matmul_bt, IN2("a", "b", 3, 2, S(2, 3, 4), S(5, 4)),
     BIG(S(4, 64, 128), S(128, 128), {0})},
    {"matmul_bt", "matmul_bt batched", b_matmul_bt, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 5, 4)),
     BIG(S(8, 64, 64), S(8, 64, 64), {0})},
    {"transpose", "transpose", b_transpose, IN1("a", 3, 2, 3, 4), SAME},
    {"scale", "scale by -0.7", b_scale, IN1("a", 2, 3, 4), SAME},
    {"softmax", "softmax", b_softmax, IN1("z", 2, 4, 5), BIG(S(256, 256), {0}, {0})},
    {"softmax", "softmax 3-D", b_softmax, IN1("z", 3, 2, 3, 4), BIG(S(4, 64, 256), {0}, {0})},
    {"softmax", "softmax large (sampled)", b_softmax, IN1("z", 2, 8, 40), SAME},
    {"softmax", "softmax through a plain sum", b_softmax_sum, IN1("z", 2, 4, 5), SAME},
    {"causal_mask", "causal_mask + softmax", b_causal_softmax, IN1("s", 3, 2, 4, 4),
     BIG(S(4, 128, 128), {0}, {0})},
    {"add", "add", b_add, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 3, 4)),
     BIG(S(8, 64, 128), S(8, 64, 128), {0})},
    {"add", "add broadcast", b_add, IN2("a", "b", 3, 1, S(2, 3, 4), S(4)),
     BIG(S(8, 64, 128), S(128), {0})},
    {"mul", "mul", b_mul, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 3, 4)), SAME},
    {"mul", "mul broadcast", b_mul, IN2("a", "b", 3, 2, S(2, 3, 4), S(3, 4)), SAME},
    {"sum", "sum", b_sum, IN1("a", 2, 3, 4), SAME},
    {"mean", "mean", b_mean, IN1("a", 2, 3, 4), SAME},
    {"mse", "mse loss", b_mse, IN2("pred", "y", 3, 3, S(2, 3, 4), S(2, 3, 4)), SAME},
    {"cross_entropy", "cross_entropy loss", b_cross_entropy, IN1("z", 3, 2, 3, 5),
     BIG(S(4, 64, 65), {0}, {0})},
    {"split_heads", "split_heads into 2", b_split, IN1("x", 3, 2, 3, 4), SAME},
    {"merge_heads", "merge_heads", b_merge, IN1("x", 4, 2, 2, 3, 2), SAME},
    {"reshape", "reshape to [6x4]", b_reshape, IN1("a", 3, 2, 3, 4), SAME},
    {"embedding", "embedding (table)", b_embedding, IN1("table", 2, 5, 3), SAME},
    {"relu", "relu", b_relu, IN1_GAP(0.1, "x", 3, 2, 3, 4), SAME},
    {"gelu", "gelu", b_gelu, IN1("x", 3, 2, 3, 4), BIG(S(8, 64, 128), {0}, {0})},
    {"dropout", "dropout p=0.3", b_dropout, IN1("x", 2, 4, 5), BIG(S(256, 256), {0}, {0})},
    {"layernorm", "layernorm", b_layernorm, IN1("x", 2, 4, 6), BIG(S(128, 256), {0}, {0})},
    {"layernorm", "layernorm weight", b_layernorm_w, IN2("x", "w", 3, 1, S(2, 3, 5), S(5)),
     BIG(S(4, 32, 256), S(256), {0})},
    {"layernorm", "layernorm weight bias", b_layernorm_wb,
     IN3("x", "w", "b", 3, 1, 1, S(2, 2, 20), S(20), S(20)), BIG(S(4, 32, 256), S(256), S(256))},
};
const size_t ag_op_rows_n = sizeof(ag_op_rows) / sizeof(ag_op_rows[0]);

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

ag_status ag_op_row_setup(const ag_op_row *r, ag_rng *rng, int big, ag_case_setup *s, char *err,
                          size_t errlen)
{
    s->build = r->build;
    s->ctx = s;
    for (int k = 0; k < r->n_in; k++) {
        const int *shape = big && r->big[k][0] ? r->big[k] : r->shape[k];
        s->own[k] = s->inputs[k] = ag_param_new(r->ndim[k], shape);
        if (!s->inputs[k]) {
            for (int j = 0; j < k; j++)
                ag_param_free(s->own[j]);
            memset(s, 0, sizeof(*s));
            return ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
        }
        ag_tensor *in = s->inputs[k];
        ag_fill_normal(in, rng, 0, 1);
        for (size_t j = 0; j < in->size; j++)
            if (fabs(in->data[j]) < r->gap)
                in->data[j] += in->data[j] < 0 ? (ag_real)-r->gap : (ag_real)r->gap;
        s->names[k] = r->names[k];
    }
    s->n_inputs = r->n_in;
    return AG_OK;
}
