/*
 * test_gpt_inspect.c - looking inside the GPT: the attention weights a
 * forward pass hands out (rows that sum to 1, zeros above the diagonal, the
 * fused and op-by-op forms alike, equal to a plain computation in double),
 * the residual stream after each block, and the gradient flow measured
 * while training (fixed, and without changing the training).
 */
#include "test_util.h"
#include "gpt_ref.h"
#include "run.h"

#ifdef AG_REAL_DOUBLE
#define REF_TOL 1e-12
#else
#define REF_TOL 1e-5
#endif

static ag_gpt_config config(int bias)
{
    ag_gpt_config c = ag_gpt_defaults(9);
    c.seq = 7, c.layers = 2, c.heads = 2, c.dim = 8, c.bias = bias;
    return c;
}

/* A model whose weights are large enough for sharp, varied attention. */
static ag_gpt *model(const ag_gpt_config *c, uint64_t seed)
{
    ag_rng rng = ag_rng_new(seed);
    char err[256];
    ag_gpt *g = ag_gpt_new(c, &rng, err, sizeof(err));
    ck_assert_msg(g != NULL, "%s", err);
    ag_tensor *p[64];
    const char *names[64];
    size_t n = ag_gpt_params(g, p, names, 64);
    for (size_t i = 0; i < n; i++)
        ag_fill_normal(p[i], &rng, p[i]->ndim == 1 && strstr(names[i], "ln") ? 1 : 0, 0.6);
    return g;
}

static const int ids[7] = {3, 1, 4, 1, 5, 8, 2};

START_TEST(test_taps_shape_and_rows)
{
    for (int bias = 0; bias < 2; bias++) {
        ag_gpt_config c = config(bias);
        ag_gpt *g = model(&c, 1);
        ag_tape *tape = ag_tape_new();
        ag_tensor *attn[2], *resid[2];
        ag_gpt_taps taps = {attn, resid};
        int B = 2, T = 5, in[10];
        for (int i = 0; i < B * T; i++)
            in[i] = ids[i % 7];
        ag_tensor *z = ag_gpt_forward_taps(tape, g, in, B, T, NULL, &taps);
        ck_assert_msg(z != NULL, "%s", ag_tape_error(tape));
        for (int l = 0; l < 2; l++) {
            const ag_tensor *p = attn[l];
            ck_assert_int_eq(p->ndim, 4);
            ck_assert(p->shape[0] == B && p->shape[1] == 2 && p->shape[2] == T && p->shape[3] == T);
            ck_assert(resid[l]->ndim == 3 && resid[l]->shape[2] == 8);
            for (int r = 0; r < B * 2 * T; r++) {
                int i = r % T;
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    double w = p->data[r * T + j];
                    if (j > i)
                        ck_assert_msg(w == 0, "layer %d row %d key %d: %g above the diagonal", l, r,
                                      j, w);
                    ck_assert(w >= 0 && w <= 1);
                    sum += w;
                }
                ck_assert_msg(fabs(sum - 1) < 1e-5, "row %d sums to %g", r, sum);
            }
        }
        /* the logits are those of a forward without taps; the last stream feeds them */
        ag_tensor *plain = ag_gpt_forward(tape, g, in, B, T, NULL);
        for (size_t i = 0; i < z->size; i++)
            ck_assert(z->data[i] == plain->data[i]);
        /* resid[1] is block 1 run on resid[0] */
        ag_tensor *again = ag_gpt_block(tape, g, 1, resid[0], NULL);
        for (size_t i = 0; i < again->size; i++)
            ck_assert(again->data[i] == resid[1]->data[i]);
        ag_tape_free(tape);
        ag_gpt_free(g);
    }
}
END_TEST

