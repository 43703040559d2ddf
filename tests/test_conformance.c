/*
 * test_conformance.c - what every op must do, checked on every row of the
 * gradient-check table (ag_gradcheck_case_*: each op, the losses, the
 * layers), so that an op's row is all it takes to hold it to all of it:
 *
 *   - a wrong backward is caught: the row's check fails when its op's
 *     backward adds every gradient 1.25 times over (AG_BUG_SCALE);
 *   - an input used twice accumulates: the row built twice and summed has
 *     twice the gradient (an op that stored instead of adding would lose one);
 *   - 1 and 2 threads give the same bits, at a size where the fast kernels
 *     share the work out;
 *   - the fast and the reference kernels agree to rounding, forward and
 *     backward, at both sizes.
 *
 * The finite-difference check of every row itself is test_gradcheck_cmd.c's
 * (`attograd gradcheck` runs them all). Each op's own test file keeps only
 * what is special to it.
 */
#include "test_util.h"
#include "check/cases.h"
#include "kernels/threads.h"

#include <string.h>

/* A row's result and every input's gradient after backward of L = <g, y>
 * with fixed random weights g: what a check compares. */
typedef struct snapshot {
    ag_real *y, *grads;
    size_t n_y, n_grads;
} snapshot;

static void snapshot_free(snapshot *s)
{
    free(s->y);
    free(s->grads);
    memset(s, 0, sizeof(*s));
}

/* Row i (at its big size when big) built and differentiated under the given
 * kernels and thread count. */
static snapshot run_row(size_t i, int big, const char *kernels, int threads)
{
    ck_assert_int_eq(ag_set_kernels(kernels), AG_OK);
    ag_set_threads(threads);
    ag_case_setup s;
    char err[256] = "";
    ck_assert_msg(ag_case_setup_sized(i, 40 + i, big, &s, err, sizeof(err)) == AG_OK, "%s: %s",
                  ag_gradcheck_case_name(i), err);
    ag_tape *tape = ag_tape_new();
    ag_tensor *y = s.build(tape, s.inputs, s.ctx);
    ck_assert_msg(y, "%s: %s", ag_gradcheck_case_name(i), ag_tape_error(tape));
    snapshot r = {.n_y = y->size};
    ag_tape_free(tape);
    for (int k = 0; k < s.n_inputs; k++)
        r.n_grads += s.inputs[k]->size;
    r.y = malloc(r.n_y * sizeof(ag_real));
    r.grads = malloc(r.n_grads * sizeof(ag_real));
    ag_real *g = malloc(r.n_y * sizeof(ag_real));
    ck_assert(r.y && r.grads && g);
    ag_rng rng = ag_rng_new(7);
    for (size_t k = 0; k < r.n_y; k++)
        g[k] = (ag_real)ag_rng_normal(&rng);
    ck_assert_msg(ag_vjp(s.build, s.ctx, s.inputs, s.n_inputs, g, r.y, r.n_y, err, sizeof(err)) ==
                      AG_OK,
                  "%s: %s", ag_gradcheck_case_name(i), err);
    size_t at = 0;
    for (int k = 0; k < s.n_inputs; k++) {
        memcpy(r.grads + at, s.inputs[k]->grad, s.inputs[k]->size * sizeof(ag_real));
        at += s.inputs[k]->size;
    }
    free(g);
    ag_gradcheck_case_free(&s);
    ag_set_threads(1);
    return r;
}

/* The op whose backward AG_BUG_SCALE breaks for row i: its own when its
 * build records entries of it, else (the layer's op-by-op form) the op of
 * the entry that makes the result. */
static const char *bug_op_of(size_t i, char *buf, size_t len)
{
    ag_case_setup s;
    char err[256] = "";
    ck_assert_msg(ag_gradcheck_case_setup(i, 1, &s, err, sizeof(err)) == AG_OK, "%s", err);
    ag_tape *tape = ag_tape_new();
    ck_assert_ptr_nonnull(s.build(tape, s.inputs, s.ctx));
    const char *op = ag_gradcheck_case_op(i), *last = NULL;
    int found = 0;
    for (size_t k = 0; k < ag_tape_size(tape); k++) {
        ag_entry_info info;
        ck_assert_int_eq(ag_tape_entry_info(tape, k, &info), AG_OK);
        found |= strcmp(info.op, op) == 0;
        last = info.op;
    }
    snprintf(buf, len, "%s", found ? op : last);
    ag_tape_free(tape);
    ag_gradcheck_case_free(&s);
    return buf;
}

