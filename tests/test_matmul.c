/*
 * test_matmul.c - matmul, matmul_bt and transpose: forward values against
 * the reference kernel (ag_ref_gemm) in every shape attention uses (2-D, (B,T,d)@(d,e) with a
 * shared weight, batched (B,H,T,dh)@(B,H,dh,T), size-1 dims), backward
 * against finite differences for both operands, and the shape errors.
 */
#include "test_util.h"

#include <stdlib.h>

/* out = a @ b (b_t: a @ b^T) by the library's reference kernel, product by
 * product: a is (..., m, k), b is 2-D (shared) or has a's leading dims. out
 * has batch*m*n elements. */
static void ref_matmul(const ag_tensor *a, const ag_tensor *b, int b_t, double *out)
{
    size_t m = (size_t)a->shape[a->ndim - 2], k = (size_t)a->shape[a->ndim - 1];
    size_t n = (size_t)(b_t ? b->shape[b->ndim - 2] : b->shape[b->ndim - 1]);
    size_t batch = a->size / (m * k);
    int shared = b->ndim == 2;
    ag_real *c = malloc(batch * m * n * sizeof(ag_real));
    ck_assert_ptr_nonnull(c);
    for (size_t z = 0; z < batch; z++)
        ag_ref_gemm(0, b_t, m, n, k, 1, a->data + z * m * k, k, b->data + (shared ? 0 : z * k * n),
                    b_t ? k : n, 0, c + z * m * n, n);
    for (size_t i = 0; i < batch * m * n; i++)
        out[i] = c[i];
    free(c);
}

/* Random tape tensors a, b; check op(a, b) against ref_matmul and the shape. */
static void check_forward(int b_t, int na, const int *sa, int nb, const int *sb, int nout,
                          const int *sout)
{
    ag_tape *tape = ag_tape_new();
    ag_rng rng = ag_rng_new(7);
    ag_tensor *a = ag_tensor_new(tape, na, sa);
    ag_tensor *b = ag_tensor_new(tape, nb, sb);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ag_fill_normal(a, &rng, 0, 1);
    ag_fill_normal(b, &rng, 0, 1);
    ag_tensor *c = b_t ? ag_matmul_bt(tape, a, b) : ag_matmul(tape, a, b);
    ck_assert_msg(c != NULL, "%s", ag_tape_error(tape));
    ck_assert_int_eq(c->ndim, nout);
    for (int i = 0; i < nout; i++)
        ck_assert_int_eq(c->shape[i], sout[i]);
    double *want = malloc(c->size * sizeof(double));
    ck_assert_ptr_nonnull(want);
    ref_matmul(a, b, b_t, want);
    test_assert_values(c->data, want, c->size, 10 * AG_TEST_TOL);
    ck_assert_ptr_null(c->grad); /* no input needs a gradient */
    free(want);
    ag_tape_free(tape);
}

/* ---- forward ---- */

START_TEST(test_matmul_2d)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, 2, 3, 4});
    ag_tensor *b = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){5, 6, 7, 8, 9, 10});
    ag_tensor *c = ag_matmul(tape, a, b);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->ndim, 2);
    ck_assert_int_eq(c->shape[0], 2);
    ck_assert_int_eq(c->shape[1], 3);
    test_assert_values(c->data, (double[]){21, 24, 27, 47, 54, 61}, 6, 0);
    ag_tape_free(tape);
    check_forward(0, 2, (int[]){5, 7}, 2, (int[]){7, 3}, 2, (int[]){5, 3});
    check_forward(0, 2, (int[]){1, 1}, 2, (int[]){1, 1}, 2, (int[]){1, 1});
    check_forward(0, 2, (int[]){1, 4}, 2, (int[]){4, 1}, 2, (int[]){1, 1});
    check_forward(0, 2, (int[]){4, 1}, 2, (int[]){1, 3}, 2, (int[]){4, 3});
}
END_TEST

