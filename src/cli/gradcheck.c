/*
 * gradcheck.c - `attograd gradcheck`: every op's backward, the losses, the
 * attention layer, a block and a GPT checked against central differences with the library's
 * ag_gradcheck, one table row per check; and --sweep, the error against the
 * step size eps, which shows truncation error giving way to round-off.
 */
#include "opts.h"
#include "plot.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- options ---- */

typedef struct gc_opts {
    int op; /* 0: all; k: op_word(k) */
    double eps;
    uint64_t seed;
    int verbose, bug, sweep;
    const char *plot;
} gc_opts;

/* --op's words: "all", then each op of the table of checks, in its order. */
static const char *op_word(int k)
{
    const char *prev = NULL;
    if (k == 0)
        return "all";
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        const char *op = ag_gradcheck_case_op(i);
        if (prev && strcmp(op, prev) == 0)
            continue;
        if (--k == 0)
            return op;
        prev = op;
    }
    return NULL;
}

static const ag_option options[] = {
    AG_CHOICE(gc_opts, "--op", op, 0, 0, op_word, "op", "NAME",
              "only the rows of one op (default %D):\n%O"),
    AG_DOUBLE(gc_opts, "--eps", eps, 1e-15, 1, AG_GRADCHECK_EPS, "E",
              "the finite-difference step (default %D in this " AG_REAL_NAME " build)"),
    AG_U64(gc_opts, "--seed", seed, 1, "S",
           "seeds the inputs, projections and sampling (default %D)"),
    AG_SWITCH(gc_opts, "--verbose", verbose, "under each row, the worst element and its gradient"),
    AG_CHOICE(gc_opts, "--inject-bug", bug, AG_BUG_SOFTMAX, AG_BUG_NONE, ag_cli_bug_word, "bug",
              "softmax",
              "use a deliberately wrong softmax backward (the - <g, s>\n"
              "term dropped), to see the check fail"),
    AG_SWITCH(gc_opts, "--sweep", sweep,
              "instead of the table: the max error of one op (softmax,\n"
              "or --op) for eps = 1 down to 1e-10"),
    AG_PATH(gc_opts, "--plot", plot, "FILE.png",
            "with --sweep: draw it with gnuplot (log-log), if installed"),
};

const ag_command ag_cmd_gradcheck_info = {
    .name = "gradcheck",
    .run = ag_cmd_gradcheck,
    .usage =
        "attograd gradcheck [--op NAME|all] [--eps E] [--seed S] [--verbose] [--inject-bug softmax] "
        "[--sweep [--plot FILE.png]]",
    .summary = "check every op's backward against finite differences",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 23,
};

static int print_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "Check the analytic gradient of every op, of the losses, of the attention\n"
           "layer, of a transformer block and of a whole GPT against finite differences,\n"
           "using ag_gradcheck: central differences D(eps) = (L(x + eps) - L(x - eps)) /\n"
           "2 eps, extrapolated as (4 D(eps) - D(2 eps)) / 3. A result with several\n"
           "elements is projected onto fixed random weights first. One row per check;\n"
           "exit status 1 when any fails.\n\n",
           cmd->usage);
    ag_cli_print_options(cmd);
    return AG_EXIT_OK;
}

/* The parse step: fills o from argv and touches nothing else (its only
 * output is a usage message). Returns AG_CLI_GO, AG_CLI_HELP or
 * AG_EXIT_USAGE. */
static int parse_args(const ag_command *cmd, int argc, char **argv, gc_opts *o)
{
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r == AG_CLI_GO && o->plot && !o->sweep)
        return ag_cli_usage_error(cmd, "--plot draws the sweep: add --sweep");
    return r;
}

/* ---- one check ---- */

/* Run row r's check; returns 1 when it ran (result filled), 0 after printing why not. */
static int run_row(size_t r, const gc_opts *o, const ag_gradcheck_opts *go,
                   ag_gradcheck_result *res, ag_case_setup *p)
{
    char err[300];
    if (ag_gradcheck_case_run(r, o->seed, go, res, p, err, sizeof(err)) != AG_OK)
        return ag_cli_error(&ag_cmd_gradcheck_info, "%s", err), 0;
    return 1;
}

static void print_number(double v)
{
    if (isinf(v))
        printf(" %8s", "inf");
    else
        printf(" %8.1e", v);
}

