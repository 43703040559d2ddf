/*
 * explain_block.c - `attograd explain block`: one pre-norm GPT block,
 * forward and backward, entry by entry with real numbers, in the style of
 * `explain attention`: ln_1, the attention op by op, the first residual
 * add, ln_2, the GELU MLP, the second add; then the backward pass in
 * reverse, the gradient that reaches the block's input through each path
 * (the skip and the branch) and their sum, and a finite-difference check
 * of that gradient. The block is the library's own (ag_gpt_block, its
 * attention recorded op by op): a tiny one from a seed, or (--load) block L
 * of a trained model on a prompt, with the real gradient from above.
 */
#include "dot.h"
#include "limits.h"
#include "opts.h"
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This topic's command (defined with its options below): its errors are
 * "attograd explain block: ...", as its usage errors are. */
static const ag_command explain_block_info;

/* The tiny block: T positions of C numbers, H heads, weights drawn at STD. */
enum { TINY_T = 3, TINY_C = 4, TINY_H = 2 };
#define TINY_STD 0.5
/* What a matrix shows at most, rows and columns (the rest is counted): all
 * of the tiny block's, a few of a trained model's. Set once per run. */
enum { TINY_SHOW = 16, LOAD_SHOW = 8 };
static int show_rows = TINY_SHOW, show_cols = TINY_SHOW;

/* The tape of one block as ag_gpt_block records it (no biases, the
 * attention op by op), then the loss L = sum(out * g): each entry's op, the
 * name of its output and what it does. */
static const struct {
    const char *op, *name, *note;
} steps[] = {
    {"layernorm", "a", "a = ln_1(x): each position's row to mean 0 and variance 1, times ln_1"},
    {"matmul", "Q", "Q = a wq: what each position looks for"},
    {"matmul", "K", "K = a wk: what each position offers to be matched against"},
    {"matmul", "V", "V = a wv: what each position hands over when it is picked"},
    {"split_heads", "Q_h", "Q split into the heads: head h takes columns h*dh .. h*dh+dh-1"},
    {"split_heads", "K_h", "K, head by head"},
    {"split_heads", "V_h", "V, head by head"},
    {"matmul_bt", "QK", "Q_h K_h^T: row i, column j is query i dotted with key j"},
    {"scale", "S", "divided by sqrt(dh), the square root of a head's width"},
    {"causal_mask", "S_m", "the causal mask: key j > query i becomes -inf (only the past is seen)"},
    {"softmax", "P", "softmax of each row: where each position looks; a row sums to 1"},
    {"matmul", "O_h", "P V_h: each position's blend of the values, head by head"},
    {"merge_heads", "O", "the heads side by side again"},
    {"matmul", "att", "att = O wo: the attention's output"},
    {"add", "h", "h = x + att: the first residual add; the skip carries x past the attention"},
    {"layernorm", "b", "b = ln_2(h)"},
    {"matmul", "f", "f = b w_fc: four times wider"},
    {"gelu", "u", "u = gelu(f) = f Phi(f), the exact GELU"},
    {"matmul", "m", "m = u w_proj: back to the width of the stream"},
    {"add", "out", "out = h + m: the second residual add, the block's output"},
    {"leaf", "g", "g: the gradient that comes back to out from the rest of the model"},
    {"mul", "og", "out * g"},
    {"sum", "L", "L = sum(out * g), so that backward starts from dL/dout = g exactly"},
};
#define N_STEPS ((int)(sizeof(steps) / sizeof(steps[0])))
enum { E_LN1 = 0, E_ADD1 = 14, E_LN2 = 15, E_ADD2 = 19, E_G = 20 };

/* The block's weights in ag_gpt_params' order after "h.L.", and their short names. */
static const char *const w_suffix[8] = {"ln_1.weight", "attn.wq",     "attn.wk",  "attn.wv",
                                        "attn.wo",     "ln_2.weight", "mlp.w_fc", "mlp.w_proj"};
static const char *const w_short[8] = {"ln_1", "wq", "wk", "wv", "wo", "ln_2", "w_fc", "w_proj"};

