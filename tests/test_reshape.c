/*
 * test_reshape.c - reshape keeps the elements and their order, passes the
 * gradient straight through, and refuses a shape of another size.
 */
#include "test_util.h"

START_TEST(test_reshape_values)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a =
        ag_requires_grad(tape, ag_tensor_from(tape, 3, (int[]){1, 2, 6},
                                              (ag_real[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
    ag_tensor *b = ag_reshape(tape, a, 4, (int[]){1, 2, 2, 3});
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->ndim, 4);
    ck_assert_int_eq(b->shape[2], 2);
    ck_assert_int_eq(b->shape[3], 3);
    for (int i = 0; i < 12; i++)
        ck_assert(b->data[i] == i);
    ck_assert_ptr_nonnull(b->grad);
    ag_tape_free(tape);
}
END_TEST

static ag_tensor *build_reshape(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    /* (2,6) -> (2,2,3) -> softmax over 3: a wrong backward would scramble rows */
    return ag_softmax(tape, ag_reshape(tape, in[0], 3, (int[]){2, 2, 3}));
}

START_TEST(test_reshape_grad)
{
    ag_rng rng = ag_rng_new(8);
    ag_tensor *a = test_param(&rng, 2, (int[]){2, 6});
    test_gradcheck(build_reshape, NULL, &a, 1);
    ag_param_free(a);
}
END_TEST

START_TEST(test_reshape_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 6});
    ck_assert_ptr_null(ag_reshape(tape, a, 2, (int[]){5, 2}));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "reshape: a is [2x6] (12 elements), cannot become [5x2]");
    ag_tape_reset(tape);
    a = ag_tensor_new(tape, 2, (int[]){2, 6});
    ck_assert_ptr_null(ag_reshape(tape, a, 5, (int[]){1, 1, 2, 6, 1}));
    ck_assert_str_eq(ag_tape_error(tape),
                     "reshape: a is [2x6] (12 elements), cannot become ndim 5");
    ag_tape_reset(tape);
    a = ag_tensor_new(tape, 2, (int[]){2, 6});
    ck_assert_ptr_null(ag_reshape(tape, a, 2, NULL));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape), "reshape: shape is NULL");
    ag_tape_free(tape);
}
END_TEST

Suite *suite_reshape(void)
{
    Suite *s = suite_create("reshape");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_reshape_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_reshape_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_reshape_errors);
    suite_add_tcase(s, tc);
    return s;
}
