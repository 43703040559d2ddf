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

static const ag_command explain_layernorm_info = {
    "explain layernorm", NULL,
    "attograd explain layernorm --x X1,X2,... [--upstream G1,G2,...] [--weight W1,...] "
    "[--bias B1,...] [--decimals N]",
    "backprop through layer normalisation, step by step with real numbers",
};

void ag_cli_explain_layernorm_help(void)
{
    printf("usage: %s\n\n"
           "Walk through layer normalisation's forward and backward with the numbers\n"
           "you give: the mean, the variance, 1/std = 1/sqrt(var + %g), the normalised\n"
           "row and its scale and shift; the Jacobian; the input gradient as a\n"
           "vector-Jacobian product and by the formula backward uses; and a\n"
           "finite-difference check of every component.\n\n"
           "  --x X1,X2,...          one row of x (1 to %d numbers)\n"
           "  --upstream G1,G2,...   dL/dy, one per value (default: 1, then 0s,\n"
           "                         that is L = y_0)\n"
           "  --weight W1,W2,...     the scale, one per value (default: all 1)\n"
           "  --bias B1,B2,...       the shift, one per value (default: all 0)\n"
           "  --decimals N           digits after the point (default 4, 4..10)\n",
           explain_layernorm_info.usage, AG_LAYERNORM_EPS, MAX_N);
}

int ag_cli_explain_layernorm_parse(int argc, char **argv, ag_explain_opts *o)
{
    const ag_command *cmd = &explain_layernorm_info;
    o->topic = AG_EXPLAIN_LAYERNORM;
    int ng = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ag_cli_is_help(argv[i]))
            return AG_CLI_HELP;
        if ((r = ag_cli_value(cmd, argc, argv, &i, "--x", &v))) {
            if (r < 0 || !(o->n = ag_cli_explain_list(cmd, "--x", v, o->z)))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--upstream", &v))) {
            if (r < 0 || !(ng = ag_cli_explain_list(cmd, "--upstream", v, o->g)))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--weight", &v))) {
            if (r < 0 || !(o->n_weight = ag_cli_explain_list(cmd, "--weight", v, o->weight)))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--bias", &v))) {
            if (r < 0 || !(o->n_bias = ag_cli_explain_list(cmd, "--bias", v, o->bias)))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--decimals", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--decimals", v, 4, 10, &o->decimals))
                return AG_EXIT_USAGE;
        } else if (argv[i][0] == '-') {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else {
            return ag_cli_usage_error(cmd, "unexpected argument '%s' (options start with --)", argv[i]);
        }
    }
    if (o->n == 0)
        return ag_cli_usage_error(cmd, "layernorm needs --x, e.g. --x 1,2,3");
    if (ng == 0) {
        ng = o->n;
        for (int i = 0; i < o->n; i++)
            o->g[i] = i == 0;
    }
    const struct {
        const char *flag;
        int count;
    } lists[] = {{"--upstream", ng}, {"--weight", o->n_weight}, {"--bias", o->n_bias}};
    for (int k = 0; k < 3; k++)
        if (lists[k].count && lists[k].count != o->n)
            return ag_cli_usage_error(cmd, "%s has %d number(s) but --x has %d", lists[k].flag,
                                      lists[k].count, o->n);
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

/* The library's own answer: y = ag_layernorm(x, w, b), then backward of <g, y>. */
static int library_layernorm(const double *x, const double *g, const double *w, const double *b,
                             int n, double *dx)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *xt = ag_param_new(1, (int[]){n});
    int ok = 0;
    if (tape && xt) {
        ag_real gr[MAX_N], wr[MAX_N], br[MAX_N];
        for (int i = 0; i < n; i++) {
            xt->data[i] = (ag_real)x[i];
            gr[i] = (ag_real)g[i];
            wr[i] = (ag_real)w[i];
            br[i] = (ag_real)b[i];
        }
        ag_tensor *y = ag_layernorm(tape, xt, ag_tensor_from(tape, 1, (int[]){n}, wr),
                                    ag_tensor_from(tape, 1, (int[]){n}, br));
        ag_tensor *l = ag_sum(tape, ag_mul(tape, y, ag_tensor_from(tape, 1, (int[]){n}, gr)));
        if (ag_backward(tape, l) == AG_OK) {
            for (int i = 0; i < n; i++)
                dx[i] = xt->grad[i];
            ok = 1;
        } else {
            fprintf(stderr, "attograd explain: %s\n", ag_tape_error(tape));
        }
    }
    ag_param_free(xt);
    ag_tape_free(tape);
    return ok;
}