typedef struct block_story {
    const ag_explain_opts *o;
    ag_gpt_file *file; /* --load's, or NULL */
    ag_gpt *g;         /* the model the block belongs to (owned) */
    int layer, T, C, H;
    ag_tensor *x;                  /* (1,T,C) a parameter: the stream entering the block */
    ag_real *up;                   /* (T C) g, the gradient from above */
    ag_tensor *w[8];               /* the block's weights (borrowed from g) */
    const ag_tensor *out[N_STEPS]; /* the entries' outputs (tape tensors) */
    ag_tensor_name names[N_STEPS + 9];
    size_t n_names;
    char what[1600]; /* where the numbers come from, for the intro */
} block_story;

static const char *name_of(const block_story *s, const ag_tensor *t)
{
    for (size_t i = 0; i < s->n_names; i++)
        if (s->names[i].t == t)
            return s->names[i].name;
    return "?";
}

/* ---- printing ---- */

static void print_row(const ag_real *v, int n, int stride)
{
    int shown = n > show_cols ? show_cols - 1 : n;
    printf("[");
    for (int j = 0; j < shown; j++)
        printf("%s%7.4f", j ? " " : "", (double)v[(size_t)j * stride] + 0.0);
    if (shown < n)
        printf(" ... %7.4f (%d)", (double)v[(size_t)(n - 1) * stride] + 0.0, n);
    printf("]");
}

/* A (rows, cols) matrix under an indent, numpy style, at most show_rows rows. */
static void print_matrix(const char *indent, const ag_real *v, int rows, int cols)
{
    int shown = rows > show_rows ? show_rows - 1 : rows;
    for (int i = 0; i < shown; i++) {
        printf("%s%s", indent, i ? " " : "[");
        print_row(v + (size_t)i * cols, cols, 1);
        printf("%s\n", i == rows - 1 ? "]" : "");
    }
    if (shown < rows) {
        printf("%s  ... %d rows in all; the last:\n%s ", indent, rows, indent);
        print_row(v + (size_t)(rows - 1) * cols, cols, 1);
        printf("]\n");
    }
}

/* A tensor's values (or gradient): a number, a matrix, or a matrix per head. */
static void print_values(const char *indent, const ag_tensor *t, const ag_real *v)
{
    if (t->size == 1) {
        printf("%s%.4f\n", indent, (double)v[0]);
        return;
    }
    int cols = t->shape[t->ndim - 1], rows = t->ndim >= 2 ? t->shape[t->ndim - 2] : 1;
    if (t->ndim == 4) { /* (1,H,T,x): one matrix per head */
        for (int h = 0; h < t->shape[1]; h++) {
            printf("%shead %d:\n", indent, h);
            print_matrix(indent, v + (size_t)h * rows * cols, rows, cols);
        }
        return;
    }
    print_matrix(indent, v, (int)(t->size / (size_t)cols), cols);
}

static void print_call(const block_story *s, const ag_entry_info *e)
{
    char sh[64];
    printf("%s(", e->op);
    for (int i = 0; i < e->n_in; i++)
        printf("%s%s %s", i ? ", " : "", name_of(s, e->in[i]), ag_shape_str(e->in[i], sh, 64));
    if (strcmp(e->op, "scale") == 0)
        printf(", %.4f", e->arg);
    printf(") -> %s %s", name_of(s, e->out), ag_shape_str(e->out, sh, 64));
}

