/*
 * test_attention.c - the attention layer: its forward against a plain-loop
 * implementation of the layer's math (docs/attention-layer.md's
 * conventions), the softmax weights (causal zeros, rows summing to 1),
 * permutation-equivariance without positions or mask, finite-difference
 * checks of every weight and the input, Glorot init, and errors. Each check
 * runs on both forms of the forward: fused (one op) and op by op. The fused
 * op's tiles are held to the op-by-op form with every kernel this CPU runs,
 * on shapes that cut sequences into several blocks, with ragged ends.
 */
#include "test_util.h"

#include "kernels/attn_tile.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

#ifdef AG_REAL_DOUBLE
#define REF_TOL 1e-12
#else
#define REF_TOL 2e-5
#endif

/* The layer's math (docs/attention-layer.md) by the library's reference
 * kernels, independent of the tape and of the fast path: x (B,T,d), w[0..3]
 * = wq, wk, wv, wo (d,d); out (B,T,d), P (B,H,T,T). */
static void ref_attention(const ag_real *x, ag_tensor *const *w, int B, int T, int d, int H,
                          int causal, double *out, double *P)
{
    size_t dh = (size_t)(d / H), rows = (size_t)B * T, n = rows * (size_t)d;
    size_t np = (size_t)B * H * T * T;
    ag_real *buf = malloc((5 * n + np + (size_t)T) * sizeof(ag_real));
    ck_assert_ptr_nonnull(buf);
    ag_real *q = buf, *k = q + n, *v = k + n, *o = v + n, *y = o + n, *p = y + n, *scratch = p + np;
    ag_real *qkv[3] = {q, k, v};
    for (int m = 0; m < 3; m++) /* Q = x wq, K = x wk, V = x wv */
        ag_ref_gemm(0, 0, rows, (size_t)d, (size_t)d, 1, x, (size_t)d, w[m]->data, (size_t)d, 0,
                    qkv[m], (size_t)d);
    for (int b = 0; b < B; b++) /* each head's columns of each sequence */
        for (int h = 0; h < H; h++) {
            size_t off = (size_t)b * T * d + (size_t)h * dh;
            ag_ref_attention_head(q + off, k + off, v + off, (size_t)d, (size_t)T, dh, causal,
                                  o + off, p + ((size_t)b * H + h) * T * T, scratch);
        }
    ag_ref_gemm(0, 0, rows, (size_t)d, (size_t)d, 1, o, (size_t)d, w[3]->data, (size_t)d, 0, y,
                (size_t)d); /* out = O wo */
    for (size_t i = 0; i < n; i++)
        out[i] = y[i];
    for (size_t i = 0; i < np; i++)
        P[i] = p[i];
    free(buf);
}

typedef struct config {
    int B, T, d, H, causal;
} config;

static const config configs[] = {
    {2, 3, 8, 1, 0}, {2, 3, 8, 2, 0}, {2, 3, 8, 4, 0}, {2, 3, 8, 1, 1},
    {2, 3, 8, 2, 1}, {2, 3, 8, 4, 1}, {1, 1, 8, 2, 0}, {3, 1, 4, 4, 1},
};
#define N_CONFIGS (int)(sizeof(configs) / sizeof(configs[0]))

/* Loop tests run i in [0, 2 N_CONFIGS): config i % N_CONFIGS, fused for the
 * first N_CONFIGS, op by op for the rest. */
static ag_attention *config_layer(int i, ag_rng *rng)
{
    const config *c = &configs[i % N_CONFIGS];
    ag_attention *att = ag_attention_new(c->d, c->H, c->causal, rng, NULL, 0);
    ck_assert_ptr_nonnull(att);
    ag_attention_set_fused(att, i < N_CONFIGS);
    ck_assert_int_eq(ag_attention_is_fused(att), i < N_CONFIGS);
    return att;
}

START_TEST(test_forward_matches_reference)
{
    const config *c = &configs[_i % N_CONFIGS];
    ag_rng rng = ag_rng_new(100 + (uint64_t)_i);
    ag_attention *att = config_layer(_i, &rng);
    ag_tensor *w[4];
    ck_assert_uint_eq(ag_attention_params(att, w, NULL, 4), 4);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){c->B, c->T, c->d});
    ag_fill_normal(x, &rng, 0, 1);
    ag_tensor *p = NULL;
    ag_tensor *out = ag_attention_forward(tape, att, x, &p);
    ck_assert_msg(out != NULL, "%s", ag_tape_error(tape));
    ck_assert_ptr_nonnull(p);
    ck_assert(ag_same_shape(out, x));
    ck_assert_int_eq(p->ndim, 4);
    int pshape[4] = {c->B, c->H, c->T, c->T};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(p->shape[i], pshape[i]);

    double *want = malloc(out->size * sizeof(double)), *wp = malloc(p->size * sizeof(double));
    ref_attention(x->data, w, c->B, c->T, c->d, c->H, c->causal, want, wp);
    for (size_t i = 0; i < out->size; i++)
        ck_assert_msg(fabs(out->data[i] - want[i]) <= REF_TOL * fmax(1, fabs(want[i])),
                      "out[%zu] = %g, reference %g", i, (double)out->data[i], want[i]);
    for (size_t i = 0; i < p->size; i++)
        ck_assert_msg(fabs(p->data[i] - wp[i]) <= REF_TOL, "P[%zu] = %g, reference %g", i,
                      (double)p->data[i], wp[i]);
    /* rows of P sum to 1; causal weights above the diagonal are exactly 0 */
    int T = c->T;
    for (size_t r = 0; r < p->size / (size_t)T; r++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
            sum += p->data[r * T + j];
            if (c->causal && j > (int)(r % (size_t)T))
                ck_assert(p->data[r * T + j] == 0);
        }
        ck_assert_double_eq_tol(sum, 1, REF_TOL * T);
    }
    free(want);
    free(wp);
    ag_tape_free(tape);
    ag_attention_free(att);
}
END_TEST

