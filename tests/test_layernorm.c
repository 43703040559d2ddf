/*
 * test_layernorm.c - layer normalisation: values by hand and against the
 * reference kernel (every optional input, rows shorter and longer than the
 * vector lanes, a large mean), backward by finite differences with each of
 * weight and bias present or not, a deliberately wrong backward caught, the
 * same bits for any thread count and for every vector kernel, and the
 * errors.
 */
#include "test_util.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

/* Which optional inputs a case passes: bit 0 weight, bit 1 bias. */
enum { W = 1, B = 2 };

/* y = layernorm(x) of one row of C by the library's reference kernel:
 * what the op must compute. */
static void ref_row(const ag_real *x, const ag_real *w, const ag_real *b, size_t C, double *y)
{
    ag_real *r = malloc(C * sizeof(ag_real)), stats[2];
    ck_assert_ptr_nonnull(r);
    ag_ref_layernorm(x, w, b, r, stats, C);
    for (size_t c = 0; c < C; c++)
        y[c] = r[c];
    free(r);
}

/* ---- forward ---- */

START_TEST(test_values_by_hand)
{
    /* x = [1 2 3]: mean 2, var 2/3, so xhat = [-1 0 1] / sqrt(2/3 + 1e-5)
     * = [-1.2247357 0 1.2247357]; then * [1 2 3] + [0.5 0 -0.5] */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, -4, -4, -4});
    ag_tensor *w = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1, 2, 3});
    ag_tensor *b = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){0.5, 0, -0.5});
    double k = 1 / sqrt(2.0 / 3 + 1e-5);
    ag_tensor *plain = ag_layernorm(tape, x, NULL, NULL);
    ag_tensor *y = ag_layernorm(tape, x, w, b);
    ag_tensor *yw = ag_layernorm(tape, x, w, NULL);
    ag_tensor *yb = ag_layernorm(tape, x, NULL, b);
    ck_assert_ptr_nonnull(yb);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[1], 3);
    /* a constant row normalises to 0 (var 0: eps keeps 1/std finite) */
    test_assert_values(plain->data, (double[]){-k, 0, k, 0, 0, 0}, 6, AG_TEST_TOL);
    test_assert_values(y->data, (double[]){0.5 - k, 0, 3 * k - 0.5, 0.5, 0, -0.5}, 6, AG_TEST_TOL);
    test_assert_values(yw->data, (double[]){-k, 0, 3 * k, 0, 0, 0}, 6, AG_TEST_TOL);
    test_assert_values(yb->data, (double[]){0.5 - k, 0, k - 0.5, 0.5, 0, -0.5}, 6, AG_TEST_TOL);
    /* one column: x - mean is 0, so y is the bias */
    ag_tensor *one = ag_layernorm(tape, ag_tensor_from(tape, 2, (int[]){2, 1}, (ag_real[]){7, -3}),
                                  ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){2}),
                                  ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){0.25}));
    ck_assert_ptr_nonnull(one);
    test_assert_values(one->data, (double[]){0.25, 0.25}, 2, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_values_match_double)
{
    /* row lengths around the 16 lanes of the sums; every optional input */
    static const int cs[] = {1, 2, 5, 15, 16, 17, 33, 128};
    ag_rng rng = ag_rng_new(41);
    ag_tape *tape = ag_tape_new();
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
        for (int mode = 0; mode < 4; mode++) {
            int C = cs[i];
            ag_tensor *x = ag_tensor_new(tape, 3, (int[]){3, 2, C});
            ag_tensor *w = ag_tensor_new(tape, 1, (int[]){C});
            ag_tensor *b = ag_tensor_new(tape, 1, (int[]){C});
            ck_assert_ptr_nonnull(b);
            ag_fill_normal(x, &rng, 0.5, 2);
            ag_fill_normal(w, &rng, 1, 0.5);
            ag_fill_normal(b, &rng, 0, 1);
            const ag_tensor *wp = mode & W ? w : NULL, *bp = mode & B ? b : NULL;
            ag_tensor *y = ag_layernorm(tape, x, wp, bp);
            ck_assert_ptr_nonnull(y);
            for (size_t r = 0; r < 6; r++) {
                double want[128];
                ref_row(x->data + r * C, wp ? w->data : NULL, bp ? b->data : NULL, (size_t)C, want);
                test_assert_values(y->data + r * C, want, (size_t)C, 10 * AG_TEST_TOL);
            }
            ag_tape_reset(tape);
        }
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_large_mean)
{
    /* 1000 + small spread: the variance is taken around the mean (two
     * passes), so nothing cancels; E[x^2] - mean^2 would lose it in float */
    ag_tape *tape = ag_tape_new();
    ag_real v[32];
    for (int c = 0; c < 32; c++)
        v[c] = (ag_real)(1000 + 0.125 * (c % 4) - 0.1875); /* exact in float */
    ag_tensor *y = ag_layernorm(tape, ag_tensor_from(tape, 1, (int[]){32}, v), NULL, NULL);
    ck_assert_ptr_nonnull(y);
    double want[32];
    ref_row(v, NULL, NULL, 32, want);
    test_assert_values(y->data, want, 32, 1e-3);
    ag_tape_free(tape);
}
END_TEST

