/*
 * test_case_run.c - running rows of the gradient-check table:
 * ag_gradcheck_case_run (a row checked, its setup kept; a bad row named)
 * and ag_gradcheck_case_sweep (the error at each step size, the same as
 * the rows run one eps at a time).
 */
#include "test_util.h"

#include <math.h>
#include <string.h>

static size_t row_of(const char *op)
{
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++)
        if (strcmp(ag_gradcheck_case_op(i), op) == 0)
            return i;
    ck_abort_msg("no row for %s", op);
    return 0;
}

START_TEST(test_run_keeps_the_setup)
{
    size_t r = row_of("matmul");
    ag_gradcheck_opts go = ag_gradcheck_defaults();
    ag_gradcheck_result res;
    ag_case_setup s;
    char err[300] = "";
    ck_assert_msg(ag_gradcheck_case_run(r, 1, &go, &res, &s, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert(res.passed);
    ck_assert_int_ge(s.n_inputs, 2);
    ck_assert_ptr_nonnull(s.inputs[0]->grad); /* left holding the analytic gradient */
    ag_gradcheck_case_free(&s);
    /* a row that does not exist: named, nothing kept */
    size_t bad = ag_gradcheck_case_count();
    ck_assert_int_ne(ag_gradcheck_case_run(bad, 1, &go, &res, &s, err, sizeof(err)), AG_OK);
    ck_assert_ptr_nonnull(strstr(err, "gradcheck: "));
    ck_assert_int_eq(s.n_inputs, 0);
    ck_assert_int_eq(ag_gradcheck_case_run(r, 1, &go, &res, NULL, err, sizeof(err)), AG_ERR_ARG);
}
END_TEST

START_TEST(test_sweep_matches_single_runs)
{
    size_t r = row_of("softmax");
    ag_gradcheck_opts go = ag_gradcheck_defaults();
    double eps[3] = {1e-1, 1e-3, 1e-12}, abs_err[3], rel_err[3];
    char err[300] = "";
    ck_assert_msg(ag_gradcheck_case_sweep(r, 4, &go, eps, 3, abs_err, rel_err, err, sizeof(err)) ==
                      AG_OK,
                  "%s", err);
    for (int k = 0; k < 3; k++) {
        ag_gradcheck_opts one = go;
        one.eps = eps[k];
        ag_gradcheck_result res;
        ag_case_setup s;
        ck_assert_int_eq(ag_gradcheck_case_run(r, 4, &one, &res, &s, err, sizeof(err)), AG_OK);
        ck_assert(res.max_abs == abs_err[k] || (isinf(res.max_abs) && isinf(abs_err[k])));
        ck_assert(res.max_rel == rel_err[k] || (isinf(res.max_rel) && isinf(rel_err[k])));
        ag_gradcheck_case_free(&s);
    }
    ck_assert(abs_err[1] < abs_err[2] || isinf(abs_err[2])); /* round-off at a tiny step */
    ck_assert_int_eq(ag_gradcheck_case_sweep(r, 4, &go, eps, 0, abs_err, rel_err, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_int_ne(ag_gradcheck_case_sweep(ag_gradcheck_case_count(), 4, &go, eps, 3, abs_err,
                                             rel_err, err, sizeof(err)),
                     AG_OK);
}
END_TEST

Suite *suite_case_run(void)
{
    Suite *s = suite_create("case_run");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_run_keeps_the_setup);
    tcase_add_test(tc, test_sweep_matches_single_runs);
    suite_add_tcase(s, tc);
    return s;
}
