/*
 * test_anomaly.c - NaN and Inf are traced to the op that made them, both in
 * detect mode (the tape stops there) and by scanning a finished step.
 */
#include "test_util.h"

#define EXPECTED "anomaly: the output of op mul (tape entry 1, [1x3]) is NaN at element 1"

START_TEST(test_detect_mode_stops_at_op)
{
    ag_tape *tape = ag_tape_new();
    ag_tape_detect_anomaly(tape, 1);
    ag_tensor *p = ag_param_new(2, (int[]){1, 3});
    p->data[0] = 1;
    p->data[1] = INFINITY; /* 0 * inf = NaN in the product */
    p->data[2] = 2;
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 3}, (ag_real[]){1, 0, 1});
    ag_tensor *y = ag_mul(tape, x, p);
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_null(ag_sum(tape, y));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_NUMERIC);
    ck_assert_str_eq(ag_tape_error(tape), EXPECTED);
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_find_after_the_fact)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_param_new(2, (int[]){1, 3});
    p->data[1] = INFINITY;
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 3}, (ag_real[]){1, 0, 1});
    ag_tensor *loss = ag_sum(tape, ag_mul(tape, x, p));
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK); /* no detection: runs through */
    ck_assert(isnan(loss->data[0]));
    ck_assert_int_eq(ag_tape_find_anomaly(tape), AG_ERR_NUMERIC);
    ck_assert_str_eq(ag_tape_error(tape), EXPECTED);
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_causal_mask_inf_is_fine)
{
    ag_tape *tape = ag_tape_new();
    ag_tape_detect_anomaly(tape, 1);
    ag_tensor *s = ag_param_new(2, (int[]){3, 3});
    ag_tensor *loss = ag_sum(tape, ag_softmax(tape, ag_causal_mask(tape, s)));
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_int_eq(ag_tape_find_anomaly(tape), AG_OK);
    ag_param_free(s);
    ag_tape_free(tape);
}
END_TEST

/* A NaN after a mask's intended -inf entries is still found, at its place. */
START_TEST(test_nan_after_masked_inf)
{
    ag_tape *tape = ag_tape_new();
    ag_tape_detect_anomaly(tape, 1);
    ag_tensor *s = ag_param_new(2, (int[]){3, 3});
    s->data[6] = NAN; /* row 2, column 0: below the diagonal, kept by the mask */
    ck_assert_ptr_null(ag_softmax(tape, ag_causal_mask(tape, s)));
    ck_assert_str_eq(
        ag_tape_error(tape),
        "anomaly: the output of op causal_mask (tape entry 0, [3x3]) is NaN at element 6");
    ag_param_free(s);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_first_nonfinite)
{
    ag_real v[4] = {1, 2, 3, 4};
    ck_assert_uint_eq(ag_first_nonfinite(v, 4), 4);
    ck_assert_uint_eq(ag_first_nonfinite(NULL, 4), 4);
    ck_assert_uint_eq(ag_first_nonfinite(v, 0), 0);
    v[2] = -INFINITY;
    ck_assert_uint_eq(ag_first_nonfinite(v, 4), 2);
    v[1] = NAN;
    ck_assert_uint_eq(ag_first_nonfinite(v, 4), 1);
    ck_assert_uint_eq(ag_first_nonfinite(v, 1), 1);
}
END_TEST

Suite *suite_anomaly(void)
{
    Suite *s = suite_create("anomaly");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, test_detect_mode_stops_at_op);
    tcase_add_test(tc, test_find_after_the_fact);
    tcase_add_test(tc, test_causal_mask_inf_is_fine);
    tcase_add_test(tc, test_nan_after_masked_inf);
    tcase_add_test(tc, test_first_nonfinite);
    suite_add_tcase(s, tc);
    return s;
}