/* The rule entry k uses to send its gradient to input i. */
static void print_rule(const block_story *s, const ag_entry_info *e, int i)
{
    const char *c = name_of(s, e->out), *to = name_of(s, e->in[i]);
    const char *a = name_of(s, e->in[0]), *b = e->n_in > 1 ? name_of(s, e->in[1]) : "";
    const char *op = e->op;
    if (strcmp(op, "matmul") == 0)
        i == 0 ? printf("d%s = d%s %s^T", to, c, b) : printf("d%s = %s^T d%s", to, a, c);
    else if (strcmp(op, "matmul_bt") == 0)
        i == 0 ? printf("d%s = d%s %s", to, c, b) : printf("d%s = d%s^T %s", to, c, a);
    else if (strcmp(op, "layernorm") == 0 && i == 0)
        printf("d%s = (d%s w - mean(d%s w) - xhat mean(d%s w xhat)) / std, row by row "
               "(attograd explain layernorm)",
               to, c, c, c);
    else if (strcmp(op, "layernorm") == 0)
        printf("d%s = the sum over positions of d%s * xhat", to, c);
    else if (strcmp(op, "split_heads") == 0 || strcmp(op, "merge_heads") == 0)
        printf("d%s = d%s with its columns put back where they came from", to, c);
    else if (strcmp(op, "scale") == 0)
        printf("d%s = %.4f d%s", to, e->arg, c);
    else if (strcmp(op, "causal_mask") == 0)
        printf("d%s = d%s, and 0 where the mask put -inf", to, c);
    else if (strcmp(op, "softmax") == 0)
        printf("d%s = %s * (d%s - <d%s, %s>), row by row", to, c, c, c, c);
    else if (strcmp(op, "add") == 0)
        printf("d%s = d%s: an add hands its gradient to both inputs unchanged", to, c);
    else if (strcmp(op, "gelu") == 0)
        printf("d%s = d%s * (Phi(%s) + %s phi(%s))", to, c, to, to, to);
    else if (strcmp(op, "mul") == 0)
        printf("d%s = d%s * %s", to, c, i == 0 ? b : a);
    else if (strcmp(op, "sum") == 0)
        printf("d%s = 1 everywhere", to);
    else
        printf("d%s (see src/ops/%s.c)", to, op);
}

/* The numbers the block starts from: x, and (tiny) every weight. */
static void print_numbers(const block_story *s)
{
    printf("x, the stream entering the block:\n");
    print_values("    ", s->x, s->x->data);
    if (s->file) {
        printf("The weights are the checkpoint's (--load).\n\n");
        return;
    }
    printf("The weights (ln_1 and ln_2 scale the normalised rows):\n");
    for (int k = 0; k < 8; k++) {
        printf("  %s\n", w_short[k]);
        print_values("    ", s->w[k], s->w[k]->data);
    }
    printf("\n");
}

static void print_forward(const block_story *s, const ag_tape *tape)
{
    printf("Forward: each op computes its output and appends an entry to the tape (%zu\n"
           "entries; x and the weights are parameters, not entries).\n",
           ag_tape_size(tape));
    ag_entry_info e;
    for (int k = 0; ag_tape_entry_info(tape, (size_t)k, &e) == AG_OK; k++) {
        printf("\n[%d] ", k);
        print_call(s, &e);
        printf("\n    %s\n", steps[k].note);
        print_values("    ", e.out, e.out->data);
    }
}

static void print_backward(const block_story *s, const ag_tape *tape)
{
    printf("\nBackward: ag_backward sets dL = 1 and walks the tape from the last entry to\n"
           "the first; each entry adds what it sends into its inputs' gradients (dX is\n"
           "dL/dX). The weights get theirs too, the gradients an optimizer would use.\n");
    for (size_t k = ag_tape_size(tape); k-- > 0;) {
        ag_entry_info e;
        ag_tape_entry_info(tape, k, &e);
        printf("\n[%zu] ", k);
        print_call(s, &e);
        printf("\n");
        if (!e.out->grad) {
            printf("    data: no gradient flows here\n");
            continue;
        }
        for (int i = 0; i < e.n_in; i++) {
            const ag_tensor *in = e.in[i];
            if (!in->grad) {
                printf("    %s is data: it gets no gradient\n", name_of(s, in));
                continue;
            }
            size_t first, used = ag_tape_consumers(tape, in, &first, 1);
            printf("    sends ");
            print_rule(s, &e, i);
            printf("\n");
            if (used > 1 && k != first)
                printf("    (%s is read by %zu entries: its gradient, their sum, is shown at "
                       "[%zu])\n",
                       name_of(s, in), used, first);
            else if (used > 1)
                printf("    the sum of what its %zu readers sent, d%s:\n", used, name_of(s, in));
            if (used == 1 || k == first)
                print_values("    ", in, in->grad);
        }
    }
}

/* ---- the two paths ---- */

static ag_tensor *ln_of(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    return ag_layernorm(tape, in[0], ctx, NULL);
}

/* What layer norm w sends back to its input t (1,T,C) for the upstream
 * gradient up, into dst: the branch's share of t's gradient. */