START_TEST(test_attn_out_optional)
{
    ag_rng rng = ag_rng_new(7);
    ag_attention *att = ag_attention_new(4, 2, 0, &rng, NULL, 0);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){1, 2, 4});
    ck_assert_ptr_nonnull(ag_attention_forward(tape, att, x, NULL));
    /* on error, attn_out is cleared */
    ag_tensor *p = x;
    ck_assert_ptr_null(ag_attention_forward(tape, att, NULL, &p));
    ck_assert_ptr_null(p);
    ag_tape_free(tape);
    ag_attention_free(att);
}
END_TEST

/* ---- permutation: non-causal attention without positions is
 * permutation-equivariant; positions or the causal mask break that ---- */

static void forward_rows(ag_attention *att, ag_posenc *pe, const ag_real *xv, int T, int d,
                         ag_real *out)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 3, (int[]){1, T, d}, xv);
    ag_tensor *y = ag_attention_forward(tape, att, ag_posenc_apply(tape, pe, x), NULL);
    ck_assert_msg(y != NULL, "%s", ag_tape_error(tape));
    memcpy(out, y->data, y->size * sizeof(ag_real));
    ag_tape_free(tape);
}

START_TEST(test_permutation)
{
    enum { T = 5, d = 8 };
    const int perm[T] = {3, 0, 4, 2, 1};
    ag_rng rng = ag_rng_new(11);
    ag_attention *att = ag_attention_new(d, 2, 0, &rng, NULL, 0);
    ag_posenc *none = ag_posenc_new(AG_POSENC_NONE, T, d, NULL, NULL, 0);
    ag_posenc *sin = ag_posenc_new(AG_POSENC_SINUSOIDAL, T, d, NULL, NULL, 0);
    ag_real x[T * d], xp[T * d], y[T * d], yp[T * d];
    for (int i = 0; i < T * d; i++)
        x[i] = (ag_real)ag_rng_normal(&rng);
    for (int t = 0; t < T; t++) /* token t of xp is token perm[t] of x */
        memcpy(xp + t * d, x + perm[t] * d, d * sizeof(ag_real));

    forward_rows(att, none, x, T, d, y);
    forward_rows(att, none, xp, T, d, yp);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c++)
            ck_assert_double_eq_tol(yp[t * d + c], y[perm[t] * d + c], REF_TOL);

    /* with positions added, the same permutation changes the values */
    forward_rows(att, sin, x, T, d, y);
    forward_rows(att, sin, xp, T, d, yp);
    double max_diff = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c++)
            max_diff = fmax(max_diff, fabs(yp[t * d + c] - y[perm[t] * d + c]));
    ck_assert_msg(max_diff > 0.05,
                  "sinusoidal positions left the layer permutation-equivariant (%g)", max_diff);

    /* causal, without positions: position t sees tokens 0..t only, so the
     * order matters. Position 0 sees itself alone: its output is its own
     * value, x0 wv wo, whatever follows it; and the permuted input's rows are
     * not the original rows permuted. */
    ag_rng crng = ag_rng_new(11);
    ag_attention *causal = ag_attention_new(d, 2, 1, &crng, NULL, 0);
    forward_rows(causal, none, x, T, d, y);
    forward_rows(causal, none, xp, T, d, yp);
    max_diff = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c++)
            max_diff = fmax(max_diff, fabs(yp[t * d + c] - y[perm[t] * d + c]));
    ck_assert_msg(max_diff > 0.05, "the causal layer was permutation-equivariant (%g)", max_diff);
    const ag_tensor *wv = ag_attention_param(causal, "wv"), *wo = ag_attention_param(causal, "wo");
    for (int c = 0; c < d; c++) {
        double want = 0; /* (x0 wv wo)[c] */
        for (int k = 0; k < d; k++) {
            double v = 0;
            for (int m = 0; m < d; m++)
                v += (double)x[m] * (double)wv->data[m * d + k];
            want += v * (double)wo->data[k * d + c];
        }
        ck_assert_double_eq_tol(y[c], want, REF_TOL);
    }
    ag_attention_free(causal);
    ag_posenc_free(none);
    ag_posenc_free(sin);
    ag_attention_free(att);
}
END_TEST

/* ---- finite differences through the layer ---- */

static ag_tensor *build_layer(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    return ag_attention_forward(tape, ctx, in[0], NULL);
}

START_TEST(test_layer_grad)
{
    const config *c = &configs[_i % N_CONFIGS];
    ag_rng rng = ag_rng_new(200 + (uint64_t)_i);
    ag_attention *att = config_layer(_i, &rng);
    ag_tensor *in[5];
    in[0] = test_param(&rng, 3, (int[]){c->B, c->T, c->d});
    ck_assert_uint_eq(ag_attention_params(att, in + 1, NULL, 4), 4);
    test_gradcheck(build_layer, att, in, 5);
    ag_param_free(in[0]);
    ag_attention_free(att);
}
END_TEST

