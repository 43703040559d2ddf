/*
 * explain.c - `attograd explain softmax`: backprop through softmax told step
 * by step with real numbers, for a learner to follow with a pencil; and the
 * dispatch to `attograd explain attention` (explain_attention.c),
 * `attograd explain posenc` (explain_posenc.c) and `attograd explain
 * layernorm` (explain_layernorm.c).
 */
#include "opts.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LOGITS AG_EXPLAIN_MAX_LOGITS

const ag_command ag_cmd_explain_info = {
    .name = "explain",
    .run = ag_cmd_explain,
    .usage = "attograd explain softmax|attention|posenc|layernorm [options]",
    .summary = "backprop through softmax, the seed's attention and layer norm, and positions, "
               "step by step",
};

void ag_cli_explain_vec(const char *label, const double *v, int n, int dec)
{
    printf("  %-12s [", label);
    for (int i = 0; i < n; i++)
        printf("%s%*.*f", i ? " " : "", dec + 3, dec, v[i] + 0.0); /* + 0.0: no "-0.0000" */
    printf("]\n");
}

static ag_tensor *softmax_of(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return ag_softmax(tape, in[0]);
}

/* The library's own answer: s = ag_softmax(z), then backward of <g, s>. */
static int library_softmax(const double *z, const double *g, int n, double *s, double *dz)
{
    ag_tensor *zt = ag_param_new(1, (int[]){n});
    ag_real gr[MAX_LOGITS], sr[MAX_LOGITS];
    char err[AG_CLI_ERR_LEN] = "out of memory";
    for (int i = 0; zt && i < n; i++) {
        zt->data[i] = (ag_real)z[i];
        gr[i] = (ag_real)g[i];
    }
    int ok = zt && ag_vjp(softmax_of, NULL, &zt, 1, gr, sr, (size_t)n, err, sizeof(err)) == AG_OK;
    for (int i = 0; ok && i < n; i++) {
        s[i] = sr[i];
        dz[i] = zt->grad[i];
    }
    if (!ok)
        ag_cli_error(&ag_cmd_explain_info, "%s", err);
    ag_param_free(zt);
    return ok;
}

/* The forward in double, the steps the explanation shows (ag_ref_softmax's,
 * in the build's precision, are the same): shifted = z - max, e =
 * exp(shifted), s = e / sum(e); returns the max, *sum the sum. For a row
 * with a finite entry. */
static double softmax_steps(const double *z, int n, double *shifted, double *e, double *sum,
                            double *s)
{
    double max = z[0];
    for (int i = 1; i < n; i++)
        max = fmax(max, z[i]);
    *sum = 0;
    for (int i = 0; i < n; i++) {
        shifted[i] = z[i] - max;
        e[i] = exp(shifted[i]);
        *sum += e[i];
    }
    for (int i = 0; i < n; i++)
        s[i] = e[i] / *sum;
    return max;
}

/* <g, softmax(z)> in double, for the finite differences. */
static double loss_double(const double *z, const double *g, int n)
{
    double shifted[MAX_LOGITS], e[MAX_LOGITS], s[MAX_LOGITS], sum, l = 0;
    softmax_steps(z, n, shifted, e, &sum, s);
    for (int i = 0; i < n; i++)
        l += g[i] * s[i];
    return l;
}

/* Why a component disagrees: how good the difference quotient itself is
 * at step h. Along z_j each s_i is a logistic curve, whose third derivative
 * is at most 1/8: truncation is at most h^2/6 * 2 * sum|g_i| / 8; round-off
 * in L is a few ulps of sum|g_i|, over 2h. */
static void say_why(int j, const double *g, int n, double h, double numeric, double fast,
                    double tol)
{
    double gsum = 0;
    for (int i = 0; i < n; i++)
        gsum += fabs(g[i]);
    double hc = fmin(h, 1e100); /* a bound, kept finite */
    double own = hc * hc * gsum / 24 + 8 * DBL_EPSILON * gsum / (2 * h);
    ag_cli_error(&ag_cmd_explain_info,
                 "dL/dz_%d: the finite difference %.9g and backward's "
                 "%.9g differ by %.3g, more than the tolerance %.3g: at the step h = %.3g "
                 "(1e-5, or 2^-42 |z_j| so that z_j + h differs from z_j) the difference "
                 "quotient itself may be off by %.3g, %s",
                 j, numeric, fast, fabs(numeric - fast), tol, h, own,
                 own > tol ? "so at these logits the check cannot decide"
                           : "so backward's formula or its arithmetic is off");
}