START_TEST(test_matmul_shared_weight)
{
    /* (B,T,d) @ (d,e): Q = x wq */
    check_forward(0, 3, (int[]){2, 3, 4}, 2, (int[]){4, 5}, 3, (int[]){2, 3, 5});
    check_forward(0, 3, (int[]){1, 1, 4}, 2, (int[]){4, 2}, 3, (int[]){1, 1, 2});
    check_forward(0, 3, (int[]){3, 1, 2}, 2, (int[]){2, 2}, 3, (int[]){3, 1, 2});
    check_forward(0, 4, (int[]){2, 2, 3, 2}, 2, (int[]){2, 3}, 4, (int[]){2, 2, 3, 3});

    /* every batch row uses the same weight: equal rows in, equal rows out */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 3, (int[]){2, 1, 2}, (ag_real[]){1, 2, 1, 2});
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, -1, 2, 3});
    ag_tensor *y = ag_matmul(tape, x, w);
    ck_assert_ptr_nonnull(y);
    test_assert_values(y->data, (double[]){5, 5, 5, 5}, 4, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_matmul_batched)
{
    /* (B,H,T,dh) @ (B,H,dh,T): P V and friends, one product per (b, h) */
    check_forward(0, 4, (int[]){2, 3, 4, 2}, 4, (int[]){2, 3, 2, 4}, 4, (int[]){2, 3, 4, 4});
    check_forward(0, 4, (int[]){1, 1, 1, 1}, 4, (int[]){1, 1, 1, 1}, 4, (int[]){1, 1, 1, 1});
    check_forward(0, 4, (int[]){1, 2, 1, 3}, 4, (int[]){1, 2, 3, 1}, 4, (int[]){1, 2, 1, 1});
    check_forward(0, 3, (int[]){3, 2, 2}, 3, (int[]){3, 2, 4}, 3, (int[]){3, 2, 4});

    /* batches do not mix: batch 0 times identity, batch 1 times 2 * identity */
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 3, (int[]){2, 1, 2}, (ag_real[]){1, 2, 3, 4});
    ag_tensor *b = ag_tensor_from(tape, 3, (int[]){2, 2, 2}, (ag_real[]){1, 0, 0, 1, 2, 0, 0, 2});
    ag_tensor *c = ag_matmul(tape, a, b);
    ck_assert_ptr_nonnull(c);
    test_assert_values(c->data, (double[]){1, 2, 6, 8}, 4, 0);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_matmul_bt_forward)
{
    ag_tape *tape = ag_tape_new();
    /* the seed: x x^T for cat, sat, mat */
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){3, 2}, (ag_real[]){1, 0, 0, 1, 1, 1});
    ag_tensor *s = ag_matmul_bt(tape, x, x);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->shape[0], 3);
    ck_assert_int_eq(s->shape[1], 3);
    test_assert_values(s->data, (double[]){1, 0, 1, 0, 1, 1, 1, 1, 2}, 9, 0);
    ag_tape_free(tape);
    /* 2-D b: shared over the batch */
    check_forward(1, 2, (int[]){4, 3}, 2, (int[]){5, 3}, 2, (int[]){4, 5});
    check_forward(1, 2, (int[]){1, 1}, 2, (int[]){1, 1}, 2, (int[]){1, 1});
    check_forward(1, 3, (int[]){2, 3, 4}, 2, (int[]){2, 4}, 3, (int[]){2, 3, 2});
    /* batched b: Q K^T, (B,H,T,dh) x (B,H,T,dh) -> (B,H,T,T) */
    check_forward(1, 4, (int[]){2, 2, 3, 2}, 4, (int[]){2, 2, 3, 2}, 4, (int[]){2, 2, 3, 3});
    check_forward(1, 4, (int[]){1, 1, 1, 3}, 4, (int[]){1, 1, 1, 3}, 4, (int[]){1, 1, 1, 1});
    check_forward(1, 4, (int[]){1, 3, 2, 1}, 4, (int[]){1, 3, 4, 1}, 4, (int[]){1, 3, 2, 4});
}
END_TEST

START_TEST(test_transpose_forward)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_from(tape, 2, (int[]){2, 3}, (ag_real[]){1, 2, 3, 4, 5, 6});
    ag_tensor *t = ag_transpose(tape, a);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->shape[0], 3);
    ck_assert_int_eq(t->shape[1], 2);
    test_assert_values(t->data, (double[]){1, 4, 2, 5, 3, 6}, 6, 0);

    /* batched: every (b, h) block transposed on its own */
    ag_rng rng = ag_rng_new(3);
    ag_tensor *x = ag_tensor_new(tape, 4, (int[]){2, 3, 4, 5});
    ag_fill_normal(x, &rng, 0, 1);
    ag_tensor *y = ag_transpose(tape, x);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->shape[2], 5);
    ck_assert_int_eq(y->shape[3], 4);
    for (size_t z = 0; z < 6; z++)
        for (size_t i = 0; i < 4; i++)
            for (size_t j = 0; j < 5; j++)
                ck_assert(y->data[z * 20 + j * 4 + i] == x->data[z * 20 + i * 5 + j]);

    /* size-1 dims */
    ag_tensor *one = ag_tensor_from(tape, 2, (int[]){1, 1}, (ag_real[]){7});
    ag_tensor *row = ag_tensor_from(tape, 3, (int[]){1, 1, 3}, (ag_real[]){1, 2, 3});
    ag_tensor *t1 = ag_transpose(tape, one);
    ag_tensor *col = ag_transpose(tape, row);
    ck_assert_ptr_nonnull(col);
    ck_assert_double_eq(t1->data[0], 7);
    ck_assert_int_eq(col->shape[1], 3);
    ck_assert_int_eq(col->shape[2], 1);
    test_assert_values(col->data, (double[]){1, 2, 3}, 3, 0);
    ag_tape_free(tape);
}
END_TEST

