/*
 * test_softmax.c - softmax and causal_mask: values against the reference
 * kernel, the numerics attention depends on (huge logits, -inf entries,
 * fully masked rows, never NaN), backward against finite differences
 * (projected, never through the constant row sum), and errors.
 */
#include "test_util.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"

#include <stdlib.h>

/* Softmax of one row by the library's reference kernel, for rows with a
 * finite entry. */
static void ref_softmax_row(const ag_real *z, size_t n, double *s)
{
    ag_real *r = malloc(n * sizeof(ag_real));
    ck_assert_ptr_nonnull(r);
    ag_ref_softmax(z, r, n);
    for (size_t j = 0; j < n; j++)
        s[j] = r[j];
    free(r);
}

static int any_nan(const ag_real *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(v[i]))
            return 1;
    return 0;
}

/* ---- forward ---- */

START_TEST(test_softmax_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, 0, 0, 0});
    ag_tensor *s = ag_softmax(tape, z);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->ndim, 2);
    ck_assert_int_eq(s->shape[1], 3);
    /* e^1, e^2, e^3 over their sum; a constant row is uniform */
    double e = exp(1.0), d = e + e * e + e * e * e;
    test_assert_values(s->data,
                       (double[]){e / d, e * e / d, e * e * e / d, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 6,
                       AG_TEST_TOL);

    /* 4-D against the reference row by row; each row sums to 1 */
    ag_rng rng = ag_rng_new(5);
    ag_tensor *x = ag_tensor_new(tape, 4, (int[]){2, 3, 4, 5});
    ag_fill_normal(x, &rng, 0, 3);
    ag_tensor *y = ag_softmax(tape, x);
    ck_assert_ptr_nonnull(y);
    for (size_t r = 0; r < 24; r++) {
        double want[5], sum = 0;
        ref_softmax_row(x->data + r * 5, 5, want);
        test_assert_values(y->data + r * 5, want, 5, AG_TEST_TOL);
        for (int j = 0; j < 5; j++)
            sum += y->data[r * 5 + j];
        ck_assert_double_eq_tol(sum, 1, 10 * AG_TEST_TOL);
    }

    /* one column: every weight is 1 */
    ag_tensor *c = ag_softmax(tape, ag_tensor_from(tape, 2, (int[]){2, 1}, (ag_real[]){-5, 40}));
    ck_assert_ptr_nonnull(c);
    test_assert_values(c->data, (double[]){1, 1}, 2, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_huge_logits)
{
    /* exp(1e4) overflows in any precision; subtracting the row max does not */
    ag_tape *tape = ag_tape_new();
    ag_tensor *z =
        ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1e4, 1e4 - 1, 1e4 - 2, -1e4, -1e4, 1e4});
    ag_tensor *s = ag_softmax(tape, z);
    ck_assert_ptr_nonnull(s);
    ck_assert(!any_nan(s->data, 6));
    double d = 1 + exp(-1.0) + exp(-2.0);
    test_assert_values(s->data, (double[]){1 / d, exp(-1.0) / d, exp(-2.0) / d, 0, 0, 1}, 6,
                       AG_TEST_TOL);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_neg_inf)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *z =
        ag_tensor_from(tape, 2, (int[]){2, 4},
                       (ag_real[]){0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 3});
    ag_tensor *s = ag_softmax(tape, z);
    ck_assert_ptr_nonnull(s);
    /* -inf entries get exactly 0, the rest share the weight */
    ck_assert(s->data[1] == 0 && s->data[3] == 0);
    ck_assert(s->data[4] == 0 && s->data[5] == 0 && s->data[6] == 0);
    ck_assert_double_eq_tol(s->data[0], 0.5, AG_TEST_TOL);
    ck_assert_double_eq_tol(s->data[2], 0.5, AG_TEST_TOL);
    ck_assert_double_eq_tol(s->data[7], 1, AG_TEST_TOL);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_pos_inf)
{
    /* +inf logits take all the weight (the limit), shared between ties; no NaN */
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_tensor_from(tape, 2, (int[]){2, 3},
                                  (ag_real[]){1, INFINITY, 2, INFINITY, -INFINITY, INFINITY});
    ag_tensor *s = ag_softmax(tape, z);
    ck_assert_ptr_nonnull(s);
    ck_assert(!any_nan(s->data, 6));
    test_assert_values(s->data, (double[]){0, 1, 0, 0.5, 0, 0.5}, 6, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_fully_masked_row)
{
    /* a row with no finite entry attends to nothing: zeros forward, zero
     * gradient backward, no NaN anywhere */
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_tensor_from(tape, 2, (int[]){2, 3},
                                  (ag_real[]){-INFINITY, -INFINITY, -INFINITY, 1, 2, 3});
    ag_requires_grad(tape, z);
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, -2, 3, 0.5, -1, 2});
    ag_tensor *s = ag_softmax(tape, z);
    ck_assert_ptr_nonnull(s);
    ck_assert(!any_nan(s->data, 6));
    test_assert_values(s->data, (double[]){0, 0, 0}, 3, 0);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, s, w))), AG_OK);
    ck_assert(!any_nan(s->grad, 6));
    ck_assert(!any_nan(z->grad, 6));
    test_assert_values(z->grad, (double[]){0, 0, 0}, 3, 0);
    /* the live row still gets its gradient: s_j (w_j - <w, s>) */
    double d = 0, sj[3];
    ref_softmax_row(z->data + 3, 3, sj);
    for (int j = 0; j < 3; j++)
        d += sj[j] * w->data[3 + j];
    for (int j = 0; j < 3; j++)
        ck_assert_double_eq_tol(z->grad[3 + j], sj[j] * (w->data[3 + j] - d), AG_TEST_TOL);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_causal_mask_values)
{
    ag_tape *tape = ag_tape_new();
    ag_rng rng = ag_rng_new(11);
    ag_tensor *x = ag_tensor_new(tape, 4, (int[]){2, 2, 4, 4});
    ag_fill_normal(x, &rng, 0, 1);
    ag_tensor *m = ag_causal_mask(tape, x);
    ck_assert_ptr_nonnull(m);
    for (size_t z = 0; z < 4; z++)
        for (size_t i = 0; i < 4; i++)
            for (size_t j = 0; j < 4; j++) {
                size_t k = z * 16 + i * 4 + j;
                if (j > i)
                    ck_assert(m->data[k] == -INFINITY);
                else
                    ck_assert(m->data[k] == x->data[k]);
            }
    /* T = 1: nothing is in the future */
    ag_tensor *one = ag_causal_mask(tape, ag_tensor_from(tape, 2, (int[]){1, 1}, (ag_real[]){2}));
    ck_assert_ptr_nonnull(one);
    ck_assert_double_eq(one->data[0], 2);
    /* (Tq, Tk) need not be square: key j is hidden from query i when j > i */
    ag_tensor *r =
        ag_causal_mask(tape, ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, 4, 5, 6}));
    ck_assert_ptr_nonnull(r);
    test_assert_values(r->data, (double[]){1, -INFINITY, -INFINITY, 4, 5, -INFINITY}, 6, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_causal_softmax)
{
    ag_tape *tape = ag_tape_new();
    /* T = 1: the single weight is 1 */
    ag_tensor *p1 = ag_softmax(
        tape, ag_causal_mask(tape, ag_tensor_from(tape, 4, (int[]){1, 1, 1, 1}, (ag_real[]){-3})));
    ck_assert_ptr_nonnull(p1);
    ck_assert_double_eq(p1->data[0], 1);

    /* T = 4 with equal scores: query i spreads evenly over keys 0..i */
    ag_tensor *zeros = ag_tensor_new(tape, 3, (int[]){2, 4, 4});
    ag_tensor *p = ag_softmax(tape, ag_causal_mask(tape, zeros));
    ck_assert_ptr_nonnull(p);
    ck_assert(!any_nan(p->data, p->size));
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < 4; i++)
            for (size_t j = 0; j < 4; j++)
                ck_assert_double_eq_tol(p->data[b * 16 + i * 4 + j],
                                        j <= i ? 1.0 / (double)(i + 1) : 0, AG_TEST_TOL);

    /* random scores: row i is the softmax of its first i + 1 entries */
    ag_rng rng = ag_rng_new(12);
    ag_tensor *s = ag_tensor_new(tape, 2, (int[]){4, 4});
    ag_fill_normal(s, &rng, 0, 2);
    ag_tensor *q = ag_softmax(tape, ag_causal_mask(tape, s));
    ck_assert_ptr_nonnull(q);
    for (size_t i = 0; i < 4; i++) {
        double want[4] = {0, 0, 0, 0};
        ref_softmax_row(s->data + i * 4, i + 1, want);
        test_assert_values(q->data + i * 4, want, 4, AG_TEST_TOL);
    }
    ag_tape_free(tape);
}
END_TEST