static int branch_part(const ag_tensor *t, ag_tensor *w, const ag_real *up, ag_real *dst)
{
    ag_tensor *p = ag_param_new(3, t->shape);
    char err[AG_CLI_ERR_LEN] = "out of memory";
    int ok = p != NULL;
    if (ok) {
        memcpy(p->data, t->data, t->size * sizeof(ag_real));
        ok = ag_vjp(ln_of, w, &p, 1, up, NULL, t->size, err, sizeof(err)) == AG_OK;
    }
    if (ok)
        memcpy(dst, p->grad, t->size * sizeof(ag_real));
    else
        ag_cli_error(&explain_block_info, "%s", err);
    ag_param_free(p);
    return ok;
}

static double norm_of(const ag_real *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)v[i] * v[i];
    return sqrt(sum);
}

/* One residual add's split: t (x or h) is read by the skip (add `add`)
 * and by the branch's layer norm `ln`. */
static int tell_paths(const block_story *s, const ag_tensor *t, int ln, int add, const char *when)
{
    size_t n = t->size;
    ag_real *branch = malloc(n * sizeof(ag_real)), *sum = malloc(n * sizeof(ag_real));
    const ag_tensor *skip = s->out[add], *lnout = s->out[ln];
    int ok = branch && sum && branch_part(t, ln == E_LN1 ? s->w[0] : s->w[5], lnout->grad, branch);
    if (ok) {
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            sum[i] = skip->grad[i] + branch[i];
            worst = fmax(worst, fabs((double)sum[i] - (double)t->grad[i]));
        }
        const char *tn = name_of(s, t);
        printf("\n%s: %s is read twice, by the skip of [%d] and by %s's layer norm [%d].\n", when,
               tn, add, ln == E_LN1 ? "the attention" : "the MLP", ln);
        printf("  through the skip: [%d] hands d%s on unchanged (norm %.4f)\n", add,
               name_of(s, skip), norm_of(skip->grad, n));
        print_values("    ", t, skip->grad);
        printf("  through the branch: what the layer norm [%d] sends back for d%s (norm %.4f)\n",
               ln, name_of(s, lnout), norm_of(branch, n));
        print_values("    ", t, branch);
        printf("  their sum, d%s, as the tape holds it (norm %.4f; skip + branch is it to %.0e)\n",
               tn, norm_of(t->grad, n), worst);
        print_values("    ", t, t->grad);
    }
    free(branch);
    free(sum);
    return ok;
}

static void tell_why(void)
{
    printf("\nWhy the residual keeps gradients alive: the skip's share is the gradient from\n"
           "above itself, handed on unchanged, whatever the branch does. A branch whose\n"
           "Jacobian is small (GPT-2 starts its projections wo and w_proj tiny on purpose, a\n"
           "saturated GELU, an attention that looks elsewhere) only adds a little to it; it\n"
           "cannot take it away. Without the skip (train --no-residual) the branch's share\n"
           "is all there is, and going down a stack of blocks the gradient is multiplied by\n"
           "one such Jacobian after another: it shrinks block by block (transformer.md,\n"
           "section 3, measures it).\n");
}

/* ---- the gradient check ---- */

/* L = sum(block(x) * g), as the story's tape computes it. */
static ag_tensor *block_loss(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    block_story *s = ctx;
    ag_tensor *out = ag_gpt_block(tape, s->g, s->layer, in[0], NULL);
    ag_tensor *g = ag_tensor_from(tape, 3, in[0]->shape, s->up);
    return ag_sum(tape, ag_mul(tape, out, g));
}

