/*
 * explain_layernorm.c - `attograd explain layernorm`: layer normalisation's
 * forward and backward told step by step with the numbers given, in the
 * style of `explain softmax`: the mean, the variance, 1/std, the normalised
 * row, the scale and shift; then the Jacobian, the input gradient as a
 * vector-Jacobian product and by the cheap formula backward uses, the
 * library's own answer, and a finite-difference check of every component.
 */
#include "opts.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_N AG_EXPLAIN_MAX_LOGITS

#define LIST(...) AG_LIST(ag_explain_opts, __VA_ARGS__)
static const ag_option options[] = {
    LIST("--x", x, 1, MAX_N, "X1,X2,...", "one row of x (%L to %H numbers; default: the example)"),
    LIST("--upstream", upstream, 1, MAX_N, "G1,G2,...",
         "dL/dy, one per value (default: 1, then 0s,\nthat is L = y_0)"),
    LIST("--weight", weight, 1, MAX_N, "W1,W2,...", "the scale, one per value (default: all 1)"),
    LIST("--bias", bias, 1, MAX_N, "B1,B2,...", "the shift, one per value (default: all 0)"),
    AG_INT(ag_explain_opts, "--decimals", decimals, 4, 10, 4, "N",
           "digits after the point (default %D, %R)"),
};
#undef LIST

static const ag_command explain_layernorm_info = {
    .name = "explain layernorm",
    .usage = "attograd explain layernorm [--x X1,X2,...] [--upstream G1,G2,...] [--weight W1,...] "
             "[--bias B1,...] [--decimals N]",
    .summary = "backprop through layer normalisation, step by step with real numbers",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 25,
};

void ag_cli_explain_layernorm_help(void)
{
    printf("usage: %s\n\n"
           "Walk through layer normalisation's forward and backward with the numbers\n"
           "you give: the mean, the variance, 1/std = 1/sqrt(var + %g), the normalised\n"
           "row and its scale and shift; the Jacobian; the input gradient as a\n"
           "vector-Jacobian product and by the formula backward uses; and a\n"
           "finite-difference check of every component. Without --x it runs an example,\n"
           "--x 1,2,3 --upstream 0.1,0.2,-0.3, and says so.\n\n",
           explain_layernorm_info.usage, AG_LAYERNORM_EPS);
    ag_cli_print_options(&explain_layernorm_info);
}

int ag_cli_explain_layernorm_parse(int argc, char **argv, ag_explain_opts *o)
{
    const ag_command *cmd = &explain_layernorm_info;
    o->topic = AG_EXPLAIN_LAYERNORM;
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r != AG_CLI_GO)
        return r;
    if (o->x.n == 0) { /* none given: an example (docs/cli.md's) */
        static const double x[3] = {1, 2, 3}, g[3] = {0.1, 0.2, -0.3};
        o->example = 1;
        o->x.n = 3;
        memcpy(o->x.v, x, sizeof(x));
        if (o->upstream.n == 0) {
            o->upstream.n = 3;
            memcpy(o->upstream.v, g, sizeof(g));
        }
    }
    int n = o->x.n;
    if (o->upstream.n == 0) {
        o->upstream.n = n;
        for (int i = 0; i < n; i++)
            o->upstream.v[i] = i == 0;
    }
    const struct {
        const char *flag;
        int count;
    } lists[] = {{"--upstream", o->upstream.n}, {"--weight", o->weight.n}, {"--bias", o->bias.n}};
    for (int k = 0; k < 3; k++)
        if (lists[k].count && lists[k].count != n)
            return ag_cli_usage_error(cmd, "%s has %d number(s) but --x has %d%s", lists[k].flag,
                                      lists[k].count, n, o->example ? " (the example's)" : "");
    return AG_CLI_GO;
}

/* The row's normalisation in double: xhat and 1/std (its mean in *mean). */
static double normalise(const double *x, int n, double *xhat, double *mean, double *var)
{
    double m = 0, v = 0;
    for (int i = 0; i < n; i++)
        m += x[i];
    m /= n;
    for (int i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m);
    v /= n;
    double rstd = 1 / sqrt(v + AG_LAYERNORM_EPS);
    for (int i = 0; i < n; i++)
        xhat[i] = (x[i] - m) * rstd;
    if (mean)
        *mean = m;
    if (var)
        *var = v;
    return rstd;
}

/* L = <g, layernorm(x) w + b> in double, for the finite differences. */
static double loss(const double *x, const double *g, const double *w, const double *b, int n)
{
    double xhat[MAX_N], l = 0;
    normalise(x, n, xhat, NULL, NULL);
    for (int i = 0; i < n; i++)
        l += g[i] * (xhat[i] * w[i] + b[i]);
    return l;
}