START_TEST(test_fused_grad_blocks)
{
    /* a sequence of two query and key blocks, the second ragged, so that
     * the online softmax rescales and backward adds two groups' dQ; only
     * the fused form (in float, the op-by-op form's differences are
     * noisier at this length: both are held equal by test_fused_matches_ops) */
    ag_rng rng = ag_rng_new(250);
    ag_attention *att = ag_attention_new(2, 1, 1, &rng, NULL, 0);
    ag_tensor *in[5];
    in[0] = test_param(&rng, 3, (int[]){1, 66, 2});
    ag_attention_params(att, in + 1, NULL, 4);
    test_gradcheck(build_layer, att, in, 5);
    ag_param_free(in[0]);
    ag_attention_free(att);
}
END_TEST

static ag_tensor *build_weights_p(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    ag_tensor *p;
    return ag_attention_forward(tape, ctx, in[0], &p) ? p : NULL;
}

START_TEST(test_weights_p_grad)
{
    /* P itself (what the trainer draws), projected onto random weights;
     * wv and wo do not reach P, so check x, wq and wk. Only the op-by-op
     * form gives P a gradient. */
    ag_rng rng = ag_rng_new(300);
    ag_attention *att = ag_attention_new(4, 2, 1, &rng, NULL, 0);
    ag_attention_set_fused(att, 0);
    ag_tensor *in[5];
    in[0] = test_param(&rng, 3, (int[]){2, 3, 4});
    ag_attention_params(att, in + 1, NULL, 4);
    test_gradcheck(build_weights_p, att, in, 3);
    ag_param_free(in[0]);
    ag_attention_free(att);
}
END_TEST

/* ---- a whole model: embedding -> positions -> attention -> logits -> CE ---- */

typedef struct model_ctx {
    ag_attention *att;
    ag_posenc *pe;
    const int *tokens, *targets;
    int B, T;
} model_ctx;

static ag_tensor *build_model(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    model_ctx *m = ctx;
    /* in: table (V,d), pos (T,d), wq, wk, wv, wo, wout (d,V) */
    ag_tensor *x = ag_embedding(tape, in[0], m->tokens, 2, (int[]){m->B, m->T});
    ag_tensor *h = ag_attention_forward(tape, m->att, ag_posenc_apply(tape, m->pe, x), NULL);
    ag_tensor *logits = ag_matmul(tape, h, in[6]);
    return ag_cross_entropy(tape, logits, m->targets, (size_t)(m->B * m->T));
}

START_TEST(test_model_grad)
{
    enum { B = 2, T = 3, d = 4, V = 5 };
    ag_rng rng = ag_rng_new(400);
    model_ctx m = {ag_attention_new(d, 2, 1, &rng, NULL, 0),
                   ag_posenc_new(AG_POSENC_LEARNED, T, d, &rng, NULL, 0),
                   (int[]){1, 4, 4, 0, 2, 3},
                   (int[]){4, 4, 0, 2, AG_IGNORE_INDEX, 1},
                   B,
                   T};
    ag_tensor *in[7];
    in[0] = test_param(&rng, 2, (int[]){V, d});
    ck_assert_uint_eq(ag_posenc_params(m.pe, in + 1, NULL, 1), 1);
    ag_fill_normal(in[1], &rng, 0, 0.5); /* positions big enough to matter */
    ag_attention_params(m.att, in + 2, NULL, 4);
    in[6] = test_param(&rng, 2, (int[]){d, V});
    test_gradcheck(build_model, &m, in, 7);
    ag_param_free(in[0]);
    ag_param_free(in[6]);
    ag_posenc_free(m.pe);
    ag_attention_free(m.att);
}
END_TEST

/* ---- the toy tasks' data through the model, with anomaly detection on ---- */

START_TEST(test_task_model_clean)
{
    /* tokens of two slots embedded and summed, positions, a causal or full
     * layer, logits (B,T,answers*C) reshaped to (B,T,answers,C) and
     * cross-entropy against (B,T,answers) targets with -1 skipped */
    ag_task_kind kind = (ag_task_kind)(_i / 2);
    int causal = _i % 2, d = 8, B = 3, T = ag_task_min_seq(kind);
    int V = ag_task_vocab(kind), C = ag_task_classes(kind), A = ag_task_answers(kind);
    ag_rng rng = ag_rng_new(500 + (uint64_t)_i);
    ag_batch *batch = ag_batch_new(kind, B, T);
    ck_assert_ptr_nonnull(batch);
    ag_task_sample(batch, &rng);
    ag_tensor *emb0 = test_param(&rng, 2, (int[]){V, d}),
              *emb1 = test_param(&rng, 2, (int[]){V, d});
    ag_tensor *wout = ag_param_new(2, (int[]){d, A * C});
    ag_fill_glorot(wout, &rng);
    ag_attention *att = ag_attention_new(d, 2, causal, &rng, NULL, 0);
    ag_posenc *pe = ag_posenc_new(AG_POSENC_SINUSOIDAL, T, d, NULL, NULL, 0);
    ag_tape *tape = ag_tape_new();
    ag_tape_detect_anomaly(tape, 1);
    ag_tensor *x = ag_add(tape, ag_embedding(tape, emb0, batch->tok0, 2, (int[]){B, T}),
                          ag_embedding(tape, emb1, batch->tok1, 2, (int[]){B, T}));
    ag_tensor *p;
    ag_tensor *h = ag_attention_forward(tape, att, ag_posenc_apply(tape, pe, x), &p);
    ag_tensor *logits = ag_reshape(tape, ag_matmul(tape, h, wout), 4, (int[]){B, T, A, C});
    ag_tensor *loss = ag_cross_entropy(tape, logits, batch->targets, (size_t)(B * T * A));
    ck_assert_msg(ag_backward(tape, loss) == AG_OK, "%s", ag_tape_error(tape));
    ck_assert(isfinite(loss->data[0]) && loss->data[0] > 0);
    ck_assert_int_eq(ag_tape_find_anomaly(tape), AG_OK);
    ag_tape_free(tape);
    ag_posenc_free(pe);
    ag_attention_free(att);
    ag_param_free(emb0);
    ag_param_free(emb1);
    ag_param_free(wout);
    ag_batch_free(batch);
}
END_TEST