/* Returns 1 when the check passes, 0 when it fails, -1 when it cannot run. */
static int check_dx(block_story *s)
{
    ag_real *num = malloc(s->x->size * sizeof(ag_real)),
            *bwd = malloc(s->x->size * sizeof(ag_real));
    ag_real *const numeric[1] = {num};
    int verdict = -1;
    if (!num || !bwd) {
        ag_cli_error(&explain_block_info, "out of memory");
        goto done;
    }
    memcpy(bwd, s->x->grad, s->x->size * sizeof(ag_real));
    for (size_t i = 0; i < s->x->size; i++)
        num[i] = NAN;
    ag_gradcheck_opts opts = ag_gradcheck_defaults();
    opts.numeric = numeric;
    ag_gradcheck_result r;
    char err[AG_CLI_ERR_LEN];
    if (ag_gradcheck(block_loss, s, &s->x, 1, &opts, &r, err, sizeof(err)) != AG_OK) {
        ag_cli_error(&explain_block_info, "gradient check: %s", err);
        goto done;
    }
    int sampled = r.checked < r.total;
    printf("\nGradient check of dx: ag_gradcheck moves %s of x's %zu numbers by +-eps and\n"
           "+-2 eps (eps %g), runs the block forward again each time, and compares the\n"
           "finite difference (4 D(eps) - D(2 eps)) / 3, D(h) = (L(x + h) - L(x - h)) / 2h,\n"
           "with the gradient backward gave%s.\n\n",
           sampled ? "a sample" : "each", r.total, opts.eps,
           sampled ? " (the elements not sampled show as nan)" : "");
    printf("backward:\n");
    print_values("    ", s->x, bwd);
    printf("finite difference:\n");
    print_values("    ", s->x, num);
    char index[48];
    printf("max abs error %.1e, max rel error %.1e (at x%s), tolerance %.0e: %s\n", r.max_abs,
           r.max_rel, ag_index_str(s->x, r.worst_index, index, sizeof(index)), r.tolerance,
           r.passed ? "PASS" : "FAIL");
    printf(r.passed ? "The backward pass and the finite differences agree.\n"
                    : "The backward pass and the finite differences disagree.\n");
    verdict = r.passed;
done:
    free(num);
    free(bwd);
    return verdict;
}

/* ---- the command ---- */

static const ag_option options[] = {
    AG_U64(ag_explain_opts, "--seed", block_seed, 1, "S",
           "the tiny block's weights, x and g (default %D)"),
    AG_PATH(ag_explain_opts, "--load", load, "CKPT",
            "a block of a trained GPT instead (train --task text --save)"),
    AG_INT(ag_explain_opts, "--layer", layer, 0, AG_ATTEND_MAX, 0, "L",
           "with --load: which block (0 is the first; default %D)"),
    AG_STRING(ag_explain_opts, "--prompt", prompt, "TEXT",
              "with --load: the text it reads (at least 2 characters);\n"
              "g is the gradient of predicting its next characters"),
    AG_PATH(ag_explain_opts, "--dot", dot, "FILE",
            "also write the tape as a Graphviz graph, with every\n"
            "tensor's values and gradient"),
    AG_PATH(ag_explain_opts, "--png", png, "FILE",
            "the same graph drawn as a picture by Graphviz's dot\n"
            "(exit 1 when Graphviz is not installed)"),
};

static const ag_command explain_block_info = {
    .name = "explain block",
    .usage = "attograd explain block [--seed S] [--load CKPT [--layer L] --prompt TEXT] "
             "[--dot FILE] [--png FILE]",
    .summary = "one pre-norm GPT block, forward and backward",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 19,
};

void ag_cli_explain_block_help(void)
{
    printf("usage: %s\n\n"
           "One pre-norm GPT block, x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)), forward\n"
           "and backward, entry by entry with its numbers: the library's own block\n"
           "(ag_gpt_block), its attention recorded op by op. Backward starts from\n"
           "L = sum(out * g), g standing for the gradient the rest of the model sends\n"
           "back. Then where the input's gradient comes from: through each residual's\n"
           "skip and through its branch, and their sum; and a finite-difference check\n"
           "of dx (exit status 1 when it fails). By default a tiny block, T = %d\n"
           "positions of C = %d numbers, %d heads, its weights, x and g drawn from --seed\n"
           "(normal, std %g; layer-norm weights 1); with --load, block --layer of a\n"
           "trained model on --prompt, x the stream the blocks before it made and g the\n"
           "real gradient of predicting the prompt's next characters.\n\n",
           explain_block_info.usage, TINY_T, TINY_C, TINY_H, TINY_STD);
    ag_cli_print_options(&explain_block_info);
}