/* ---- backward ---- */

static ag_tensor *build_ln(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    int mode = *(const int *)ctx;
    ag_tensor *w = mode & W ? in[1] : NULL;
    ag_tensor *b = mode & B ? in[(mode & W) ? 2 : 1] : NULL;
    return ag_layernorm(tape, in[0], w, b);
}

START_TEST(test_gradcheck_modes)
{
    /* x, then w and b when the mode has them; 40 rows span two blocks of rows */
    static const struct {
        int ndim, shape[3];
    } xs[] = {{1, {1}}, {2, {3, 5}}, {3, {2, 3, 17}}, {3, {2, 20, 8}}};
    for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++)
        for (int mode = 0; mode < 4; mode++) {
            int C = xs[i].shape[xs[i].ndim - 1], n = 1;
            test_shape shapes[3] = {{xs[i].ndim, {xs[i].shape[0], xs[i].shape[1], xs[i].shape[2]}}};
            if (mode & W)
                shapes[n++] = (test_shape){1, {C}};
            if (mode & B)
                shapes[n++] = (test_shape){1, {C}};
            test_gradcheck_shapes(build_ln, &mode, n, shapes, 500 + 4 * i + (size_t)mode);
        }
}
END_TEST

START_TEST(test_backward_by_hand)
{
    /* x = [1 2 3], no weight, L = <g, y> with g = [1 0 0]: xhat = [-1 0 1] k,
     * mean(g) = 1/3, mean(g xhat) = -k/3, so
     * dx = k (g - 1/3 - xhat (-k/3)) = k [2/3 - k^2/3, -1/3, -1/3 + k^2/3]
     * (k = 1/std; k^2 = 1/(2/3 + eps) is just under 3/2) */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x =
        ag_requires_grad(tape, ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1, 2, 3}));
    ag_tensor *g = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1, 0, 0});
    ag_tensor *y = ag_layernorm(tape, x, NULL, NULL);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, y, g))), AG_OK);
    double k = 1 / sqrt(2.0 / 3 + 1e-5), k2 = k * k;
    test_assert_values(x->grad, (double[]){k * (2.0 / 3 - k2 / 3), -k / 3, k * (k2 / 3 - 1.0 / 3)},
                       3, 10 * AG_TEST_TOL);
    /* the gradient of a normalised row sums to 0: shifting x changes nothing */
    ck_assert_double_eq_tol(x->grad[0] + x->grad[1] + x->grad[2], 0, 10 * AG_TEST_TOL);
    ag_tape_free(tape);
}
END_TEST

/* A plausible mistake: treating 1/std as a constant, which drops the
 * - xhat mean(g xhat) term. mean and 1/std are recomputed here from x. */