/* ---- construction ---- */

START_TEST(test_glorot_init)
{
    ag_rng r1 = ag_rng_new(42), r2 = ag_rng_new(42), r3 = ag_rng_new(43);
    ag_attention *a = ag_attention_new(8, 2, 0, &r1, NULL, 0);
    ag_attention *b = ag_attention_new(8, 2, 0, &r2, NULL, 0);
    ag_attention *c = ag_attention_new(8, 2, 0, &r3, NULL, 0);
    const char *names[4];
    ag_tensor *wa[4], *wb[4], *wc[4];
    ag_attention_params(a, wa, names, 4);
    ag_attention_params(b, wb, NULL, 4);
    ag_attention_params(c, wc, NULL, 4);
    double limit = sqrt(6.0 / (8 + 8));
    int differs = 0;
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(wa[k]->ndim, 2);
        ck_assert_int_eq(wa[k]->shape[0], 8);
        ck_assert_int_eq(wa[k]->shape[1], 8);
        double max = 0;
        for (size_t i = 0; i < wa[k]->size; i++) {
            ck_assert(wa[k]->data[i] == wb[k]->data[i]); /* same seed, same weights */
            ck_assert(fabs(wa[k]->data[i]) <= limit);
            max = fmax(max, fabs(wa[k]->data[i]));
            differs += wa[k]->data[i] != wc[k]->data[i];
        }
        ck_assert_msg(max > limit / 2, "%s barely spread: max %g of limit %g", names[k], max,
                      limit);
        ck_assert_ptr_eq(ag_attention_param(a, names[k]), wa[k]);
    }
    ck_assert_int_gt(differs, 200);
    /* the weights are not all the same tensor */
    ck_assert(wa[0]->data[0] != wa[1]->data[0]);
    ag_attention_free(a);
    ag_attention_free(b);
    ag_attention_free(c);
}
END_TEST

START_TEST(test_accessors)
{
    ag_attention *att = ag_attention_new(6, 3, 1, NULL, NULL, 0);
    ck_assert_ptr_nonnull(att);
    ck_assert_int_eq(ag_attention_dim(att), 6);
    ck_assert_int_eq(ag_attention_heads(att), 3);
    ck_assert_int_eq(ag_attention_causal(att), 1);
    const char *names[4];
    ag_tensor *w[2];
    ck_assert_uint_eq(ag_attention_params(att, w, NULL, 2), 4); /* count even when max is short */
    ck_assert_uint_eq(ag_attention_params(att, NULL, names, 4), 4);
    ck_assert_str_eq(names[0], "wq");
    ck_assert_str_eq(names[1], "wk");
    ck_assert_str_eq(names[2], "wv");
    ck_assert_str_eq(names[3], "wo");
    ck_assert_ptr_eq(ag_attention_param(att, "wq"), w[0]);
    ck_assert_ptr_eq(ag_attention_param(att, "wk"), w[1]);
    ck_assert_ptr_null(ag_attention_param(att, "wx"));
    ck_assert_ptr_null(ag_attention_param(att, NULL));
    /* rng NULL: zero weights, ready to be loaded */
    for (size_t i = 0; i < w[0]->size; i++)
        ck_assert(w[0]->data[i] == 0);
    ck_assert_int_eq(ag_attention_dim(NULL), 0);
    ag_attention_free(att);
    ag_attention_free(NULL);
}
END_TEST

