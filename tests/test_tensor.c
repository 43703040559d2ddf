/*
 * test_tensor.c - making tensors (tape tensors and parameters), bad shapes,
 * shape helpers and the numpy-style printing, compared as exact text.
 */
#include "test_util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Print t (or its gradient) to a string; the caller frees it. */
static char *print_to_string(const ag_tensor *t, int decimals, int grad)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    if (grad)
        ag_tensor_print_grad(f, t, decimals);
    else
        ag_tensor_print(f, t, decimals);
    fclose(f);
    return buf;
}

static void assert_prints(const ag_tensor *t, int decimals, int grad, const char *want)
{
    char *got = print_to_string(t, decimals, grad);
    ck_assert_str_eq(got, want);
    free(got);
}

/* ---- forward: making tensors ---- */

START_TEST(test_tensor_new)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *t = ag_tensor_new(tape, 3, (int[]){2, 3, 4});
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->ndim, 3);
    ck_assert_int_eq(t->shape[0], 2);
    ck_assert_int_eq(t->shape[2], 4);
    ck_assert_int_eq(t->shape[3], 1); /* past ndim: 1 */
    ck_assert_uint_eq(t->size, 24);
    ck_assert_ptr_null(t->grad);
    for (size_t i = 0; i < t->size; i++)
        ck_assert(t->data[i] == 0);
    ck_assert_uint_eq(ag_tape_size(tape), 1);

    /* ag_tensor_from copies: changing the source later changes nothing */
    ag_real src[] = {1, 2, 3, 4};
    ag_tensor *c = ag_tensor_from(tape, 2, (int[]){2, 2}, src);
    src[0] = 9;
    test_assert_values(c->data, (double[]){1, 2, 3, 4}, 4, 0);
    ck_assert_ptr_null(ag_tensor_from(tape, 1, (int[]){2}, NULL));
    test_expect_error(tape, AG_ERR_ARG, "tensor_from: data is NULL");

    /* the largest rank */
    ag_tensor *r4 = ag_tensor_new(tape, AG_MAX_DIMS, (int[]){1, 2, 1, 3});
    ck_assert_ptr_nonnull(r4);
    ck_assert_uint_eq(r4->size, 6);
    ck_assert_ptr_null(ag_tensor_new(NULL, 1, (int[]){2}));
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_param_new)
{
    ag_tensor *p = ag_param_new(2, (int[]){3, 5});
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(p->size, 15);
    ck_assert_ptr_nonnull(p->grad);
    ck_assert_uint_eq((uintptr_t)p->data % AG_ALIGN, 0);
    ck_assert_uint_eq((uintptr_t)p->grad % AG_ALIGN, 0);
    for (size_t i = 0; i < p->size; i++) {
        ck_assert(p->data[i] == 0 && p->grad[i] == 0);
        p->grad[i] = 1;
        p->data[i] = 2;
    }
    /* data and grad do not overlap; zero_grad clears only the gradient */
    ag_zero_grad(&p, 1);
    for (size_t i = 0; i < p->size; i++)
        ck_assert(p->data[i] == 2 && p->grad[i] == 0);
    /* NULL is ignored, not dereferenced */
    ag_zero_grad(NULL, 3);
    ag_fill_normal(NULL, &(ag_rng){1}, 0, 1);
    ag_fill_uniform(p, NULL, 0, 1);
    ck_assert(p->data[0] == 2);
    ck_assert(!ag_same_shape(p, NULL));
    ag_param_free(p);
    ag_param_free(NULL);
}
END_TEST