/* y = ag_layernorm(x, w, b) for ag_vjp; ctx holds w and b, (2, n). */
static ag_tensor *layernorm_of(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    const ag_real *wb = ctx;
    int n = in[0]->shape[0];
    return ag_layernorm(tape, in[0], ag_tensor_from(tape, 1, &n, wb),
                        ag_tensor_from(tape, 1, &n, wb + n));
}

/* The library's own answer: y = ag_layernorm(x, w, b), then backward of <g, y>. */
static int library_layernorm(const double *x, const double *g, const double *w, const double *b,
                             int n, double *dx)
{
    ag_tensor *xt = ag_param_new(1, (int[]){n});
    ag_real gr[MAX_N], wb[2 * MAX_N];
    char err[AG_CLI_ERR_LEN] = "out of memory";
    for (int i = 0; xt && i < n; i++) {
        xt->data[i] = (ag_real)x[i];
        gr[i] = (ag_real)g[i];
        wb[i] = (ag_real)w[i];
        wb[n + i] = (ag_real)b[i];
    }
    int ok = xt && ag_vjp(layernorm_of, wb, &xt, 1, gr, NULL, (size_t)n, err, sizeof(err)) == AG_OK;
    for (int i = 0; ok && i < n; i++)
        dx[i] = xt->grad[i];
    if (!ok)
        ag_cli_error(&explain_layernorm_info, "%s", err);
    ag_param_free(xt);
    return ok;
}

/* One row being explained: the numbers given and what the steps find. */
typedef struct ln_row {
    const double *x, *g;       /* (n) the row and dL/dy */
    double w[MAX_N], b[MAX_N]; /* (n) the scale and shift (1s and 0s when not given) */
    double xhat[MAX_N];        /* (n) the normalised row */
    double fast[MAX_N];        /* (n) dL/dx by the formula backward uses */
    double rstd;               /* 1 / sqrt(var + eps) */
    int n, dec, scaled;        /* scaled: --weight or --bias given */
} ln_row;

/* Steps 1 to 5: mean, variance, 1/std, xhat, scale and shift. */
static void tell_forward(ln_row *r)
{
    int n = r->n, dec = r->dec;
    double xc[MAX_N], y[MAX_N], mean, var;
    r->rstd = normalise(r->x, n, r->xhat, &mean, &var);
    for (int i = 0; i < n; i++) {
        xc[i] = r->x[i] - mean;
        y[i] = r->xhat[i] * r->w[i] + r->b[i];
    }
    printf("Forward: y = (x - mean) / sqrt(var + eps) * w + b over the row's %d value%s, "
           "eps = %g\n",
           n, n == 1 ? "" : "s", AG_LAYERNORM_EPS);
    ag_cli_explain_vec("x", r->x, n, dec);
    printf("1. The mean, %.*f. Subtract it: the row is centred, its values add up to 0.\n", dec,
           mean);
    ag_cli_explain_vec("x - mean", xc, n, dec);
    printf("2. The variance: the mean of the squares of x - mean (divided by %d, not %d), "
           "%.*f.\n",
           n, n - 1, dec, var);
    printf("3. 1/std = 1 / sqrt(var + eps) = %.*f. eps keeps it finite when every value is\n"
           "   the same (var = 0).\n",
           dec, r->rstd);
    printf(
        "4. Normalise: xhat = (x - mean) / std, mean 0 and variance 1 (a hair under, by eps).\n");
    ag_cli_explain_vec("xhat", r->xhat, n, dec);
    if (r->scaled) {
        printf("5. Scale and shift: y = xhat * w + b. w and b are learned: the layer can undo\n"
               "   the normalisation wherever that helps.\n");
        ag_cli_explain_vec("w", r->w, n, dec);
        ag_cli_explain_vec("b", r->b, n, dec);
    } else {
        printf("5. Scale and shift, y = xhat * w + b: here w = 1 and b = 0 (--weight, --bias).\n");
    }
    ag_cli_explain_vec("y", y, n, dec);
}

