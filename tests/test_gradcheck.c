/*
 * test_gradcheck.c - the finite-difference checker itself: it fails on a
 * wrong backward (the deliberate softmax bug), passes on the right one,
 * samples when asked, restores its inputs, and reports bad arguments and
 * build failures with a message.
 */
#include "test_util.h"

#include <string.h>

static ag_tensor *build_softmax(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_softmax(tape, in[0]);
}

/* softmax(x W) W^T: two inputs, several ops */
static ag_tensor *build_chain(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_matmul_bt(tape, ag_softmax(tape, ag_matmul(tape, in[0], in[1])), in[1]);
}

static ag_tensor *build_null(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)tape;
    (void)in;
    (void)ctx;
    return NULL;
}

static ag_tensor *build_bad_shapes(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_matmul(tape, in[0], in[0]); /* (2,3) @ (2,3) */
}

static ag_tensor *build_ignores_input(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)in;
    (void)ctx;
    return ag_tensor_new(tape, 1, (int[]){1});
}

/* A result whose size changes after the first call: one element first and
 * then x's shape (scalar_first), or the other way round. Not a function
 * the check can use. */
typedef struct changing {
    int calls, scalar_first;
} changing;

static ag_tensor *build_changing(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    changing *c = ctx;
    int first = c->calls++ == 0;
    ag_tensor *y = ag_scale(tape, in[0], 2);
    return first == c->scalar_first ? ag_sum(tape, y) : y;
}

START_TEST(test_gradcheck_defaults)
{
    ag_gradcheck_opts o = ag_gradcheck_defaults();
#ifdef AG_REAL_DOUBLE
    ck_assert_double_eq(o.rtol, 1e-6);
    ck_assert_double_eq(o.atol, 1e-3);
#else
    ck_assert_double_eq(o.rtol, 1e-2);
#endif
    ck_assert(o.eps > 0 && o.eps < 0.1);
    ck_assert_uint_gt(o.max_samples, 0);
}
END_TEST

START_TEST(test_gradcheck_catches_softmax_bug)
{
    ag_rng rng = ag_rng_new(9);
    ag_tensor *x = test_param(&rng, 2, (int[]){3, 4});
    ag_gradcheck_opts o = ag_gradcheck_defaults();
    ag_gradcheck_result r;
    char err[256];

    /* dropping the - s s^T term: the check must see it */
    o.bug = AG_BUG_SOFTMAX;
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, &x, 1, &o, &r, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(r.passed, 0);
    ck_assert_msg(r.max_rel > 0.1, "max_rel %g", r.max_rel);
    ck_assert_double_eq(r.tolerance, o.rtol);
    ck_assert_int_eq(r.worst_input, 0);
    ck_assert_uint_lt(r.worst_index, 12);

    /* the same call without the bug passes */
    o.bug = AG_BUG_NONE;
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, &x, 1, &o, &r, err, sizeof(err)), AG_OK);
    ck_assert_msg(r.passed, "max_rel %g", r.max_rel);
    ck_assert(r.max_rel <= o.rtol);
    ck_assert_uint_eq(r.checked, 12);
    ck_assert_uint_eq(r.total, 12);
    ck_assert_str_eq(err, "");
    ag_param_free(x);

    /* deep in a chain as well */
    ag_tensor *in[2] = {test_param(&rng, 3, (int[]){2, 3, 4}), test_param(&rng, 2, (int[]){4, 5})};
    o.bug = AG_BUG_SOFTMAX;
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, &o, &r, NULL, 0), AG_OK);
    ck_assert_int_eq(r.passed, 0);
    ck_assert_msg(r.max_rel > 0.1, "max_rel %g", r.max_rel);
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, NULL, &r, NULL, 0), AG_OK);
    ck_assert_msg(r.passed, "max_rel %g", r.max_rel);
    ag_param_free(in[0]);
    ag_param_free(in[1]);
}
END_TEST

