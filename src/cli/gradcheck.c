/*
 * gradcheck.c - `attograd gradcheck`: every op's backward, the losses and the
 * attention layer checked against central differences with the library's
 * ag_gradcheck, one table row per check; and --sweep, the error against the
 * step size eps, which shows truncation error giving way to round-off.
 */
#include "opts.h"
#include "../core/internal.h"   /* ag_gradcheck_bug, AG_BUG_SOFTMAX: --inject-bug only */

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ag_command ag_cmd_gradcheck_info = {
    "gradcheck", ag_cmd_gradcheck,
    "attograd gradcheck [--op NAME|all] [--eps E] [--seed S] [--verbose] [--inject-bug softmax] "
    "[--sweep [--plot FILE.png]]",
    "check every op's backward against finite differences",
};

#define MAX_INPUTS 6

/* ---- the checks ---- */

/* What a row's build function needs besides its inputs. */
typedef struct gc_case {
    ag_attention *att;   /* layer rows */
    ag_posenc *pe;
} gc_case;

typedef ag_tensor *(*build_fn)(ag_tape *, ag_tensor *const *, void *);

typedef struct gc_row {
    const char *op;           /* the op these rows check (what --op selects) */
    const char *name;         /* the table's first column */
    build_fn build;
    int n_in;                 /* random inputs, named by names (layer rows: 0) */
    const char *names[2];
    int ndim[2];
    int shape[2][AG_MAX_DIMS];
    /* layer rows */
    int heads, causal;
    ag_posenc_kind posenc;
    int op_by_op;             /* the layer's op-by-op form instead of the fused op */
} gc_row;

static const int ids23[] = {1, 4, 4, 0, 2, 3};     /* (2,3) token ids into a table of 5 */
static const int targets6[] = {4, 4, 0, 2, AG_IGNORE_INDEX, 1};

static ag_tensor *b_matmul(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_matmul(t, in[0], in[1]);
}
static ag_tensor *b_matmul_bt(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_matmul_bt(t, in[0], in[1]);
}
static ag_tensor *b_transpose(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_transpose(t, in[0]);
}
static ag_tensor *b_scale(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_scale(t, in[0], -0.7);
}
static ag_tensor *b_softmax(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_softmax(t, in[0]);
}
static ag_tensor *b_causal_softmax(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_softmax(t, ag_causal_mask(t, in[0]));
}
static ag_tensor *b_add(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_add(t, in[0], in[1]);
}
static ag_tensor *b_mul(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_mul(t, in[0], in[1]);
}
static ag_tensor *b_sum(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_sum(t, in[0]);
}
static ag_tensor *b_mean(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_mean(t, in[0]);
}
static ag_tensor *b_mse(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_mse(t, in[0], in[1]);
}
static ag_tensor *b_split(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_split_heads(t, in[0], 2);
}
static ag_tensor *b_merge(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_merge_heads(t, in[0]);
}
static ag_tensor *b_reshape(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_reshape(t, in[0], 2, (const int[]){6, 4});
}
static ag_tensor *b_embedding(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_embedding(t, in[0], ids23, 2, (const int[]){2, 3});
}
static ag_tensor *b_cross_entropy(ag_tape *t, ag_tensor *const *in, void *c)
{
    (void)c;
    return ag_cross_entropy(t, in[0], targets6, 6);
}
/* in: x (B,T,d), then the layer's wq, wk, wv, wo, then pos when learned */
static ag_tensor *b_layer(ag_tape *t, ag_tensor *const *in, void *c)
{
    gc_case *gc = c;
    return ag_attention_forward(t, gc->att, ag_posenc_apply(t, gc->pe, in[0]), NULL);
}

#define IN1(nm, n0, ...) 1, {nm, NULL}, {n0, 0}, {{__VA_ARGS__}, {0}}
#define IN2(nm0, nm1, n0, n1, s0, s1) 2, {nm0, nm1}, {n0, n1}, {s0, s1}
#define S(...) {__VA_ARGS__}
#define LAYER(name, h, causal, pe) {"attention", name, b_layer, 0, {NULL, NULL}, {0, 0}, {{0}}, h, causal, pe, 0}
#define LAYER_OPS(name, h, causal) \
    {"attention", name, b_layer, 0, {NULL, NULL}, {0, 0}, {{0}}, h, causal, AG_POSENC_NONE, 1}

