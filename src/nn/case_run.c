/*
 * case_run.c - running a row of the library's gradient-check table: once
 * (its setup kept, to show the worst element), or at a range of step sizes
 * (how the finite difference's error depends on eps).
 */
#include "../core/internal.h"

#include <stdio.h>

ag_status ag_gradcheck_case_run(size_t i, uint64_t seed, const ag_gradcheck_opts *opts,
                                ag_gradcheck_result *result, ag_case_setup *s, char *err,
                                size_t errlen)
{
    char why[256] = "";
    const char *name = ag_gradcheck_case_name(i);
    ag_status st = s ? ag_gradcheck_case_setup(i, seed, s, why, sizeof(why)) : AG_ERR_ARG;
    if (st == AG_OK) {
        ag_gradcheck_opts o = opts ? *opts : ag_gradcheck_defaults();
        double rtol = o.rtol > 0 ? o.rtol : AG_GRADCHECK_RTOL;
        if (s->rtol > rtol)
            o.rtol = s->rtol; /* a deep row's own: its rounding in this precision */
        st = ag_gradcheck(s->build, s->ctx, s->inputs, s->n_inputs, &o, result, why, sizeof(why));
    }
    if (st != AG_OK) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", name ? name : "gradcheck",
                     s ? why : "the setup is NULL");
        ag_gradcheck_case_free(s);
    }
    return st;
}

ag_status ag_gradcheck_case_sweep(size_t i, uint64_t seed, const ag_gradcheck_opts *opts,
                                  const double *eps, int n, double *abs_err, double *rel_err,
                                  char *err, size_t errlen)
{
    if (!opts || !eps || !abs_err || !rel_err || n < 1) {
        if (err && errlen)
            snprintf(err, errlen, "gradcheck sweep: a NULL argument or no step sizes");
        return AG_ERR_ARG;
    }
    for (int k = 0; k < n; k++) {
        ag_gradcheck_opts o = *opts;
        o.eps = eps[k];
        ag_gradcheck_result res;
        ag_case_setup s;
        ag_status st = ag_gradcheck_case_run(i, seed, &o, &res, &s, err, errlen);
        if (st != AG_OK)
            return st;
        abs_err[k] = res.max_abs;
        rel_err[k] = res.max_rel;
        ag_gradcheck_case_free(&s);
    }
    return AG_OK;
}