START_TEST(test_fused_equals_op_by_op)
{
    ag_gpt_config c = config(0);
    ag_gpt *g = model(&c, 2);
    ag_real fused[2 * 2 * 7 * 7], ops[2 * 2 * 7 * 7];
    char err[256];
    ck_assert_int_eq(ag_gpt_attention(g, ids, 7, fused, err, sizeof(err)), AG_OK);
    ag_gpt_set_fused(g, 0);
    ck_assert_int_eq(ag_gpt_attention(g, ids, 7, ops, err, sizeof(err)), AG_OK);
    int differ = 0;
    for (int i = 0; i < 2 * 2 * 49; i++) {
        ck_assert_msg(fabs((double)fused[i] - (double)ops[i]) < REF_TOL, "element %d: %g vs %g", i,
                      (double)fused[i], (double)ops[i]);
        differ |= fused[i] != ops[i] || fused[i] != 0;
    }
    ck_assert(differ);
    /* op by op, the weights are a part of the graph: the softmax's output */
    ag_tape *tape = ag_tape_new();
    ag_tensor *attn[2];
    ag_gpt_taps taps = {attn, NULL};
    ck_assert_ptr_nonnull(ag_gpt_forward_taps(tape, g, ids, 1, 7, NULL, &taps));
    ag_entry_info e;
    int found = 0;
    for (size_t k = 0; ag_tape_entry_info(tape, k, &e) == AG_OK; k++)
        found |= e.out == attn[0] && strcmp(e.op, "softmax") == 0;
    ck_assert(found);
    ag_tape_free(tape);
    ag_gpt_free(g);
}
END_TEST

START_TEST(test_attention_equals_reference)
{
    ag_gpt_config c = config(0);
    for (uint64_t seed = 3; seed < 6; seed++) {
        ag_gpt *g = model(&c, seed);
        ag_real got[2 * 2 * 7 * 7];
        double want[2 * 2 * 7 * 7];
        char err[256];
        for (int T = 1; T <= 7; T += 3) {
            ck_assert_int_eq(ag_gpt_attention(g, ids, T, got, err, sizeof(err)), AG_OK);
            gpt_ref_attention(g, ids, T, want);
            test_assert_values(got, want, (size_t)(2 * 2 * T * T), REF_TOL);
        }
        ag_gpt_free(g);
    }
}
END_TEST

