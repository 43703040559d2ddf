/*
 * test_timing.c - ag_time_steps and ag_median, the bench harness: warm-up
 * and timed steps counted, a failing step stops it, allocations per step
 * measured, the default step count bounded.
 */
#include "test_util.h"

typedef struct counter {
    int calls, fail_at, make_tape;
} counter;

static int count_step(void *ctx)
{
    counter *c = ctx;
    if (++c->calls == c->fail_at)
        return 0;
    if (c->make_tape)
        ag_tape_free(ag_tape_new()); /* the library allocates: counted */
    return 1;
}

START_TEST(test_counts_steps)
{
    counter c = {0, 0, 0};
    ag_step_timing tm;
    ck_assert_int_eq(ag_time_steps(count_step, &c, 7, &tm), AG_OK);
    ck_assert_int_eq(c.calls, 3 + 7); /* three to warm up, then the timed ones */
    ck_assert_int_eq(tm.steps, 7);
    ck_assert(tm.seconds >= 0 && tm.cpu_seconds >= 0);
    ck_assert(tm.allocs == 0);
    c.calls = 0;
    c.make_tape = 1;
    ck_assert_int_eq(ag_time_steps(count_step, &c, 4, &tm), AG_OK);
    ck_assert(tm.allocs >= 1);
    /* 0: about a second's worth at the warm-up's pace, 5 to 2000 */
    c.calls = 0;
    c.make_tape = 0;
    ck_assert_int_eq(ag_time_steps(count_step, &c, 0, &tm), AG_OK);
    ck_assert_int_eq(tm.steps, 2000); /* a step that does nothing: the most */
}
END_TEST

START_TEST(test_failures)
{
    ag_step_timing tm;
    counter c = {0, 2, 0}; /* fails while warming up */
    ck_assert_int_eq(ag_time_steps(count_step, &c, 5, &tm), AG_ERR_ARG);
    c = (counter){0, 6, 0}; /* fails while timed */
    ck_assert_int_eq(ag_time_steps(count_step, &c, 5, &tm), AG_ERR_ARG);
    ck_assert_int_eq(c.calls, 6);
    ck_assert_int_eq(ag_time_steps(NULL, &c, 5, &tm), AG_ERR_ARG);
    ck_assert_int_eq(ag_time_steps(count_step, &c, -1, &tm), AG_ERR_ARG);
    ck_assert_int_eq(ag_time_steps(count_step, &c, 1, NULL), AG_ERR_ARG);
}
END_TEST

START_TEST(test_median)
{
    double odd[] = {5, 1, 3};
    ck_assert_double_eq(ag_median(odd, 3), 3);
    double even[] = {4, 1, 3, 2};
    ck_assert_double_eq(ag_median(even, 4), 2.5);
    ck_assert_double_eq(even[0], 1); /* sorted */
    ck_assert_double_eq(ag_median(NULL, 0), 0);
}
END_TEST

Suite *suite_timing(void)
{
    Suite *s = suite_create("timing");
    TCase *tc = tcase_create("timing");
    tcase_add_test(tc, test_counts_steps);
    tcase_add_test(tc, test_failures);
    tcase_add_test(tc, test_median);
    suite_add_tcase(s, tc);
    return s;
}
