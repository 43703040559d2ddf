/*
 * test_curve.c - ag_curve, a run's numbers kept for a plot: thinning by
 * stride, a full curve keeps nothing more, adding allocates nothing, the
 * text it writes, and bad sizes refused.
 */
#include "test_util.h"
#include "cli/curve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_thinning)
{
    /* 25 steps in at most 10 points: stride 3 keeps steps 1, 4, ..., 25 */
    long steps = 25;
    size_t cap = 10;
    ag_curve c;
    ck_assert_int_eq(ag_curve_init(&c, 1, cap, (steps + (long)cap - 1) / (long)cap), AG_OK);
    ck_assert_int_eq(c.stride, 3);
    for (long s = 1; s <= steps; s++) {
        double v = 0.5 * (double)s;
        ck_assert_int_eq(ag_curve_add(&c, s, &v), (s - 1) % 3 == 0);
    }
    ck_assert_uint_eq(c.n, 9);
    for (size_t i = 0; i < c.n; i++) {
        ck_assert_double_eq(c.rows[2 * i], (double)(1 + 3 * i));
        ck_assert_double_eq(c.rows[2 * i + 1], 0.5 * (double)(1 + 3 * i));
    }
    ag_curve_free(&c);
    ck_assert_ptr_null(c.rows);
    ck_assert_int_eq(ag_curve_add(&c, 1, (double[]){1}), 0); /* freed: keeps nothing */
}
END_TEST

START_TEST(test_init_thinned)
{
    /* the same rule from the run's length: 25 steps in 10 points, stride 3;
     * a short run keeps every step; a run of exactly max_points too */
    static const struct {
        long steps;
        size_t max, cap;
        long stride;
    } cases[] = {{25, 10, 10, 3}, {7, 10, 7, 1}, {10, 10, 10, 1}, {11, 10, 10, 2}, {1, 1, 1, 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ag_curve c;
        ck_assert_int_eq(ag_curve_init_thinned(&c, 1, cases[i].steps, cases[i].max), AG_OK);
        ck_assert_uint_eq(c.cap, cases[i].cap);
        ck_assert_int_eq(c.stride, cases[i].stride);
        ag_curve_free(&c);
    }
    ag_curve c;
    ck_assert_int_eq(ag_curve_init_thinned(&c, 1, 0, 10), AG_ERR_ARG);
    ck_assert_ptr_null(c.rows);
    ck_assert_int_eq(ag_curve_init_thinned(&c, 1, 5, 0), AG_ERR_ARG);
}
END_TEST

START_TEST(test_full_and_no_alloc)
{
    ag_curve c;
    ck_assert_int_eq(ag_curve_init(&c, 2, 3, 1), AG_OK);
    size_t before = ag_alloc_count();
    for (long s = 0; s < 10; s++) /* stride 1 keeps every step, 0 too, until full */
        ck_assert_int_eq(ag_curve_add(&c, s, (double[]){(double)s, -(double)s}), s < 3);
    ck_assert_uint_eq(ag_alloc_count(), before);
    ck_assert_uint_eq(c.n, 3);
    ck_assert_double_eq(c.rows[3 * 2 + 2], -2.0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ag_curve_write(&c, f);
    fclose(f);
    ck_assert_str_eq(text, "0 0 -0\n1 1 -1\n2 2 -2\n");
    free(text);
    ag_curve_free(&c);
    ag_curve_free(NULL);
    ag_curve_write(NULL, stdout); /* nothing */
}
END_TEST

START_TEST(test_bad_sizes)
{
    ag_curve c;
    ck_assert_int_eq(ag_curve_init(&c, 0, 3, 1), AG_ERR_ARG);
    ck_assert_ptr_null(c.rows);
    ck_assert_int_eq(ag_curve_init(&c, 1, 0, 1), AG_ERR_ARG);
    ck_assert_int_eq(ag_curve_init(&c, 1, 3, 0), AG_ERR_ARG);
    ck_assert_int_eq(ag_curve_init(&c, 1, SIZE_MAX / 4, 1), AG_ERR_ARG);
    ck_assert_int_eq(ag_curve_add(&c, 1, (double[]){1}), 0);
    ck_assert_int_eq(ag_curve_init(NULL, 1, 3, 1), AG_ERR_ARG);
}
END_TEST

Suite *suite_curve(void)
{
    Suite *s = suite_create("curve");
    TCase *tc = tcase_create("curve");
    tcase_add_test(tc, test_thinning);
    tcase_add_test(tc, test_init_thinned);
    tcase_add_test(tc, test_full_and_no_alloc);
    tcase_add_test(tc, test_bad_sizes);
    suite_add_tcase(s, tc);
    return s;
}
