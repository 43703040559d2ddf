/*
 * test_dropout.c - inverted dropout: p = 0 is the identity with nothing
 * recorded, kept elements are scaled by 1 / (1 - p) and their share is
 * 1 - p, the mask depends only on the seed (one draw from the caller's
 * generator, the same bits for any thread count), backward uses the same
 * mask, a deliberately wrong backward is caught, and the errors.
 */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

START_TEST(test_p0_is_identity)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 1, (int[]){3}, (ag_real[]){1, 2, 3});
    size_t entries = ag_tape_size(tape);
    ag_rng rng = ag_rng_new(1);
    ck_assert_ptr_eq(ag_dropout(tape, x, 0, NULL), x);
    ck_assert_ptr_eq(ag_dropout(tape, x, 0, &rng), x);
    ck_assert_uint_eq(ag_tape_size(tape), entries);    /* nothing recorded */
    ck_assert_uint_eq(rng.state, ag_rng_new(1).state); /* nothing drawn */
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_values)
{
    /* 100,000 ones at p = 0.25: each output is 0 or 4/3, about 3/4 are kept
     * (binomial: 5 standard deviations is 0.7%), the mean stays near 1 */
    ag_tape *tape = ag_tape_new();
    int n = 100000;
    ag_tensor *x = ag_tensor_new(tape, 2, (int[]){250, 400});
    for (int i = 0; i < n; i++)
        x->data[i] = 1;
    ag_rng rng = ag_rng_new(3);
    ag_tensor *y = ag_dropout(tape, x, 0.25, &rng);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[1], 400);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (y->data[i] != 0 && y->data[i] != (ag_real)(1 / 0.75))
            ck_abort_msg("element %d is %.9g", i, (double)y->data[i]);
        kept += y->data[i] != 0;
    }
    ck_assert_msg(fabs(kept / (double)n - 0.75) < 0.007, "kept %d of %d", kept, n);
    /* p = 1 drops everything */
    ag_tensor *none = ag_dropout(tape, x, 1, &rng);
    ck_assert_ptr_nonnull(none);
    for (int i = 0; i < n; i++)
        if (none->data[i] != 0)
            ck_abort_msg("p = 1 kept element %d", i);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_seeded)
{
    /* the same seed, the same mask; one draw per call whatever the size;
     * another seed, another mask */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 1, (int[]){1000});
    for (int i = 0; i < 1000; i++)
        x->data[i] = (ag_real)(i + 1);
    ag_rng r1 = ag_rng_new(5), r2 = ag_rng_new(5), r3 = ag_rng_new(6), once = ag_rng_new(5);
    ag_tensor *a = ag_dropout(tape, x, 0.5, &r1);
    ag_tensor *b = ag_dropout(tape, x, 0.5, &r2);
    ag_tensor *c = ag_dropout(tape, x, 0.5, &r3);
    ck_assert_ptr_nonnull(c);
    ck_assert(memcmp(a->data, b->data, 1000 * sizeof(ag_real)) == 0);
    ck_assert(memcmp(a->data, c->data, 1000 * sizeof(ag_real)) != 0);
    ag_rng_next(&once);
    ck_assert_uint_eq(r1.state, once.state);
    /* a second call on the same generator draws a new mask */
    ag_tensor *d = ag_dropout(tape, x, 0.5, &r1);
    ck_assert(memcmp(a->data, d->data, 1000 * sizeof(ag_real)) != 0);
    ag_tape_free(tape);
}
END_TEST

/* ctx: p; every pass draws the same mask from a fresh generator */
static ag_tensor *build_dropout(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    ag_rng rng = ag_rng_new(12);
    return ag_dropout(tape, in[0], *(const double *)ctx, &rng);
}

START_TEST(test_threads_same_bits)
{
    /* (768, 512) is split over the threads; the mask is a function of the
     * index, so it cannot depend on who computes it */
    ag_rng fill = ag_rng_new(4);
    ag_tensor *x = test_param(&fill, 2, (int[]){768, 512});
    double p = 0.1;
    test_same_bits_any_threads(build_dropout, &p, &x, 1);
    ag_param_free(x);
}
END_TEST

/* ---- backward ---- */