static int run_table(const gc_opts *o, const ag_gradcheck_opts *go)
{
    printf("Gradient check (%s build): every analytic gradient element against a finite\n"
           "difference: D(eps) = (L(x + eps) - L(x - eps)) / 2 eps with eps %g, extrapolated\n"
           "as (4 D(eps) - D(2 eps)) / 3. A result with several elements is first projected\n"
           "onto fixed random weights, L = sum(w * out).\n"
           "rel = |analytic - numeric| / max(|analytic|, |numeric|, %g); a row passes when\n"
           "its max rel <= tol. Inputs with more than %zu elements are checked at %zu random\n"
           "elements (ag_gradcheck_opts.max_samples): see 'checked'.\n",
           AG_REAL_NAME, go->eps, go->atol, go->max_samples, go->max_samples);
    if (o->bug)
        printf(
            "Injected bug: softmax's backward drops the - <g, s> term (--inject-bug softmax).\n");
    printf("\n%-31s %-30s %8s %8s %8s %8s  %s\n", "check", "inputs", "checked", "max abs",
           "max rel", "tol", "result");
    int n = 0, failed = 0, broken = 0;
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        if (o->op && strcmp(op_word(o->op), ag_gradcheck_case_op(i)) != 0)
            continue;
        ag_gradcheck_result res;
        ag_case_setup p;
        if (!run_row(i, o, go, &res, &p)) {
            broken++;
            continue;
        }
        char inputs[128], checked[32];
        ag_gradcheck_case_inputs(&p, inputs, sizeof(inputs));
        snprintf(checked, sizeof(checked), "%zu/%zu", res.checked, res.total);
        printf("%-31s %-30s %8s", ag_gradcheck_case_name(i), inputs, checked);
        print_number(res.max_abs);
        print_number(res.max_rel);
        printf(" %8.1e  %s\n", res.tolerance, res.passed ? "PASS" : "FAIL");
        if (o->verbose && res.worst_input >= 0) {
            const ag_tensor *t = p.inputs[res.worst_input];
            char where[64];
            printf("    worst element %s%s: analytic gradient %.6g\n", p.names[res.worst_input],
                   ag_index_str(t, res.worst_index, where, sizeof(where)),
                   (double)t->grad[res.worst_index]);
        }
        n++;
        failed += !res.passed;
        ag_gradcheck_case_free(&p);
    }
    printf("\n%d check%s: %d passed, %d failed.\n", n, n == 1 ? "" : "s", n - failed, failed);
    if (failed && o->bug)
        printf("The rows that use ag_softmax's backward (the attention op shares it) fail:\n"
               "the check caught the wrong backward.\n");
    return failed || broken ? AG_EXIT_FAIL : AG_EXIT_OK;
}

/* ---- the sweep ---- */

/* eps = 1 .. 1e-10. 1 is there because the check extrapolates (its truncation
 * error shrinks like eps^4): in float the error is smallest near 1e-1, and
 * without a larger step the V's truncation side would not show. */
#define SWEEP_N 11
#ifdef AG_REAL_DOUBLE
#define MACHINE_EPS DBL_EPSILON
#else
#define MACHINE_EPS FLT_EPSILON
#endif


/* Draw the sweep into png (ag_cli_gnuplot_end's rules). Returns 1, or 0
 * with err set (and *sig when a signal stopped gnuplot). */
static int plot_sweep(const char *png, const char *title, const double *eps, const double *abs_err,
                      const double *rel_err, int *sig, char *err, size_t errlen)
{
    ag_cli_gnuplot gp;
    *sig = 0;
    if (!ag_cli_gnuplot_begin(&gp, 800, 500, err, errlen))
        return 0;
    FILE *g = gp.f;
    fprintf(g, "set title ");
    ag_cli_gnuplot_quote(g, title);
    fprintf(
        g,
        "\nset logscale xy\nset xrange [5e-11:2]\nset format x '10^{%%L}'\nset format y '10^{%%L}'\n"
        "set xlabel 'eps (finite-difference step)'\nset ylabel 'max error'\n"
        "set grid\nset key top center\n"
        "plot '-' using 1:2 with linespoints title 'max abs error', "
        "'-' using 1:2 with linespoints title 'max rel error'\n");
    for (int pass = 0; pass < 2; pass++) {
        const double *v = pass ? rel_err : abs_err;
        for (int i = 0; i < SWEEP_N; i++)
            if (isfinite(v[i]) &&
                v[i] > 0) /* a vanished step (inf) or 0 has no place on a log axis */
                fprintf(g, "%g %.9g\n", eps[i], v[i]);
        fprintf(g, "e\n");
    }
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}

/* What the sweep shows, under its table. */
static void print_sweep_notes(double best_eps, int vanished)
{
    printf("\nLarge eps: truncation error. A difference quotient sees L only at a few\n"
           "points and misses its curvature. The central difference\n"
           "D(eps) = (L(x + eps) - L(x - eps)) / 2 eps is off by about eps^2; the check\n"
           "extrapolates, (4 D(eps) - D(2 eps)) / 3, which cancels that term and leaves\n"
           "an error shrinking like eps^4.\n"
           "Small eps: round-off. L(x + eps) and L(x - eps) agree in more and more leading\n"
           "digits, so their difference keeps fewer correct ones: the error grows like\n"
           "(machine epsilon x |L|) / eps.\n"
           "The best eps lies between, here %.0e (the default is %g). Machine epsilon is\n"
           "%.1e in %s, so round-off takes over %s.\n",
           best_eps, AG_GRADCHECK_EPS, MACHINE_EPS, AG_REAL_NAME,
#ifdef AG_REAL_DOUBLE
           "late; in float it rises much sooner");
#else
           "at a much larger eps than in double\n(2.2e-16)");