int ag_cli_explain_block_parse(int argc, char **argv, ag_explain_opts *o)
{
    const ag_command *cmd = &explain_block_info;
    uint64_t given;
    o->topic = AG_EXPLAIN_BLOCK;
    int r = ag_cli_parse(cmd, argc, argv, o, &given);
    if (r != AG_CLI_GO)
        return r;
    if (!o->load && (ag_cli_given(cmd, given, "--layer") || o->prompt))
        return ag_cli_usage_error(cmd, "--%s goes with --load: the tiny block has no %s",
                                  o->prompt ? "prompt" : "layer", o->prompt ? "text" : "layers");
    if (o->load && ag_cli_given(cmd, given, "--seed"))
        return ag_cli_usage_error(cmd, "--seed makes the tiny block; --load takes a trained one");
    if (o->load && !o->prompt)
        return ag_cli_usage_error(cmd, "--load needs --prompt TEXT: the text the block reads");
    if (o->load && strlen(o->prompt) < 2)
        return ag_cli_usage_error(cmd, "--prompt needs at least 2 characters: each position "
                                       "predicts the next");
    if (o->dot && o->png && strcmp(o->dot, o->png) == 0)
        return ag_cli_usage_error(cmd, "--dot and --png both name '%s'", o->dot);
    return AG_CLI_GO;
}

/* The tiny block: a 1-layer GPT of dim C, its block's weights, x and g from the seed. */
static int make_tiny(block_story *s)
{
    char err[AG_CLI_ERR_LEN];
    ag_gpt_config c = ag_gpt_defaults(1);
    c.layers = 1, c.heads = TINY_H, c.dim = TINY_C, c.seq = TINY_T;
    ag_rng rng = ag_rng_new(s->o->block_seed);
    if (!(s->g = ag_gpt_new(&c, NULL, err, sizeof(err))))
        return !ag_cli_error(&explain_block_info, "%s", err);
    s->T = TINY_T, s->C = TINY_C;
    for (int k = 0; k < 8; k++) {
        char name[64];
        snprintf(name, sizeof(name), "h.0.%s", w_suffix[k]);
        ag_tensor *w = ag_gpt_param(s->g, name);
        if (w->ndim == 2)
            ag_fill_normal(w, &rng, 0, TINY_STD);
    }
    s->x = ag_param_new(3, (int[]){1, TINY_T, TINY_C});
    s->up = malloc((size_t)TINY_T * TINY_C * sizeof(ag_real));
    if (!s->x || !s->up)
        return !ag_cli_error(&explain_block_info, "out of memory");
    ag_fill_normal(s->x, &rng, 0, 1);
    for (int i = 0; i < TINY_T * TINY_C; i++)
        s->up[i] = (ag_real)ag_rng_normal(&rng);
    snprintf(s->what, sizeof(s->what),
             "A tiny block: x holds T = %d positions of C = %d numbers, the residual stream\n"
             "entering it; 2 heads of %d columns, a causal mask, an MLP 4 times wider (%d).\n"
             "Its weights, x and g are drawn from seed %llu (normal; the weights std %g, the\n"
             "layer norms' weights 1, as a GPT starts them).",
             TINY_T, TINY_C, TINY_C / TINY_H, 4 * TINY_C, (unsigned long long)s->o->block_seed,
             TINY_STD);
    return 1;
}

/* --load: block L of the checkpoint, x the stream entering it for the
 * prompt's first T characters, g the real gradient of predicting the next
 * ones. Returns AG_CLI_GO or an exit status. */
