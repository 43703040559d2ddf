/*
 * test_rng.c - the seeded generator: reproducible, pinned to splitmix64's
 * reference output (so a change to the generator, which would change every
 * seeded run, is caught), and roughly the right distributions.
 */
#include "test_util.h"

START_TEST(test_rng_reference_values)
{
    /* splitmix64 computed independently (Python, 64-bit wrapping):
     * seed 0 -> 0xe220a8397b1dcdaf (the published first value);
     * seed 42 -> 0xbdd732262feb6e95, then 0x28efe333b266f103 */
    ag_rng r0 = ag_rng_new(0);
    ck_assert_uint_eq(ag_rng_next(&r0), 0xe220a8397b1dcdafULL);
    ag_rng r = ag_rng_new(42);
    ck_assert_uint_eq(ag_rng_next(&r), 0xbdd732262feb6e95ULL);
    ck_assert_uint_eq(ag_rng_next(&r), 0x28efe333b266f103ULL);
}
END_TEST

START_TEST(test_rng_same_seed)
{
    ag_rng a = ag_rng_new(7), b = ag_rng_new(7), c = ag_rng_new(8);
    int differs = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = ag_rng_next(&a), z = ag_rng_next(&c);
        ck_assert_uint_eq(x, ag_rng_next(&b));
        differs += x != z;
    }
    ck_assert_int_eq(differs, 100);
    /* the same for filled tensors */
    ag_tensor *p = ag_param_new(1, (int[]){50}), *q = ag_param_new(1, (int[]){50});
    a = ag_rng_new(3);
    b = ag_rng_new(3);
    ag_fill_normal(p, &a, 1, 2);
    ag_fill_normal(q, &b, 1, 2);
    for (int i = 0; i < 50; i++)
        ck_assert(p->data[i] == q->data[i]);
    ag_param_free(p);
    ag_param_free(q);
}
END_TEST

START_TEST(test_rng_below)
{
    ag_rng r = ag_rng_new(1);
    ck_assert_uint_eq(ag_rng_below(&r, 0), 0);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(ag_rng_below(&r, 1), 0);
    /* n = 7 over 70000 draws: every value, each near 10000 (a fixed seed,
     * so this is a check of the generator, not a flaky statistical test).
     * The loops below fail through ck_abort_msg instead of asserting per
     * draw: Check reports every passing assertion to its parent process. */
    int count[7] = {0};
    for (int i = 0; i < 70000; i++) {
        uint32_t v = ag_rng_below(&r, 7);
        if (v >= 7)
            ck_abort_msg("draw %d: %u is not below 7", i, v);
        count[v]++;
    }
    for (int v = 0; v < 7; v++)
        ck_assert_msg(count[v] > 9500 && count[v] < 10500, "value %d drawn %d times", v, count[v]);
    /* a large n stays in range and reaches its upper half */
    int high = 0;
    for (int i = 0; i < 1000; i++) {
        uint32_t v = ag_rng_below(&r, UINT32_MAX);
        if (v >= UINT32_MAX)
            ck_abort_msg("draw %d: %u is not below UINT32_MAX", i, v);
        high += v >= UINT32_MAX / 2;
    }
    ck_assert_int_gt(high, 400);
    ck_assert_int_lt(high, 600);
}
END_TEST

START_TEST(test_rng_uniform)
{
    ag_rng r = ag_rng_new(2);
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double u = ag_rng_uniform(&r);
        if (!(u >= 0 && u < 1)) /* one report per failure, not per draw */
            ck_abort_msg("draw %d: %.17g is not in [0, 1)", i, u);
        sum += u;
    }
    ck_assert_double_eq_tol(sum / 10000, 0.5, 0.01);
    ag_tensor *t = ag_param_new(1, (int[]){1000});
    ag_fill_uniform(t, &r, -3, -1);
    double lo = 0, hi = -10;
    for (size_t i = 0; i < t->size; i++) {
        if (!(t->data[i] >= -3 && t->data[i] <= -1))
            ck_abort_msg("element %zu: %.9g is not in [-3, -1]", i, (double)t->data[i]);
        lo = fmin(lo, t->data[i]);
        hi = fmax(hi, t->data[i]);
    }
    ck_assert(lo < -2.9 && hi > -1.1); /* the whole range is used */
    ag_param_free(t);
}
END_TEST

START_TEST(test_rng_normal)
{
    ag_rng r = ag_rng_new(4);
    double sum = 0, sq = 0;
    int n = 10000;
    for (int i = 0; i < n; i++) {
        double x = ag_rng_normal(&r);
        if (!isfinite(x)) /* one report per failure, not per draw */
            ck_abort_msg("draw %d: %g", i, x);
        sum += x;
        sq += x * x;
    }
    double mean = sum / n, std = sqrt(sq / n - mean * mean);
    ck_assert_msg(fabs(mean) < 0.03, "mean %g", mean);
    ck_assert_msg(fabs(std - 1) < 0.03, "std %g", std);
    /* ag_fill_normal shifts and scales */
    ag_tensor *t = ag_param_new(1, (int[]){10000});
    ag_fill_normal(t, &r, 5, 0.5);
    sum = sq = 0;
    for (size_t i = 0; i < t->size; i++) {
        sum += t->data[i];
        sq += (double)t->data[i] * t->data[i];
    }
    mean = sum / n;
    std = sqrt(sq / n - mean * mean);
    ck_assert_msg(fabs(mean - 5) < 0.02, "mean %g", mean);
    ck_assert_msg(fabs(std - 0.5) < 0.02, "std %g", std);
    ag_param_free(t);
}
END_TEST

Suite *suite_rng(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_rng_reference_values);
    tcase_add_test(tc, test_rng_same_seed);
    tcase_add_test(tc, test_rng_below);
    tcase_add_test(tc, test_rng_uniform);
    tcase_add_test(tc, test_rng_normal);
    suite_add_tcase(s, tc);
    return s;
}