/* ---- backward ---- */

static ag_tensor *build_matmul(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_matmul(tape, in[0], in[1]);
}

static ag_tensor *build_matmul_bt(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_matmul_bt(tape, in[0], in[1]);
}

static ag_tensor *build_transpose(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_transpose(tape, in[0]);
}

START_TEST(test_matmul_backward_by_hand)
{
    /* L = sum(A B): dA = 1 B^T (row sums of B), dB = A^T 1 (column sums of A) */
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_param_new(2, (int[]){2, 2});
    ag_tensor *b = ag_param_new(2, (int[]){2, 3});
    for (int i = 0; i < 4; i++)
        a->data[i] = (ag_real)(i + 1); /* [[1 2] [3 4]] */
    for (int i = 0; i < 6; i++)
        b->data[i] = (ag_real)(i + 5); /* [[5 6 7] [8 9 10]] */
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_matmul(tape, a, b))), AG_OK);
    test_assert_values(a->grad, (double[]){18, 27, 18, 27}, 4, 0);
    test_assert_values(b->grad, (double[]){4, 4, 4, 6, 6, 6}, 6, 0);
    ag_param_free(a);
    ag_param_free(b);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_matmul_gradcheck_2d)
{
    const test_shape cases[][2] = {
        {{2, {3, 4}}, {2, {4, 5}}},
        {{2, {1, 1}}, {2, {1, 1}}},
        {{2, {1, 3}}, {2, {3, 1}}},
        {{2, {4, 1}}, {2, {1, 2}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_matmul, NULL, 2, cases[c], 10 + c);
}
END_TEST

START_TEST(test_matmul_gradcheck_shared)
{
    /* the shared weight sums its gradient over every batch row */
    const test_shape cases[][2] = {
        {{3, {2, 3, 4}}, {2, {4, 2}}},
        {{3, {1, 1, 3}}, {2, {3, 1}}},
        {{3, {3, 1, 2}}, {2, {2, 2}}},
        {{4, {2, 1, 2, 3}}, {2, {3, 2}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_matmul, NULL, 2, cases[c], 20 + c);
}
END_TEST

START_TEST(test_matmul_gradcheck_batched)
{
    const test_shape cases[][2] = {
        {{4, {2, 2, 3, 2}}, {4, {2, 2, 2, 3}}},
        {{4, {1, 1, 1, 1}}, {4, {1, 1, 1, 1}}},
        {{4, {1, 2, 1, 3}}, {4, {1, 2, 3, 1}}},
        {{3, {2, 3, 2}}, {3, {2, 2, 3}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_matmul, NULL, 2, cases[c], 30 + c);
}
END_TEST

START_TEST(test_matmul_bt_gradcheck)
{
    const test_shape cases[][2] = {
        {{2, {3, 4}}, {2, {5, 4}}},
        {{2, {1, 1}}, {2, {1, 1}}},
        {{3, {2, 3, 2}}, {2, {4, 2}}}, /* shared b */
        {{3, {1, 1, 3}}, {2, {1, 3}}},
        {{4, {2, 2, 3, 2}}, {4, {2, 2, 3, 2}}}, /* Q K^T */
        {{4, {1, 2, 1, 3}}, {4, {1, 2, 4, 3}}},
        {{4, {1, 1, 1, 1}}, {4, {1, 1, 1, 1}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_matmul_bt, NULL, 2, cases[c], 40 + c);
}
END_TEST

START_TEST(test_transpose_gradcheck)
{
    const test_shape cases[][1] = {
        {{2, {3, 4}}},
        {{2, {1, 1}}},
        {{3, {2, 1, 3}}},
        {{4, {2, 1, 3, 2}}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        test_gradcheck_shapes(build_transpose, NULL, 1, cases[c], 50 + c);
}
END_TEST

START_TEST(test_matmul_one_operand_needs_grad)
{
    /* x is data (no gradient), w a parameter: only w's gradient is written,
     * and x stays without one */
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 2});
    w->data[0] = 1;
    w->data[3] = 1;
    ag_tensor *x = ag_tensor_from(tape, 3, (int[]){2, 1, 2}, (ag_real[]){1, 2, 3, 4});
    ag_tensor *y = ag_matmul_bt(tape, x, w);
    ck_assert_ptr_nonnull(y->grad);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, y)), AG_OK);
    ck_assert_ptr_null(x->grad);
    /* L = sum_{b,i,j} x[b,i,:] . w[j,:], so dw[j,:] = sum over rows of x */
    test_assert_values(w->grad, (double[]){4, 6, 4, 6}, 4, 0);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_matmul_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_matmul(tape, a, ag_tensor_new(tape, 2, (int[]){4, 5})));
    test_expect_error(tape, AG_ERR_SHAPE, "matmul: a is [2x3], b is [4x5]: inner dims 3 != 4");

    a = ag_tensor_new(tape, 1, (int[]){3});
    ck_assert_ptr_null(ag_matmul(tape, a, ag_tensor_new(tape, 2, (int[]){2, 3})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "matmul: a is [3], b is [2x3]: both need at least 2 dims");

    a = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_null(ag_matmul(tape, a, ag_tensor_new(tape, 3, (int[]){3, 4, 5})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "matmul: a is [2x3x4], b is [3x4x5]: b must be 2-D or have a's leading dims");

    a = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_null(ag_matmul(tape, a, ag_tensor_new(tape, 4, (int[]){2, 2, 4, 5})));
    test_expect_error(
        tape, AG_ERR_SHAPE,
        "matmul: a is [2x3x4], b is [2x2x4x5]: b must be 2-D or have a's leading dims");

    /* a 2-D a with a batched b is not a broadcast this op offers */
    a = ag_tensor_new(tape, 2, (int[]){3, 4});
    ck_assert_ptr_null(ag_matmul(tape, a, ag_tensor_new(tape, 3, (int[]){2, 4, 5})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "matmul: a is [3x4], b is [2x4x5]: b must be 2-D or have a's leading dims");

    a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_matmul(tape, a, NULL));
    ck_assert_uint_eq(ag_tape_size(tape), 1); /* nothing recorded for the failed op */
    test_expect_error(tape, AG_ERR_ARG, "matmul: input 2 is NULL");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_matmul_bt_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_matmul_bt(tape, a, ag_tensor_new(tape, 2, (int[]){4, 5})));
    test_expect_error(tape, AG_ERR_SHAPE, "matmul_bt: a is [2x3], b is [4x5]: inner dims 3 != 5");

    ag_tensor *q = ag_tensor_new(tape, 4, (int[]){2, 2, 3, 4});
    ck_assert_ptr_null(ag_matmul_bt(tape, q, ag_tensor_new(tape, 4, (int[]){2, 1, 3, 4})));
    test_expect_error(tape, AG_ERR_SHAPE,
                      "matmul_bt: a is [2x2x3x4], b is [2x1x3x4]: b must be "
                      "2-D or have a's leading dims");

    ck_assert_ptr_null(ag_matmul_bt(tape, NULL, NULL));
    test_expect_error(tape, AG_ERR_ARG, "matmul_bt: input 1 is NULL");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_transpose_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *v = ag_tensor_new(tape, 1, (int[]){3});
    ck_assert_ptr_null(ag_transpose(tape, v));
    test_expect_error(tape, AG_ERR_SHAPE, "transpose: a is [3]: needs at least 2 dims");
    ck_assert_ptr_null(ag_transpose(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "transpose: input 1 is NULL");
    /* a NULL tape: no crash, NULL back */
    ag_tensor dummy = {2, {1, 1, 1, 1}, 1, (ag_real[]){1}, NULL};
    ck_assert_ptr_null(ag_transpose(NULL, &dummy));
    ck_assert_ptr_null(ag_matmul(NULL, &dummy, &dummy));
    ag_tape_free(tape);
}
END_TEST

Suite *suite_matmul(void)
{
    Suite *s = suite_create("matmul");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_matmul_2d);
    tcase_add_test(tc, test_matmul_shared_weight);
    tcase_add_test(tc, test_matmul_batched);
    tcase_add_test(tc, test_matmul_bt_forward);
    tcase_add_test(tc, test_transpose_forward);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_matmul_backward_by_hand);
    tcase_add_test(tc, test_matmul_gradcheck_2d);
    tcase_add_test(tc, test_matmul_gradcheck_shared);
    tcase_add_test(tc, test_matmul_gradcheck_batched);
    tcase_add_test(tc, test_matmul_bt_gradcheck);
    tcase_add_test(tc, test_transpose_gradcheck);
    tcase_add_test(tc, test_matmul_one_operand_needs_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_matmul_errors);
    tcase_add_test(tc, test_matmul_bt_errors);
    tcase_add_test(tc, test_transpose_errors);
    suite_add_tcase(s, tc);
    return s;
}
