/*
 * test_elementwise.c - add, mul and scale: values (with b broadcast over
 * a's leading dims), backward by hand and by finite differences for both
 * operands, and the errors.
 */
#include "test_util.h"

/* ---- forward ---- */

START_TEST(test_add_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 3, (int[]){2, 2, 3},
                                  (ag_real[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    ag_tensor *same = ag_tensor_from(tape, 3, (int[]){2, 2, 3},
                                     (ag_real[]){-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, 0});
    ag_tensor *pos = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){10, 20, 30, 40, 50, 60});
    ag_tensor *bias = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){100, 200, 300});
    ag_tensor *c = ag_add(tape, a, same);
    ag_tensor *p = ag_add(tape, a, pos);  /* (B,T,d) + (T,d) */
    ag_tensor *q = ag_add(tape, a, bias); /* (B,T,d) + (d) */
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(p->ndim, 3);
    ck_assert_int_eq(p->shape[0], 2);
    test_assert_values(c->data, (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12}, 12, 0);
    test_assert_values(p->data, (double[]){11, 22, 33, 44, 55, 66, 17, 28, 39, 50, 61, 72}, 12, 0);
    test_assert_values(
        q->data, (double[]){101, 202, 303, 104, 205, 306, 107, 208, 309, 110, 211, 312}, 12, 0);
    /* size-1: (1) + (1), (3,1) + (1) */
    ag_tensor *s = ag_add(tape, ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){2}),
                          ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){3}));
    ag_tensor *col = ag_add(tape, ag_tensor_from(tape, 2, (int[]){3, 1}, (ag_real[]){1, 2, 3}),
                            ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){10}));
    ck_assert_ptr_nonnull(col);
    ck_assert_double_eq(s->data[0], 5);
    test_assert_values(col->data, (double[]){11, 12, 13}, 3, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_mul_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, 4, 5, 6});
    ag_tensor *b = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){2, 0, -1, 0.5, 1, 3});
    ag_tensor *v = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1, -1, 2});
    ag_tensor *c = ag_mul(tape, a, b);
    ag_tensor *d = ag_mul(tape, a, v);
    ag_tensor *sq = ag_mul(tape, a, a);
    ck_assert_ptr_nonnull(sq);
    test_assert_values(c->data, (double[]){2, 0, -3, 2, 5, 18}, 6, 0);
    test_assert_values(d->data, (double[]){1, -2, 6, 4, -5, 12}, 6, 0);
    test_assert_values(sq->data, (double[]){1, 4, 9, 16, 25, 36}, 6, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_scale_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, -2, 4, 0});
    ag_tensor *h = ag_scale(tape, a, 0.5);
    ag_tensor *z = ag_scale(tape, a, 0);
    ag_tensor *n = ag_scale(tape, a, -1 / sqrt(2.0));
    ck_assert_ptr_nonnull(n);
    test_assert_values(h->data, (double[]){0.5, -1, 2, 0}, 4, 0);
    test_assert_values(z->data, (double[]){0, 0, 0, 0}, 4, 0);
    test_assert_values(n->data, (double[]){-1 / sqrt(2.0), sqrt(2.0), -4 / sqrt(2.0), 0}, 4,
                       AG_TEST_TOL);
    ck_assert_int_eq(h->shape[0], 2);
    ck_assert_int_eq(h->shape[1], 2);
    ag_tape_free(tape);
}
END_TEST

/* ---- backward ---- */

static ag_tensor *build_add(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_add(tape, in[0], in[1]);
}

static ag_tensor *build_mul(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_mul(tape, in[0], in[1]);
}

static ag_tensor *build_scale(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    return ag_scale(tape, in[0], *(const double *)ctx);
}

/* x * x * x through mul: both operands are the same tensor. */
static ag_tensor *build_cube(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_mul(tape, ag_mul(tape, in[0], in[0]), in[0]);
}

static const test_shape broadcast_cases[][2] = {
    {{2, {3, 4}}, {2, {3, 4}}},
    {{3, {2, 3, 4}}, {2, {3, 4}}}, /* positions (T,d) over the batch */
    {{3, {2, 3, 4}}, {1, {4}}},    /* a bias (d) over every row */
    {{4, {2, 1, 2, 3}}, {3, {1, 2, 3}}},
    {{2, {1, 1}}, {1, {1}}},
    {{1, {1}}, {1, {1}}},
    {{2, {3, 1}}, {1, {1}}},
};

START_TEST(test_add_backward)
{
    /* L = sum(w * (a + b)) with b (d) broadcast over 2 rows: db sums them */
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_param_new(2, (int[]){2, 2});
    ag_tensor *b = ag_param_new(1, (int[]){2});
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, 2, 3, 4});
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, ag_add(tape, a, b), w))), AG_OK);
    test_assert_values(a->grad, (double[]){1, 2, 3, 4}, 4, 0);
    test_assert_values(b->grad, (double[]){4, 6}, 2, 0);
    ag_param_free(a);
    ag_param_free(b);
    ag_tape_free(tape);

    for (size_t c = 0; c < sizeof(broadcast_cases) / sizeof(broadcast_cases[0]); c++)
        test_gradcheck_shapes(build_add, NULL, 2, broadcast_cases[c], 100 + c);
}
END_TEST

/* Both inputs op outputs whose gradients nothing has written yet (a
 * residual add's two branches), so that the fast kernel stores both from
 * one pass over dy; a and b are also read by a later op, so their
 * gradients then add onto that. Against the reference kernels, on a size
 * that splits over threads, and against finite differences. */
