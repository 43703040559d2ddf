/*
 * cases.h - the ops' rows of the gradient-check table (cases.c), for the
 * whole table's index beside the layers (src/nn/cases.c). Not installed.
 */
#ifndef AG_CHECK_CASES_H
#define AG_CHECK_CASES_H

#include "../core/internal.h"

/* One op's check: random N(0, 1) inputs of the given shapes, built by build. */
typedef struct ag_op_row {
    const char *op;    /* the op these rows check (what --op selects) */
    const char *name;  /* the row's label */
    ag_build_fn build; /* build(tape, inputs, setup) */
    int n_in;          /* inputs, named by names */
    const char *names[3];
    int ndim[3];
    int shape[3][AG_MAX_DIMS];
    double gap;              /* inputs are moved at least this far from 0 (relu's kink) */
    int big[3][AG_MAX_DIMS]; /* the same ndims at a size where the fast kernel uses the
                                threads; zeros: the shapes above */
} ag_op_row;

extern const ag_op_row ag_op_rows[];
extern const size_t ag_op_rows_n;

/* Row r's inputs drawn from rng into s (zeroed by the caller), at its big
 * shapes when big; its build and ctx set. AG_OK, or AG_ERR_NOMEM with err
 * set and s released. */
ag_status ag_op_row_setup(const ag_op_row *r, ag_rng *rng, int big, ag_case_setup *s, char *err,
                          size_t errlen);

/* Row i of the whole table (src/nn/cases.c), as ag_gradcheck_case_setup,
 * or with big at a size where the fast kernels use the threads. */
ag_status ag_case_setup_sized(size_t i, uint64_t seed, int big, ag_case_setup *s, char *err,
                              size_t errlen);

#endif /* AG_CHECK_CASES_H */