static int load_block(block_story *s)
{
    const ag_explain_opts *o = s->o;
    const ag_command *cmd = &explain_block_info;
    char err[AG_CLI_ERR_LEN];
    /* one window forward and backward: within a training step's bound */
    int loaded = ag_cli_gpt_load(&explain_block_info, o->load, (ag_gpt_run){.batch = 1},
                                 "nothing was explained", &s->file, &s->g);
    if (loaded != AG_EXIT_OK)
        return loaded;
    const ag_gpt_config *c = ag_gpt_get_config(s->g);
    if (c->bias || c->no_residual || c->no_layernorm || c->no_mlp)
        return ag_cli_error(&explain_block_info,
                            "%s: explain block tells the standard block; this model was trained "
                            "with %s",
                            o->load,
                            c->bias           ? "--bias"
                            : c->no_residual  ? "--no-residual"
                            : c->no_layernorm ? "--no-layernorm"
                                              : "--no-mlp");
    if (o->layer >= c->layers)
        return ag_cli_usage_error(cmd, "--layer %d: %s has %d block%s (0..%d)", o->layer, o->load,
                                  c->layers, c->layers == 1 ? "" : "s", c->layers - 1);
    size_t len = strlen(o->prompt), n = 0;
    int *ids = malloc(len * sizeof(int));
    if (!ids)
        return ag_cli_error(&explain_block_info, "out of memory");
    if (ag_vocab_encode(ag_gpt_file_vocab(s->file), o->prompt, len, ids, &n, err, sizeof(err)) !=
        AG_OK) {
        free(ids);
        return ag_cli_error(&explain_block_info, "--prompt: %s of %s", err, o->load);
    }
    if (n < 2) {
        free(ids);
        return ag_cli_usage_error(cmd, "--prompt needs at least 2 characters: each position "
                                       "predicts the next");
    }
    int T = (int)(n - 1 < (size_t)c->seq ? n - 1 : (size_t)c->seq), C = c->dim, L = c->layers;
    s->layer = o->layer, s->T = T, s->C = C;
    s->x = ag_param_new(3, (int[]){1, T, C});
    s->up = malloc((size_t)T * C * sizeof(ag_real));
    ag_tape *tape = ag_tape_new();
    ag_tensor **resid = calloc((size_t)L, sizeof(*resid));
    int status = AG_EXIT_FAIL;
    if (!s->x || !s->up || !tape || !resid) {
        ag_cli_error(&explain_block_info, "out of memory");
        goto done;
    }
    /* the whole model on the prompt, its loss, and backward: the block's input
     * (the embeddings, or the previous block's output) and dL/dout */
    ag_gpt_taps taps = {NULL, resid};
    ag_tensor *z = ag_gpt_forward_taps(tape, s->g, ids, 1, T, NULL, &taps);
    ag_tensor *loss = ag_cross_entropy(tape, z, ids + 1, (size_t)T);
    if (ag_backward(tape, loss) != AG_OK) {
        ag_cli_error(&explain_block_info, "%s", ag_tape_error(tape));
        goto done;
    }
    if (s->layer == 0) {
        const ag_tensor *wte = ag_gpt_param(s->g, "wte"), *wpe = ag_gpt_param(s->g, "wpe");
        for (int t = 0; t < T; t++)
            for (int k = 0; k < C; k++)
                s->x->data[t * C + k] =
                    wte->data[(size_t)ids[t] * C + k] + (wpe ? wpe->data[(size_t)t * C + k] : 0);
    } else {
        memcpy(s->x->data, resid[s->layer - 1]->data, (size_t)T * C * sizeof(ag_real));
    }
    memcpy(s->up, resid[s->layer]->grad, (size_t)T * C * sizeof(ag_real));
    char shown[AG_QUOTE_LEN], text[AG_QUOTE_LEN];
    size_t bytes = 0;
    for (int t = 0; t <= T && bytes + 8 < sizeof(text); t++) {
        char glyph[8];
        ag_cli_show_char(ag_vocab_char(ag_gpt_file_vocab(s->file), ids[t]), glyph);
        bytes += (size_t)snprintf(text + bytes, sizeof(text) - bytes, "%s", glyph);
    }
    snprintf(s->what, sizeof(s->what),
             "Block %d of %s (%d blocks of %d heads, dim %d) on the prompt\n"
             "  %s\n"
             "T = %d positions, each predicting the next character. x is the residual\n"
             "stream entering the block (%s); g is the real gradient of the loss\n"
             "(the mean cross-entropy of those predictions) with respect to the block's\n"
             "output, as the blocks above and the head send it back.",
             s->layer, ag_quote(o->load, shown, sizeof(shown)), L, c->heads, C, text, T,
             s->layer ? "the blocks before it made it" : "the token and position embeddings");
    status = AG_CLI_GO;
done:
    ag_tape_free(tape);
    free(resid);
    free(ids);
    return status;
}

/* Name the tape's tensors; 0 when the tape is not the block this story tells. */
static int name_tensors(block_story *s, const ag_tape *tape)
{
    if (ag_tape_size(tape) != (size_t)N_STEPS)
        return 0;
    s->names[s->n_names++] = (ag_tensor_name){s->x, "x"};
    for (int k = 0; k < 8; k++)
        s->names[s->n_names++] = (ag_tensor_name){s->w[k], w_short[k]};
    for (int k = 0; k < N_STEPS; k++) {
        ag_entry_info e;
        ag_tape_entry_info(tape, (size_t)k, &e);
        if (strcmp(e.op, steps[k].op) != 0)
            return 0;
        s->out[k] = e.out;
        s->names[s->n_names++] = (ag_tensor_name){e.out, steps[k].name};
    }
    return 1;
}

