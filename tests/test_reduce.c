/*
 * test_reduce.c - the ops that end in one number: sum, mean and the mse
 * loss. Values by hand, gradients by hand and by finite differences (for
 * both of mse's inputs), and the errors.
 */
#include "test_util.h"

/* ---- forward ---- */

START_TEST(test_sum_mean_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 3, (int[]){2, 1, 3}, (ag_real[]){1, 2, 3, 4, 5, -6});
    ag_tensor *s = ag_sum(tape, a);
    ag_tensor *m = ag_mean(tape, a);
    ck_assert_ptr_nonnull(m);
    /* one element of shape (1) */
    ck_assert_int_eq(s->ndim, 1);
    ck_assert_int_eq(s->shape[0], 1);
    ck_assert_uint_eq(s->size, 1);
    ck_assert_int_eq(m->ndim, 1);
    ck_assert_uint_eq(m->size, 1);
    ck_assert_double_eq(s->data[0], 9);
    ck_assert_double_eq_tol(m->data[0], 1.5, AG_TEST_TOL);
    ag_tensor *one = ag_tensor_from(tape, 2, (int[]){1, 1}, (ag_real[]){-7});
    ck_assert_double_eq(ag_sum(tape, one)->data[0], -7);
    ck_assert_double_eq(ag_mean(tape, one)->data[0], -7);
    /* a long sum of 0.1s is accumulated in double: exact to float rounding */
    ag_tensor *many = ag_tensor_new(tape, 2, (int[]){100, 100});
    for (size_t i = 0; i < many->size; i++)
        many->data[i] = (ag_real)0.1;
    ck_assert_double_eq_tol(ag_sum(tape, many)->data[0], 10000 * (double)(ag_real)0.1, 1e-3);
    ck_assert_double_eq_tol(ag_mean(tape, many)->data[0], (double)(ag_real)0.1, 1e-7);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_mse_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, 2, 3, 4});
    ag_tensor *t = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, 0, 4, 1});
    ag_tensor *l = ag_mse(tape, p, t);
    ck_assert_ptr_nonnull(l);
    ck_assert_uint_eq(l->size, 1);
    /* (0 + 4 + 1 + 9) / 4 */
    ck_assert_double_eq_tol(l->data[0], 3.5, AG_TEST_TOL);
    ck_assert_double_eq(ag_mse(tape, p, p)->data[0], 0);
    ag_tensor *a = ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){3});
    ag_tensor *b = ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){-1});
    ck_assert_double_eq_tol(ag_mse(tape, a, b)->data[0], 16, AG_TEST_TOL);
    ag_tape_free(tape);
}
END_TEST

/* mse against a plain sum in long double on sizes around its lane count
 * (so every tail length is seen) and a long one, values of mixed scales */
START_TEST(test_mse_sizes)
{
    static const size_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 100, 4099, 100003};
#ifdef AG_REAL_DOUBLE
    const double tol = 1e-14;
#else
    const double tol = 1e-7; /* the float result's own rounding, about 6e-8 */
#endif
    ag_rng rng = ag_rng_new(77);
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        size_t n = sizes[c];
        ag_tape *tape = ag_tape_new();
        ag_tensor *p = ag_tensor_new(tape, 1, (int[]){(int)n});
        ag_tensor *t = ag_tensor_new(tape, 1, (int[]){(int)n});
        long double want = 0;
        for (size_t i = 0; i < n; i++) {
            double scale = i % 3 == 0 ? 1e-3 : i % 3 == 1 ? 1 : 50;
            p->data[i] = (ag_real)(scale * ag_rng_normal(&rng));
            t->data[i] = (ag_real)(1 + ag_rng_normal(&rng));
            long double d = (long double)p->data[i] - (long double)t->data[i];
            want += d * d;
        }
        want /= (long double)n;
        ag_tensor *l = ag_mse(tape, p, t);
        ck_assert_ptr_nonnull(l);
        ck_assert_msg(fabsl(l->data[0] - want) <= tol * want, "n = %zu: mse %.17g, want %.17Lg", n,
                      (double)l->data[0], want);
        ag_tape_free(tape);
    }
}
END_TEST

/* ---- backward ---- */

static ag_tensor *build_sum(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_sum(tape, in[0]);
}

static ag_tensor *build_mean(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_mean(tape, in[0]);
}

static ag_tensor *build_mse(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_mse(tape, in[0], in[1]);
}

/* mean(x * x): the reductions behind a nonlinearity, so the check sees
 * more than a constant gradient */
static ag_tensor *build_mean_square(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_mean(tape, ag_mul(tape, in[0], in[0]));
}