static const gc_row rows[] = {
    {"matmul", "matmul 2-D", b_matmul, IN2("a", "b", 2, 2, S(3, 4), S(4, 5)), 0, 0, 0, 0},
    {"matmul", "matmul shared b", b_matmul, IN2("a", "b", 3, 2, S(2, 3, 4), S(4, 5)), 0, 0, 0, 0},
    {"matmul", "matmul batched", b_matmul, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 4, 5)), 0, 0, 0, 0},
    {"matmul_bt", "matmul_bt shared b", b_matmul_bt, IN2("a", "b", 3, 2, S(2, 3, 4), S(5, 4)), 0, 0, 0, 0},
    {"matmul_bt", "matmul_bt batched", b_matmul_bt, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 5, 4)), 0, 0, 0, 0},
    {"transpose", "transpose", b_transpose, IN1("a", 3, 2, 3, 4), 0, 0, 0, 0},
    {"scale", "scale by -0.7", b_scale, IN1("a", 2, 3, 4), 0, 0, 0, 0},
    {"softmax", "softmax", b_softmax, IN1("z", 2, 4, 5), 0, 0, 0, 0},
    {"softmax", "softmax 3-D", b_softmax, IN1("z", 3, 2, 3, 4), 0, 0, 0, 0},
    {"softmax", "softmax large (sampled)", b_softmax, IN1("z", 2, 8, 40), 0, 0, 0, 0},
    {"causal_mask", "causal_mask + softmax", b_causal_softmax, IN1("s", 3, 2, 4, 4), 0, 0, 0, 0},
    {"add", "add", b_add, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 3, 4)), 0, 0, 0, 0},
    {"add", "add broadcast", b_add, IN2("a", "b", 3, 1, S(2, 3, 4), S(4)), 0, 0, 0, 0},
    {"mul", "mul", b_mul, IN2("a", "b", 3, 3, S(2, 3, 4), S(2, 3, 4)), 0, 0, 0, 0},
    {"mul", "mul broadcast", b_mul, IN2("a", "b", 3, 2, S(2, 3, 4), S(3, 4)), 0, 0, 0, 0},
    {"sum", "sum", b_sum, IN1("a", 2, 3, 4), 0, 0, 0, 0},
    {"mean", "mean", b_mean, IN1("a", 2, 3, 4), 0, 0, 0, 0},
    {"mse", "mse loss", b_mse, IN2("pred", "y", 3, 3, S(2, 3, 4), S(2, 3, 4)), 0, 0, 0, 0},
    {"cross_entropy", "cross_entropy loss", b_cross_entropy, IN1("z", 3, 2, 3, 5), 0, 0, 0, 0},
    {"split_heads", "split_heads into 2", b_split, IN1("x", 3, 2, 3, 4), 0, 0, 0, 0},
    {"merge_heads", "merge_heads", b_merge, IN1("x", 4, 2, 2, 3, 2), 0, 0, 0, 0},
    {"reshape", "reshape to [6x4]", b_reshape, IN1("a", 3, 2, 3, 4), 0, 0, 0, 0},
    {"embedding", "embedding (table)", b_embedding, IN1("table", 2, 5, 3), 0, 0, 0, 0},
    LAYER("attention H=1", 1, 0, AG_POSENC_NONE),
    LAYER("attention H=1 sinusoidal", 1, 0, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=1 learned", 1, 0, AG_POSENC_LEARNED),
    LAYER("attention H=1 causal", 1, 1, AG_POSENC_NONE),
    LAYER("attention H=1 causal sinusoidal", 1, 1, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=1 causal learned", 1, 1, AG_POSENC_LEARNED),
    LAYER("attention H=2", 2, 0, AG_POSENC_NONE),
    LAYER("attention H=2 sinusoidal", 2, 0, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=2 learned", 2, 0, AG_POSENC_LEARNED),
    LAYER("attention H=2 causal", 2, 1, AG_POSENC_NONE),
    LAYER("attention H=2 causal sinusoidal", 2, 1, AG_POSENC_SINUSOIDAL),
    LAYER("attention H=2 causal learned", 2, 1, AG_POSENC_LEARNED),
    LAYER_OPS("attention H=2 op by op", 2, 0),
    LAYER_OPS("attention H=2 causal op by op", 2, 1),
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

/* The layer rows' sizes: B sequences of T tokens of width D. */
enum { LAYER_B = 2, LAYER_T = 3, LAYER_D = 4 };

/* One prepared check: its inputs (parameters) and context. */
typedef struct prepared {
    ag_tensor *in[MAX_INPUTS];
    const char *names[MAX_INPUTS];
    int n_in;
    gc_case gc;
    ag_tensor *own[2];   /* inputs this struct allocated (the rest belong to the layer) */
} prepared;

static void prepared_free(prepared *p)
{
    ag_param_free(p->own[0]);
    ag_param_free(p->own[1]);
    ag_attention_free(p->gc.att);
    ag_posenc_free(p->gc.pe);
    memset(p, 0, sizeof(*p));
}

/* Make the row's inputs from rng. Returns 1, or 0 with err set. */
static int prepare(const gc_row *r, ag_rng *rng, prepared *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    if (r->build != b_layer) {
        for (int i = 0; i < r->n_in; i++) {
            p->own[i] = p->in[i] = ag_param_new(r->ndim[i], r->shape[i]);
            if (!p->in[i]) {
                snprintf(err, errlen, "out of memory");
                return 0;
            }
            ag_fill_normal(p->in[i], rng, 0, 1);
            p->names[i] = r->names[i];
        }
        p->n_in = r->n_in;
        return 1;
    }
    p->gc.att = ag_attention_new(LAYER_D, r->heads, r->causal, rng, err, errlen);
    ag_attention_set_fused(p->gc.att, !r->op_by_op);
    p->gc.pe = p->gc.att ? ag_posenc_new(r->posenc, LAYER_T, LAYER_D, rng, err, errlen) : NULL;
    p->own[0] = p->in[0] = ag_param_new(3, (const int[]){LAYER_B, LAYER_T, LAYER_D});
    if (!p->gc.att || !p->gc.pe || !p->in[0]) {
        if (p->gc.att && p->gc.pe)
            snprintf(err, errlen, "out of memory");
        prepared_free(p);
        return 0;
    }
    ag_fill_normal(p->in[0], rng, 0, 1);
    p->names[0] = "x";
    ag_attention_params(p->gc.att, p->in + 1, p->names + 1, 4);
    p->n_in = 5;
    if (ag_posenc_params(p->gc.pe, p->in + 5, p->names + 5, 1) == 1) {
        /* learned positions start at std 0.02; make them big enough to matter */
        ag_fill_normal(p->in[5], rng, 0, 0.5);
        p->n_in = 6;
    }
    return 1;
}

/* "a[3x4] b[4x5]"; inputs of one shape share it: "a,b[2x3]", "wq..wo[4x4]". */
static void describe_inputs(const prepared *p, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n_in;) {
        int j = i;   /* inputs i..j have one shape */
        while (j + 1 < p->n_in && ag_same_shape(p->in[i], p->in[j + 1]))
            j++;
        char s[64];
        ag_shape_str(p->in[i], s, sizeof(s));
        int n;
        if (j == i)
            n = snprintf(buf + used, len - used, "%s%s%s", used ? " " : "", p->names[i], s);
        else
            n = snprintf(buf + used, len - used, "%s%s%s%s%s", used ? " " : "", p->names[i],
                         j == i + 1 ? "," : "..", p->names[j], s);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
        i = j + 1;
    }
}

/* "b[2][3]" for flat index i of t. */
static void describe_element(const char *name, const ag_tensor *t, size_t i, char *buf, size_t len)
{
    size_t idx[AG_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = i % (size_t)t->shape[d];
        i /= (size_t)t->shape[d];
    }
    size_t used = (size_t)snprintf(buf, len, "%s", name);
    for (int d = 0; d < t->ndim && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "[%zu]", idx[d]);
}

/* ---- options ---- */

typedef struct gc_opts {
    const char *op;            /* NULL: all */
    double eps;                /* 0: the build's default */
    uint64_t seed;
    int verbose, bug, sweep;
    const char *plot;
} gc_opts;

static int known_op(const char *name)
{
    for (size_t i = 0; i < N_ROWS; i++)
        if (strcmp(rows[i].op, name) == 0)
            return 1;
    return 0;
}

/* "matmul, matmul_bt, ..." without repeats, in table order. */
static void op_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ROWS; i++) {
        if (i > 0 && strcmp(rows[i].op, rows[i - 1].op) == 0)
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", rows[i].op);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}

static int print_help(const ag_command *cmd, const ag_gradcheck_opts *def)
{
    char names[512];
    op_names(names, sizeof(names));
    printf("usage: %s\n\n"
           "Check the analytic gradient of every op, of the losses and of the attention\n"
           "layer against finite differences, using ag_gradcheck: central differences\n"
           "D(eps) = (L(x + eps) - L(x - eps)) / 2 eps, extrapolated as\n"
           "(4 D(eps) - D(2 eps)) / 3. A result with several elements is projected onto\n"
           "fixed random weights first. One row per check; exit status 1 when any fails.\n\n"
           "  --op NAME            only the rows of one op (default all):\n"
           "                       %s\n"
           "  --eps E              the finite-difference step (default %g in this %s build)\n"
           "  --seed S             seeds the inputs, projections and sampling (default 1)\n"
           "  --verbose            under each row, the worst element and its gradient\n"
           "  --inject-bug softmax use a deliberately wrong softmax backward (the - <g, s>\n"
           "                       term dropped), to see the check fail\n"
           "  --sweep              instead of the table: the max error of one op (softmax,\n"
           "                       or --op) for eps = 1 down to 1e-10\n"
           "  --plot FILE.png      with --sweep: draw it with gnuplot (log-log), if installed\n",
           cmd->usage, names, def->eps, AG_REAL_NAME);
    return AG_EXIT_OK;
}

/* The parse step: fills o from argv and touches nothing else (its only
 * output is a usage message). Returns AG_CLI_GO, AG_CLI_HELP or
 * AG_EXIT_USAGE. */
static int parse_args(const ag_command *cmd, int argc, char **argv, gc_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (ag_cli_is_help(argv[i])) {
            return AG_CLI_HELP;
        } else if (ag_cli_switch(argv, i, "--verbose")) {
            o->verbose = 1;
        } else if (ag_cli_switch(argv, i, "--sweep")) {
            o->sweep = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--op", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            if (strcmp(v, "all") == 0) {
                o->op = NULL;
            } else if (!known_op(v)) {
                char names[512];
                op_names(names, sizeof(names));
                return ag_cli_usage_error(cmd, "--op: unknown op '%s' (all, %s)", v, names);
            } else {
                o->op = v;
            }
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--eps", &v))) {
            if (r < 0 || !ag_cli_double(cmd, "--eps", v, 1e-15, 1, &o->eps))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--seed", &v))) {
            if (r < 0 || !ag_cli_u64(cmd, "--seed", v, &o->seed))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--inject-bug", &v))) {
            if (r < 0 || !ag_cli_bug(cmd, v, &o->bug))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--plot", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->plot = v;
        } else {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
    }
    if (o->plot && !o->sweep)
        return ag_cli_usage_error(cmd, "--plot draws the sweep: add --sweep");
    return AG_CLI_GO;
}

/* ---- one check ---- */

/* Run row r's check; returns 1 when it ran (result filled), 0 after printing why not. */
static int run_row(const gc_row *r, const gc_opts *o, const ag_gradcheck_opts *go,
                   ag_gradcheck_result *res, prepared *p)
{
    char err[256];
    ag_rng rng = ag_rng_new(o->seed);
    if (!prepare(r, &rng, p, err, sizeof(err))) {
        ag_cli_error(&ag_cmd_gradcheck_info, "%s: %s", r->name, err);
        return 0;
    }
    ag_status st = ag_gradcheck_bug(r->build, &p->gc, p->in, p->n_in, go, res, err, sizeof(err), o->bug);
    if (st != AG_OK) {
        ag_cli_error(&ag_cmd_gradcheck_info, "%s: %s", r->name, err);
        prepared_free(p);
        return 0;
    }
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
        printf("Injected bug: softmax's backward drops the - <g, s> term (--inject-bug softmax).\n");
    printf("\n%-31s %-30s %8s %8s %8s %8s  %s\n", "check", "inputs", "checked", "max abs",
           "max rel", "tol", "result");
    int n = 0, failed = 0, broken = 0;
    for (size_t i = 0; i < N_ROWS; i++) {
        const gc_row *r = &rows[i];
        if (o->op && strcmp(o->op, r->op) != 0)
            continue;
        ag_gradcheck_result res;
        prepared p;
        if (!run_row(r, o, go, &res, &p)) {
            broken++;
            continue;
        }
        char inputs[128], checked[32];
        describe_inputs(&p, inputs, sizeof(inputs));
        snprintf(checked, sizeof(checked), "%zu/%zu", res.checked, res.total);
        printf("%-31s %-30s %8s", r->name, inputs, checked);
        print_number(res.max_abs);
        print_number(res.max_rel);
        printf(" %8.1e  %s\n", res.tolerance, res.passed ? "PASS" : "FAIL");
        if (o->verbose && res.worst_input >= 0) {
            const ag_tensor *t = p.in[res.worst_input];
            char where[64];
            describe_element(p.names[res.worst_input], t, res.worst_index, where, sizeof(where));
            printf("    worst element %s: analytic gradient %.6g\n", where,
                   (double)t->grad[res.worst_index]);
        }
        n++;
        failed += !res.passed;
        prepared_free(&p);
    }
    printf("\n%d check%s: %d passed, %d failed.\n", n, n == 1 ? "" : "s", n - failed, failed);
    if (failed && o->bug)
        printf("The rows that go through softmax fail: the check caught the wrong backward.\n");
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
    fprintf(g, "\nset logscale xy\nset xrange [5e-11:2]\nset format x '10^{%%L}'\nset format y '10^{%%L}'\n"
               "set xlabel 'eps (finite-difference step)'\nset ylabel 'max error'\n"
               "set grid\nset key top center\n"
               "plot '-' using 1:2 with linespoints title 'max abs error', "
               "'-' using 1:2 with linespoints title 'max rel error'\n");
    for (int pass = 0; pass < 2; pass++) {
        const double *v = pass ? rel_err : abs_err;
        for (int i = 0; i < SWEEP_N; i++)
            if (isfinite(v[i]) && v[i] > 0)   /* a vanished step (inf) or 0 has no place on a log axis */
                fprintf(g, "%g %.9g\n", eps[i], v[i]);
        fprintf(g, "e\n");
    }
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}

static int run_sweep(const gc_opts *o, const ag_gradcheck_opts *go)
{
    const char *op = o->op ? o->op : "softmax";
    const gc_row *r = NULL;
    for (size_t i = 0; i < N_ROWS && !r; i++)
        if (strcmp(rows[i].op, op) == 0)
            r = &rows[i];
    double eps[SWEEP_N], abs_err[SWEEP_N], rel_err[SWEEP_N];
    char inputs[128] = "";
    for (int k = 0; k < SWEEP_N; k++) {
        ag_gradcheck_opts g = *go;
        g.eps = eps[k] = pow(10.0, -k);
        ag_gradcheck_result res;
        prepared p;
        if (!run_row(r, o, &g, &res, &p))
            return AG_EXIT_FAIL;
        if (k == 0)
            describe_inputs(&p, inputs, sizeof(inputs));
        abs_err[k] = res.max_abs;
        rel_err[k] = res.max_rel;
        prepared_free(&p);
    }
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
           r->name, inputs, AG_REAL_NAME);
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
           eps[best], go->eps, MACHINE_EPS, AG_REAL_NAME,
#ifdef AG_REAL_DOUBLE
           "late; in float it rises much sooner");
#else
           "at a much larger eps than in double\n(2.2e-16)");
#endif
    if (vanished)
        printf("Below the spacing of %s numbers near x, x + eps rounds back to x and the\n"
               "difference quotient is 0/0.\n", AG_REAL_NAME);
    if (o->plot) {
        char title[160], err[AG_CLI_ERR_LEN], shown[AG_IO_SHOW_LEN];
        int sig = 0;
        snprintf(title, sizeof(title), "attograd gradcheck --sweep: %s (%s)", r->name, AG_REAL_NAME);
        if (plot_sweep(o->plot, title, eps, abs_err, rel_err, &sig, err, sizeof(err))) {
            printf("plot: %s\n", ag_io_show(o->plot, shown, sizeof(shown)));
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
    gc_opts o = {NULL, 0, 1, 0, AG_BUG_NONE, 0, NULL};
    int parsed = parse_args(cmd, argc, argv, &o);
    if (parsed == AG_CLI_HELP) {
        ag_gradcheck_opts def = ag_gradcheck_defaults();
        return print_help(cmd, &def);
    }
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
    if (o.eps > 0)
        go.eps = o.eps;
    go.seed = o.seed;
    return o.sweep ? run_sweep(&o, &go) : run_table(&o, &go);
}