static ag_tensor *build_two_branches(ag_tape *t, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    ag_tensor *a = ag_scale(t, in[0], 2), *b = ag_mul(t, in[1], in[1]);
    return ag_mul(t, ag_add(t, ag_mul(t, a, b), ag_add(t, a, b)), in[0]);
}

START_TEST(test_add_both_unset)
{
    static const char *const kernels[] = {"reference", "fast"};
    const int shape[2] = {300, 128};
    ag_real *grads[2][2];
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(ag_set_kernels(kernels[k]), AG_OK);
        ag_set_threads(2);
        ag_rng rng = ag_rng_new(9);
        ag_tensor *in[2] = {test_param(&rng, 2, shape), test_param(&rng, 2, shape)};
        ag_tape *tape = ag_tape_new();
        ck_assert_int_eq(ag_backward(tape, ag_sum(tape, build_two_branches(tape, in, NULL))),
                         AG_OK);
        for (int i = 0; i < 2; i++) {
            grads[k][i] = malloc(in[i]->size * sizeof(ag_real));
            ck_assert_ptr_nonnull(grads[k][i]);
            memcpy(grads[k][i], in[i]->grad, in[i]->size * sizeof(ag_real));
            ag_param_free(in[i]);
        }
        ag_tape_free(tape);
        ag_set_threads(1);
    }
    for (int i = 0; i < 2; i++) {
        for (size_t e = 0; e < (size_t)shape[0] * shape[1]; e++)
            if (grads[0][i][e] != grads[1][i][e])
                ck_abort_msg("input %d, element %zu: fast %.9g, reference %.9g", i, e,
                             (double)grads[1][i][e], (double)grads[0][i][e]);
        free(grads[0][i]);
        free(grads[1][i]);
    }
    static const test_shape small[2] = {{2, {3, 4}}, {2, {3, 4}}};
    test_gradcheck_shapes(build_two_branches, NULL, 2, small, 77);
}
END_TEST

START_TEST(test_mul_backward)
{
    for (size_t c = 0; c < sizeof(broadcast_cases) / sizeof(broadcast_cases[0]); c++)
        test_gradcheck_shapes(build_mul, NULL, 2, broadcast_cases[c], 110 + c);
    /* the same tensor on both sides: d(x^3)/dx = 3 x^2 */
    const test_shape cube[] = {{2, {2, 3}}};
    test_gradcheck_shapes(build_cube, NULL, 1, cube, 120);
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_param_new(1, (int[]){2});
    x->data[0] = 2;
    x->data[1] = -3;
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, ag_mul(tape, x, x), x))), AG_OK);
    test_assert_values(x->grad, (double[]){12, 27}, 2, AG_TEST_TOL);
    ag_param_free(x);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_scale_backward)
{
    double factors[] = {2.5, -0.75, 1 / sqrt(8.0), 0};
    const test_shape cases[][1] = {{{2, {3, 4}}}, {{1, {1}}}, {{4, {2, 1, 3, 1}}}};
    for (size_t f = 0; f < sizeof(factors) / sizeof(factors[0]); f++)
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
            test_gradcheck_shapes(build_scale, &factors[f], 1, cases[c], 130 + 4 * f + c);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_elementwise_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_add(tape, a, ag_tensor_new(tape, 1, (int[]){2})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "add: a is [2x3], b is [2]: b must match a's shape or its "
                      "trailing dims");
    a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_add(tape, a, ag_tensor_new(tape, 3, (int[]){1, 2, 3})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "add: a is [2x3], b is [1x2x3]: b must match a's shape or "
                      "its trailing dims");
    a = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_null(ag_mul(tape, a, ag_tensor_new(tape, 2, (int[]){2, 4})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "mul: a is [2x3x4], b is [2x4]: b must match a's shape or "
                      "its trailing dims");
    ck_assert_ptr_null(ag_add(tape, NULL, NULL));
    test_expect_error(tape, AG_ERR_ARG, "add: input 1 is NULL");
    a = ag_tensor_new(tape, 1, (int[]){3});
    ck_assert_ptr_null(ag_mul(tape, a, NULL));
    test_expect_error(tape, AG_ERR_ARG, "mul: input 2 is NULL");
    a = ag_tensor_new(tape, 1, (int[]){3});
    ck_assert_ptr_null(ag_scale(tape, a, NAN));
    test_expect_error(tape, AG_ERR_ARG, "scale: factor nan is not finite");
    a = ag_tensor_new(tape, 1, (int[]){3});
    ck_assert_ptr_null(ag_scale(tape, a, -INFINITY));
    test_expect_error(tape, AG_ERR_ARG, "scale: factor -inf is not finite");
    ck_assert_ptr_null(ag_scale(tape, NULL, 1));
    test_expect_error(tape, AG_ERR_ARG, "scale: input 1 is NULL");
    /* finite as a double, infinite as a float */
    a = ag_tensor_new(tape, 1, (int[]){3});
#ifdef AG_REAL_DOUBLE
    ck_assert_ptr_nonnull(ag_scale(tape, a, 1e39));
#else
    ck_assert_ptr_null(ag_scale(tape, a, 1e39));
    test_expect_error(tape, AG_ERR_ARG, "scale: factor 1e+39 does not fit in float");
#endif
    ag_tape_free(tape);
}
END_TEST

Suite *suite_elementwise(void)
{
    Suite *s = suite_create("elementwise");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_add_values);
    tcase_add_test(tc, test_mul_values);
    tcase_add_test(tc, test_scale_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_add_backward);
    tcase_add_test(tc, test_add_both_unset);
    tcase_add_test(tc, test_mul_backward);
    tcase_add_test(tc, test_scale_backward);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_elementwise_errors);
    suite_add_tcase(s, tc);
    return s;
}