static void wrong_backward(ag_tape *tape, const ag_entry *e)
{
    (void)tape;
    const ag_tensor *x = e->in[0];
    size_t C = (size_t)x->shape[x->ndim - 1];
    for (size_t r = 0; r < ag_rows(x); r++) {
        const ag_real *xr = x->data + r * C, *dy = e->out->grad + r * C;
        double mean = 0, var = 0, g_mean = 0;
        for (size_t c = 0; c < C; c++)
            mean += xr[c] / (double)C;
        for (size_t c = 0; c < C; c++)
            var += (xr[c] - mean) * (xr[c] - mean) / (double)C;
        for (size_t c = 0; c < C; c++)
            g_mean += dy[c] / (double)C;
        for (size_t c = 0; c < C; c++)
            x->grad[r * C + c] += (ag_real)((dy[c] - g_mean) / sqrt(var + AG_LAYERNORM_EPS));
    }
}
static const ag_op wrong_op = {"layernorm", wrong_backward, 0, 0};

START_TEST(test_wrong_backward_is_caught)
{
    ag_rng rng = ag_rng_new(77);
    ag_tensor *x = test_param(&rng, 2, (int[]){3, 6});
    int plain = 0;
    test_wrong_backward_caught(build_ln, &plain, &wrong_op, x);
    ag_param_free(x);
}
END_TEST

START_TEST(test_threads_same_bits)
{
    /* a GPT-sized layer norm: (768, 128) with weight and bias; the weight
     * and bias gradients are summed per block of rows, then in order */
    ag_rng rng = ag_rng_new(42);
    ag_tensor *in[3] = {test_param(&rng, 2, (int[]){768, 128}), test_param(&rng, 1, (int[]){128}),
                        test_param(&rng, 1, (int[]){128})};
    int mode = W | B;
    test_same_bits_any_threads(build_ln, &mode, in, 3);
    for (int i = 0; i < 3; i++)
        ag_param_free(in[i]);
}
END_TEST

/* Every vector level this CPU has against the plain rows (level 0), bit
 * for bit, forward and backward: widths around the 16 lanes and the
 * vectors, row counts around the four-row groups, with and without a
 * weight, a bias and each gradient. */
static void same_bits_as_plain(ag_tape *tape, ag_rng *rng, size_t rows, size_t C, int mode,
                               int level)
{
    size_t n = rows * C, st = 2 * rows;
    ag_real *buf = calloc(6 * n + 4 * st + 6 * C, sizeof(ag_real));
    ck_assert_ptr_nonnull(buf);
    ag_real *x = buf, *dy = x + n, *y[2] = {dy + n, dy + 2 * n}, *dx[2] = {dy + 3 * n, dy + 4 * n};
    ag_real *stats[2] = {dx[1] + n, dx[1] + n + st}, *w = stats[1] + st, *b = w + C;
    ag_real *dw[2] = {b + C, b + 2 * C}, *db[2] = {b + 3 * C, b + 4 * C};
    for (size_t i = 0; i < n; i++) {
        x[i] = (ag_real)(3 * ag_rng_normal(rng) + 1);
        dy[i] = (ag_real)ag_rng_normal(rng);
        dx[0][i] = dx[1][i] = (ag_real)ag_rng_normal(rng);
    }
    for (size_t c = 0; c < C; c++) {
        w[c] = (ag_real)ag_rng_normal(rng);
        b[c] = (ag_real)ag_rng_normal(rng);
    }
    const ag_real *wp = mode & W ? w : NULL, *bp = mode & B ? b : NULL;
    for (int k = 0; k < 2; k++) {
        int lv = k ? level : 0;
        ag_fast_layernorm_level(x, wp, bp, y[k], stats[k], rows, C, lv);
        ck_assert_int_eq(ag_fast_layernorm_backward_level(
                             tape, x, wp, stats[k], dy, mode & 4 ? NULL : dx[k],
                             mode & W ? dw[k] : NULL, mode & B ? db[k] : NULL, rows, C, lv),
                         AG_OK);
    }
    const char *what[5] = {"y", "stats", "dx", "dw", "db"};
    const ag_real *got[5] = {y[1], stats[1], dx[1], dw[1], db[1]};
    const ag_real *want[5] = {y[0], stats[0], dx[0], dw[0], db[0]};
    size_t len[5] = {n, st, n, C, C};
    for (int v = 0; v < 5; v++)
        if (memcmp(got[v], want[v], len[v] * sizeof(ag_real)) != 0)
            ck_abort_msg("level %d, %zu rows of %zu, mode %d: %s differs from the plain rows",
                         level, rows, C, mode, what[v]);
    free(buf);
}