START_TEST(test_shape_helpers)
{
    ag_tape *tape = ag_tape_new();
    char buf[64];
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ag_tensor *b = ag_tensor_new(tape, 2, (int[]){2, 3});
    ag_tensor *c = ag_tensor_new(tape, 2, (int[]){3, 2});
    ag_tensor *d = ag_tensor_new(tape, 3, (int[]){1, 2, 3});
    ag_tensor *v = ag_tensor_new(tape, 1, (int[]){5});
    ag_tensor *q = ag_tensor_new(tape, 4, (int[]){2, 4, 16, 8});
    ck_assert_str_eq(ag_shape_str(a, buf, sizeof(buf)), "[2x3]");
    ck_assert_str_eq(ag_shape_str(v, buf, sizeof(buf)), "[5]");
    ck_assert_str_eq(ag_shape_str(q, buf, sizeof(buf)), "[2x4x16x8]");
    ck_assert_str_eq(ag_shape_str(NULL, buf, sizeof(buf)), "NULL");
    /* a short buffer is cut, still terminated */
    ck_assert_str_eq(ag_shape_str(q, buf, 6), "[2x4x");
    ck_assert_ptr_null(ag_shape_str(a, NULL, 10));
    ck_assert(ag_same_shape(a, b));
    ck_assert(!ag_same_shape(a, c));
    ck_assert(!ag_same_shape(a, d));
    ag_tape_free(tape);
}
END_TEST

/* ---- printing ---- */

