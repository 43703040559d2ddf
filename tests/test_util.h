/*
 * test_util.h - helpers shared by the Check suites: tolerances for the
 * build's precision, random tensors, and a finite-difference check that
 * fails the test with the worst element named.
 */
#ifndef AG_TEST_UTIL_H
#define AG_TEST_UTIL_H

#include "attograd.h"
#include "core/internal.h"
#include "io/io.h"

#include <check.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef AG_REAL_DOUBLE
#define AG_TEST_TOL 1e-12 /* forward values computed two ways */
#else
#define AG_TEST_TOL 1e-5
#endif

/* A parameter of the given shape filled with normal(0, 1) numbers. */
static inline ag_tensor *test_param(ag_rng *rng, int ndim, const int *shape)
{
    ag_tensor *t = ag_param_new(ndim, shape);
    ck_assert_ptr_nonnull(t);
    ag_fill_normal(t, rng, 0, 1);
    return t;
}

/* Run ag_gradcheck with opts; fail the test (naming the worst element)
 * unless it ran over every element and passed. */
static inline void test_gradcheck_with(ag_build_fn build, void *ctx, ag_tensor *const *inputs,
                                       int n, const ag_gradcheck_opts *opts)
{
    ag_gradcheck_result r;
    char err[256];
    ag_status st = ag_gradcheck(build, ctx, inputs, n, opts, &r, err, sizeof(err));
    ck_assert_msg(st == AG_OK, "gradcheck could not run: %s", err);
    ck_assert_msg(r.checked == r.total, "checked %zu of %zu", r.checked, r.total);
    ck_assert_msg(r.passed, "max rel error %g > %g (abs %g) at input %d element %zu", r.max_rel,
                  r.tolerance, r.max_abs, r.worst_input, r.worst_index);
}

/* The same with this build's default tolerances, every element checked. */
static inline void test_gradcheck(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n)
{
    ag_gradcheck_opts opts = ag_gradcheck_defaults();
    opts.max_samples = 0;
    test_gradcheck_with(build, ctx, inputs, n, &opts);
}

/* A shape for test_gradcheck_shapes. */
typedef struct test_shape {
    int ndim;
    int shape[AG_MAX_DIMS];
} test_shape;

/* Make one normal(0, 1) parameter per shape (seeded), run test_gradcheck
 * with every one of them as an input, and free them. */
static inline void test_gradcheck_shapes(ag_build_fn build, void *ctx, int n,
                                         const test_shape *shapes, uint64_t seed)
{
    ag_rng rng = ag_rng_new(seed);
    ag_tensor *in[AG_MAX_INPUTS] = {NULL};
    ck_assert_int_le(n, AG_MAX_INPUTS);
    for (int i = 0; i < n; i++)
        in[i] = test_param(&rng, shapes[i].ndim, shapes[i].shape);
    test_gradcheck(build, ctx, in, n);
    for (int i = 0; i < n; i++)
        ag_param_free(in[i]);
}

/* Assert that got[0..n) matches want[0..n) within tol (infinities must be
 * equal), naming the first element that does not. Fails through ck_abort_msg
 * rather than asserting per element: Check reports every passing assertion
 * to its parent process. */
static inline void test_assert_values(const ag_real *got, const double *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!((double)got[i] == want[i] || fabs((double)got[i] - want[i]) <= tol))
            ck_abort_msg("element %zu: got %.9g, want %.9g", i, (double)got[i], want[i]);
}

/* Assert the tape holds exactly this error (status and message), then reset
 * it for the next case. */
static inline void test_expect_error(ag_tape *tape, ag_status status, const char *message)
{
    ck_assert_msg(ag_tape_status(tape) == status, "status %s, want %s (message \"%s\")",
                  ag_status_name(ag_tape_status(tape)), ag_status_name(status),
                  ag_tape_error(tape));
    ck_assert_str_eq(ag_tape_error(tape), message);
    ag_tape_reset(tape);
}

/* For test_wrong_backward_caught: the op's own build, and the descriptor
 * put on its last entry (NULL: left alone). */
typedef struct test_wrong_op {
    ag_build_fn build;
    void *ctx;
    const ag_op *wrong;
} test_wrong_op;

static inline ag_tensor *test_build_wrong(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    const test_wrong_op *w = ctx;
    ag_tensor *y = w->build(tape, in, w->ctx);
    if (y && w->wrong)
        tape->entries[tape->n_entries - 1].op = w->wrong;
    return y;
}

/* Prove that the gradient check can fail: build(x) (one input, ctx) with its
 * last entry's backward swapped for wrong's (a deliberately wrong formula,
 * written in the test) must fail ag_gradcheck by far, and pass unswapped. */
