/*
 * test_relu.c - relu: values (NaN and infinities included), the gradient
 * by hand (0 at the kink) and by finite differences away from it, a
 * deliberately wrong backward caught, and the errors.
 */
#include "test_util.h"

START_TEST(test_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_param_new(1, (int[]){7}); /* a parameter: NaN is not checked as an entry */
    ag_real v[7] = {-2, -0.5, 0, 0.5, 3, -INFINITY, INFINITY};
    for (int i = 0; i < 7; i++)
        p->data[i] = v[i];
    ag_tensor *y = ag_relu(tape, p);
    ck_assert_ptr_nonnull(y);
    test_assert_values(y->data, (double[]){0, 0, 0, 0.5, 3, 0, INFINITY}, 7, 0);
    p->data[1] = NAN;
    y = ag_relu(tape, p);
    ck_assert(isnan(y->data[1])); /* NaN stays NaN, for anomaly detection */
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_backward_by_hand)
{
    /* dx = dy where x > 0, else 0 (also at x = 0 itself) */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_requires_grad(
        tape, ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){-1, 0, 2, 3, -0.5, 1e-30}));
    ag_tensor *g = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, 4, 5, 6});
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, ag_relu(tape, x), g))), AG_OK);
    test_assert_values(x->grad, (double[]){0, 0, 3, 4, 0, 6}, 6, 0);
    ag_tape_free(tape);
}
END_TEST

static ag_tensor *build_relu(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_relu(tape, in[0]);
}

/* Normal inputs pushed at least 0.1 away from 0: the finite differences
 * must not straddle the kink. */
static ag_tensor *away_from_kink(ag_rng *rng, int ndim, const int *shape)
{
    ag_tensor *x = test_param(rng, ndim, shape);
    for (size_t i = 0; i < x->size; i++)
        x->data[i] += x->data[i] < 0 ? (ag_real)-0.1 : (ag_real)0.1;
    return x;
}

START_TEST(test_relu_gradcheck)
{
    ag_rng rng = ag_rng_new(90);
    static const test_shape shapes[] = {{1, {1}}, {2, {3, 5}}, {4, {2, 2, 3, 17}}};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        ag_tensor *x = away_from_kink(&rng, shapes[i].ndim, shapes[i].shape);
        test_gradcheck(build_relu, NULL, &x, 1);
        ag_param_free(x);
    }
}
END_TEST

/* A plausible mistake: passing the gradient through everywhere. */
static void wrong_backward(ag_tape *tape, const ag_entry *e)
{
    (void)tape;
    for (size_t i = 0; i < e->in[0]->size; i++)
        e->in[0]->grad[i] += e->out->grad[i];
}
static const ag_op wrong_op = {"relu", wrong_backward, 0, 0};

START_TEST(test_wrong_backward_is_caught)
{
    ag_rng rng = ag_rng_new(91);
    ag_tensor *x = away_from_kink(&rng, 2, (int[]){3, 6});
    test_wrong_backward_caught(build_relu, NULL, &wrong_op, x);
    ag_param_free(x);
}
END_TEST

START_TEST(test_errors)
{
    ag_tape *tape = ag_tape_new();
    ck_assert_ptr_null(ag_relu(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "relu: input 1 is NULL");
    ck_assert_ptr_null(ag_relu(NULL, ag_tensor_new(tape, 1, (int[]){2})));
    /* NaN in, NaN out: detect mode names relu at the next op */
    ag_tensor *p = ag_param_new(1, (int[]){3});
    p->data[2] = NAN;
    ag_tape_detect_anomaly(tape, 1);
    ck_assert_ptr_nonnull(ag_relu(tape, p));
    ck_assert_ptr_null(ag_sum(tape, ag_relu(tape, p)));
    test_expect_error(tape, AG_ERR_NUMERIC,
                      "anomaly: the output of op relu (tape entry 1, [3]) is NaN at element 2");
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

Suite *suite_relu(void)
{
    Suite *s = suite_create("relu");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_backward_by_hand);
    tcase_add_test(tc, test_relu_gradcheck);
    tcase_add_test(tc, test_wrong_backward_is_caught);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}
