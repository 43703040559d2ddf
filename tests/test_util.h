/*
 * test_util.h - helpers shared by the Check suites: tolerances for the
 * build's precision, random tensors, and a finite-difference check that
 * fails the test with the worst element named.
 */
#ifndef AG_TEST_UTIL_H
#define AG_TEST_UTIL_H

#include "attograd.h"
#include "core/internal.h"

#include <check.h>
#include <math.h>

#ifdef AG_REAL_DOUBLE
#define AG_TEST_TOL 1e-12   /* forward values computed two ways */
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

/* Run ag_gradcheck with this build's default tolerances over all elements;
 * fail the test (naming the worst element) if it does not pass. */
static inline void test_gradcheck(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n)
{
    ag_gradcheck_opts opts = ag_gradcheck_defaults();
    opts.max_samples = 0;
    ag_gradcheck_result r;
    char err[256];
    ag_status st = ag_gradcheck(build, ctx, inputs, n, &opts, &r, err, sizeof(err));
    ck_assert_msg(st == AG_OK, "gradcheck could not run: %s", err);
    ck_assert_msg(r.checked == r.total, "checked %zu of %zu", r.checked, r.total);
    ck_assert_msg(r.passed, "max rel error %g > %g (abs %g) at input %d element %zu", r.max_rel,
                  r.tolerance, r.max_abs, r.worst_input, r.worst_index);
}

#endif /* AG_TEST_UTIL_H */