/* ---- backward ---- */

static ag_tensor *build_softmax(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_softmax(tape, in[0]);
}

static ag_tensor *build_causal_softmax(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_softmax(tape, ag_causal_mask(tape, in[0]));
}

/* (P = softmax(mask(x)), O = P v): masked entries must not leak gradient. */
static ag_tensor *build_causal_attend(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_matmul(tape, ag_softmax(tape, ag_causal_mask(tape, in[0])), in[1]);
}

START_TEST(test_softmax_gradcheck)
{
    const test_shape cases[][1] = {
        {{2, {3, 5}}},    {{2, {1, 1}}},    {{1, {4}}},
        {{3, {2, 1, 4}}}, {{3, {1, 3, 1}}}, {{4, {2, 2, 3, 3}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_softmax, NULL, 1, cases[c], 60 + c);
}
END_TEST

START_TEST(test_causal_softmax_gradcheck)
{
    const test_shape cases[][1] = {
        {{2, {4, 4}}}, {{2, {1, 1}}}, {{4, {2, 2, 4, 4}}}, {{4, {1, 1, 1, 1}}}, {{3, {2, 3, 3}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_causal_softmax, NULL, 1, cases[c], 70 + c);
    const test_shape attend[][2] = {
        {{3, {2, 4, 4}}, {3, {2, 4, 3}}},
        {{4, {1, 2, 1, 1}}, {4, {1, 2, 1, 2}}},
    };
    for (size_t c = 0; c < sizeof(attend) / sizeof(attend[0]); c++)
        test_gradcheck_shapes(build_causal_attend, NULL, 2, attend[c], 80 + c);
}
END_TEST

START_TEST(test_causal_mask_backward)
{
    /* dx = dy where j <= i and exactly 0 above the diagonal */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 2, (int[]){3, 3}));
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){3, 3}, (ag_real[]){1, 2, 3, 4, 5, 6, 7, 8, 9});
    ag_tensor *p = ag_softmax(tape, ag_causal_mask(tape, x));
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, p, w))), AG_OK);
    ck_assert(x->grad[1] == 0 && x->grad[2] == 0 && x->grad[5] == 0);
    ck_assert(!any_nan(x->grad, 9));
    /* row 1: p = [1/2 1/2], w = [4 5]: dx = p (w - <p, w>) = [-1/4 1/4] */
    ck_assert_double_eq_tol(x->grad[3], -0.25, AG_TEST_TOL);
    ck_assert_double_eq_tol(x->grad[4], 0.25, AG_TEST_TOL);
    ag_tape_reset(tape);

    /* After a softmax the masked entries' dy is 0 anyway, so call the
     * backward directly with dy = 1 everywhere: only j <= i passes. */
    x = ag_requires_grad(tape, ag_tensor_new(tape, 3, (int[]){2, 3, 3}));
    ag_tensor *m = ag_causal_mask(tape, x);
    ck_assert_ptr_nonnull(m);
    for (size_t i = 0; i < m->size; i++)
        m->grad[i] = 1;
    const ag_entry *e = &tape->entries[ag_tape_size(tape) - 1];
    ck_assert_str_eq(e->op->name, "causal_mask");
    e->op->backward(tape, e);
    for (size_t b = 0; b < 2; b++)
        test_assert_values(x->grad + 9 * b, (double[]){1, 0, 0, 1, 1, 0, 1, 1, 1}, 9, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_softmax_huge_logits_backward)
{
    /* huge but finite logits: the gradient stays finite and matches the
     * formula with the (stable) forward weights */
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1e4, 1e4, -1e4});
    ag_requires_grad(tape, z);
    ag_tensor *w = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1, 3, 5});
    ag_tensor *s = ag_softmax(tape, z);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, s, w))), AG_OK);
    ck_assert(!any_nan(z->grad, 3));
    /* s = [1/2 1/2 0], <s, w> = 2: dz = [1/2 (1 - 2), 1/2 (3 - 2), 0] */
    test_assert_values(z->grad, (double[]){-0.5, 0.5, 0}, 3, AG_TEST_TOL);
    ag_tape_free(tape);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_softmax_errors)
{
    ag_tape *tape = ag_tape_new();
    ck_assert_ptr_null(ag_softmax(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "softmax: input 1 is NULL");
    ck_assert_ptr_null(ag_causal_mask(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "causal_mask: input 1 is NULL");
    ag_tensor *v = ag_tensor_new(tape, 1, (int[]){4});
    ck_assert_ptr_null(ag_causal_mask(tape, v));
    test_expect_error(tape, AG_ERR_SHAPE, "causal_mask: a is [4]: needs at least 2 dims");
    /* once the tape has failed, later ops return NULL without a new message */
    v = ag_tensor_new(tape, 1, (int[]){4});
    ck_assert_ptr_null(ag_causal_mask(tape, v));
    ck_assert_ptr_null(ag_softmax(tape, v));
    test_expect_error(tape, AG_ERR_SHAPE, "causal_mask: a is [4]: needs at least 2 dims");
    ag_tape_free(tape);
}
END_TEST

#ifdef AG_REAL_DOUBLE
#define TOL_ULP (64 * 2.2204460492503131e-16)
#else
#define TOL_ULP (8 * 1.1920929e-07) /* 8 ulp: exp within 2, the sum's rounding */
#endif

/* Rows of every length from 1 to 70 (vector bodies and tails), values
 * spread over [-40, 40], some keys masked: within a few ulp of softmax
 * computed in double, masked keys exactly 0, and every row sums to 1. */
START_TEST(test_rows_match_double)
{
    ag_rng rng = ag_rng_new(21);
    ag_tape *tape = ag_tape_new();
    for (int n = 1; n <= 70; n++) {
        ag_tensor *z = ag_tensor_new(tape, 2, (int[]){3, n});
        ck_assert_ptr_nonnull(z);
        ag_fill_uniform(z, &rng, -40, 40);
        for (size_t i = 0; i < z->size; i++)
            if (ag_rng_below(&rng, 5) == 0 && i % (size_t)n != 0)
                z->data[i] = -INFINITY;
        ag_tensor *s = ag_softmax(tape, z);
        ck_assert_ptr_nonnull(s);
        for (int r = 0; r < 3; r++) {
            const ag_real *zr = z->data + r * n, *sr = s->data + r * n;
            double max = -INFINITY, sum = 0, got = 0;
            for (int j = 0; j < n; j++)
                max = zr[j] > max ? zr[j] : max;
            /* z - max rounded to ag_real, as every implementation computes it */
            for (int j = 0; j < n; j++)
                sum += exp((double)(ag_real)(zr[j] - (ag_real)max));
            /* ck_abort_msg on failure, not an assertion per key: Check
             * reports every passing assertion to its parent process */
            for (int j = 0; j < n; j++) {
                double want = exp((double)(ag_real)(zr[j] - (ag_real)max)) / sum;
                if (zr[j] == -INFINITY && sr[j] != 0)
                    ck_abort_msg("n=%d: masked key got %g", n, (double)sr[j]);
                if (!(fabs(sr[j] - want) <= TOL_ULP * (want + 1e-30) + 1e-37))
                    ck_abort_msg("n=%d row %d key %d: %.9g, want %.9g", n, r, j, (double)sr[j],
                                 want);
                got += sr[j];
            }
            ck_assert_msg(fabs(got - 1) < 1e-5, "n=%d: row sums to %.9g", n, got);
        }
        ag_tape_reset(tape);
    }
    ag_tape_free(tape);
}
END_TEST

/* Every vector kernel this CPU has (AVX2, AVX-512), not only the one
 * ag_softmax picks, against the scalar path: rows of every length 1..70,
 * masked keys, and rows the kernels must hand back (a +inf or NaN). */
START_TEST(test_row_kernels_agree)
{
    ag_rng rng = ag_rng_new(22);
    ag_real z[70], want[70], got[70];
    for (int level = 1; level <= ag_cpu_row_level(); level++)
        for (int n = 1; n <= 70; n++)
            for (int kind = 0; kind < 4; kind++) {
                for (int j = 0; j < n; j++)
                    z[j] = (ag_real)(80 * ag_rng_uniform(&rng) - 40);
                for (int j = 1; j < n; j++)
                    if (ag_rng_below(&rng, 4) == 0)
                        z[j] = -INFINITY;
                if (kind == 1)
                    z[n - 1] = INFINITY;
                if (kind == 2)
                    z[n / 2] = NAN;
                if (kind == 3)
                    for (int j = 0; j < n; j++)
                        z[j] = -INFINITY;
                ag_ref_softmax(z, want, (size_t)n);
                ag_fast_softmax_row(z, got, (size_t)n, level);
                for (int j = 0; j < n; j++) { /* ck_abort_msg: see test_rows_match_double */
                    if (isnan(want[j])) {
                        if (!isnan(got[j]))
                            ck_abort_msg("level %d n=%d kind %d key %d: %g, want NaN", level, n,
                                         kind, j, (double)got[j]);
                        continue;
                    }
                    if (want[j] == 0 && got[j] != 0)
                        ck_abort_msg("level %d n=%d kind %d key %d: %g, want 0", level, n, kind, j,
                                     (double)got[j]);
                    if (!(fabs(got[j] - want[j]) <= TOL_ULP * want[j] + 1e-37))
                        ck_abort_msg("level %d n=%d kind %d key %d: %.9g, want %.9g", level, n,
                                     kind, j, (double)got[j], (double)want[j]);
                }
            }
}
END_TEST

Suite *suite_softmax(void)
{
    Suite *s = suite_create("softmax");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_softmax_values);
    tcase_add_test(tc, test_rows_match_double);
    tcase_add_test(tc, test_row_kernels_agree);
    tcase_add_test(tc, test_softmax_huge_logits);
    tcase_add_test(tc, test_softmax_neg_inf);
    tcase_add_test(tc, test_softmax_pos_inf);
    tcase_add_test(tc, test_softmax_fully_masked_row);
    tcase_add_test(tc, test_causal_mask_values);
    tcase_add_test(tc, test_causal_softmax);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_softmax_gradcheck);
    tcase_add_test(tc, test_causal_softmax_gradcheck);
    tcase_add_test(tc, test_causal_mask_backward);
    tcase_add_test(tc, test_softmax_huge_logits_backward);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_softmax_errors);
    suite_add_tcase(s, tc);
    return s;
}