/* Step 7: each component of dL/dz (fast) against a central difference. The
 * step: 1e-5, or 2^-42 |z_j| when that is larger (beyond about 4e7), so
 * that z_j + h is not lost in z_j's rounding; and the quotient divides by
 * the step actually taken, (z_j + h) - (z_j - h), which is exact. A masked
 * entry (-inf) stays -inf either way: its quotient is 0 / 2h. */
static int check_components(const double *z, const double *g, int n, int dec, const double *fast)
{
    int scaled = 0, all_ok = 1;
    for (int j = 0; j < n; j++)
        scaled |= isfinite(z[j]) && ldexp(fabs(z[j]), -42) > 1e-5;
    printf(
        "7. Check each component with a central difference, (L(z + h e_j) - L(z - h e_j)) / 2h,\n"
        "   where L = <g, softmax(z)> and h = 1e-5%s:\n",
        scaled ? " (2^-42 |z_j| for large |z_j|, shown)" : "");
    for (int j = 0; j < n; j++) {
        double h = isfinite(z[j]) ? fmax(1e-5, ldexp(fabs(z[j]), -42)) : 1e-5;
        double zp[MAX_LOGITS], hi = z[j] + h, lo = z[j] - h;
        memcpy(zp, z, (size_t)n * sizeof(double));
        zp[j] = hi;
        double lp = loss_double(zp, g, n);
        zp[j] = lo;
        double lm = loss_double(zp, g, n);
        double numeric = (lp - lm) / (isfinite(z[j]) ? hi - lo : 2 * h);
        double tol = 1e-6 * fmax(1, fabs(fast[j]));
        int ok = fabs(numeric - fast[j]) <= tol;
        all_ok &= ok;
        printf("  dL/dz_%d: finite difference %.*f, backward %.*f  %s", j, dec, numeric, dec,
               fast[j], ok ? "agree" : "DISAGREE");
        printf(h > 1e-5 ? " (h = %.3g)\n" : "\n", h);
        if (!ok)
            say_why(j, g, n, h, numeric, fast[j], tol);
    }
    return all_ok;
}

/* A row whose every entry is -inf (fully masked): there is no finite max,
 * and attograd defines the row as attending to nothing. */
static int explain_masked_row(const double *z, const double *g, int n, int dec)
{
    double s[MAX_LOGITS] = {0}, dz[MAX_LOGITS] = {0};
    printf("Forward: s = softmax(z)\n");
    ag_cli_explain_vec("z", z, n, dec);
    printf("Every entry is -inf: the row is fully masked (a padding mask can do this).\n"
           "There is no finite max to subtract, and the textbook formula would compute\n"
           "exp(-inf - (-inf)) = exp(NaN): one NaN, and everything after it is NaN too.\n"
           "attograd defines such a row as attending to nothing: its weights are all 0,\n"
           "and so is its gradient dL/dz, whatever g is.\n");
    if (!library_softmax(z, g, n, s, dz))
        return AG_EXIT_FAIL;
    ag_cli_explain_vec("s", s, n, dec);
    printf("\nBackward: given the upstream gradient g = dL/ds, find dL/dz.\n");
    ag_cli_explain_vec("g", g, n, dec);
    ag_cli_explain_vec("attograd", dz, n, dec);
    printf("   (ag_softmax's forward and backward in this build's precision, %s)\n", AG_REAL_NAME);
    return AG_EXIT_OK;
}

