/*
 * test_gelu.c - GELU and the erf behind it: values against exact ones and
 * against erfc in double over a dense range, each vector
 * kernel's erf against libm's over a dense sample of every float (tails,
 * subnormals, infinities, NaN), the derivative by hand and by finite
 * differences, a deliberately wrong backward caught, the same bits for any
 * thread count, and the errors.
 */
#include "test_util.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* x Phi(x) and its derivative, in double */
static double gelu_ref(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

static double gelu_grad_ref(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-0.5 * x * x) * 0.398942280401432678;
}

#ifdef AG_REAL_DOUBLE
#define ULP 2.220446049250313e-16
#else
#define ULP 1.1920929e-07
#endif

/* How much looser the relative tolerance is at x: the float kernels take
 * x^2 / 2 from x itself, but libm's erfc (the double build, a machine
 * without the kernels, the reference kernels) gets x / sqrt 2 rounded, an error it multiplies by
 * about x^2 in the left tail. */
static double tail(double x)
{
    return ag_cpu_row_level() && !ag_reference_kernels() ? 1 : 1 + x * x;
}

/* GELU and its derivative at these x, exact (mpmath, 30 digits). PyTorch's
 * F.gelu in float64 agrees to about 1e-16 absolute: it takes 1 + erf, so at
 * x = -5 it has only 10 digits (-1.4332578593401e-06). */
static const double ref_x[] = {-5, -3, -1, -0.5, 0, 0.5, 1, 2, 3};
static const double ref_y[] = {
    -1.4332578593959696e-6, -0.0040496940948902836, -0.15865525393145705, -0.15426876936299345, 0,
    0.34573123063700655,    0.84134474606854295,    1.9544997361036416,   2.9959503059051097,
};
static const double ref_dy[] = {
    -7.1469460017922946e-6, -0.011945647204183927, -0.083315470587686298, 0.13250487534383716, 0.5,
    0.86749512465616284,    1.0833154705876863,    1.0852318010781969,    1.0119456472041839,
};
#define N_REF (sizeof(ref_x) / sizeof(ref_x[0]))

/* ---- forward ---- */