int ag_cli_explain_layernorm_run(const ag_explain_opts *o)
{
    const double *x = o->z, *g = o->g;
    int n = o->n, dec = o->decimals;
    double w[MAX_N], b[MAX_N], xc[MAX_N], xhat[MAX_N], y[MAX_N], mean, var;
    for (int i = 0; i < n; i++) {
        w[i] = o->n_weight ? o->weight[i] : 1;
        b[i] = o->n_bias ? o->bias[i] : 0;
    }
    double rstd = normalise(x, n, xhat, &mean, &var);
    for (int i = 0; i < n; i++) {
        xc[i] = x[i] - mean;
        y[i] = xhat[i] * w[i] + b[i];
    }

    printf("Forward: y = (x - mean) / sqrt(var + eps) * w + b over the row's %d value%s, "
           "eps = %g\n", n, n == 1 ? "" : "s", AG_LAYERNORM_EPS);
    ag_cli_explain_vec("x", x, n, dec);
    printf("1. The mean, %.*f. Subtract it: the row is centred, its values add up to 0.\n", dec,
           mean);
    ag_cli_explain_vec("x - mean", xc, n, dec);
    printf("2. The variance: the mean of the squares of x - mean (divided by %d, not %d), "
           "%.*f.\n", n, n - 1, dec, var);
    printf("3. 1/std = 1 / sqrt(var + eps) = %.*f. eps keeps it finite when every value is\n"
           "   the same (var = 0).\n", dec, rstd);
    printf("4. Normalise: xhat = (x - mean) / std, mean 0 and variance 1 (a hair under, by eps).\n");
    ag_cli_explain_vec("xhat", xhat, n, dec);
    if (o->n_weight || o->n_bias) {
        printf("5. Scale and shift: y = xhat * w + b. w and b are learned: the layer can undo\n"
               "   the normalisation wherever that helps.\n");
        ag_cli_explain_vec("w", w, n, dec);
        ag_cli_explain_vec("b", b, n, dec);
    } else {
        printf("5. Scale and shift, y = xhat * w + b: here w = 1 and b = 0 (--weight, --bias).\n");
    }
    ag_cli_explain_vec("y", y, n, dec);

    double gw[MAX_N], dw[MAX_N];
    for (int i = 0; i < n; i++) {
        gw[i] = g[i] * w[i];
        dw[i] = g[i] * xhat[i];
    }
    printf("\nBackward: given the upstream gradient g = dL/dy, find dL/dx.\n");
    ag_cli_explain_vec("g", g, n, dec);
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
    double vjp[MAX_N], fast[MAX_N], g_mean = 0, gx_mean = 0;
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
        fast[j] = rstd * (gw[j] - g_mean - xhat[j] * gx_mean);
    printf("8. dL/dx_j = sum_i (g w)_i dxhat_i/dx_j: the vector-Jacobian product (g w)^T J.\n");
    ag_cli_explain_vec("(g w)^T J", vjp, n, dec);
    printf("9. The same without building J: with mean(g w) = %.*f and mean(g w xhat) = %.*f,\n"
           "   dL/dx = (1/std) (g w - mean(g w) - xhat mean(g w xhat)).\n", dec, g_mean + 0.0,
           dec, gx_mean + 0.0);
    ag_cli_explain_vec("formula", fast, n, dec);
    double agree = 0;
    for (int j = 0; j < n; j++)
        agree = fmax(agree, fabs(vjp[j] - fast[j]));
    printf("   The two agree%s: this is the formula backward uses,\n"
           "   from the saved mean and 1/std alone (xhat is recomputed, not kept).\n",
           agree < 1e-12 ? " (to within 1e-12)" : "");

    double lib[MAX_N];
    if (!library_layernorm(x, g, w, b, n, lib))
        return AG_EXIT_FAIL;
    ag_cli_explain_vec("attograd", lib, n, dec);
    printf("   (ag_layernorm's backward in this build's precision, %s)\n", AG_REAL_NAME);

    /* the step follows the row's spread, the scale on which y bends */
    const double h = 1e-4 / rstd;
    printf("10. Check each component with a central difference, (L(x + h e_j) - L(x - h e_j)) / 2h,\n"
           "    where L = <g, y> and h = std / 10^4 = %.1e:\n", h);
    int all_ok = 1;
    for (int j = 0; j < n; j++) {
        double xp[MAX_N];
        memcpy(xp, x, (size_t)n * sizeof(double));
        xp[j] = x[j] + h;
        double lp = loss(xp, g, w, b, n);
        xp[j] = x[j] - h;
        double numeric = (lp - loss(xp, g, w, b, n)) / (2 * h);
        int ok = fabs(numeric - fast[j]) <= 1e-6 * fmax(1, fabs(fast[j]));
        all_ok &= ok;
        printf("  dL/dx_%d: finite difference %.*f, backward %.*f  %s\n", j, dec, numeric + 0.0,
               dec, fast[j] + 0.0, ok ? "agree" : "DISAGREE");
    }
    return all_ok ? AG_EXIT_OK : AG_EXIT_FAIL;
}