START_TEST(test_gradcheck_sampling)
{
    ag_rng rng = ag_rng_new(10);
    ag_tensor *in[2] = {test_param(&rng, 3, (int[]){2, 3, 4}), test_param(&rng, 2, (int[]){4, 5})};
    ag_gradcheck_opts o = ag_gradcheck_defaults();
    ag_gradcheck_result r;
    o.max_samples = 5;
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, &o, &r, NULL, 0), AG_OK);
    ck_assert_uint_eq(r.total, 44);
    ck_assert_uint_eq(r.checked, 10); /* 5 per input */
    ck_assert_uint_lt(r.checked, r.total);
    ck_assert(r.passed);
    /* max_samples above an input's size: that input is checked whole */
    o.max_samples = 21;
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, &o, &r, NULL, 0), AG_OK);
    ck_assert_uint_eq(r.checked, 21 + 20);
    o.max_samples = 0;
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, &o, &r, NULL, 0), AG_OK);
    ck_assert_uint_eq(r.checked, 44);
    ag_param_free(in[0]);
    ag_param_free(in[1]);
}
END_TEST

/* opts.numeric hands back the finite differences it compared: each within
 * the tolerance of the analytic gradient, and only where it was asked. */
START_TEST(test_gradcheck_numeric_out)
{
    ag_rng rng = ag_rng_new(11);
    ag_tensor *in[2] = {test_param(&rng, 2, (int[]){2, 3}), test_param(&rng, 2, (int[]){3, 4})};
    ag_real num0[6], num1[12];
    for (int i = 0; i < 12; i++)
        num1[i] = -99;
    ag_real *const numeric[2] = {num0, NULL};
    ag_gradcheck_opts o = ag_gradcheck_defaults();
    o.numeric = numeric;
    ag_gradcheck_result r;
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, &o, &r, NULL, 0), AG_OK);
    ck_assert(r.passed);
    for (int i = 0; i < 6; i++) {
        double a = in[0]->grad[i], n = num0[i];
        ck_assert_msg(fabs(a - n) <= o.rtol * fmax(fmax(fabs(a), fabs(n)), o.atol),
                      "element %d: analytic %g, numeric %g", i, a, n);
    }
    ag_real *const only_b[2] = {NULL, num1};
    o.numeric = only_b;
    o.max_samples = 5;
    ck_assert_int_eq(ag_gradcheck(build_chain, NULL, in, 2, &o, &r, NULL, 0), AG_OK);
    int written = 0;
    for (int i = 0; i < 12; i++)
        written += num1[i] != -99;
    ck_assert_int_ge(written, 1);
    ck_assert_int_le(written, 5); /* the sampled elements, and only those */
    ag_param_free(in[0]);
    ag_param_free(in[1]);
}
END_TEST

START_TEST(test_gradcheck_restores_inputs)
{
    ag_rng rng = ag_rng_new(11);
    ag_tensor *x = test_param(&rng, 2, (int[]){2, 3});
    ag_real before[6];
    memcpy(before, x->data, sizeof(before));
    x->grad[0] = 123; /* stale: the checker starts from zero */
    ag_gradcheck_result r;
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, &x, 1, NULL, &r, NULL, 0), AG_OK);
    ck_assert(r.passed);
    for (int i = 0; i < 6; i++)
        ck_assert(x->data[i] == before[i]);
    /* the gradient left behind is the analytic one: each row's sums to 0
     * (softmax is shift-invariant), and it is not all zero */
    double row0 = 0, row1 = 0, mag = 0;
    for (int j = 0; j < 3; j++) {
        row0 += x->grad[j];
        row1 += x->grad[3 + j];
        mag += fabs(x->grad[j]) + fabs(x->grad[3 + j]);
    }
    ck_assert_double_eq_tol(row0, 0, 10 * AG_TEST_TOL);
    ck_assert_double_eq_tol(row1, 0, 10 * AG_TEST_TOL);
    ck_assert(mag > 1e-3);
    ag_param_free(x);
}
END_TEST