START_TEST(test_reduce_backward_by_hand)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_param_new(2, (int[]){2, 2});
    for (int i = 0; i < 4; i++)
        x->data[i] = (ag_real)i;
    /* L = sum(x) + mean(x): dx = 1 + 1/4 (separate statements fix the
     * order on the tape: mean's backward runs first, sum's must add to it) */
    ag_tensor *s = ag_sum(tape, x);
    ag_tensor *m = ag_mean(tape, x);
    ck_assert_int_eq(ag_backward(tape, ag_add(tape, s, m)), AG_OK);
    test_assert_values(x->grad, (double[]){1.25, 1.25, 1.25, 1.25}, 4, 0);
    ag_param_free(x);
    ag_tape_free(tape);

    /* L = mse(p, t) = mean((p - t)^2): dp = 2 (p - t) / n, dt = -dp */
    tape = ag_tape_new();
    ag_tensor *p = ag_param_new(1, (int[]){4});
    ag_tensor *t = ag_param_new(1, (int[]){4});
    for (int i = 0; i < 4; i++) {
        p->data[i] = (ag_real)(i + 1);
        t->data[i] = (ag_real)(2 * i);
    }
    ck_assert_int_eq(ag_backward(tape, ag_mse(tape, p, t)), AG_OK);
    test_assert_values(p->grad, (double[]){0.5, 0, -0.5, -1}, 4, AG_TEST_TOL);
    test_assert_values(t->grad, (double[]){-0.5, 0, 0.5, 1}, 4, AG_TEST_TOL);
    ag_param_free(p);
    ag_param_free(t);
    ag_tape_free(tape);
}
END_TEST

/* mse's backward on sizes around its vector width: it adds (into gradients
 * already holding something) 2 (p - t) / n to dp and subtracts it from dt */
START_TEST(test_mse_backward_sizes)
{
    static const int sizes[] = {1, 3, 8, 13, 33};
    ag_rng rng = ag_rng_new(78);
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        int n = sizes[c];
        ag_tape *tape = ag_tape_new();
        ag_tensor *p = test_param(&rng, 1, (int[]){n}), *t = test_param(&rng, 1, (int[]){n});
        for (int i = 0; i < n; i++) {
            p->grad[i] = (ag_real)(0.5 * i);
            t->grad[i] = (ag_real)-i;
        }
        ck_assert_int_eq(ag_backward(tape, ag_mse(tape, p, t)), AG_OK);
        for (int i = 0; i < n; i++) {
            double d = 2 * ((double)p->data[i] - (double)t->data[i]) / n;
            ck_assert_double_eq_tol(p->grad[i], 0.5 * i + d, AG_TEST_TOL * (1 + fabs(d) + i));
            ck_assert_double_eq_tol(t->grad[i], -i - d, AG_TEST_TOL * (1 + fabs(d) + i));
        }
        ag_param_free(p);
        ag_param_free(t);
        ag_tape_free(tape);
    }
}
END_TEST

START_TEST(test_reduce_gradcheck)
{
    const test_shape one[][1] = {{{2, {3, 4}}}, {{1, {1}}}, {{4, {2, 1, 3, 2}}}, {{3, {1, 1, 5}}}};
    for (size_t c = 0; c < sizeof(one) / sizeof(one[0]); c++) {
        test_gradcheck_shapes(build_sum, NULL, 1, one[c], 200 + c);
        test_gradcheck_shapes(build_mean, NULL, 1, one[c], 210 + c);
        test_gradcheck_shapes(build_mean_square, NULL, 1, one[c], 220 + c);
    }
}
END_TEST

START_TEST(test_mse_gradcheck)
{
    /* both the prediction and the target get a gradient */
    const test_shape cases[][2] = {
        {{3, {2, 3, 4}}, {3, {2, 3, 4}}},
        {{1, {1}}, {1, {1}}},
        {{4, {1, 2, 1, 3}}, {4, {1, 2, 1, 3}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_mse, NULL, 2, cases[c], 230 + c);
}
END_TEST

START_TEST(test_mse_target_without_grad)
{
    /* the usual case: the target is data, so only pred's gradient flows */
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_param_new(1, (int[]){2});
    ag_tensor *y = ag_tensor_from(tape, 1, (int[]){2}, (ag_real[]){1, -1});
    ag_tensor *l = ag_mse(tape, p, y);
    ck_assert_int_eq(ag_backward(tape, l), AG_OK);
    ck_assert_ptr_null(y->grad);
    test_assert_values(p->grad, (double[]){-1, 1}, 2, AG_TEST_TOL);
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_reduce_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_mse(tape, p, ag_tensor_new(tape, 2, (int[]){3, 2})));
    test_expect_error(tape, AG_ERR_SHAPE, "mse: pred is [2x3], target is [3x2]: shapes differ");
    p = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_mse(tape, p, ag_tensor_new(tape, 3, (int[]){1, 2, 3})));
    test_expect_error(tape, AG_ERR_SHAPE, "mse: pred is [2x3], target is [1x2x3]: shapes differ");
    p = ag_tensor_new(tape, 1, (int[]){6});
    ck_assert_ptr_null(ag_mse(tape, p, NULL));
    test_expect_error(tape, AG_ERR_ARG, "mse: input 2 is NULL");
    ck_assert_ptr_null(ag_sum(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "sum: input 1 is NULL");
    ck_assert_ptr_null(ag_mean(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "mean: input 1 is NULL");
    ag_tape_free(tape);
}
END_TEST

Suite *suite_reduce(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_sum_mean_values);
    tcase_add_test(tc, test_mse_values);
    tcase_add_test(tc, test_mse_sizes);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_reduce_backward_by_hand);
    tcase_add_test(tc, test_reduce_gradcheck);
    tcase_add_test(tc, test_mse_gradcheck);
    tcase_add_test(tc, test_mse_backward_sizes);
    tcase_add_test(tc, test_mse_target_without_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_reduce_errors);
    suite_add_tcase(s, tc);
    return s;
}