START_TEST(test_backward_same_mask)
{
    /* L = sum(y): dx = 1 / (1 - p) exactly where y kept x, 0 elsewhere */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 1, (int[]){5000}));
    for (int i = 0; i < 5000; i++)
        x->data[i] = (ag_real)(i % 7 + 1);
    ag_rng rng = ag_rng_new(8);
    ag_tensor *y = ag_dropout(tape, x, 0.4, &rng);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, y)), AG_OK);
    for (int i = 0; i < 5000; i++)
        if (x->grad[i] != (y->data[i] != 0 ? (ag_real)(1 / 0.6) : 0))
            ck_abort_msg("element %d: y %g, dx %g", i, (double)y->data[i], (double)x->grad[i]);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_dropout_gradcheck)
{
    static const double ps[] = {0.1, 0.5, 0.9};
    const test_shape shapes[][1] = {{{1, {1}}}, {{2, {3, 5}}}, {{3, {2, 3, 17}}}};
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 3; k++)
            test_gradcheck_shapes(build_dropout, (void *)&ps[k], 1, shapes[i], 700 + 3 * i + k);
}
END_TEST

/* A plausible mistake: the mask applied but the 1 / (1 - p) forgotten
 * (read off the output: nonzero where kept, for nonzero x). */
static void wrong_backward(ag_tape *tape, const ag_entry *e)
{
    (void)tape;
    const ag_tensor *x = e->in[0];
    for (size_t i = 0; i < x->size; i++)
        x->grad[i] += e->out->data[i] != 0 ? e->out->grad[i] : 0;
}
static const ag_op wrong_op = {"dropout", wrong_backward, 0, 0};

START_TEST(test_wrong_backward_is_caught)
{
    ag_rng rng = ag_rng_new(93);
    ag_tensor *x = test_param(&rng, 2, (int[]){3, 6});
    double p = 0.3;
    test_wrong_backward_caught(build_dropout, &p, &wrong_op, x);
    ag_param_free(x);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_rng rng = ag_rng_new(1);
    ag_tensor *x = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_dropout(tape, NULL, 0.1, &rng));
    test_expect_error(tape, AG_ERR_ARG, "dropout: input 1 is NULL");
    x = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_dropout(tape, x, -0.1, &rng));
    test_expect_error(tape, AG_ERR_ARG, "dropout: p -0.1 is not in [0, 1]");
    x = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_dropout(tape, x, 1.5, &rng));
    test_expect_error(tape, AG_ERR_ARG, "dropout: p 1.5 is not in [0, 1]");
    x = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_dropout(tape, x, NAN, &rng));
    test_expect_error(tape, AG_ERR_ARG, "dropout: p nan is not in [0, 1]");
    x = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_dropout(tape, x, 0.2, NULL));
    test_expect_error(tape, AG_ERR_ARG, "dropout: p is 0.2 but rng is NULL (evaluation is p = 0)");
    /* sticky: after an error even p = 0 returns NULL */
    x = ag_tensor_new(tape, 2, (int[]){2, 3});
    ck_assert_ptr_null(ag_dropout(tape, x, 2, &rng));
    ck_assert_ptr_null(ag_dropout(tape, x, 0, &rng));
    test_expect_error(tape, AG_ERR_ARG, "dropout: p 2 is not in [0, 1]");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_anomaly)
{
    /* NaN stays NaN where kept and where dropped (x * 0), as in PyTorch:
     * detect mode names dropout at the next op */
    ag_tape *tape = ag_tape_new();
    ag_tensor *p = ag_param_new(1, (int[]){64});
    for (int i = 0; i < 64; i++)
        p->data[i] = NAN;
    ag_rng rng = ag_rng_new(2);
    ag_tape_detect_anomaly(tape, 1);
    ag_tensor *y = ag_dropout(tape, p, 0.5, &rng);
    ck_assert_ptr_nonnull(y);
    for (int i = 0; i < 64; i++)
        ck_assert(isnan(y->data[i]));
    ck_assert_ptr_null(ag_sum(tape, y));
    test_expect_error(tape, AG_ERR_NUMERIC,
                      "anomaly: the output of op dropout (tape entry 0, [64]) is NaN at element 0");
    ag_param_free(p);
    ag_tape_free(tape);
}
END_TEST

Suite *suite_dropout(void)
{
    Suite *s = suite_create("dropout");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_p0_is_identity);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_seeded);
    tcase_add_test(tc, test_threads_same_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_test(tc, test_backward_same_mask);
    tcase_add_test(tc, test_dropout_gradcheck);
    tcase_add_test(tc, test_wrong_backward_is_caught);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_anomaly);
    suite_add_tcase(s, tc);
    return s;
}
