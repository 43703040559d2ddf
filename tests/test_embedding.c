/*
 * test_embedding.c - the table lookup: rows copied out, the scatter-add
 * backward (a repeated id gets both gradients), finite differences, and
 * errors for ids outside the table.
 */
#include "test_util.h"

START_TEST(test_embedding_lookup)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){3, 2});
    for (int i = 0; i < 6; i++)
        w->data[i] = (ag_real)(10 * (i / 2) + i % 2); /* row r = [10r, 10r+1] */
    const int ids[] = {2, 0, 2, 1};
    ag_tensor *y = ag_embedding(tape, w, ids, 2, (int[]){2, 2});
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 2);
    ck_assert_int_eq(y->shape[2], 2);
    for (int i = 0; i < 4; i++) {
        ck_assert(y->data[2 * i] == 10 * ids[i]);
        ck_assert(y->data[2 * i + 1] == 10 * ids[i] + 1);
    }
    /* scatter-add: row 2 is used twice */
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, y)), AG_OK);
    const ag_real want[] = {1, 1, 1, 1, 2, 2};
    for (int i = 0; i < 6; i++)
        ck_assert(w->grad[i] == want[i]);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_embedding_no_grad)
{
    /* a table without a gradient gives an output without one */
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){2, 1}, (ag_real[]){7, 8});
    ag_tensor *y = ag_embedding(tape, w, (int[]){1, 1, 0}, 1, (int[]){3});
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_null(y->grad);
    ck_assert(y->data[0] == 8 && y->data[1] == 8 && y->data[2] == 7);
    ag_tape_free(tape);
}
END_TEST

typedef struct emb_ctx {
    const int *ids;
    int ndim;
    const int *shape;
} emb_ctx;

static ag_tensor *build_embedding(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    emb_ctx *c = ctx;
    /* a nonlinear use of the rows, so the check is not of a constant */
    ag_tensor *y = ag_embedding(tape, in[0], c->ids, c->ndim, c->shape);
    return ag_mul(tape, y, y);
}

START_TEST(test_embedding_grad)
{
    ag_rng rng = ag_rng_new(6);
    ag_tensor *w = test_param(&rng, 2, (int[]){4, 3});
    emb_ctx c = {(int[]){3, 0, 3, 1, 1, 3}, 2, (int[]){2, 3}};
    test_gradcheck(build_embedding, &c, &w, 1);
    ag_param_free(w);
}
END_TEST

START_TEST(test_embedding_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_tensor_new(tape, 2, (int[]){10, 4});
    ck_assert_ptr_null(ag_embedding(tape, w, (int[]){1, 2, 12}, 2, (int[]){1, 3}));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape),
                     "embedding: id 12 at index 2 is out of range [0, 10) for table [10x4]");
    ag_tape_reset(tape);

    w = ag_tensor_new(tape, 2, (int[]){10, 4});
    ck_assert_ptr_null(ag_embedding(tape, w, (int[]){-1}, 1, (int[]){1}));
    ck_assert_str_eq(ag_tape_error(tape),
                     "embedding: id -1 at index 0 is out of range [0, 10) for table [10x4]");
    ag_tape_reset(tape);

    w = ag_tensor_new(tape, 3, (int[]){2, 10, 4});
    ck_assert_ptr_null(ag_embedding(tape, w, (int[]){0}, 1, (int[]){1}));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "embedding: table is [2x10x4]: needs 2 dims (V,d)");
    ag_tape_reset(tape);

    w = ag_tensor_new(tape, 2, (int[]){10, 4});
    ck_assert_ptr_null(ag_embedding(tape, w, (int[]){0}, 4, (int[]){1, 1, 1, 1}));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "embedding: ids need 1..3 dims, each >= 1 (got 4 dims)");
    ag_tape_reset(tape);

    w = ag_tensor_new(tape, 2, (int[]){10, 4});
    ck_assert_ptr_null(ag_embedding(tape, w, NULL, 1, (int[]){1}));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(tape), "embedding: ids is NULL");
    ag_tape_free(tape);
}
END_TEST

Suite *suite_embedding(void)
{
    Suite *s = suite_create("embedding");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_embedding_lookup);
    tcase_add_test(tc, test_embedding_no_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_embedding_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_embedding_errors);
    suite_add_tcase(s, tc);
    return s;
}
