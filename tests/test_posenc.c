/*
 * test_posenc.c - positional encodings: the sinusoidal formula, the learned
 * table (init, lookup, gradient only for the rows used), none as identity,
 * names, and errors.
 */
#include "test_util.h"

#include <string.h>

START_TEST(test_names)
{
    const char *names[] = {"none", "sinusoidal", "learned"};
    for (int k = 0; k < 3; k++) {
        ag_posenc_kind kind = AG_POSENC_NONE;
        ck_assert_int_eq(ag_posenc_parse(names[k], &kind), 1);
        ck_assert_int_eq(kind, k);
        ck_assert_str_eq(ag_posenc_kind_name(kind), names[k]);
    }
    ag_posenc_kind kind = AG_POSENC_LEARNED;
    ck_assert_int_eq(ag_posenc_parse("sin", &kind), 0);
    ck_assert_int_eq(ag_posenc_parse("Learned", &kind), 0);
    ck_assert_int_eq(ag_posenc_parse(NULL, &kind), 0);
    ck_assert_int_eq(kind, AG_POSENC_LEARNED); /* untouched on failure */
    ck_assert_str_eq(ag_posenc_kind_name((ag_posenc_kind)7), "unknown");
}
END_TEST

START_TEST(test_sinusoidal_values)
{
    enum { L = 6, d = 5 }; /* odd d: the last column is a lone sin */
    ag_posenc *pe = ag_posenc_new(AG_POSENC_SINUSOIDAL, L, d, NULL, NULL, 0);
    ck_assert_ptr_nonnull(pe);
    ck_assert_int_eq(ag_posenc_get_kind(pe), AG_POSENC_SINUSOIDAL);
    ck_assert_int_eq(ag_posenc_max_len(pe), L);
    ck_assert_int_eq(ag_posenc_dim(pe), d);
    ck_assert_uint_eq(ag_posenc_params(pe, NULL, NULL, 1), 0); /* fixed: nothing to learn */
    const ag_real *v = ag_posenc_values(pe);
    for (int t = 0; t < L; t++)
        for (int i = 0; 2 * i < d; i++) {
            double angle = t / pow(10000.0, 2.0 * i / d);
            ck_assert_double_eq_tol(v[t * d + 2 * i], sin(angle), AG_TEST_TOL);
            if (2 * i + 1 < d)
                ck_assert_double_eq_tol(v[t * d + 2 * i + 1], cos(angle), AG_TEST_TOL);
        }
    /* position 0 is [0 1 0 1 0] */
    ck_assert(v[0] == 0 && v[1] == 1 && v[2] == 0 && v[3] == 1 && v[4] == 0);

    /* apply: x + PE[0:T] for every batch index, T < max_len */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 4, d});
    for (size_t i = 0; i < x->size; i++)
        x->data[i] = (ag_real)i;
    ag_tensor *y = ag_posenc_apply(tape, pe, x);
    ck_assert_ptr_nonnull(y);
    ck_assert(ag_same_shape(x, y));
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 4 * d; j++)
            ck_assert_double_eq_tol(y->data[b * 4 * d + j], x->data[b * 4 * d + j] + v[j],
                                    AG_TEST_TOL);
    ag_tape_free(tape);
    ag_posenc_free(pe);
}
END_TEST

START_TEST(test_none_is_identity)
{
    ag_posenc *pe = ag_posenc_new(AG_POSENC_NONE, 4, 3, NULL, NULL, 0);
    ck_assert_ptr_nonnull(pe);
    ck_assert_ptr_null(ag_posenc_values(pe));
    ck_assert_uint_eq(ag_posenc_params(pe, NULL, NULL, 1), 0);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 4, 3});
    size_t before = ag_tape_size(tape);
    ck_assert_ptr_eq(ag_posenc_apply(tape, pe, x), x);
    ck_assert_uint_eq(ag_tape_size(tape), before);
    ag_tape_free(tape);
    ag_posenc_free(pe);
}
END_TEST

START_TEST(test_learned_init)
{
    ag_rng r1 = ag_rng_new(9), r2 = ag_rng_new(9);
    ag_posenc *a = ag_posenc_new(AG_POSENC_LEARNED, 16, 8, &r1, NULL, 0);
    ag_posenc *b = ag_posenc_new(AG_POSENC_LEARNED, 16, 8, &r2, NULL, 0);
    ag_tensor *ta, *tb;
    const char *name;
    ck_assert_uint_eq(ag_posenc_params(a, &ta, &name, 1), 1);
    ck_assert_uint_eq(ag_posenc_params(b, &tb, NULL, 1), 1);
    ck_assert_str_eq(name, "pos");
    ck_assert_int_eq(ta->shape[0], 16);
    ck_assert_int_eq(ta->shape[1], 8);
    ck_assert_ptr_eq(ag_posenc_values(a), ta->data);
    double sq = 0;
    for (size_t i = 0; i < ta->size; i++) {
        ck_assert(ta->data[i] == tb->data[i]);
        sq += (double)ta->data[i] * ta->data[i];
    }
    double std = sqrt(sq / (double)ta->size);
    ck_assert_msg(std > AG_POSENC_LEARNED_STD / 2 && std < AG_POSENC_LEARNED_STD * 2, "std %g",
                  std);
    ag_posenc_free(a);
    ag_posenc_free(b);
}
END_TEST