static int draw_tape(const block_story *s, const ag_tape *tape)
{
    static const char *const title = "attograd explain block: one block's tape after backward";
    char err[AG_CLI_ERR_LEN];
    const ag_explain_opts *o = s->o;
    if ((o->dot &&
         ag_tape_dot_save(tape, o->dot, s->names, s->n_names, title, err, sizeof(err)) != AG_OK) ||
        (o->png && !ag_cli_render_dot(o->png, tape, s->names, s->n_names, title, err, sizeof(err))))
        return !ag_cli_error(&explain_block_info, "%s", err);
    return 1;
}

static int tell(block_story *s)
{
    const ag_explain_opts *o = s->o;
    for (int k = 0; k < 8; k++) {
        char name[64];
        snprintf(name, sizeof(name), "h.%d.%s", s->layer, w_suffix[k]);
        s->w[k] = ag_gpt_param(s->g, name);
    }
    ag_gpt_set_fused(s->g, 0); /* every step of the attention a tensor of its own */
    ag_tape *tape = ag_tape_new();
    int status = AG_EXIT_FAIL;
    if (!tape)
        return ag_cli_error(&explain_block_info, "out of memory");
    ag_tensor *loss = block_loss(tape, &s->x, s);
    if (!loss || ag_backward(tape, loss) != AG_OK) {
        ag_cli_error(&explain_block_info, "%s", ag_tape_error(tape));
        goto done;
    }
    if (!name_tensors(s, tape)) {
        ag_cli_error(&explain_block_info, "the block's tape is not the one this story tells");
        goto done;
    }
    if (!draw_tape(s, tape)) /* first: a file that cannot be written stops it early */
        goto done;
    printf("One pre-norm GPT block, forward and backward:\n\n"
           "  h   = x + attn(ln_1(x))      the positions exchange information\n"
           "  out = h + mlp(ln_2(h))       each position computes on what it gathered\n\n"
           "%s\n\n",
           s->what);
    print_numbers(s);
    print_forward(s, tape);
    print_backward(s, tape);
    printf("\nWhere the gradients of the stream come from. Each residual add gives its input\n"
           "two ways back: the skip, which hands on the gradient unchanged, and the branch\n"
           "(a layer norm, then attention or the MLP).\n");
    if (!tell_paths(s, s->out[E_ADD1], E_LN2, E_ADD2, "The second add") ||
        !tell_paths(s, s->x, E_LN1, E_ADD1, "The first add"))
        goto done;
    tell_why();
    int verdict = check_dx(s);
    status = verdict == 1 ? AG_EXIT_OK : AG_EXIT_FAIL;
    if (o->dot || o->png)
        printf("\n");
    if (o->dot)
        printf("The tape as a graph: %s (render it with: dot -Tpng %s -o block.png)\n", o->dot,
               o->dot);
    if (o->png)
        printf("The tape as a picture: %s\n", o->png);
done:
    ag_tape_free(tape);
    return status;
}

int ag_cli_explain_block_run(const ag_explain_opts *o)
{
    if (o->png && !ag_cli_have_program("dot")) /* before any file is written */
        return ag_cli_error(&explain_block_info, "Graphviz's dot is not installed, so no "
                                                 "picture (apt-get install graphviz)");
    const ag_cli_file files[] = {
        {"--dot", o->dot, 1, NULL}, {"--png", o->png, 1, NULL}, {"--load", o->load, 0, NULL}};
    int status = ag_cli_check_files(&explain_block_info, files, AG_CLI_COUNT(files));
    if (status != AG_EXIT_OK)
        return status;
    block_story s;
    memset(&s, 0, sizeof(s));
    s.o = o;
    show_rows = show_cols = o->load ? LOAD_SHOW : TINY_SHOW;
    status = o->load ? load_block(&s) : make_tiny(&s) ? AG_CLI_GO : AG_EXIT_FAIL;
    if (status == AG_CLI_GO)
        status = tell(&s);
    ag_param_free(s.x);
    free(s.up);
    ag_gpt_free(s.g);
    ag_gpt_file_free(s.file);
    return status;
}