START_TEST(test_attention_errors)
{
    ag_gpt_config c = config(0);
    ag_gpt *g = model(&c, 7);
    ag_real out[2 * 2 * 8 * 8];
    char err[256];
    int bad[3] = {0, 9, 1};
    ck_assert_int_ne(ag_gpt_attention(g, bad, 3, out, err, sizeof(err)), AG_OK);
    run_assert_has(err, "9");
    int many[8] = {0};
    ck_assert_int_eq(ag_gpt_attention(g, many, 8, out, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "gpt: ids are (1,8): needs batch >= 1 and 1..7 positions");
    ck_assert_int_eq(ag_gpt_attention(g, NULL, 3, out, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_gpt_attention(NULL, ids, 3, out, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "gpt attention: a NULL argument");
    /* the gradients are left as they were */
    ag_tensor *wte = ag_gpt_param(g, "wte");
    ck_assert_ptr_nonnull(wte->grad);
    ck_assert_int_eq(ag_gpt_attention(g, ids, 7, out, err, sizeof(err)), AG_OK);
    ck_assert_ptr_nonnull(wte->grad);
    /* a failed pass hands out no taps */
    ag_tape *tape = ag_tape_new();
    ag_tensor *attn[2] = {wte, wte};
    ag_gpt_taps taps = {attn, NULL};
    ck_assert_ptr_null(ag_gpt_forward_taps(tape, g, many, 1, 8, NULL, &taps));
    ck_assert(attn[0] == NULL && attn[1] == NULL);
    ag_tape_free(tape);
    ag_gpt_free(g);
}
END_TEST

/* ---- the gradient flow ---- */

static ag_text *text_of(size_t n)
{
    char *s = malloc(n + 1);
    ag_rng rng = ag_rng_new(9);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + (i % 4 ? (int)(i % 9) : (int)ag_rng_below(&rng, 9)));
    ag_text *t;
    char err[256];
    ck_assert_int_eq(ag_text_parse(s, n, "text", NULL, &t, err, sizeof(err)), AG_OK);
    free(s);
    return t;
}

static ag_gpt_trainer *trainer(ag_gpt *g, const ag_text *text)
{
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    tc.batch = 3, tc.warmup = 2, tc.decay_steps = 20, tc.lr = 3e-3;
    char err[256];
    ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
    ck_assert_msg(t != NULL, "%s", err);
    return t;
}

START_TEST(test_flow_measures)
{
    ag_text *text = text_of(1500);
    ag_gpt_config c = config(0);
    ag_gpt *g = model(&c, 11);
    ag_gpt_trainer *t = trainer(g, text);
    double gn[2], rms[2], gn2[2], rms2[2];
    char err[256];
    ck_assert_int_eq(ag_gpt_trainer_flow(t, gn, rms, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_trainer_flow(t, gn2, rms2, err, sizeof(err)), AG_OK);
    for (int l = 0; l < 2; l++) {
        ck_assert(gn[l] > 0 && rms[l] > 0);
        ck_assert(gn[l] == gn2[l] && rms[l] == rms2[l]); /* the same batch every time */
    }
    /* the same numbers by hand: the block's gradient and the stream's size */
    const ag_text *tx = text;
    int B = 3, T = 7, x[21], y[21];
    ag_rng rng = ag_rng_new(1 ^ 0xf10bULL); /* the trainer's seed 1, the flow's stream */
    ag_text_batch(tx, AG_SPLIT_TRAIN, B, T, &rng, x, y);
    ag_tensor *p[64];
    const char *names[64];
    size_t n = ag_gpt_params(g, p, names, 64);
    ag_zero_grad(p, n);
    ag_tape *tape = ag_tape_new();
    ag_tensor *resid[2];
    ag_gpt_taps taps = {NULL, resid};
    ag_tensor *z = ag_gpt_forward_taps(tape, g, x, B, T, NULL, &taps);
    ck_assert_int_eq(ag_backward(tape, ag_cross_entropy(tape, z, y, 21)), AG_OK);
    for (int l = 0; l < 2; l++) {
        double s = 0, r = 0;
        char prefix[8];
        snprintf(prefix, sizeof(prefix), "h.%d.", l);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; strncmp(names[i], prefix, 4) == 0 && k < p[i]->size; k++)
                s += (double)p[i]->grad[k] * p[i]->grad[k];
        for (size_t k = 0; k < resid[l]->size; k++)
            r += (double)resid[l]->data[k] * resid[l]->data[k] / (double)resid[l]->size;
        ck_assert_msg(fabs(gn[l] - sqrt(s)) <= 1e-9 * sqrt(s), "block %d: %g vs %g", l, gn[l],
                      sqrt(s));
        ck_assert(fabs(rms[l] - sqrt(r)) <= 1e-9 * sqrt(r));
    }
    ag_tape_free(tape);
    ck_assert_int_eq(ag_gpt_trainer_flow(NULL, gn, rms, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "gradient flow: a NULL argument");
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
}
END_TEST

START_TEST(test_flow_leaves_training_alone)
{
    /* two runs from the same seed, one measuring between its steps: the same weights */
    ag_text *text = text_of(1500);
    ag_gpt_config c = config(0);
    c.dropout = 0.1;
    ag_gpt *a = model(&c, 13), *b = model(&c, 13);
    ag_gpt_trainer *ta = trainer(a, text), *tb = trainer(b, text);
    char err[256];
    double gn[2], rms[2];
    for (int s = 0; s < 6; s++) {
        ck_assert_int_eq(ag_gpt_trainer_step(ta, NULL, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(ag_gpt_trainer_flow(tb, gn, rms, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(ag_gpt_trainer_step(tb, NULL, err, sizeof(err)), AG_OK);
    }
    ag_tensor *pa[64], *pb[64];
    size_t n = ag_gpt_params(a, pa, NULL, 64);
    ag_gpt_params(b, pb, NULL, 64);
    for (size_t i = 0; i < n; i++)
        ck_assert(memcmp(pa[i]->data, pb[i]->data, pa[i]->size * sizeof(ag_real)) == 0);
    ag_gpt_trainer_free(ta);
    ag_gpt_trainer_free(tb);
    ag_gpt_free(a);
    ag_gpt_free(b);
    ag_text_free(text);
}
END_TEST

Suite *suite_gpt_inspect(void)
{
    Suite *s = suite_create("gpt_inspect");
    TCase *tc = tcase_create("attention");
    tcase_add_test(tc, test_taps_shape_and_rows);
    tcase_add_test(tc, test_fused_equals_op_by_op);
    tcase_add_test(tc, test_attention_equals_reference);
    tcase_add_test(tc, test_attention_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("flow");
    tcase_add_test(tc, test_flow_measures);
    tcase_add_test(tc, test_flow_leaves_training_alone);
    suite_add_tcase(s, tc);
    return s;
}
