/*
 * test_cross_entropy.c - the fused softmax cross-entropy: values by hand,
 * stability with huge logits, the (softmax - onehot) / rows gradient,
 * ignored rows, every vector row against the plain one, and errors naming
 * the bad row.
 */
#include "test_util.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"

#include <string.h>

START_TEST(test_ce_value)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_requires_grad(
        tape, ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, 1, 1, 1}));
    ag_tensor *loss = ag_cross_entropy(tape, z, (int[]){2, 0}, 2);
    ck_assert_ptr_nonnull(loss);
    ck_assert_int_eq(loss->ndim, 1);
    ck_assert_int_eq(loss->shape[0], 1);
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    double want = ((lse - 3) + log(3.0)) / 2;
    ck_assert_double_eq_tol(loss->data[0], want, AG_TEST_TOL);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    /* dz = (softmax - onehot) / 2 */
    const int tg[2] = {2, 0};
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 3; j++) {
            double p = r == 0 ? exp(1.0 + j) / exp(lse) : 1.0 / 3;
            double g = (p - (j == tg[r])) / 2;
            ck_assert_double_eq_tol(z->grad[r * 3 + j], g, AG_TEST_TOL);
        }
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_ce_stable)
{
    /* exp(1000) overflows even in double: the max must be subtracted */
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_requires_grad(
        tape, ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1000, 0, -1000, 1000, 0, -1000}));
    ag_tensor *loss = ag_cross_entropy(tape, z, (int[]){0, 1}, 2);
    ck_assert_ptr_nonnull(loss);
    ck_assert(isfinite(loss->data[0]));
    ck_assert_double_eq_tol(loss->data[0], 500, 1e-3); /* (0 + 1000) / 2 */
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    for (int i = 0; i < 6; i++)
        ck_assert(isfinite(z->grad[i]));
    ck_assert_double_eq_tol(z->grad[0], 0, AG_TEST_TOL);
    ck_assert_double_eq_tol(z->grad[3], 0.5, AG_TEST_TOL);
    ck_assert_double_eq_tol(z->grad[4], -0.5, AG_TEST_TOL);
    ag_tape_reset(tape);
    /* logits near the largest float: two equal ones, so the loss is ln 2; added to the max
     * before z_t was taken away, log(sum) vanished beside it and the loss came out 0 */
    for (int wide = 0; wide < 2; wide++) { /* 3 classes, and 40 (the vector kernel) */
        int C = wide ? 40 : 3;
        ag_real row[40];
        for (int j = 0; j < C; j++)
            row[j] = (ag_real)(j < 2 ? 3e38 : -3e38);
        z = ag_tensor_from(tape, 2, (int[]){1, C}, row);
        loss = ag_cross_entropy(tape, z, (int[]){1}, 1);
        ck_assert_ptr_nonnull(loss);
        ck_assert_double_eq_tol(loss->data[0], log(2.0), 1e-6);
    }
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_ce_ignore)
{
    /* an ignored row changes neither the loss nor the mean's denominator */
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_requires_grad(
        tape, ag_tensor_from(tape, 2, (int[]){3, 2}, (ag_real[]){0, 0, 5, -5, 1, 1}));
    ag_tensor *loss = ag_cross_entropy(tape, z, (int[]){0, AG_IGNORE_INDEX, 1}, 3);
    ck_assert_double_eq_tol(loss->data[0], log(2.0), AG_TEST_TOL);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_double_eq_tol(z->grad[0], -0.25, AG_TEST_TOL);
    ck_assert(z->grad[2] == 0 && z->grad[3] == 0);
    ck_assert_double_eq_tol(z->grad[5], -0.25, AG_TEST_TOL);
    ag_tape_reset(tape);

    /* every row ignored: loss 0 and zero gradient, never NaN */
    z = ag_requires_grad(tape, ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2}));
    loss = ag_cross_entropy(tape, z, (int[]){AG_IGNORE_INDEX}, 1);
    ck_assert(loss->data[0] == 0);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert(z->grad[0] == 0 && z->grad[1] == 0);
    ag_tape_free(tape);
}
END_TEST

typedef struct ce_ctx {
    const int *targets;
    size_t n;
} ce_ctx;

static ag_tensor *build_ce(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    ce_ctx *c = ctx;
    return ag_cross_entropy(tape, in[0], c->targets, c->n);
}

/* Every vector row this CPU has against the plain row (ag_cross_entropy_row,
 * libm's exp in double): the loss to a few ulp of a double and the
 * probabilities to an ulp of a float, widths 1..70 and past the rows' kept
 * exps (512), logits near and far apart, -inf classes, and rows with a NaN
 * or +inf (NaN out, as the plain row); the levels to the same bits. */
