/*
 * gradcheck.c - compare analytic gradients with central differences,
 *   D(h) = (L(x + h e_i) - L(x - h e_i)) / 2h,
 * extrapolated as (4 D(h) - D(2h)) / 3 (Richardson), which cancels the h^2
 * error term: a chain like attention is strongly curved, and the plain
 * central difference's truncation error alone failed the float tolerance.
 * A result with several elements is projected onto fixed random weights,
 * L = sum(w * out), so that every output element matters to the loss and a
 * wrong backward cannot hide (the sum of a softmax is always 1).
 */
#include "../core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ag_gradcheck_opts ag_gradcheck_defaults(void)
{
    ag_gradcheck_opts o;
    memset(&o, 0, sizeof(o));
    /* eps balances rounding noise (~ ulp(L) / eps) against the O(eps^4)
     * truncation left after extrapolation; chosen on matmul, softmax and a
     * causal attention chain over 20-30 seeds: worst relative error about
     * 4e-3 in float and 3e-8 in double, a fraction of rtol. */
    o.eps = AG_GRADCHECK_EPS;
    o.rtol = AG_GRADCHECK_RTOL;
    o.atol = AG_GRADCHECK_ATOL;
    o.max_samples = 256;
    o.seed = 1;
    return o;
}

typedef struct check_run {
    ag_build_fn build;
    void *ctx;
    ag_tensor *const *inputs;
    ag_tape *tape;
    ag_real *weights; /* (out_size) projection weights, when out_size > 1 */
    size_t out_size;  /* the result's size on the first pass; 0 before it */
    uint64_t seed;
} check_run;

/* Build the result on the private tape and make the projection weights on
 * the first pass. NULL with the tape error set. */
static ag_tensor *build_result(check_run *run)
{
    ag_tape *tape = run->tape;
    ag_tape_reset(tape);
    ag_tensor *out = run->build(tape, run->inputs, run->ctx);
    if (!out) {
        if (ag_tape_status(tape) == AG_OK)
            ag_tape_fail(tape, AG_ERR_ARG, "gradcheck: the build function returned NULL");
        return NULL;
    }
    if (run->out_size == 0 && out->size > 1) {
        run->weights = ag_malloc(out->size * sizeof(ag_real));
        if (!run->weights) {
            ag_tape_fail(tape, AG_ERR_NOMEM, "gradcheck: out of memory");
            return NULL;
        }
        ag_rng rng = ag_rng_new(run->seed ^ 0x5eedULL);
        for (size_t i = 0; i < out->size; i++)
            run->weights[i] = (ag_real)ag_rng_normal(&rng);
    }
    if (run->out_size == 0)
        run->out_size = out->size;
    if (out->size != run->out_size) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "gradcheck: the result changed size between passes");
        return NULL;
    }
    return out;
}

/* The loss as a tape tensor, for the analytic pass: L = sum(w * out), so
 * backward seeds dout = w exactly. */
static ag_tensor *build_loss(check_run *run)
{
    ag_tensor *out = build_result(run);
    if (!out || out->size == 1)
        return out;
    ag_tensor *w = ag_tensor_from(run->tape, out->ndim, out->shape, run->weights);
    return ag_sum(run->tape, ag_mul(run->tape, out, w));
}

/* The same loss as a number, for the differences: summed in double, so the
 * check's own arithmetic adds no rounding noise to L(x + eps) - L(x - eps)
 * (in a float build that noise, divided by 2 eps, was the largest error). */
static int loss_value(check_run *run, double *value)
{
    ag_tensor *out = build_result(run);
    if (!out)
        return 0;
    double acc = 0;
    for (size_t i = 0; i < out->size; i++)
        acc += (double)out->data[i] * (run->weights ? (double)run->weights[i] : 1.0);
    *value = acc;
    return 1;
}

/* D(h) = (L(x + h e_i) - L(x - h e_i)) / 2h, with the steps actually taken
 * (x + h rounds in ag_real). Restores x[i]. Returns 0 with the tape error set. */
static int central_difference(check_run *run, ag_tensor *x, size_t i, double h, double *d)
{
    ag_real orig = x->data[i];
    double f_plus = 0, f_minus = 0;
    x->data[i] = (ag_real)(orig + h);
    double h_plus = (double)x->data[i] - (double)orig;
    int ok = loss_value(run, &f_plus);
    x->data[i] = (ag_real)(orig - h);
    double h_minus = (double)orig - (double)x->data[i];
    ok = ok && loss_value(run, &f_minus);
    x->data[i] = orig;
    *d = (f_plus - f_minus) / (h_plus + h_minus);
    return ok;
}