static int explain_softmax(const double *z, const double *g, int n, int dec)
{
    double shifted[MAX_LOGITS] = {0}, e[MAX_LOGITS] = {0}, s[MAX_LOGITS] = {0}, sum;
    int masked = 0;
    for (int i = 0; i < n; i++)
        masked += z[i] == -INFINITY;
    if (masked == n)
        return explain_masked_row(z, g, n, dec);
    double max = softmax_steps(z, n, shifted, e, &sum, s);

    printf("Forward: s = softmax(z)\n");
    ag_cli_explain_vec("z", z, n, dec);
    printf("1. Subtract the max (%.*f) so that exp cannot overflow; s does not change.\n", dec,
           max);
    ag_cli_explain_vec("z - max", shifted, n, dec);
    printf("2. Exponentiate: every entry becomes positive, the largest becomes 1.\n");
    ag_cli_explain_vec("e", e, n, dec);
    if (masked)
        printf("   exp(-inf) = 0: a masked entry gets weight exactly 0, and the others are the\n"
               "   softmax of the unmasked scores alone.\n");
    printf("3. Normalise by the sum (%.*f): the probabilities s add up to 1.\n", dec, sum);
    ag_cli_explain_vec("s", s, n, dec);

    printf("\nBackward: given the upstream gradient g = dL/ds, find dL/dz.\n");
    ag_cli_explain_vec("g", g, n, dec);
    printf("4. The Jacobian ds_i/dz_j = s_i (delta_ij - s_j): s_i (1 - s_i) on the diagonal,\n"
           "   -s_i s_j off it. Row i says how s_i moves when each z_j moves.\n");
    for (int i = 0; i < n; i++) {
        printf("  %s", i ? "            " : "J           ");
        printf("%s", i ? " [" : "[[");
        for (int j = 0; j < n; j++)
            printf("%s%*.*f", j ? " " : "", dec + 3, dec, s[i] * ((i == j) - s[j]) + 0.0);
        printf("]%s\n", i == n - 1 ? "]" : "");
    }
    double vjp[MAX_LOGITS] = {0}, fast[MAX_LOGITS] = {0}, dot = 0;
    for (int j = 0; j < n; j++) {
        vjp[j] = 0;
        for (int i = 0; i < n; i++)
            vjp[j] += g[i] * s[i] * ((i == j) - s[j]);
    }
    for (int i = 0; i < n; i++)
        dot += g[i] * s[i];
    for (int j = 0; j < n; j++)
        fast[j] = s[j] * (g[j] - dot);
    printf("5. dL/dz_j = sum_i g_i ds_i/dz_j: the vector-Jacobian product g^T J.\n");
    ag_cli_explain_vec("g^T J", vjp, n, dec);
    printf("6. The same without building J: <g, s> = %.*f, and dL/dz = s * (g - <g, s>).\n", dec,
           dot);
    ag_cli_explain_vec("s*(g-<g,s>)", fast, n, dec);
    double agree = 0;
    for (int j = 0; j < n; j++)
        agree = fmax(agree, fabs(vjp[j] - fast[j]));
    printf("   The two agree%s: this is the formula backward uses.\n",
           agree < 1e-12 ? " (to within 1e-12)" : "");
    if (masked)
        printf("   Where s_j = 0 (a masked entry), dL/dz_j = 0 * (g_j - <g, s>) = 0 exactly:\n"
               "   no gradient reaches a masked score.\n");

    double lib_s[MAX_LOGITS] = {0}, lib_dz[MAX_LOGITS] = {0};
    if (!library_softmax(z, g, n, lib_s, lib_dz))
        return AG_EXIT_FAIL;
    ag_cli_explain_vec("attograd", lib_dz, n, dec);
    printf("   (ag_softmax's backward in this build's precision, %s)\n", AG_REAL_NAME);

    return check_components(z, g, n, dec, fast) ? AG_EXIT_OK : AG_EXIT_FAIL;
}


static const ag_option softmax_options[] = {
    AG_LIST_MASKS(ag_explain_opts, "--logits", logits, 1, MAX_LOGITS, "Z1,Z2,...",
                  "the scores z (%L to %H numbers); -inf masks an entry"),
    AG_LIST(ag_explain_opts, "--upstream", upstream, 1, MAX_LOGITS, "G1,G2,...",
            "dL/ds, one per logit (default: 1, then 0s,\nthat is L = s_0)"),
    AG_INT(ag_explain_opts, "--decimals", decimals, 4, 10, 4, "N",
           "digits after the point (default %D, %R)"),
};

/* The topics' own usage lines, for their --help and their usage errors. */
static const ag_command explain_softmax_info = {
    .name = "explain softmax",
    .usage = "attograd explain softmax --logits Z1,Z2,... [--upstream G1,G2,...] [--decimals N]",
    .summary = "backprop through softmax, step by step with real numbers",
    .options = softmax_options,
    .n_options = AG_CLI_COUNT(softmax_options),
    .help_width = 25,
};