START_TEST(test_ce_vector_rows)
{
    ag_rng rng = ag_rng_new(31);
    static ag_real z[600], want_p[600], got_p[2][600];
    for (int n = 1; n <= 600; n = n < 70 ? n + 1 : n + 265) {
        for (int kind = 0; kind < 5; kind++) {
            double spread = kind == 1 ? 200 : 6;
            for (int j = 0; j < n; j++)
                z[j] = (ag_real)(spread * (ag_rng_uniform(&rng) - 0.5));
            int t = (int)ag_rng_below(&rng, (uint32_t)n);
            if (kind == 2 && n > 1)
                z[(t + 1) % n] = -INFINITY;
            if (kind == 3)
                z[n - 1] = NAN;
            if (kind == 4)
                z[n / 2] = INFINITY;
            double want = ag_cross_entropy_row(z, (size_t)n, t, want_p);
            double got[2] = {0, 0};
            for (int level = 1; level <= ag_cpu_row_level(); level++) {
                got[level - 1] =
                    ag_fast_cross_entropy_row(z, (size_t)n, t, got_p[level - 1], level);
                if (isnan(want)) {
                    ck_assert_msg(isnan(got[level - 1]), "level %d n %d kind %d: %g, want NaN",
                                  level, n, kind, got[level - 1]);
                    continue;
                }
                if (!(fabs(got[level - 1] - want) <= 1e-14 * fabs(want) + 1e-300))
                    ck_abort_msg("level %d n %d kind %d: loss %.17g, want %.17g", level, n, kind,
                                 got[level - 1], want);
                for (int j = 0; j < n; j++) /* ck_abort_msg: one report, not one per class */
                    if (!(fabs(got_p[level - 1][j] - want_p[j]) <= 1.2e-7 * want_p[j]))
                        ck_abort_msg("level %d n %d kind %d class %d: %.9g, want %.9g", level, n,
                                     kind, j, (double)got_p[level - 1][j], (double)want_p[j]);
            }
            if (ag_cpu_row_level() == 2 && !isnan(want))
                ck_assert_msg(got[0] == got[1] && !memcmp(got_p[0], got_p[1], n * sizeof(ag_real)),
                              "n %d kind %d: AVX2 and AVX-512 differ", n, kind);
        }
    }
}
END_TEST

START_TEST(test_ce_grad)
{
    ag_rng rng = ag_rng_new(5);
    ag_tensor *z = test_param(&rng, 3, (int[]){2, 3, 5});
    int tg[6];
    for (int i = 0; i < 6; i++)
        tg[i] = (int)ag_rng_below(&rng, 5);
    ce_ctx c = {tg, 6};
    test_gradcheck(build_ce, &c, &z, 1);
    tg[2] = AG_IGNORE_INDEX;
    test_gradcheck(build_ce, &c, &z, 1);
    ag_param_free(z);
}
END_TEST

START_TEST(test_ce_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_tensor_new(tape, 2, (int[]){2, 5});
    ck_assert_ptr_null(ag_cross_entropy(tape, z, (int[]){1, 5}, 2));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape),
                     "cross_entropy: target 5 at row 1 is out of range [0, 5) for logits [2x5]");
    ag_tape_reset(tape);

    z = ag_tensor_new(tape, 2, (int[]){2, 5});
    ck_assert_ptr_null(ag_cross_entropy(tape, z, (int[]){-2, 0}, 2));
    ck_assert_str_eq(ag_tape_error(tape),
                     "cross_entropy: target -2 at row 0 is out of range [0, 5) for logits [2x5]");
    ag_tape_reset(tape);

    z = ag_tensor_new(tape, 3, (int[]){2, 3, 5});
    ck_assert_ptr_null(ag_cross_entropy(tape, z, (int[]){0, 1}, 2));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(
        ag_tape_error(tape),
        "cross_entropy: logits are [2x3x5] (6 rows of 5 classes), 2 targets: one per row");
    ag_tape_reset(tape);

    z = ag_tensor_new(tape, 2, (int[]){2, 5});
    ck_assert_ptr_null(ag_cross_entropy(tape, z, NULL, 2));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape), "cross_entropy: targets is NULL");
    ag_tape_free(tape);
}
END_TEST

Suite *suite_cross_entropy(void)
{
    Suite *s = suite_create("cross_entropy");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_ce_value);
    tcase_add_test(tc, test_ce_stable);
    tcase_add_test(tc, test_ce_ignore);
    tcase_add_test(tc, test_ce_vector_rows);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_ce_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_ce_errors);
    suite_add_tcase(s, tc);
    return s;
}