static void copy_error(const ag_tape *tape, char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", ag_tape_error(tape));
}

ag_status ag_gradcheck(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n_inputs,
                       const ag_gradcheck_opts *opts, ag_gradcheck_result *result, char *err,
                       size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!build || !inputs || n_inputs < 1 || !result) {
        if (err && errlen)
            snprintf(err, errlen, "gradcheck: bad arguments");
        return AG_ERR_ARG;
    }
    for (int k = 0; k < n_inputs; k++) {
        if (!inputs[k] || !inputs[k]->grad) {
            if (err && errlen)
                snprintf(err, errlen, "gradcheck: input %d is NULL or has no gradient", k + 1);
            return AG_ERR_ARG;
        }
    }
    ag_gradcheck_opts o = ag_gradcheck_defaults();
    if (opts) {
        if (opts->eps > 0)
            o.eps = opts->eps;
        if (opts->rtol > 0)
            o.rtol = opts->rtol;
        if (opts->atol > 0)
            o.atol = opts->atol;
        o.max_samples = opts->max_samples;
        o.seed = opts->seed;
        o.bug = opts->bug;
        o.bug_op = opts->bug_op;
        o.numeric = opts->numeric;
    }
    memset(result, 0, sizeof(*result));
    result->tolerance = o.rtol;
    result->worst_input = -1;

    check_run run = {build, ctx, inputs, ag_tape_new(), NULL, 0, o.seed};
    if (!run.tape) {
        if (err && errlen)
            snprintf(err, errlen, "gradcheck: out of memory");
        return AG_ERR_NOMEM;
    }
    run.tape->bug = o.bug;
    run.tape->bug_op = o.bug_op;
    ag_status status = AG_OK;

    /* The analytic gradient, once. */
    ag_zero_grad(inputs, (size_t)n_inputs);
    ag_tensor *loss = build_loss(&run);
    status = loss ? ag_backward(run.tape, loss) : ag_tape_status(run.tape);
    if (status != AG_OK) {
        copy_error(run.tape, err, errlen);
        goto done;
    }

    ag_rng pick = ag_rng_new(o.seed);
    for (int k = 0; k < n_inputs; k++) {
        ag_tensor *x = inputs[k];
        result->total += x->size;
        int sampled = o.max_samples && x->size > o.max_samples;
        size_t count = sampled ? o.max_samples : x->size;
        for (size_t c = 0; c < count; c++) {
            size_t i = sampled ? (size_t)(ag_rng_next(&pick) % x->size) : c;
            double d1, d2;
            if (!central_difference(&run, x, i, o.eps, &d1) ||
                !central_difference(&run, x, i, 2 * o.eps, &d2)) {
                status = ag_tape_status(run.tape);
                copy_error(run.tape, err, errlen);
                goto done;
            }
            /* Richardson: D(h) = dL/dx + (d3L/dx3) h^2 / 6 + O(h^4), so the
             * h^2 term cancels in (4 D(h) - D(2h)) / 3. */
            double numeric = (4 * d1 - d2) / 3;
            if (o.numeric && o.numeric[k])
                o.numeric[k][i] = (ag_real)numeric;
            double analytic = (double)x->grad[i];
            double abs_err = fabs(analytic - numeric);
            double denom = fmax(fmax(fabs(analytic), fabs(numeric)), o.atol);
            double rel_err = abs_err / denom;
            /* a step that vanished (x + eps == x in ag_real) gives 0/0:
             * report it as an infinite error, not as no error at all */
            if (isnan(abs_err))
                abs_err = INFINITY;
            if (isnan(rel_err))
                rel_err = INFINITY;
            if (abs_err > result->max_abs)
                result->max_abs = abs_err;
            if (rel_err > result->max_rel || result->worst_input < 0) {
                result->max_rel = rel_err;
                result->worst_input = k;
                result->worst_index = i;
            }
            result->checked++;
        }
    }
    result->passed = result->max_rel <= o.rtol;
done:
    free(run.weights);
    ag_tape_free(run.tape);
    return status;
}