static void print_softmax_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "Walk through softmax's forward and backward with the numbers you give:\n"
           "subtract the max, exponentiate, normalise; the Jacobian; the input\n"
           "gradient as a vector-Jacobian product and as s * (g - <g, s>); and a\n"
           "finite-difference check of every component.\n\n",
           cmd->usage);
    ag_cli_print_options(cmd);
}

static int parse_softmax(const ag_command *cmd, int argc, char **argv, ag_explain_opts *o)
{
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r != AG_CLI_GO)
        return r;
    int n = o->logits.n;
    if (n == 0)
        return ag_cli_usage_error(cmd, "softmax needs --logits, e.g. --logits 1,2,3");
    if (o->upstream.n == 0) {
        o->upstream.n = n;
        for (int i = 0; i < n; i++)
            o->upstream.v[i] = i == 0;
    }
    if (o->upstream.n != n)
        return ag_cli_usage_error(cmd, "--upstream has %d number(s) but --logits has %d",
                                  o->upstream.n, n);
    return AG_CLI_GO;
}

int ag_cli_explain_parse(int argc, char **argv, ag_explain_opts *o)
{
    const ag_command *cmd = &ag_cmd_explain_info;
    memset(o, 0, sizeof(*o));
    if (argc < 2)
        return ag_cli_usage_error(cmd,
                                  "what should I explain? (softmax, attention, posenc, layernorm)");
    if (ag_cli_is_help(argv[1]))
        return AG_CLI_HELP;
    if (strcmp(argv[1], "softmax") == 0) {
        o->topic = AG_EXPLAIN_SOFTMAX;
        return parse_softmax(&explain_softmax_info, argc - 1, argv + 1, o);
    }
    if (strcmp(argv[1], "attention") == 0)
        return ag_cli_explain_attention_parse(argc - 1, argv + 1, o);
    if (strcmp(argv[1], "posenc") == 0)
        return ag_cli_explain_posenc_parse(argc - 1, argv + 1, o);
    if (strcmp(argv[1], "layernorm") == 0)
        return ag_cli_explain_layernorm_parse(argc - 1, argv + 1, o);
    return ag_cli_usage_error(cmd, "unknown topic '%s' (softmax, attention, posenc, layernorm)",
                              argv[1]);
}

int ag_cli_explain_run(const ag_explain_opts *o)
{
    if (o->topic == AG_EXPLAIN_ATTENTION)
        return ag_cli_explain_attention_run(o);
    if (o->topic == AG_EXPLAIN_POSENC)
        return ag_cli_explain_posenc_run(o);
    if (o->topic == AG_EXPLAIN_LAYERNORM)
        return ag_cli_explain_layernorm_run(o);
    return explain_softmax(o->logits.v, o->upstream.v, o->logits.n, o->decimals);
}

int ag_cmd_explain(int argc, char **argv)
{
    const ag_command *cmd = &ag_cmd_explain_info;
    ag_explain_opts o;
    int r = ag_cli_explain_parse(argc, argv, &o);
    if (r == AG_CLI_HELP) {
        if (argc >= 2 && strcmp(argv[1], "softmax") == 0)
            print_softmax_help(&explain_softmax_info);
        else if (argc >= 2 && strcmp(argv[1], "attention") == 0)
            ag_cli_explain_attention_help();
        else if (argc >= 2 && strcmp(argv[1], "posenc") == 0)
            ag_cli_explain_posenc_help();
        else if (argc >= 2 && strcmp(argv[1], "layernorm") == 0)
            ag_cli_explain_layernorm_help();
        else
            printf("usage: %s\n\n"
                   "topics:\n"
                   "  softmax    backprop through softmax with your numbers\n"
                   "  attention  one training step of the seed's attention, entry by entry\n"
                   "  posenc     the sinusoidal positional encoding, or a learned one\n"
                   "  layernorm  backprop through layer normalisation with your numbers\n\n"
                   "attograd explain TOPIC --help shows a topic's options.\n",
                   cmd->usage);
        return AG_EXIT_OK;
    }
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_explain_run(&o);
}