static inline void test_wrong_backward_caught(ag_build_fn build, void *ctx, const ag_op *wrong,
                                              ag_tensor *x)
{
    test_wrong_op w = {build, ctx, wrong};
    ag_gradcheck_result r;
    char err[256];
    ck_assert_msg(ag_gradcheck(test_build_wrong, &w, &x, 1, NULL, &r, err, sizeof(err)) == AG_OK,
                  "%s", err);
    ck_assert_msg(!r.passed && r.max_rel > 10 * r.tolerance,
                  "the wrong backward passed (max rel %g)", r.max_rel);
    w.wrong = NULL;
    ck_assert_msg(ag_gradcheck(test_build_wrong, &w, &x, 1, NULL, &r, err, sizeof(err)) == AG_OK,
                  "%s", err);
    ck_assert_msg(r.passed, "the right backward failed (max rel %g)", r.max_rel);
}

/* build(in) and its backward, L = sum(y * g) with fixed random g, on 1 and
 * on 2 threads: the output and every input's gradient must be the same bits
 * (inputs are parameters; their gradients are zeroed first). */
static inline void test_same_bits_any_threads(ag_build_fn build, void *ctx, ag_tensor *const *in,
                                              int n)
{
    ag_real *keep[2] = {NULL, NULL};
    size_t size = 0;
    for (int t = 1; t <= 2; t++) {
        ag_set_threads(t);
        ag_zero_grad(in, (size_t)n);
        ag_tape *tape = ag_tape_new();
        ag_tensor *y = build(tape, in, ctx);
        ck_assert_msg(y != NULL, "%s", ag_tape_error(tape));
        ag_tensor *g = ag_tensor_new(tape, y->ndim, y->shape);
        ag_rng rng = ag_rng_new(9);
        ag_fill_normal(g, &rng, 0, 1);
        ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, y, g))), AG_OK);
        size = y->size;
        for (int k = 0; k < n; k++)
            size += in[k]->size;
        ag_real *dst = keep[t - 1] = malloc(size * sizeof(ag_real));
        ck_assert_ptr_nonnull(dst);
        memcpy(dst, y->data, y->size * sizeof(ag_real));
        dst += y->size;
        for (int k = 0; k < n; k++, dst += in[k - 1]->size)
            memcpy(dst, in[k]->grad, in[k]->size * sizeof(ag_real));
        ag_tape_free(tape);
    }
    ag_set_threads(1);
    ck_assert_msg(memcmp(keep[0], keep[1], size * sizeof(ag_real)) == 0, "1 and 2 threads differ");
    free(keep[0]);
    free(keep[1]);
}

/* What the checkpoint at path records (the test fails when it does not
 * load): the settings in *st, so a test can see the values a command parsed. */
static inline void test_checkpoint_state(const char *path, ag_train_state *st)
{
    ag_checkpoint *ck = NULL;
    char err[512];
    ck_assert_msg(ag_checkpoint_load(path, &ck, st, err, sizeof(err)) == AG_OK, "%s", err);
    ag_checkpoint_free(ck);
}

/* A text of n characters over `distinct` code points from U+0100 (two or
 * three bytes each), each of them used in the first `distinct` characters,
 * the rest drawn from seed. */
static inline ag_text *test_wide_text(size_t n, int distinct, uint64_t seed)
{
    char *s = malloc(3 * n + 1);
    ck_assert_ptr_nonnull(s);
    ag_rng rng = ag_rng_new(seed);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int cp =
            0x100 + (i < (size_t)distinct ? (int)i : (int)ag_rng_below(&rng, (uint32_t)distinct));
        if (cp < 0x800) {
            s[len++] = (char)(0xC0 | (cp >> 6));
        } else {
            s[len++] = (char)(0xE0 | (cp >> 12));
            s[len++] = (char)(0x80 | ((cp >> 6) & 63));
        }
        s[len++] = (char)(0x80 | (cp & 63));
    }
    ag_text *t;
    char err[256];
    ck_assert_int_eq(ag_text_parse(s, len, "wide", NULL, &t, err, sizeof(err)), AG_OK);
    free(s);
    return t;
}

/* A progress hook (ag_progress_set) that remembers the last report, counts
 * them and, on report number stop_at (0: never), calls ag_interrupt. */
typedef struct test_heard {
    int calls;
    char what[32];
    double done, total;
    int stop_at;
} test_heard;

static inline void test_hear(void *ctx, const char *what, double done, double total)
{
    test_heard *h = ctx;
    h->calls++;
    snprintf(h->what, sizeof(h->what), "%s", what);
    h->done = done, h->total = total;
    if (h->calls == h->stop_at)
        ag_interrupt();
}

#endif /* AG_TEST_UTIL_H */