START_TEST(test_print_2d)
{
    ag_tape *tape = ag_tape_new();
    /* the demo's weights */
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){3, 3},
                                  (ag_real[]){0.401112f, 0.197776f, 0.401112f, 0.197776f, 0.401112f,
                                              0.401112f, 0.248255f, 0.248255f, 0.503490f});
    assert_prints(w, 2, 0, "[[0.40 0.20 0.40]\n [0.20 0.40 0.40]\n [0.25 0.25 0.50]]\n");
    assert_prints(w, 6, 0,
                  "[[0.401112 0.197776 0.401112]\n [0.197776 0.401112 0.401112]\n"
                  " [0.248255 0.248255 0.503490]]\n");
    /* one row, one column, one element */
    assert_prints(ag_tensor_from(tape, 2, (int[]){1, 3}, (ag_real[]){1, 2, 3}), 1, 0,
                  "[[1.0 2.0 3.0]]\n");
    assert_prints(ag_tensor_from(tape, 2, (int[]){2, 1}, (ag_real[]){1, 2}), 0, 0, "[[1]\n [2]]\n");
    assert_prints(ag_tensor_from(tape, 2, (int[]){1, 1}, (ag_real[]){0.5}), 2, 0, "[[0.50]]\n");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_print_1d_negative)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *v = ag_tensor_from(tape, 1, (int[]){4}, (ag_real[]){1, -2.5, 30, 0});
    /* every value padded to the widest, so columns line up like numpy's */
    assert_prints(v, 2, 0, "[ 1.00 -2.50 30.00  0.00]\n");
    ag_tensor *m = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){-1, 2, 3, -40});
    assert_prints(m, 1, 0, "[[ -1.0   2.0]\n [  3.0 -40.0]]\n");
    assert_prints(ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){-3}), 0, 0, "[-3]\n");
    /* negative decimals fall back to 4 */
    assert_prints(ag_tensor_from(tape, 1, (int[]){1}, (ag_real[]){0.5}), -1, 0, "[0.5000]\n");
    assert_prints(NULL, 2, 0, "NULL\n");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_print_3d_4d)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *t = ag_tensor_from(tape, 3, (int[]){2, 2, 2}, (ag_real[]){1, 2, 3, 4, 5, 6, 7, 8});
    /* numpy: a blank line between 2-D blocks, inner rows indented */
    assert_prints(t, 0, 0, "[[[1 2]\n  [3 4]]\n\n [[5 6]\n  [7 8]]]\n");
    ag_tensor *u = ag_tensor_from(tape, 3, (int[]){2, 1, 2}, (ag_real[]){1, -1, 2, -2});
    assert_prints(u, 1, 0, "[[[ 1.0 -1.0]]\n\n [[ 2.0 -2.0]]]\n");
    /* 4-D: two blank lines between 3-D blocks */
    ag_tensor *f = ag_tensor_from(tape, 4, (int[]){2, 1, 1, 2}, (ag_real[]){1, 2, 3, 4});
    assert_prints(f, 0, 0, "[[[[1 2]]]\n\n\n [[[3 4]]]]\n");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_print_grad)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    assert_prints(x, 2, 1, "None\n");
    assert_prints(NULL, 2, 1, "None\n");
    ag_requires_grad(tape, x);
    assert_prints(x, 2, 1, "[[0.00 0.00]]\n");
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_scale(tape, x, -0.5))), AG_OK);
    assert_prints(x, 2, 1, "[[-0.50 -0.50]]\n");
    assert_prints(x, 2, 0, "[[1.00 2.00]]\n");
    ag_tape_free(tape);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_tensor_bad_shapes)
{
    ag_tape *tape = ag_tape_new();
    const char *tail = " (1..4 dims, each >= 1, size must fit)";
    char want[160];

    ck_assert_ptr_null(ag_tensor_new(tape, 2, (int[]){0, 3}));
    snprintf(want, sizeof(want), "tensor: bad shape [0x3]%s", tail);
    test_expect_error(tape, AG_ERR_ARG, want);

    ck_assert_ptr_null(ag_tensor_new(tape, 2, (int[]){4, -1}));
    snprintf(want, sizeof(want), "tensor: bad shape [4x-1]%s", tail);
    test_expect_error(tape, AG_ERR_ARG, want);

    ck_assert_ptr_null(ag_tensor_new(tape, 5, (int[]){1, 1, 1, 1, 1}));
    snprintf(want, sizeof(want), "tensor: bad shape ndim 5%s", tail);
    test_expect_error(tape, AG_ERR_ARG, want);

    ck_assert_ptr_null(ag_tensor_new(tape, 0, (int[]){1}));
    snprintf(want, sizeof(want), "tensor: bad shape ndim 0%s", tail);
    test_expect_error(tape, AG_ERR_ARG, want);

    /* a product that overflows size_t (as bytes of ag_real) */
    ck_assert_ptr_null(ag_tensor_new(tape, 4, (int[]){INT_MAX, INT_MAX, INT_MAX, INT_MAX}));
    snprintf(want, sizeof(want), "tensor: bad shape [%dx%dx%dx%d]%s", INT_MAX, INT_MAX, INT_MAX,
             INT_MAX, tail);
    test_expect_error(tape, AG_ERR_ARG, want);
    ck_assert_ptr_null(ag_tensor_new(tape, 3, (int[]){1 << 30, 1 << 30, 1 << 30}));
    snprintf(want, sizeof(want), "tensor: bad shape [%dx%dx%d]%s", 1 << 30, 1 << 30, 1 << 30, tail);
    test_expect_error(tape, AG_ERR_ARG, want);

    ck_assert_ptr_null(ag_tensor_new(tape, 2, NULL));
    snprintf(want, sizeof(want), "tensor: bad shape NULL%s", tail);
    test_expect_error(tape, AG_ERR_ARG, want);
    ck_assert_ptr_null(ag_tensor_from(tape, 2, (int[]){2, 0}, (ag_real[]){1, 2}));
    snprintf(want, sizeof(want), "tensor: bad shape [2x0]%s", tail);
    test_expect_error(tape, AG_ERR_ARG, want);
    ck_assert_uint_eq(ag_tape_size(tape), 0);
    ag_tape_free(tape);

    /* parameters: NULL, no tape to hold a message */
    ck_assert_ptr_null(ag_param_new(2, (int[]){0, 3}));
    ck_assert_ptr_null(ag_param_new(1, (int[]){-2}));
    ck_assert_ptr_null(ag_param_new(5, (int[]){1, 1, 1, 1, 1}));
    ck_assert_ptr_null(ag_param_new(0, (int[]){1}));
    ck_assert_ptr_null(ag_param_new(1, NULL));
    ck_assert_ptr_null(ag_param_new(4, (int[]){INT_MAX, INT_MAX, INT_MAX, INT_MAX}));
}
END_TEST

Suite *suite_tensor(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_tensor_new);
    tcase_add_test(tc, test_param_new);
    tcase_add_test(tc, test_shape_helpers);
    tcase_add_test(tc, test_print_2d);
    tcase_add_test(tc, test_print_1d_negative);
    tcase_add_test(tc, test_print_3d_4d);
    tcase_add_test(tc, test_print_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_tensor_bad_shapes);
    suite_add_tcase(s, tc);
    return s;
}
