/*
 * test_tape.c - the tape: backward seeds and accumulates, sticky errors,
 * reset and the arena.
 */
#include "test_util.h"

START_TEST(test_backward_example)
{
    /* the header's worked example: L = sum(x W), dL/dW = x^T */
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 1});
    w->data[0] = 3;
    w->data[1] = 4;
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    ag_tensor *loss = ag_sum(tape, ag_matmul(tape, x, w));
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_double_eq_tol(loss->data[0], 11, AG_TEST_TOL);
    ck_assert_double_eq_tol(w->grad[0], 1, AG_TEST_TOL);
    ck_assert_double_eq_tol(w->grad[1], 2, AG_TEST_TOL);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_sticky_error)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ag_tensor *b = ag_tensor_new(tape, 2, (int[]){4, 5});
    ck_assert_ptr_null(ag_matmul(tape, a, b));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "matmul: a is [2x3], b is [4x5]: inner dims 3 != 4");
    /* later ops return NULL and keep the first message */
    ck_assert_ptr_null(ag_softmax(tape, a));
    ck_assert_ptr_null(ag_sum(tape, NULL));
    ck_assert_int_eq(ag_backward(tape, NULL), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "matmul: a is [2x3], b is [4x5]: inner dims 3 != 4");
    ag_tape_reset(tape);
    ck_assert_int_eq(ag_tape_status(tape), AG_OK);
    ck_assert_str_eq(ag_tape_error(tape), "");
    ag_tape_free(tape);
}
END_TEST

Suite *suite_tape(void)
{
    Suite *s = suite_create("tape");
    TCase *tc = tcase_create("backward");
    tcase_add_test(tc, test_backward_example);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_sticky_error);
    suite_add_tcase(s, tc);
    return s;
}