START_TEST(test_values_exact)
{
    ag_tape *tape = ag_tape_new();
    ag_real xs[N_REF];
    for (size_t i = 0; i < N_REF; i++)
        xs[i] = (ag_real)ref_x[i];
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_from(tape, 1, (int[]){N_REF}, xs));
    ag_tensor *y = ag_gelu(tape, x);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, y)), AG_OK);
    /* relative: gelu(-5) is -1.43e-6, and must not come out as 1 + erf's
     * rounding error (PyTorch's float kernel gives -1.49e-6 there) */
    for (size_t i = 0; i < N_REF; i++) {
        ck_assert_msg(fabs(y->data[i] - ref_y[i]) <= 4 * ULP * tail(ref_x[i]) * fabs(ref_y[i]),
                      "gelu(%g) = %.9g, want %.9g", ref_x[i], (double)y->data[i], ref_y[i]);
        ck_assert_msg(fabs(x->grad[i] - ref_dy[i]) <= 8 * ULP * tail(ref_x[i]) * fabs(ref_dy[i]),
                      "gelu'(%g) = %.9g, want %.9g", ref_x[i], (double)x->grad[i], ref_dy[i]);
    }
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_values_dense)
{
    /* x from -14 to 14 in steps of 1/1024 (every vector body and tail
     * length on the way): within a few ulp of x Phi(x) in double, relative,
     * down to where Phi(x) leaves float's normal range */
    ag_tape *tape = ag_tape_new();
    size_t n = 28 * 1024 + 1;
    ag_tensor *x = ag_tensor_new(tape, 1, (int[]){(int)n});
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        x->data[i] = (ag_real)(-14.0 + (double)i / 1024);
    ag_tensor *y = ag_gelu(tape, x);
    ck_assert_ptr_nonnull(y);
    for (size_t i = 0; i < n; i++) {
        double xi = x->data[i], want = gelu_ref(xi);
        double tol = 4 * ULP * tail(xi) * fabs(want) + (xi < -12.5 ? 1e-36 : 0);
        if (!(fabs(y->data[i] - want) <= tol)) /* ck_abort_msg: see test_util.h */
            ck_abort_msg("gelu(%.9g) = %.9g, want %.9g", xi, (double)y->data[i], want);
    }
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_special_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_param_new(1, (int[]){6}); /* not an entry: NaN and Inf unchecked */
    ag_real v[6] = {INFINITY, NAN, -INFINITY, -0.0, 1e30f, -1e30f};
    for (int i = 0; i < 6; i++)
        p->data[i] = v[i];
    ag_tensor *y = ag_gelu(tape, p);
    ck_assert_ptr_nonnull(y);
    ck_assert(y->data[0] == INFINITY);
    ck_assert(isnan(y->data[1]));
    ck_assert(isnan(y->data[2])); /* -inf * 0, as PyTorch */
    ck_assert(y->data[3] == 0);
    ck_assert(y->data[4] == (ag_real)1e30f);
    ck_assert(y->data[5] == 0);
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

/* Float bit patterns 0, step, 2 step, ... below +inf, both signs: erf at
 * this level within max_ulp of libm's erf in double, and each vector level
 * from lowest up to this one bit for bit the same (so within max_ulp too,
 * without asking libm again: libm in double is most of the time here). */
static void check_erf_level(int level, int lowest, uint32_t step, double max_ulp)
{
    enum { N = 4096 };
    ag_real x[N], y[N], z[N];
    double worst = 0, worst_x = 0;
    uint64_t u = 0;
    for (;;) {
        size_t k = 0;
        for (; k < N && u < 0x7f800000u; k += 2, u += step) {
            uint32_t b = (uint32_t)u;
            float f;
            memcpy(&f, &b, sizeof(f));
            x[k] = (ag_real)f;
            x[k + 1] = (ag_real)-f;
        }
        if (k == 0)
            break;
        ag_erf_n(x, y, k, level);
        for (int other = lowest; other < level; other++) {
            ag_erf_n(x, z, k, other);
            for (size_t i = 0; i < k; i++) /* (not ck_assert: it writes to Check each time) */
                if (memcmp(&y[i], &z[i], sizeof(y[i])) != 0)
                    ck_abort_msg("erf(%.9g): level %d gives %.9g, level %d %.9g", (double)x[i],
                                 other, (double)z[i], level, (double)y[i]);
        }
        for (size_t i = 0; i < k; i++) {
            double want = erf((double)x[i]);
#ifdef AG_REAL_DOUBLE
            double a = fabs(want) < 2.2250738585072014e-308 ? 4.9406564584124654e-324
                                                            : ldexp(1.0, ilogb(want) - 52);
#else
            double a = fabs(want) < 1.1754943508222875e-38 ? 1.401298464324817e-45
                                                           : ldexp(1.0, ilogb(want) - 23);
#endif
            double e = fabs((double)y[i] - want) / a;
            if (!(e <= worst)) { /* a NaN result counts as the worst */
                worst = isnan(e) ? INFINITY : e;
                worst_x = (double)x[i];
            }
        }
    }
    ck_assert_msg(worst <= max_ulp, "level %d: erf(%.9g) is %.3g ulp off", level, worst_x, worst);
    /* the tails are exactly +-1, infinities too; NaN stays NaN; -0 stays -0 */
    for (int lv = lowest; lv <= level; lv++) {
        ag_real sp[6] = {10, INFINITY, -10, -INFINITY, NAN, -0.0};
        ag_real out[6];
        ag_erf_n(sp, out, 6, lv);
        test_assert_values(out, (double[]){1, 1, -1, -1}, 4, 0);
        ck_assert(isnan(out[4]));
        ck_assert(out[5] == 0 && signbit(out[5]));
    }
}

START_TEST(test_erf_kernels)
{
    /* every 61st float (~17 million with both signs) through each kernel
     * this CPU has: the widest against libm, the others bit for bit against
     * it; the scalar level is libm itself */
    check_erf_level(0, 0, 9973, 1.0);
    if (ag_cpu_row_level() > 0)
        check_erf_level(ag_cpu_row_level(), 1, 61, 2.0);
}
END_TEST

START_TEST(test_kernels_agree)
{
    /* the AVX2 and AVX-512 kernels run the same operations lane by lane */
    if (ag_cpu_row_level() < 2)
        return;
    enum { N = 1000 };
    ag_real x[N], a[N], b[N];
    ag_rng rng = ag_rng_new(5);
    for (int i = 0; i < N; i++)
        x[i] = (ag_real)(ag_rng_normal(&rng) * 3);
    ag_erf_n(x, a, N, 1);
    ag_erf_n(x, b, N, 2);
    ck_assert(memcmp(a, b, sizeof(a)) == 0);
}
END_TEST

/* ---- backward ---- */

static ag_tensor *build_gelu(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_gelu(tape, in[0]);
}

START_TEST(test_gelu_gradcheck)
{
    const test_shape cases[][1] = {
        {{1, {1}}}, {{2, {3, 5}}}, {{3, {2, 3, 17}}}, {{4, {2, 2, 3, 9}}}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_gelu, NULL, 1, cases[c], 600 + c);
}
END_TEST

START_TEST(test_grad_dense)
{
    /* dL/dx for L = sum(gelu(x)) against the formula in double */
    ag_tape *tape = ag_tape_new();
    size_t n = 20 * 256 + 3;
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 1, (int[]){(int)n}));
    for (size_t i = 0; i < n; i++)
        x->data[i] = (ag_real)(-10.0 + (double)i / 256);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_gelu(tape, x))), AG_OK);
    for (size_t i = 0; i < n; i++) {
        double want = gelu_grad_ref(x->data[i]);
        if (!(fabs(x->grad[i] - want) <= 16 * ULP * fmax(fabs(want), 1)))
            ck_abort_msg("gelu'(%.9g) = %.9g, want %.9g", (double)x->data[i], (double)x->grad[i],
                         want);
    }
    ag_tape_free(tape);
}
END_TEST