START_TEST(test_wrong_backward_is_caught)
{
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        const char *name = ag_gradcheck_case_name(i);
        char op[64];
        ag_gradcheck_opts o = ag_gradcheck_defaults();
        o.bug = AG_BUG_SCALE;
        o.bug_op = bug_op_of(i, op, sizeof(op));
        ag_gradcheck_result res;
        ag_case_setup s;
        char err[256] = "";
        ck_assert_msg(ag_gradcheck_case_run(i, 50 + i, &o, &res, &s, err, sizeof(err)) == AG_OK,
                      "%s", err);
        ag_gradcheck_case_free(&s);
        /* the plain sum is there to show what a weak loss misses: softmax's
         * true gradient of a sum is 0, and 1.25 times 0 is still 0 */
        int blind = strcmp(name, "softmax through a plain sum") == 0;
        ck_assert_msg(res.passed == blind, "%s: a backward of %s that adds 1.25 times over %s",
                      name, op, blind ? "is caught where it cannot be" : "is not caught");
    }
}
END_TEST

/* op(x...) + op(x...): each input feeds two entries, and the later copy's
 * backward runs first, so an op that assigned (=) its input gradient
 * instead of adding (+=) would erase it and halve the result. ctx is a
 * gradient-check case's setup. */
static ag_tensor *build_twice(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    const ag_case_setup *s = ctx;
    ag_tensor *y0 = s->build(tape, in, s->ctx);
    ag_tensor *y1 = s->build(tape, in, s->ctx);
    return ag_add(tape, y0, y1);
}

START_TEST(test_input_used_twice_accumulates)
{
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        ag_case_setup s;
        char err[256] = "";
        ck_assert_msg(ag_gradcheck_case_setup(i, 310 + i, &s, err, sizeof(err)) == AG_OK, "%s: %s",
                      ag_gradcheck_case_name(i), err);
        test_gradcheck(build_twice, &s, s.inputs, s.n_inputs);
        ag_gradcheck_case_free(&s);
    }
}
END_TEST

START_TEST(test_threads_give_the_same_bits)
{
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        snapshot one = run_row(i, 1, "fast", 1);
        size_t jobs = ag_parallel_jobs();
        snapshot two = run_row(i, 1, "fast", 2);
        /* a row with a big size (the layers' all have one) is big enough
         * for its op's kernel to share the work */
        int big = i >= ag_op_rows_n || ag_op_rows[i].big[0][0] > 0;
        ck_assert_msg(!big || ag_parallel_jobs() > jobs, "%s: 2 threads did not share the work",
                      ag_gradcheck_case_name(i));
        ck_assert_uint_eq(one.n_y, two.n_y);
        ck_assert_msg(memcmp(one.y, two.y, one.n_y * sizeof(ag_real)) == 0,
                      "%s: the forward differs on 2 threads", ag_gradcheck_case_name(i));
        ck_assert_msg(memcmp(one.grads, two.grads, one.n_grads * sizeof(ag_real)) == 0,
                      "%s: the gradients differ on 2 threads", ag_gradcheck_case_name(i));
        snapshot_free(&one);
        snapshot_free(&two);
    }
}
END_TEST

/* Whether a and b agree to rounding: within tol of the larger magnitude
 * (floored at 1, for values near 0), element by element. */
static void assert_close(const ag_real *a, const ag_real *b, size_t n, double tol, const char *what,
                         size_t row)
{
    for (size_t k = 0; k < n; k++) {
        double scale = fmax(1, fmax(fabs((double)a[k]), fabs((double)b[k])));
        ck_assert_msg(fabs((double)a[k] - (double)b[k]) <= tol * scale,
                      "%s: %s element %zu: fast %.9g, reference %.9g", ag_gradcheck_case_name(row),
                      what, k, (double)a[k], (double)b[k]);
    }
}

START_TEST(test_fast_and_reference_agree)
{
#ifdef AG_REAL_DOUBLE
    const double tol = 1e-10;
#else
    const double tol = 2e-4;
#endif
    for (int big = 0; big <= 1; big++)
        for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
            snapshot f = run_row(i, big, "fast", 1), r = run_row(i, big, "reference", 1);
            ck_assert_uint_eq(f.n_y, r.n_y);
            assert_close(f.y, r.y, f.n_y, tol, "the forward", i);
            assert_close(f.grads, r.grads, f.n_grads, tol, "the gradients", i);
            snapshot_free(&f);
            snapshot_free(&r);
        }
}
END_TEST

Suite *suite_conformance(void)
{
    Suite *s = suite_create("conformance");
    TCase *tc = tcase_create("every row");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_wrong_backward_is_caught);
    tcase_add_test(tc, test_input_used_twice_accumulates);
    tcase_add_test(tc, test_threads_give_the_same_bits);
    tcase_add_test(tc, test_fast_and_reference_agree);
    suite_add_tcase(s, tc);
    return s;
}