START_TEST(test_new_errors)
{
    char err[128];
    ag_rng rng = ag_rng_new(1);
    ck_assert_ptr_null(ag_attention_new(8, 3, 0, &rng, err, sizeof(err)));
    ck_assert_str_eq(err, "heads 3 does not divide dim 8");
    ck_assert_ptr_null(ag_attention_new(0, 1, 0, &rng, err, sizeof(err)));
    ck_assert_str_eq(err, "dim 0 must be at least 1");
    ck_assert_ptr_null(ag_attention_new(8, 0, 0, &rng, err, sizeof(err)));
    ck_assert_str_eq(err, "heads 0 must be at least 1");
    ck_assert_ptr_null(ag_attention_new(8, -2, 0, &rng, NULL, 0)); /* err may be NULL */
    char tiny[6];
    ck_assert_ptr_null(ag_attention_new(8, 3, 0, &rng, tiny, sizeof(tiny)));
    ck_assert_str_eq(tiny, "heads"); /* truncated, still terminated */
    ag_attention *att = ag_attention_new(8, 2, 0, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(att);
    ck_assert_str_eq(err, "");
    ag_attention_free(att);
}
END_TEST

START_TEST(test_forward_errors)
{
    ag_rng rng = ag_rng_new(1);
    ag_attention *att = ag_attention_new(8, 2, 0, &rng, NULL, 0);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 3, 6});
    ck_assert_ptr_null(ag_attention_forward(tape, att, x, NULL));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape),
                     "attention: x is [2x3x6]: needs (B,T,8) for a layer of dim 8");
    ag_tape_reset(tape);
    x = ag_tensor_new(tape, 2, (int[]){3, 8});
    ck_assert_ptr_null(ag_attention_forward(tape, att, x, NULL));
    ck_assert_str_eq(ag_tape_error(tape),
                     "attention: x is [3x8]: needs (B,T,8) for a layer of dim 8");
    ag_tape_reset(tape);
    ck_assert_ptr_null(ag_attention_forward(tape, NULL, x, NULL));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape), "attention: layer is NULL");
    ck_assert_ptr_null(ag_attention_forward(NULL, att, x, NULL));
    ag_tape_free(tape);
    ag_attention_free(att);
}
END_TEST

/* The fused op checks its own arguments too (the layer never passes it bad
 * ones, but it is an op like any other): each message names the input. */
START_TEST(test_fused_op_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ag_tensor *w = ag_tensor_new(tape, 2, (int[]){4, 4}),
              *w5 = ag_tensor_new(tape, 2, (int[]){4, 5});
    ag_tensor *p = x;
    ck_assert_ptr_null(ag_attention_fused(tape, x, w, w, w5, w, 2, 0, &p));
    ck_assert_ptr_null(p); /* cleared on error */
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "attention: wv is [4x5]: needs (4,4) for x of dim 4");
    ag_tape_reset(tape);
    x = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    w = ag_tensor_new(tape, 2, (int[]){4, 4});
    ck_assert_ptr_null(ag_attention_fused(tape, x, w, w, w, w, 3, 0, NULL));
    ck_assert_str_eq(ag_tape_error(tape), "attention: heads 3 does not divide dim 4");
    ag_tape_reset(tape);
    x = ag_tensor_new(tape, 2, (int[]){3, 4});
    w = ag_tensor_new(tape, 2, (int[]){4, 4});
    ck_assert_ptr_null(ag_attention_fused(tape, x, w, w, w, w, 1, 0, NULL));
    ck_assert_str_eq(ag_tape_error(tape), "attention: x is [3x4]: needs 3 dims (B,T,d)");
    ag_tape_reset(tape);
    w = ag_tensor_new(tape, 2, (int[]){4, 4});
    ck_assert_ptr_null(ag_attention_fused(tape, NULL, w, w, w, w, 1, 0, NULL));
    ck_assert_str_eq(ag_tape_error(tape), "attention: input 1 is NULL");
    ag_tape_free(tape);
}
END_TEST

/* One forward and backward of a layer big enough that the softmax and the
 * batched matmuls are shared out over threads: out, P and every gradient
 * (dwq..dwo, dx) must be bit-identical to one thread's. */
static void layer_step(int threads, int causal, int fused, const int *shape, int heads,
                       ag_real *res, size_t n_res)
{
    ag_set_threads(threads);
    ag_rng rng = ag_rng_new(11);
    char err[128];
    ag_attention *att = ag_attention_new(shape[2], heads, causal, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(att);
    ag_attention_set_fused(att, fused);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 3, shape));
    ag_tensor *y = ag_tensor_new(tape, 3, shape);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(y);
    ag_fill_normal(x, &rng, 0, 1);
    ag_fill_normal(y, &rng, 0, 1);
    ag_tensor *p;
    ag_tensor *out = ag_attention_forward(tape, att, x, &p);
    ck_assert_int_eq(ag_backward(tape, ag_mse(tape, out, y)), AG_OK);
    size_t k = 0;
    const ag_tensor *parts[] = {out, p};
    for (int i = 0; i < 2; i++)
        for (size_t e = 0; e < parts[i]->size; e++)
            res[k++] = parts[i]->data[e];
    ag_tensor *w[4];
    ag_attention_params(att, w, NULL, 4);
    for (int i = 0; i < 4; i++)
        for (size_t e = 0; e < w[i]->size; e++)
            res[k++] = w[i]->grad[e];
    for (size_t e = 0; e < x->size; e++)
        res[k++] = x->grad[e];
    ck_assert_uint_eq(k, n_res);
    ag_tape_free(tape);
    ag_attention_free(att);
    ag_set_threads(1);
}

START_TEST(test_threads_bit_identical)
{
    /* (3,96,32) with 2 heads: two key blocks per head, shared out in two
     * groups; (1,300,16) with 1 head: four groups, whose dQ partials start
     * at different rows when causal */
    static const struct {
        int shape[3], heads;
    } cases[] = {{{3, 96, 32}, 2}, {{1, 300, 16}, 1}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const int *sh = cases[c].shape;
        size_t n = 2 * (size_t)sh[0] * sh[1] * sh[2] +
                   (size_t)sh[0] * cases[c].heads * sh[1] * sh[1] + 4 * (size_t)sh[2] * sh[2];
        ag_real *one = malloc(n * sizeof(ag_real)), *two = malloc(n * sizeof(ag_real));
        ck_assert_ptr_nonnull(one);
        ck_assert_ptr_nonnull(two);
        for (int fused = 0; fused < 2; fused++)
            for (int causal = 0; causal < 2; causal++) {
                layer_step(1, causal, fused, sh, cases[c].heads, one, n);
                /* three threads: lanes whose runs of items differ in length */
                for (int threads = 2; threads <= 3; threads++) {
                    layer_step(threads, causal, fused, sh, cases[c].heads, two, n);
                    ck_assert_msg(memcmp(one, two, n * sizeof(ag_real)) == 0,
                                  "case %zu: %d threads differ from one (causal %d, fused %d)", c,
                                  threads, causal, fused);
                }
            }
        free(one);
        free(two);
    }
}
END_TEST