/* Steps 6 to 9: through the scale and shift, the Jacobian, dL/dx two ways. */
static void tell_backward(ln_row *r)
{
    int n = r->n, dec = r->dec;
    const double *xhat = r->xhat, rstd = r->rstd;
    double gw[MAX_N], dw[MAX_N];
    for (int i = 0; i < n; i++) {
        gw[i] = r->g[i] * r->w[i];
        dw[i] = r->g[i] * xhat[i];
    }
    printf("\nBackward: given the upstream gradient g = dL/dy, find dL/dx.\n");
    ag_cli_explain_vec("g", r->g, n, dec);
    printf("6. Through the scale and shift: dL/dxhat = g * w; for the parameters,\n"
           "   dL/dw = g * xhat and dL/db = g.\n");
    ag_cli_explain_vec("g * w", gw, n, dec);
    ag_cli_explain_vec("dL/dw", dw, n, dec);
    printf("7. The Jacobian dxhat_i/dx_j = (1/std) (delta_ij - 1/n - xhat_i xhat_j / n). Every\n"
           "   x_j moves the mean and the std, so every xhat_i depends on every x_j. Each row\n"
           "   sums to 0: adding a constant to x changes nothing.\n");
    for (int i = 0; i < n; i++) {
        printf("  %s", i ? "            " : "J           ");
        printf("%s", i ? " [" : "[[");
        for (int j = 0; j < n; j++)
            printf("%s%*.*f", j ? " " : "", dec + 3, dec,
                   rstd * ((i == j) - 1.0 / n - xhat[i] * xhat[j] / n) + 0.0);
        printf("]%s\n", i == n - 1 ? "]" : "");
    }
    double vjp[MAX_N], g_mean = 0, gx_mean = 0;
    for (int j = 0; j < n; j++) {
        vjp[j] = 0;
        for (int i = 0; i < n; i++)
            vjp[j] += gw[i] * rstd * ((i == j) - 1.0 / n - xhat[i] * xhat[j] / n);
    }
    for (int i = 0; i < n; i++) {
        g_mean += gw[i] / n;
        gx_mean += gw[i] * xhat[i] / n;
    }
    for (int j = 0; j < n; j++)
        r->fast[j] = rstd * (gw[j] - g_mean - xhat[j] * gx_mean);
    printf("8. dL/dx_j = sum_i (g w)_i dxhat_i/dx_j: the vector-Jacobian product (g w)^T J.\n");
    ag_cli_explain_vec("(g w)^T J", vjp, n, dec);
    printf("9. The same without building J: with mean(g w) = %.*f and mean(g w xhat) = %.*f,\n"
           "   dL/dx = (1/std) (g w - mean(g w) - xhat mean(g w xhat)).\n",
           dec, g_mean + 0.0, dec, gx_mean + 0.0);
    ag_cli_explain_vec("formula", r->fast, n, dec);
    double agree = 0;
    for (int j = 0; j < n; j++)
        agree = fmax(agree, fabs(vjp[j] - r->fast[j]));
    printf("   The two agree%s: this is the formula backward uses,\n"
           "   from the saved mean and 1/std alone (xhat is recomputed, not kept).\n",
           agree < 1e-12 ? " (to within 1e-12)" : "");
}

/* Step 10: each component of dL/dx against a central difference. */
static int check_components(const ln_row *r)
{
    int n = r->n, dec = r->dec, all_ok = 1;
    /* the step follows the row's spread, the scale on which y bends */
    const double h = 1e-4 / r->rstd;
    printf(
        "10. Check each component with a central difference, (L(x + h e_j) - L(x - h e_j)) / 2h,\n"
        "    where L = <g, y> and h = std / 10^4 = %.1e:\n",
        h);
    for (int j = 0; j < n; j++) {
        double xp[MAX_N];
        memcpy(xp, r->x, (size_t)n * sizeof(double));
        xp[j] = r->x[j] + h;
        double lp = loss(xp, r->g, r->w, r->b, n);
        xp[j] = r->x[j] - h;
        double numeric = (lp - loss(xp, r->g, r->w, r->b, n)) / (2 * h);
        int ok = fabs(numeric - r->fast[j]) <= 1e-6 * fmax(1, fabs(r->fast[j]));
        all_ok &= ok;
        printf("  dL/dx_%d: finite difference %.*f, backward %.*f  %s\n", j, dec, numeric + 0.0,
               dec, r->fast[j] + 0.0, ok ? "agree" : "DISAGREE");
    }
    return all_ok;
}

int ag_cli_explain_layernorm_run(const ag_explain_opts *o)
{
    ln_row r;
    memset(&r, 0, sizeof(r));
    r.x = o->x.v, r.g = o->upstream.v, r.n = o->x.n, r.dec = o->decimals;
    r.scaled = o->weight.n || o->bias.n;
    for (int i = 0; i < r.n; i++) {
        r.w[i] = o->weight.n ? o->weight.v[i] : 1;
        r.b[i] = o->bias.n ? o->bias.v[i] : 0;
    }
    if (o->example)
        printf("No --x given: the example --x 1,2,3 --upstream 0.1,0.2,-0.3; give your own\n"
               "with --x.\n\n");
    tell_forward(&r);
    tell_backward(&r);
    double lib[MAX_N];
    if (!library_layernorm(r.x, r.g, r.w, r.b, r.n, lib))
        return AG_EXIT_FAIL;
    ag_cli_explain_vec("attograd", lib, r.n, r.dec);
    printf("   (ag_layernorm's backward in this build's precision, %s)\n", AG_REAL_NAME);
    return check_components(&r) ? AG_EXIT_OK : AG_EXIT_FAIL;
}
