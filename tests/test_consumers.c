/*
 * test_consumers.c - ag_tape_consumers: which entries take a tensor as an
 * input (where backward sums its gradient from), each entry once.
 */
#include "test_util.h"

START_TEST(test_consumers)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_param_new(2, (int[]){2, 2});
    ag_tensor *a = ag_mul(tape, x, x); /* entry 0 takes x twice: counted once */
    ag_tensor *b = ag_add(tape, a, x); /* entry 1 */
    ag_tensor *l = ag_sum(tape, b);    /* entry 2 */
    ck_assert_ptr_nonnull(l);
    size_t k[4] = {99, 99, 99, 99};
    ck_assert_uint_eq(ag_tape_consumers(tape, x, k, 4), 2);
    ck_assert_uint_eq(k[0], 0);
    ck_assert_uint_eq(k[1], 1);
    ck_assert_uint_eq(ag_tape_consumers(tape, x, k, 1), 2); /* the count, beyond max too */
    ck_assert_uint_eq(ag_tape_consumers(tape, x, NULL, 0), 2);
    ck_assert_uint_eq(ag_tape_consumers(tape, a, k, 4), 1);
    ck_assert_uint_eq(k[0], 1);
    ck_assert_uint_eq(ag_tape_consumers(tape, l, k, 4), 0); /* the loss: nothing takes it */
    ck_assert_uint_eq(ag_tape_consumers(NULL, x, k, 4), 0);
    ck_assert_uint_eq(ag_tape_consumers(tape, NULL, k, 4), 0);
    ag_tape_free(tape);
    ag_param_free(x);
}
END_TEST

Suite *suite_consumers(void)
{
    Suite *s = suite_create("consumers");
    TCase *tc = tcase_create("consumers");
    tcase_add_test(tc, test_consumers);
    suite_add_tcase(s, tc);
    return s;
}
