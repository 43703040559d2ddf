/*
 * test_vjp.c - ag_vjp (src/check/vjp.c): g^T J of a function built from
 * ops, against the Jacobian written out by hand, and its errors.
 */
#include "test_util.h"

static ag_tensor *scale_mul(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_mul(tape, in[0], in[1]); /* y = a * b elementwise */
}

static ag_tensor *softmax_of(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_softmax(tape, in[0]);
}

static ag_tensor *nothing(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)tape, (void)in, (void)ctx;
    return NULL;
}

START_TEST(test_vjp_mul)
{
    ag_tensor *in[2] = {ag_param_new(1, (const int[]){3}), ag_param_new(1, (const int[]){3})};
    const ag_real a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, g[3] = {1, -1, 2};
    memcpy(in[0]->data, a, sizeof(a));
    memcpy(in[1]->data, b, sizeof(b));
    in[0]->grad[0] = 99; /* zeroed first: the product, not a sum with it */
    ag_real y[3];
    char err[128];
    ck_assert_int_eq(ag_vjp(scale_mul, NULL, in, 2, g, y, 3, err, sizeof(err)), AG_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert(y[i] == a[i] * b[i]);
        ck_assert(in[0]->grad[i] == g[i] * b[i]); /* dy_i/da_i = b_i */
        ck_assert(in[1]->grad[i] == g[i] * a[i]);
    }
    ag_param_free(in[0]);
    ag_param_free(in[1]);
}
END_TEST

START_TEST(test_vjp_softmax)
{
    /* dz = s * (g - <g, s>), the softmax Jacobian applied to g */
    ag_tensor *z = ag_param_new(1, (const int[]){3});
    const ag_real zv[3] = {0.5f, -1, 2}, g[3] = {1, 0, -2};
    memcpy(z->data, zv, sizeof(zv));
    ag_real s[3];
    char err[128];
    ck_assert_int_eq(ag_vjp(softmax_of, NULL, &z, 1, g, s, 3, err, sizeof(err)), AG_OK);
    /* the result is the softmax itself, not just consistent with the gradient */
    double sum = 0;
    for (int i = 0; i < 3; i++)
        sum += exp((double)zv[i]);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(s[i], exp((double)zv[i]) / sum, AG_TEST_TOL);
    double dot = 0;
    for (int i = 0; i < 3; i++)
        dot += (double)g[i] * s[i];
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(z->grad[i], s[i] * (g[i] - dot), AG_TEST_TOL);
    ag_param_free(z);
}
END_TEST

START_TEST(test_vjp_errors)
{
    ag_tensor *z = ag_param_new(1, (const int[]){3});
    const ag_real g[4] = {0};
    char err[128];
    ck_assert_int_eq(ag_vjp(softmax_of, NULL, &z, 1, g, NULL, 4, err, sizeof(err)), AG_ERR_SHAPE);
    ck_assert_str_eq(err, "vjp: the result has 3 elements, g 4");
    ck_assert_int_eq(ag_vjp(nothing, NULL, &z, 1, g, NULL, 3, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "vjp: the build function returned NULL");
    ck_assert_int_eq(ag_vjp(NULL, NULL, &z, 1, g, NULL, 3, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "vjp: build is NULL");
    ck_assert_int_eq(ag_vjp(softmax_of, NULL, &z, 1, NULL, NULL, 3, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "vjp: g is NULL");
    ag_param_free(z);
}
END_TEST

Suite *suite_vjp(void)
{
    Suite *s = suite_create("vjp");
    TCase *tc = tcase_create("backward");
    tcase_add_test(tc, test_vjp_mul);
    tcase_add_test(tc, test_vjp_softmax);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_vjp_errors);
    suite_add_tcase(s, tc);
    return s;
}
