/*
 * test_heads.c - split_heads and merge_heads: the column layout that
 * docs/attention-layer.md fixes (head h = columns h*dh .. h*dh+dh-1), the
 * round trip, gradients and shape errors.
 */
#include "test_util.h"

START_TEST(test_split_layout)
{
    ag_tape *tape = ag_tape_new();
    int B = 2, T = 3, d = 6, H = 3, dh = 2;
    ag_real v[36];
    for (int i = 0; i < 36; i++)
        v[i] = (ag_real)i;
    ag_tensor *x = ag_tensor_from(tape, 3, (int[]){B, T, d}, v);
    ag_tensor *y = ag_split_heads(tape, x, H);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->ndim, 4);
    ck_assert_int_eq(y->shape[0], B);
    ck_assert_int_eq(y->shape[1], H);
    ck_assert_int_eq(y->shape[2], T);
    ck_assert_int_eq(y->shape[3], dh);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                for (int k = 0; k < dh; k++)
                    ck_assert(y->data[((b * H + h) * T + t) * dh + k] ==
                              x->data[(b * T + t) * d + h * dh + k]);
    /* merging puts every value back where it was */
    ag_tensor *z = ag_merge_heads(tape, y);
    ck_assert_ptr_nonnull(z);
    ck_assert(ag_same_shape(x, z));
    for (int i = 0; i < 36; i++)
        ck_assert(z->data[i] == x->data[i]);
    ck_assert_int_eq(ag_tape_size(tape), 3);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_one_head_is_a_copy)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 3, (int[]){1, 2, 2}, (ag_real[]){1, 2, 3, 4});
    ag_tensor *y = ag_split_heads(tape, x, 1);
    ck_assert_int_eq(y->shape[1], 1);
    for (int i = 0; i < 4; i++)
        ck_assert(y->data[i] == x->data[i]);
    ag_tape_free(tape);
}
END_TEST

static ag_tensor *build_split(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    return ag_split_heads(tape, in[0], *(int *)ctx);
}

static ag_tensor *build_merge(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_merge_heads(tape, in[0]);
}

START_TEST(test_split_grad)
{
    ag_rng rng = ag_rng_new(3);
    ag_tensor *x = test_param(&rng, 3, (int[]){2, 3, 4});
    int heads[] = {1, 2, 4};
    for (int i = 0; i < 3; i++)
        test_gradcheck(build_split, &heads[i], &x, 1);
    ag_param_free(x);
}
END_TEST

START_TEST(test_merge_grad)
{
    ag_rng rng = ag_rng_new(4);
    ag_tensor *x = test_param(&rng, 4, (int[]){2, 2, 3, 2});
    test_gradcheck(build_merge, NULL, &x, 1);
    ag_param_free(x);
}
END_TEST

START_TEST(test_split_accumulates)
{
    /* a tensor split twice receives both gradients */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_param_new(3, (int[]){1, 1, 4});
    ag_tensor *a = ag_split_heads(tape, x, 2);
    ag_tensor *b = ag_split_heads(tape, x, 4);
    ag_tensor *loss = ag_add(tape, ag_sum(tape, a), ag_sum(tape, b));
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol(x->grad[i], 2, AG_TEST_TOL);
    ag_param_free(x);
    ag_tape_free(tape);
}
END_TEST

static void expect_error(ag_tape *tape, ag_status status, const char *msg)
{
    ck_assert_int_eq(ag_tape_status(tape), status);
    ck_assert_str_eq(ag_tape_error(tape), msg);
    ag_tape_reset(tape);
}

START_TEST(test_heads_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x2 = ag_tensor_new(tape, 2, (int[]){3, 4});
    ck_assert_ptr_null(ag_split_heads(tape, x2, 2));
    expect_error(tape, AG_ERR_SHAPE, "split_heads: x is [3x4]: needs 3 dims (B,T,d)");

    ag_tensor *x = ag_tensor_new(tape, 3, (int[]){2, 3, 8});
    ck_assert_ptr_null(ag_split_heads(tape, x, 3));
    expect_error(tape, AG_ERR_SHAPE, "split_heads: x is [2x3x8]: heads 3 does not divide dim 8");

    x = ag_tensor_new(tape, 3, (int[]){2, 3, 8});
    ck_assert_ptr_null(ag_split_heads(tape, x, 0));
    expect_error(tape, AG_ERR_SHAPE, "split_heads: x is [2x3x8]: heads 0 does not divide dim 8");

    ck_assert_ptr_null(ag_split_heads(tape, NULL, 2));
    expect_error(tape, AG_ERR_ARG, "split_heads: input 1 is NULL");

    x = ag_tensor_new(tape, 3, (int[]){2, 3, 8});
    ck_assert_ptr_null(ag_merge_heads(tape, x));
    expect_error(tape, AG_ERR_SHAPE, "merge_heads: x is [2x3x8]: needs 4 dims (B,H,T,dh)");
    ag_tape_free(tape);
}
END_TEST

Suite *suite_heads(void)
{
    Suite *s = suite_create("heads");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_split_layout);
    tcase_add_test(tc, test_one_head_is_a_copy);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_split_grad);
    tcase_add_test(tc, test_merge_grad);
    tcase_add_test(tc, test_split_accumulates);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_heads_errors);
    suite_add_tcase(s, tc);
    return s;
}