/* The first i < n where got[i] and want[i] differ by more than tol times
 * |want[i]| (floored at 1, for values near 0), or n when none does: one
 * assertion per comparison, since Check reports every passing assertion to
 * its parent process, which a million of them would make slow. */
static size_t first_apart(const ag_real *got, const ag_real *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * fmax(1, fabs(want[i]))))
            return i;
    return n;
}

/* The fused op against the op-by-op layer on one shape: out, P and every
 * gradient, within rounding. */
static void check_fused_matches_ops(const int *sh, int heads, int causal, int threads,
                                    const char *what)
{
#ifdef AG_REAL_DOUBLE
    const double tol = 1e-10;
#else
    const double tol = 2e-4;
#endif
    size_t bt = (size_t)sh[0] * sh[1],
           n = 2 * bt * sh[2] + (size_t)sh[0] * heads * sh[1] * sh[1] + 4 * (size_t)sh[2] * sh[2];
    ag_real *fused = malloc(n * sizeof(ag_real)), *ops = malloc(n * sizeof(ag_real));
    ck_assert_ptr_nonnull(fused);
    ck_assert_ptr_nonnull(ops);
    layer_step(threads, causal, 1, sh, heads, fused, n);
    layer_step(1, causal, 0, sh, heads, ops, n);
    size_t bad = first_apart(fused, ops, n, tol);
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(ops[i]));
    ck_assert_msg(bad == n,
                  "%s (%d,%d,%d) heads %d causal %d: value %zu of %zu: fused %.9g, op "
                  "by op %.9g",
                  what, sh[0], sh[1], sh[2], heads, causal, bad, n,
                  bad < n ? (double)fused[bad] : 0.0, bad < n ? (double)ops[bad] : 0.0);
    ck_assert(scale > 0);
    free(fused);
    free(ops);
}

/* The fused op against the op-by-op layer, on shapes where the fused
 * backward works through the batch in several chunks (with a short last
 * one) or one sequence at a time, on two threads too. */
START_TEST(test_fused_matches_ops)
{
    static const struct {
        int shape[3], heads, causal, threads;
    } cases[] = {
        {{9, 64, 16}, 2, 0, 1}, {{9, 64, 16}, 4, 1, 2}, {{2, 520, 8}, 2, 1, 1},
        {{3, 5, 6}, 3, 0, 2},   {{1, 1, 4}, 1, 1, 1},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        check_fused_matches_ops(cases[c].shape, cases[c].heads, cases[c].causal, cases[c].threads,
                                "default kernel");
}
END_TEST

/* Every tile kernel this CPU runs (they follow the gemm kernel in use)
 * against the op-by-op layer: sequences of one block, of several with a
 * ragged last one, heads 3 to 80 wide (one vector, several, more than a
 * micro-tile holds, and partial ones; 32, and one vector in a one-vector
 * block, which have blocks of their own),
 * causal or not; rows up to 128 wide read in place, wider ones laid out
 * head by head. */
START_TEST(test_fused_kernels_match_ops)
{
    static const char *const kernels[] = {"generic", "avx2", "avx512"};
    static const struct {
        int shape[3], heads;
    } cases[] = {
        {{2, 9, 12}, 3},   /* dh 4, T within a vector */
        {{3, 8, 16}, 1},   /* dh 16, T within a vector: AVX-512's one-vector blocks of their own */
        {{2, 12, 16}, 2},  /* dh 8: AVX2's */
        {{3, 17, 6}, 2},   /* dh 3, T just over one */
        {{1, 70, 16}, 2},  /* dh 8, two blocks */
        {{2, 130, 48}, 1}, /* dh 48: three vectors of 16 */
        {{1, 200, 80}, 1}, /* dh 80: more than one micro-tile's columns; four groups */
        {{4, 128, 32}, 8}, /* 32 heads a chunk: one group, dQ added in its rows directly */
        {{1, 150, 64}, 2}, /* dh 32: the blocks specialised for it, a ragged last one */
        {{2, 64, 128}, 4}, /* the GPT's heads: dh 32, one block, rows read in place */
        {{2, 45, 64}, 2},  /* dh 32, one ragged block: causal backward's tiles of its own */
        {{1, 70, 160}, 4}, /* dh 40, rows too wide to read in place: heads laid out */
        {{2, 66, 256}, 8}, /* dh 32 laid out head by head */
        {{2, 56, 24}, 2},  /* dh 12, T 46..64: AVX-512's one block, AVX2's two */
        {{1, 47, 40}, 1},  /* dh 40, T 47: a ragged block of 64 (AVX-512), two of 32 (AVX2) */
        {{2, 56, 64}, 2},  /* dh 32, T 56: AVX2's one block of 64 too (causal), ragged */
        {{1, 46, 32}, 1},  /* dh 32, the shortest sequence AVX2 gives its block of 64 */
    };
    for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
        if (!ag_gemm_use(kernels[k]))
            continue; /* not on this CPU */
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            for (int causal = 0; causal < 2; causal++)
                check_fused_matches_ops(
                    cases[c].shape, cases[c].heads, causal, 1,
                    ag_attn_kernel_for((size_t)cases[c].shape[1],
                                       (size_t)(cases[c].shape[2] / cases[c].heads), causal)
                        ->name);
    }
    ck_assert(ag_gemm_use("auto"));
}
END_TEST