#endif
    if (vanished)
        printf("Below the spacing of %s numbers near x, x + eps rounds back to x and the\n"
               "difference quotient is 0/0.\n",
               AG_REAL_NAME);
}

static int run_sweep(const gc_opts *o, const ag_gradcheck_opts *go)
{
    const char *op = o->op ? op_word(o->op) : "softmax";
    size_t r = 0;
    while (strcmp(ag_gradcheck_case_op(r), op) != 0) /* the parse step checked op */
        r++;
    double eps[SWEEP_N], abs_err[SWEEP_N], rel_err[SWEEP_N];
    char inputs[128] = "", err[AG_CLI_ERR_LEN];
    for (int k = 0; k < SWEEP_N; k++)
        eps[k] = pow(10.0, -k);
    ag_case_setup p;
    if (ag_gradcheck_case_sweep(r, o->seed, go, eps, SWEEP_N, abs_err, rel_err, err, sizeof(err)) !=
            AG_OK ||
        ag_gradcheck_case_setup(r, o->seed, &p, err, sizeof(err)) != AG_OK)
        return ag_cli_error(&ag_cmd_gradcheck_info, "%s", err);
    ag_gradcheck_case_inputs(&p, inputs, sizeof(inputs));
    ag_gradcheck_case_free(&p);
    /* a bar on a log axis from the smallest to the largest finite error */
    double lo = INFINITY;
    int best = 0;
    for (int k = 0; k < SWEEP_N; k++) {
        if (!isfinite(abs_err[k]) || abs_err[k] <= 0)
            continue;
        lo = fmin(lo, floor(log10(abs_err[k])));
        if (!isfinite(abs_err[best]) || abs_err[k] < abs_err[best])
            best = k;
    }
    printf("Step-size sweep for %s, inputs %s (%s build).\n"
           "For each eps: the largest error of ag_gradcheck's finite difference against\n"
           "the analytic gradient. The bar is the max abs error on a log scale, 4\n"
           "characters per decade.\n\n",
           ag_gradcheck_case_name(r), inputs, AG_REAL_NAME);
    printf("%7s %10s %10s\n", "eps", "max abs", "max rel");
    int vanished = 0;
    for (int k = 0; k < SWEEP_N; k++) {
        printf("%7.0e", eps[k]);
        if (isinf(abs_err[k])) {
            printf(" %10s %10s  (for some x, x + eps == x in %s: the step vanished)\n", "inf",
                   "inf", AG_REAL_NAME);
            vanished = 1;
            continue;
        }
        printf(" %10.2e %10.2e  ", abs_err[k], rel_err[k]);
        int len = abs_err[k] > 0 ? 1 + (int)lround(4 * (log10(abs_err[k]) - lo)) : 0;
        for (int c = 0; c < len; c++)
            putchar('#');
        printf("%s\n", k == best ? "  <- smallest" : "");
    }
    print_sweep_notes(eps[best], vanished);
    if (o->plot) {
        char title[160], shown[AG_QUOTE_LEN];
        int sig = 0;
        snprintf(title, sizeof(title), "attograd gradcheck --sweep: %s (%s)",
                 ag_gradcheck_case_name(r), AG_REAL_NAME);
        if (plot_sweep(o->plot, title, eps, abs_err, rel_err, &sig, err, sizeof(err))) {
            printf("plot: %s\n", ag_quote(o->plot, shown, sizeof(shown)));
        } else {
            ag_cli_error(&ag_cmd_gradcheck_info, "%s", err);
            return sig ? 128 + sig : AG_EXIT_FAIL;
        }
    }
    return AG_EXIT_OK;
}

int ag_cmd_gradcheck(int argc, char **argv)
{
    const ag_command *cmd = &ag_cmd_gradcheck_info;
    gc_opts o;
    int parsed = parse_args(cmd, argc, argv, &o);
    if (parsed == AG_CLI_HELP)
        return print_help(cmd);
    if (parsed != AG_CLI_GO)
        return parsed;
    /* the plot's file is checked before the sweep, not after it */
    const ag_cli_file plot = {"--plot", o.plot, 1, NULL};
    int checked = ag_cli_check_files(cmd, &plot, 1);
    if (checked != AG_EXIT_OK)
        return checked;
    if (o.plot && !ag_cli_have_program("gnuplot")) {
        /* gnuplot is optional: said before the sweep, which goes on without the plot */
        ag_cli_error(cmd, "gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
        o.plot = NULL;
    }
    ag_gradcheck_opts go = ag_gradcheck_defaults();
    go.eps = o.eps;
    go.seed = o.seed;
    go.bug = (ag_bug)o.bug;
    return o.sweep ? run_sweep(&o, &go) : run_table(&o, &go);
}