/* The kernels take a few vectors at a time and skip erfc when all of them
 * stay in erf's small range: runs of 8 values, each all small (|x| < 1.4)
 * or all large at random, so that every mix of vectors comes up at both
 * widths; forward and backward against the formulas in double (to 64 ulp:
 * a lane sent down the wrong path is off by far more, and the dense tests
 * above hold the accuracy). */
START_TEST(test_mixed_ranges)
{
    ag_rng rng = ag_rng_new(5);
    ag_tape *tape = ag_tape_new();
    size_t n = 8 * 4096 + 5;
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 1, (int[]){(int)n}));
    for (size_t i = 0; i < n; i += 8) {
        int large = ag_rng_below(&rng, 2) == 1;
        for (size_t k = i; k < i + 8 && k < n; k++) {
            double u = 2 * ag_rng_uniform(&rng) - 1;
            x->data[k] = (ag_real)(large ? (u < 0 ? -2 : 2) + 4 * u : 1.4 * u);
        }
    }
    ag_tensor *y = ag_gelu(tape, x);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, y)), AG_OK);
    for (size_t i = 0; i < n; i++) { /* ck_abort_msg: see test_util.h */
        double xi = x->data[i], want = gelu_ref(xi), dwant = gelu_grad_ref(xi);
        if (!(fabs(y->data[i] - want) <= 64 * ULP * tail(xi) * fabs(want) + 1e-36))
            ck_abort_msg("gelu(%.9g) = %.9g, want %.9g", xi, (double)y->data[i], want);
        if (!(fabs(x->grad[i] - dwant) <= 64 * ULP * fmax(fabs(dwant), 1)))
            ck_abort_msg("gelu'(%.9g) = %.9g, want %.9g", xi, (double)x->grad[i], dwant);
    }
    ag_tape_free(tape);
}
END_TEST

/* A plausible mistake: dy/dx = Phi(x), the x Phi'(x) term forgotten. */
static void wrong_backward(ag_tape *tape, const ag_entry *e)
{
    (void)tape;
    const ag_tensor *x = e->in[0];
    for (size_t i = 0; i < x->size; i++)
        x->grad[i] += e->out->grad[i] * (ag_real)(0.5 * erfc(-x->data[i] / sqrt(2.0)));
}
static const ag_op wrong_op = {"gelu", wrong_backward, 0, 0};

START_TEST(test_wrong_backward_is_caught)
{
    ag_rng rng = ag_rng_new(92);
    ag_tensor *x = test_param(&rng, 2, (int[]){3, 6});
    test_wrong_backward_caught(build_gelu, NULL, &wrong_op, x);
    ag_param_free(x);
}
END_TEST

START_TEST(test_threads_same_bits)
{
    /* the GPT's MLP width: (B*T, 4C) = (768, 512), split over 2 threads */
    ag_rng rng = ag_rng_new(8);
    ag_tensor *x = test_param(&rng, 2, (int[]){768, 512});
    test_same_bits_any_threads(build_gelu, NULL, &x, 1);
    ag_param_free(x);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_errors)
{
    ag_tape *tape = ag_tape_new();
    ck_assert_ptr_null(ag_gelu(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "gelu: input 1 is NULL");
    ck_assert_ptr_null(ag_gelu(NULL, NULL));
    ag_tensor *p = ag_param_new(1, (int[]){3});
    p->data[1] = NAN;
    ag_tape_detect_anomaly(tape, 1);
    ck_assert_ptr_null(ag_sum(tape, ag_gelu(tape, p)));
    test_expect_error(tape, AG_ERR_NUMERIC,
                      "anomaly: the output of op gelu (tape entry 0, [3]) is NaN at element 1");
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

Suite *suite_gelu(void)
{
    Suite *s = suite_create("gelu");
    TCase *tc = tcase_create("forward");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_values_exact);
    tcase_add_test(tc, test_values_dense);
    tcase_add_test(tc, test_special_values);
    tcase_add_test(tc, test_erf_kernels);
    tcase_add_test(tc, test_kernels_agree);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_gelu_gradcheck);
    tcase_add_test(tc, test_grad_dense);
    tcase_add_test(tc, test_mixed_ranges);
    tcase_add_test(tc, test_wrong_backward_is_caught);
    tcase_add_test(tc, test_threads_same_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}