/* layer_step's results on the fast kernel (*fast) and on the reference
 * (*ref), one thread, malloc'd; *n their length. */
static void fast_and_reference(const int *sh, int heads, int causal, ag_real **fast, ag_real **ref,
                               size_t *n)
{
    *n = 2 * (size_t)sh[0] * sh[1] * sh[2] + (size_t)sh[0] * heads * sh[1] * sh[1] +
         4 * (size_t)sh[2] * sh[2];
    *fast = malloc(*n * sizeof(ag_real));
    *ref = malloc(*n * sizeof(ag_real));
    ck_assert(*fast && *ref);
    layer_step(1, causal, 1, sh, heads, *fast, *n);
    ck_assert_int_eq(ag_set_kernels("reference"), AG_OK);
    layer_step(1, causal, 1, sh, heads, *ref, *n);
    ck_assert_int_eq(ag_set_kernels("fast"), AG_OK);
}

/* The largest |got - want| of each part of a layer_step's results (out, P,
 * the four weights' gradients, x's) over that part's largest |want|. */
static double worst_part_error(const ag_real *got, const ag_real *want, const int *sh, int heads)
{
    size_t bt = (size_t)sh[0] * sh[1], d = (size_t)sh[2];
    size_t len[7] = {bt * d, (size_t)sh[0] * heads * sh[1] * sh[1], d * d, d * d, d * d, d * d,
                     bt * d};
    double worst = 0;
    for (size_t part = 0, at = 0; part < 7; at += len[part++]) {
        double err = 0, scale = 0;
        for (size_t i = at; i < at + len[part]; i++) {
            err = fmax(err, fabs(got[i] - want[i]));
            scale = fmax(scale, fabs(want[i]));
        }
        worst = fmax(worst, scale > 0 ? err / scale : err);
    }
    return worst;
}

/* Sequences of one tile block, whose weights forward keeps for backward
 * (ag_attn_kept_tile), on every kernel this CPU runs, against the
 * reference kernel, each part of the results to a few float roundings of
 * its largest value: the GPT's heads (dh 32, causal: a kernel of their
 * own), other head widths, one- and two-vector blocks, not causal too. A
 * 1e-4 relative error in the kept weights fails it. */
START_TEST(test_kept_weights_match_reference)
{
#ifdef AG_REAL_DOUBLE
    const double tol = 1e-12;
#else
    const double tol = 1e-5;
#endif
    static const char *const kernels[] = {"generic", "avx2", "avx512"};
    static const struct {
        int shape[3], heads;
    } cases[] = {
        {{2, 64, 128}, 4}, {{2, 50, 48}, 3}, {{3, 16, 16}, 1}, {{2, 30, 24}, 2}, {{1, 46, 32}, 1}};
    for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
        if (!ag_gemm_use(kernels[k]))
            continue; /* not on this CPU */
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            for (int causal = 0; causal < 2; causal++) {
                const int *sh = cases[c].shape;
                int heads = cases[c].heads;
                if (!ag_attn_kept_tile((size_t)sh[1], (size_t)(sh[2] / heads), causal))
                    continue; /* this kernel's tiles are too large for T: none kept */
                ag_real *fast, *ref;
                size_t n;
                fast_and_reference(sh, heads, causal, &fast, &ref, &n);
                double err = worst_part_error(fast, ref, sh, heads);
                ck_assert_msg(err <= tol, "%s (%d,%d,%d) heads %d causal %d: off by %.3g of a part",
                              kernels[k], sh[0], sh[1], sh[2], heads, causal, err);
                free(fast);
                free(ref);
            }
    }
    ck_assert(ag_gemm_use("auto"));
}
END_TEST

/* The fast kernel's path for sequences too short for tiles against the
 * reference kernel, every T it takes (and the first it leaves to the
 * tiles), one to three heads, causal or not: out, P and every gradient. */
START_TEST(test_short_path_matches_reference)
{
#ifdef AG_REAL_DOUBLE
    const double tol = 1e-12;
#else
    const double tol = 1e-5;
#endif
    ck_assert(ag_attn_small(1) && !ag_attn_small(64));
    for (int T = 1; T < 64 && ag_attn_small((size_t)T - 1); T++)
        for (int heads = 1; heads <= 3; heads++)
            for (int causal = 0; causal < 2; causal++) {
                int sh[3] = {3, T, 2 * heads};
                ag_real *fast, *ref;
                size_t n;
                fast_and_reference(sh, heads, causal, &fast, &ref, &n);
                size_t bad = first_apart(fast, ref, n, tol);
                ck_assert_msg(bad == n, "T %d heads %d causal %d: value %zu: fast %.9g, ref %.9g",
                              T, heads, causal, bad, bad < n ? (double)fast[bad] : 0.0,
                              bad < n ? (double)ref[bad] : 0.0);
                free(fast);
                free(ref);
            }
}
END_TEST