static ag_tensor *build_apply(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    ag_tensor *y = ag_posenc_apply(tape, ctx, in[0]);
    return ag_mul(tape, y, y); /* nonlinear, so the check is not of a constant */
}

START_TEST(test_learned_grad)
{
    enum { L = 5, d = 3 };
    ag_rng rng = ag_rng_new(10);
    ag_posenc *pe = ag_posenc_new(AG_POSENC_LEARNED, L, d, &rng, NULL, 0);
    ag_tensor *in[2];
    in[0] = test_param(&rng, 3, (int[]){2, 3, d}); /* T = 3 < max_len */
    ag_posenc_params(pe, in + 1, NULL, 1);
    test_gradcheck(build_apply, pe, in, 2);
    /* rows 3 and 4 were not used: exactly zero gradient */
    for (int i = 3 * d; i < L * d; i++)
        ck_assert(in[1]->grad[i] == 0);
    ag_param_free(in[0]);
    ag_posenc_free(pe);
}
END_TEST

typedef struct layer_ctx {
    ag_posenc *pe;
    ag_attention *att;
} layer_ctx;

static ag_tensor *build_layer(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    layer_ctx *c = ctx;
    return ag_attention_forward(tape, c->att, ag_posenc_apply(tape, c->pe, in[0]), NULL);
}

START_TEST(test_learned_through_layer)
{
    ag_rng rng = ag_rng_new(12);
    layer_ctx c = {ag_posenc_new(AG_POSENC_LEARNED, 4, 4, &rng, NULL, 0),
                   ag_attention_new(4, 2, 0, &rng, NULL, 0)};
    ag_tensor *in[2];
    in[0] = test_param(&rng, 3, (int[]){2, 4, 4});
    ag_posenc_params(c.pe, in + 1, NULL, 1);
    ag_fill_normal(in[1], &rng, 0, 0.5);
    test_gradcheck(build_layer, &c, in, 2);
    ag_param_free(in[0]);
    ag_posenc_free(c.pe);
    ag_attention_free(c.att);
}
END_TEST

START_TEST(test_new_errors)
{
    char err[128];
    ck_assert_ptr_null(ag_posenc_new(AG_POSENC_SINUSOIDAL, 0, 4, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "max length 0 must be at least 1");
    ck_assert_ptr_null(ag_posenc_new(AG_POSENC_LEARNED, 4, -1, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "dim -1 must be at least 1");
    ck_assert_ptr_null(ag_posenc_new((ag_posenc_kind)9, 4, 4, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "unknown positional encoding 9");
    ck_assert_ptr_null(ag_posenc_new(AG_POSENC_NONE, 0, 4, NULL, NULL, 0));
    ag_posenc_free(NULL);
}
END_TEST

START_TEST(test_apply_errors)
{
    ag_posenc *pe = ag_posenc_new(AG_POSENC_SINUSOIDAL, 4, 8, NULL, NULL, 0);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 5, 8});
    ck_assert_ptr_null(ag_posenc_apply(tape, pe, x));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape),
                     "posenc: x is [2x5x8]: length 5 is longer than max length 4");
    ag_tape_reset(tape);
    x = ag_tensor_new(tape, 3, (int[]){2, 3, 6});
    ck_assert_ptr_null(ag_posenc_apply(tape, pe, x));
    ck_assert_str_eq(ag_tape_error(tape), "posenc: x is [2x3x6]: needs (..., T, 8)");
    ag_tape_reset(tape);
    ck_assert_ptr_null(ag_posenc_apply(tape, NULL, x));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape), "posenc: encoding is NULL");
    ag_tape_free(tape);
    ag_posenc_free(pe);
}
END_TEST

Suite *suite_posenc(void)
{
    Suite *s = suite_create("posenc");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_sinusoidal_values);
    tcase_add_test(tc, test_none_is_identity);
    tcase_add_test(tc, test_learned_init);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_learned_grad);
    tcase_add_test(tc, test_learned_through_layer);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_new_errors);
    tcase_add_test(tc, test_apply_errors);
    suite_add_tcase(s, tc);
    return s;
}