START_TEST(test_vector_rows_same_bits)
{
    ag_rng rng = ag_rng_new(7);
    ag_tape *tape = ag_tape_new();
    static const size_t widths[] = {1, 5, 8, 15, 16, 17, 31, 32, 33, 48, 70, 128, 130};
    static const size_t row_counts[] = {1, 3, 4, 5, 9, 40};
    for (int level = 1; level <= ag_cpu_row_level(); level++)
        for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
            for (size_t r = 0; r < sizeof(row_counts) / sizeof(row_counts[0]); r++)
                for (int mode = 0; mode < 8; mode++) {
                    same_bits_as_plain(tape, &rng, row_counts[r], widths[i], mode, level);
                    ag_tape_reset(tape);
                }
    ag_tape_free(tape);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_null(ag_layernorm(tape, NULL, NULL, NULL));
    test_expect_error(tape, AG_ERR_ARG, "layernorm: input 1 is NULL");
    x = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_null(ag_layernorm(tape, x, ag_tensor_new(tape, 1, (int[]){3}), NULL));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "layernorm: x is [2x3x4], weight is [3]: weight must be [4]");
    x = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_null(ag_layernorm(tape, x, NULL, ag_tensor_new(tape, 2, (int[]){1, 4})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "layernorm: x is [2x3x4], bias is [1x4]: bias must be [4]");
    /* sticky: a later layer norm returns NULL and keeps the first message */
    x = ag_tensor_new(tape, 1, (int[]){4});
    ck_assert_ptr_null(ag_layernorm(tape, x, x, ag_tensor_new(tape, 1, (int[]){5})));
    ck_assert_ptr_null(ag_layernorm(tape, x, NULL, NULL));
    test_expect_error(tape, AG_ERR_SHAPE, "layernorm: x is [4], bias is [5]: bias must be [4]");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_anomaly)
{
    /* an Inf in a row makes its mean Inf and the row NaN: detect mode names
     * the layer norm at the next op */
    ag_tape *tape = ag_tape_new();
    ag_tape_detect_anomaly(tape, 1);
    ag_tensor *x = ag_param_new(2, (int[]){2, 2}); /* not an entry: its Inf is not checked */
    x->data[0] = 1;
    x->data[2] = INFINITY;
    ag_tensor *y = ag_layernorm(tape, x, NULL, NULL);
    ck_assert_ptr_nonnull(y);
    ck_assert(isnan(y->data[2]));
    ck_assert_ptr_null(ag_sum(tape, y));
    test_expect_error(
        tape, AG_ERR_NUMERIC,
        "anomaly: the output of op layernorm (tape entry 0, [2x2]) is NaN at element 2");
    ag_param_free(x);
    ag_tape_free(tape);
}
END_TEST

Suite *suite_layernorm(void)
{
    Suite *s = suite_create("layernorm");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_values_by_hand);
    tcase_add_test(tc, test_values_match_double);
    tcase_add_test(tc, test_large_mean);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_gradcheck_modes);
    tcase_add_test(tc, test_backward_by_hand);
    tcase_add_test(tc, test_wrong_backward_is_caught);
    tcase_add_test(tc, test_threads_same_bits);
    tcase_add_test(tc, test_vector_rows_same_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_anomaly);
    suite_add_tcase(s, tc);
    return s;
}