/* The fused op keeps no (T,T) tensor: a whole step at T = 4096 stays far
 * below the 64 MB one (T,T) float matrix would take (a property of the
 * arena's high-water mark, not of timing). */
START_TEST(test_fused_memory_linear)
{
    enum { T = 4096, d = 8 };
    ag_rng rng = ag_rng_new(17);
    ag_attention *att = ag_attention_new(d, 2, 1, &rng, NULL, 0);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){1, T, d}),
              *y = ag_tensor_new(tape, 3, (int[]){1, T, d});
    ag_fill_normal(x, &rng, 0, 1);
    ag_fill_normal(y, &rng, 0, 1);
    ag_tensor *out = ag_attention_forward(tape, att, x, NULL);
    ck_assert_int_eq(ag_backward(tape, ag_mse(tape, out, y)), AG_OK);
    size_t peak = ag_tape_peak_bytes(tape), square = (size_t)T * T * sizeof(ag_real);
    ck_assert_msg(peak < square / 8, "peak %zu bytes at T = %d", peak, T);
    ag_tape_free(tape);
    ag_attention_free(att);
}
END_TEST

/* The deliberately wrong softmax backward must be caught through the fused
 * op too, which has its own copy of the softmax gradient. */
START_TEST(test_fused_bug_caught)
{
    /* with every tile kernel: a sequence of two blocks, one of a block
     * that recomputes its weights (T = 60 on AVX-512 and in the portable
     * tiles; two blocks on AVX2), one of a block that keeps them (heads 32
     * wide, causal: the GPT's); T = 3 takes the path for sequences too
     * short for tiles (src/kernels/attn_small.c) */
    static const char *const kernels[] = {"generic", "avx2", "avx512"};
    static const struct {
        int shape[3], heads, causal;
    } cases[] = {{{2, 3, 4}, 2, 0}, {{1, 70, 4}, 2, 1}, {{1, 60, 4}, 2, 0}, {{1, 60, 32}, 1, 1}};
    ck_assert(ag_attn_small(3) && !ag_attn_small(60));
    for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
        if (!ag_gemm_use(kernels[k]))
            continue;
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            const int *sh = cases[c].shape;
            ag_rng rng = ag_rng_new(301);
            ag_attention *att =
                ag_attention_new(sh[2], cases[c].heads, cases[c].causal, &rng, NULL, 0);
            ag_tensor *in[5];
            in[0] = test_param(&rng, 3, sh);
            ag_attention_params(att, in + 1, NULL, 4);
            ag_gradcheck_result r;
            ag_gradcheck_opts o = ag_gradcheck_defaults();
#ifndef AG_REAL_DOUBLE
            /* sums 32 wide carry more rounding into float's finite
             * differences, 2-3% of the smallest gradients; measured against
             * 0.1 at least, 0.3% (the bug: 190%) */
            if (sh[2] >= 32)
                o.atol = 1e-1;
#endif
            o.bug = AG_BUG_SOFTMAX;
            ck_assert_int_eq(ag_gradcheck(build_layer, att, in, 5, &o, &r, NULL, 0), AG_OK);
            ck_assert_msg(r.passed == 0, "%s, (%d,%d,%d): the bug passed", kernels[k], sh[0], sh[1],
                          sh[2]);
            o.bug = AG_BUG_NONE;
            ck_assert_int_eq(ag_gradcheck(build_layer, att, in, 5, &o, &r, NULL, 0), AG_OK);
            ck_assert_msg(r.passed, "%s, (%d,%d,%d): max_rel %g", kernels[k], sh[0], sh[1], sh[2],
                          r.max_rel);
            ag_param_free(in[0]);
            ag_attention_free(att);
        }
    }
    ck_assert(ag_gemm_use("auto"));
}
END_TEST

Suite *suite_attention(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("forward");
    tcase_add_loop_test(tc, test_forward_matches_reference, 0, 2 * N_CONFIGS);
    tcase_add_test(tc, test_attn_out_optional);
    tcase_add_test(tc, test_permutation);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_set_timeout(
        tc, 120); /* Check's default 4 s is too short under sanitizers on a busy machine */
    tcase_add_loop_test(tc, test_layer_grad, 0, 2 * N_CONFIGS);
    tcase_add_test(tc, test_fused_grad_blocks);
    tcase_add_test(tc, test_fused_matches_ops);
    tcase_add_test(tc, test_fused_kernels_match_ops);
    tcase_add_test(tc, test_short_path_matches_reference);
    tcase_add_test(tc, test_kept_weights_match_reference);
    tcase_add_test(tc, test_fused_memory_linear);
    tcase_add_test(tc, test_fused_bug_caught);
    tcase_add_test(tc, test_weights_p_grad);
    tcase_add_test(tc, test_threads_bit_identical);
    tcase_add_test(tc, test_model_grad);
    tcase_add_loop_test(tc, test_task_model_clean, 0, 2 * AG_TASK_COUNT);
    suite_add_tcase(s, tc);
    tc = tcase_create("init");
    tcase_add_test(tc, test_glorot_init);
    tcase_add_test(tc, test_accessors);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_new_errors);
    tcase_add_test(tc, test_forward_errors);
    tcase_add_test(tc, test_fused_op_errors);
    suite_add_tcase(s, tc);
    return s;
}