START_TEST(test_gradcheck_bad_arguments)
{
    ag_rng rng = ag_rng_new(12);
    ag_tensor *x = test_param(&rng, 1, (int[]){3});
    ag_gradcheck_result r;
    char err[256];

    ck_assert_int_eq(ag_gradcheck(NULL, NULL, &x, 1, NULL, &r, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "gradcheck: bad arguments");
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, NULL, 1, NULL, &r, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_str_eq(err, "gradcheck: bad arguments");
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, &x, 0, NULL, &r, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, &x, 1, NULL, NULL, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_str_eq(err, "gradcheck: bad arguments");

    /* an input without a gradient (a tape tensor) or a NULL input */
    ag_tape *tape = ag_tape_new();
    ag_tensor *in[2] = {x, ag_tensor_new(tape, 1, (int[]){3})};
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, in, 2, NULL, &r, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_str_eq(err, "gradcheck: input 2 is NULL or has no gradient");
    in[1] = NULL;
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, in, 2, NULL, &r, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_str_eq(err, "gradcheck: input 2 is NULL or has no gradient");
    /* err may be NULL */
    ck_assert_int_eq(ag_gradcheck(build_softmax, NULL, in, 2, NULL, &r, NULL, 0), AG_ERR_ARG);
    ag_tape_free(tape);
    ag_param_free(x);
}
END_TEST

START_TEST(test_gradcheck_build_failures)
{
    ag_rng rng = ag_rng_new(13);
    ag_tensor *x = test_param(&rng, 2, (int[]){2, 3});
    ag_real before[6];
    memcpy(before, x->data, sizeof(before));
    ag_gradcheck_result r;
    char err[256];

    ck_assert_int_eq(ag_gradcheck(build_null, NULL, &x, 1, NULL, &r, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "gradcheck: the build function returned NULL");
    ck_assert_int_eq(ag_gradcheck(build_bad_shapes, NULL, &x, 1, NULL, &r, err, sizeof(err)),
                     AG_ERR_SHAPE);
    ck_assert_str_eq(err, "matmul: a is [2x3], b is [2x3]: inner dims 3 != 2");
    ck_assert_int_eq(ag_gradcheck(build_ignores_input, NULL, &x, 1, NULL, &r, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_str_eq(err, "backward: loss does not depend on anything that needs a gradient");
    for (int i = 0; i < 6; i++)
        ck_assert(x->data[i] == before[i]);
    for (int scalar_first = 0; scalar_first < 2; scalar_first++) {
        changing c = {0, scalar_first};
        ck_assert_int_eq(ag_gradcheck(build_changing, &c, &x, 1, NULL, &r, err, sizeof(err)),
                         AG_ERR_SHAPE);
        ck_assert_str_eq(err, "gradcheck: the result changed size between passes");
    }
    /* a short err buffer is cut, still terminated */
    char small[9];
    ck_assert_int_eq(ag_gradcheck(build_bad_shapes, NULL, &x, 1, NULL, &r, small, sizeof(small)),
                     AG_ERR_SHAPE);
    ck_assert_str_eq(small, "matmul: ");
    ag_param_free(x);
}
END_TEST

Suite *suite_gradcheck(void)
{
    Suite *s = suite_create("gradcheck");
    TCase *tc = tcase_create("backward");
    tcase_add_test(tc, test_gradcheck_defaults);
    tcase_add_test(tc, test_gradcheck_catches_softmax_bug);
    tcase_add_test(tc, test_gradcheck_sampling);
    tcase_add_test(tc, test_gradcheck_restores_inputs);
    tcase_add_test(tc, test_gradcheck_numeric_out);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_gradcheck_bad_arguments);
    tcase_add_test(tc, test_gradcheck_build_failures);
    suite_add_tcase(s, tc);
    return s;
}
