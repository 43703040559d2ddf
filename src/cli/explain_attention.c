/*
 * explain_attention.c - `attograd explain attention`: one training step of
 * the seed's three-word attention, told in the order it happens: the tape's
 * entries as the forward pass records them, the backward pass walking them
 * in reverse, the SGD update of wq, wk and wv, and where "sat" looks before
 * and after. A gradient check of the same step closes it, and with
 * --inject-bug softmax it catches a deliberately wrong softmax backward.
 */
#include "dot.h"
#include "opts.h"
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This topic's command (defined with its options below): its errors are
 * "attograd explain attention: ...", as its usage errors are. */
static const ag_command explain_attention_info;

enum { N = 3, D = 2 }; /* three words of two numbers each */

/* cat, sat, mat: the seed's words, one per row */
static const ag_real words[N * D] = {1, 0, 0, 1, 1, 1};
static const char *const word_names[N] = {"cat", "sat", "mat"};
/* The target: the seed's output (to two decimals), except that sat's row is
 * cat's vector. In "cat sat" the cat is who sat, so sat should take more of
 * its meaning from cat. */
static const ag_real target[N * D] = {0.80f, 0.60f, 1.00f, 0.00f, 0.75f, 0.75f};

/* The tensors of one forward pass (tape tensors) and the weights (parameters). */
typedef struct step {
    ag_tensor *x, *q, *k, *v, *dots, *scores, *weights, *out, *y, *loss;
} step;

enum { WQ, WK, WV, N_W };
static const char *const w_names[N_W] = {"wq", "wk", "wv"};

/* Record the step's forward pass with the weights w[WQ..WV]; returns the loss,
 * or NULL with the tape's error set. */
static ag_tensor *forward(ag_tape *tape, ag_tensor *const *w, step *s)
{
    step local;
    if (!s)
        s = &local;
    s->x = ag_tensor_from(tape, 2, (const int[]){N, D}, words);
    s->q = ag_matmul(tape, s->x, w[WQ]);
    s->k = ag_matmul(tape, s->x, w[WK]);
    s->v = ag_matmul(tape, s->x, w[WV]);
    s->dots = ag_matmul_bt(tape, s->q, s->k);
    s->scores = ag_scale(tape, s->dots, 1 / sqrt((double)D));
    s->weights = ag_softmax(tape, s->scores);
    s->out = ag_matmul(tape, s->weights, s->v);
    s->y = ag_tensor_from(tape, 2, (const int[]){N, D}, target);
    s->loss = ag_mse(tape, s->out, s->y);
    return s->loss;
}

static ag_tensor *build_loss(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    return forward(tape, in, NULL);
}

/* ---- printing ---- */

typedef struct story {
    ag_tensor *w[N_W];
    step s;
    ag_tensor_name names[16];
    size_t n_names;
} story;

static const char *name_of(const story *st, const ag_tensor *t)
{
    for (size_t i = 0; i < st->n_names; i++)
        if (st->names[i].t == t)
            return st->names[i].name;
    return "?";
}

/* One row of a 2-D tensor (or of its gradient): "[ 1.0000  0.0000]". */
static void print_row(const ag_real *v, int cols)
{
    printf("[");
    for (int j = 0; j < cols; j++)
        printf("%s%7.4f", j ? " " : "", (double)v[j]);
    printf("]");
}

/* A matrix under an indent, numpy style; a one-element tensor as a number. */
static void print_values(const char *indent, const ag_tensor *t, const ag_real *v)
{
    if (t->size == 1) {
        printf("%s%.4f\n", indent, (double)v[0]);
        return;
    }
    int rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->shape[t->ndim - 1];
    for (int i = 0; i < rows; i++) {
        printf("%s%s", indent, i ? " " : "[");
        print_row(v + (size_t)i * (size_t)cols, cols);
        printf("%s\n", i == rows - 1 ? "]" : "");
    }
}

/* Matrices of one shape side by side, under a header of labels. */
static void print_side_by_side(const char *label, const ag_tensor *shape_of, int n,
                               const ag_real *const *v, const char *const *titles)
{
    int rows = shape_of->shape[0], cols = shape_of->shape[1];
    int width = 3 + 8 * cols; /* "[[" + numbers + "]]" */
    if (titles) {
        printf("%-5s", "");
        for (int m = 0; m < n; m++)
            printf("%-*s", m < n - 1 ? width + 3 : 0, titles[m]);
        printf("\n");
    }
    for (int i = 0; i < rows; i++) {
        printf("%-5s", i == 0 ? label : "");
        for (int m = 0; m < n; m++) {
            printf("%s", i ? " " : "[");
            print_row(v[m] + (size_t)i * (size_t)cols, cols);
            printf("%s", i == rows - 1 ? "]" : "");
            if (m < n - 1)
                printf(i == rows - 1 ? "   " : "    ");
        }
        printf("\n");
    }
}

/* "matmul(x [3x2], wq [2x2]) -> Q [3x2]" */
static void print_call(const story *st, const ag_entry_info *e)
{
    char s[64];
    printf("%s%s", e->op, e->n_in ? "(" : "");
    for (int i = 0; i < e->n_in; i++)
        printf("%s%s %s", i ? ", " : "", name_of(st, e->in[i]),
               ag_shape_str(e->in[i], s, sizeof(s)));
    if (strcmp(e->op, "scale") == 0)
        printf(", %.4f", e->arg);
    printf("%s -> %s %s", e->n_in ? ")" : "", name_of(st, e->out),
           ag_shape_str(e->out, s, sizeof(s)));
}

static const char *forward_note(const story *st, const ag_tensor *t)
{
    const step *s = &st->s;
    if (t == s->x)
        return "the words, one per row: cat, sat, mat";
    if (t == s->q)
        return "Q = x wq: what each word is looking for";
    if (t == s->k)
        return "K = x wk: what each word offers to be matched against";
    if (t == s->v)
        return "V = x wv: what each word hands over when it is picked";
    if (t == s->dots)
        return "Q K^T: row i, column j is query i dotted with key j";
    if (t == s->scores)
        return "divided by sqrt(2), the square root of the key width";
    if (t == s->weights)
        return "softmax of each row; row i is where word i looks (row 1: sat)";
    if (t == s->out)
        return "out = weights V: each word's weighted blend of the values";
    if (t == s->y)
        return "the target: the seed's output, but sat's row is cat's vector [1, 0]";
    if (t == s->loss)
        return "mse: the mean of (out - y)^2 over the 6 numbers";
    return "";
}

static void print_forward(const story *st, const ag_tape *tape)
{
    printf("Forward: each op computes its output and appends one entry to the tape\n"
           "(%zu entries; the weights are parameters, not entries).\n",
           ag_tape_size(tape));
    ag_entry_info e;
    for (size_t k = 0; ag_tape_entry_info(tape, k, &e) == AG_OK; k++) {
        printf("\n[%zu] ", k);
        print_call(st, &e);
        printf("\n    %s\n", forward_note(st, e.out));
        print_values("    ", e.out, e.out->data);
    }
}

/* Which entries take t as an input: "[7]" or "[4] and [5]". */
static int consumers(const ag_tape *tape, const ag_tensor *t, char *buf, size_t len)
{
    size_t k[8], n = ag_tape_consumers(tape, t, k, 8), used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < 8; i++) {
        int w = snprintf(buf + used, len - used, "%s[%zu]", i ? " and " : "", k[i]);
        if (w > 0 && (size_t)w < len - used)
            used += (size_t)w;
    }
    return (int)n;
}

/* The rule entry e uses to send a gradient to its input i, in the story's names. */
static void print_rule(const story *st, const ag_entry_info *e, int i)
{
    const char *c = name_of(st, e->out);
    const char *a = name_of(st, e->in[0]);
    const char *b = e->n_in > 1 ? name_of(st, e->in[1]) : "";
    const char *to = name_of(st, e->in[i]);
    if (strcmp(e->op, "matmul") == 0) {
        if (i == 0)
            printf("d%s = d%s %s^T", to, c, b);
        else
            printf("d%s = %s^T d%s", to, a, c);
    } else if (strcmp(e->op, "matmul_bt") == 0) {
        if (i == 0)
            printf("d%s = d%s %s", to, c, b);
        else
            printf("d%s = (d%s)^T %s", to, c, a);
    } else if (strcmp(e->op, "scale") == 0) {
        printf("d%s = %.4f d%s", to, e->arg, c);
    } else if (strcmp(e->op, "softmax") == 0) {
        printf("d%s = %s * (d%s - <d%s, %s>), row by row", to, c, c, c, c);
    } else if (strcmp(e->op, "mse") == 0) {
        printf("d%s = %s2 (%s - %s) / %zu", to, i ? "-" : "", a, b, e->in[0]->size);
    } else {
        printf("d%s (see src/ops/%s.c)", to, e->op);
    }
}

static void print_backward(const story *st, const ag_tape *tape)
{
    printf("\nBackward: ag_backward sets dloss = 1 and walks the tape from the last entry\n"
           "to the first. Each entry takes the gradient of its output and adds what it\n"
           "sends into its inputs' gradients (dX is short for dL/dX).\n");
    size_t n = ag_tape_size(tape);
    for (size_t k = n; k-- > 0;) {
        ag_entry_info e;
        ag_tape_entry_info(tape, k, &e);
        printf("\n[%zu] ", k);
        print_call(st, &e);
        printf("\n");
        char from[64];
        if (e.out == st->s.loss)
            printf("    receives dloss = 1, the seed of the backward pass\n");
        else if (!e.out->grad)
            printf("    data: no gradient flows here, nothing to do\n");
        else if (consumers(tape, e.out, from, sizeof(from)) == 1)
            printf("    receives d%s, sent by %s above\n", name_of(st, e.out), from);
        else
            printf("    receives d%s, the sum of what %s sent above\n", name_of(st, e.out), from);
        if (e.n_in == 0 && e.out->grad)
            printf("    no inputs: nothing to send\n");
        for (int i = 0; i < e.n_in && e.out->grad; i++) {
            const ag_tensor *in = e.in[i];
            if (!in->grad) {
                printf("    %s is data: it gets no gradient\n", name_of(st, in));
                continue;
            }
            printf("    sends ");
            print_rule(st, &e, i);
            char users[64];
            int used = consumers(tape, in, users, sizeof(users));
            printf(used > 1 ? " (%s's total, from %s)\n" : "\n", name_of(st, in), users);
            print_values("    ", in, in->grad);
        }
    }
}

/* Row 1 of the weights, where sat looks. */
static void print_sat_row(const char *label, const ag_real *w)
{
    printf("  %-7s", label);
    for (int j = 0; j < N; j++)
        printf(" %8.4f", (double)w[1 * N + j]);
    printf("\n");
}

/* ---- the story's parts ---- */

static void print_intro(void)
{
    printf("One training step of the seed's attention.\n\n"
           "x holds the three words, one per row: cat = [1, 0], sat = [0, 1], mat = [1, 1].\n"
           "wq, wk and wv (2x2) are learnable and start at the identity, so Q = K = V = x\n"
           "and the first forward pass is exactly the seed's (attograd demo). There is no\n"
           "output projection wo: the seed has none, and without it out is the blend itself.\n"
           "The target y is the seed's output with one row changed: sat's row is cat's\n"
           "vector [1, 0] (in \"cat sat\", the cat is who sat), so the loss asks sat to look\n"
           "more at cat.\n\n");
}

/* What the step started from, to compare with after the update. */
typedef struct snapshot {
    ag_real w[N_W][D * D], weights[N * N], out[N * D];
    double loss;
} snapshot;

/* The SGD update, told matrix by matrix; *before keeps the step's start. */
static void tell_update(const story *st, ag_optim *sgd, double lr, snapshot *before)
{
    before->loss = (double)st->s.loss->data[0];
    memcpy(before->weights, st->s.weights->data, sizeof(before->weights));
    memcpy(before->out, st->s.out->data, sizeof(before->out));
    for (int m = 0; m < N_W; m++)
        memcpy(before->w[m], st->w[m]->data, sizeof(before->w[m]));
    ag_optim_step(sgd);
    printf("\nSGD update with lr %g: w <- w - lr dw, for wq, wk and wv.\n\n", lr);
    for (int m = 0; m < N_W; m++) {
        const ag_real *v[3] = {before->w[m], st->w[m]->grad, st->w[m]->data};
        static const char *const titles[3] = {"before", "gradient dw", "after"};
        print_side_by_side(w_names[m], st->w[m], 3, v, m == 0 ? titles : NULL);
    }
}

/* The forward pass again with the new weights: the loss, the weights, and
 * where sat looks and why its output moved. */
static void tell_after(const snapshot *before, const step *after, double lr)
{
    const ag_real *w1 = after->weights->data;
    double loss = (double)after->loss->data[0];
    printf("\nForward again with the new weights: the loss went from %.4f to %.4f.\n", before->loss,
           loss);
    if (loss > before->loss)
        printf("It went up: a step of lr %g overshoots along the gradient; try a smaller --lr.\n",
               lr);
    printf("\n");
    const ag_real *wv[2] = {before->weights, w1};
    static const char *const wtitles[2] = {"weights before", "weights after"};
    print_side_by_side("", after->weights, 2, wv, wtitles);
    printf("\nWhere sat looks (row 1 of the weights):\n  %-7s", "");
    for (int j = 0; j < N; j++)
        printf(" %8s", word_names[j]);
    printf("\n");
    print_sat_row("before", before->weights);
    print_sat_row("after", w1);
    printf("  %-7s", "change");
    for (int j = 0; j < N; j++)
        printf(" %+8.4f", (double)w1[N + j] - (double)before->weights[N + j]);
    double d_cat = (double)w1[N] - (double)before->weights[N];
    printf("\n%s\nsat's output moved from ",
           d_cat > 0 ? "sat now looks more at cat, as the target asked."
                     : "sat does not look more at cat after this step (try another --lr).");
    print_row(before->out + D, D);
    printf(" to ");
    print_row(after->out->data + D, D);
    printf(".\n");
    /* split the move: the new weights of row 1 with the old values V = x */
    ag_real looked[D] = {0, 0};
    for (int j = 0; j < N; j++)
        for (int c = 0; c < D; c++)
            looked[c] += w1[N + j] * words[j * D + c];
    printf("Where sat looks accounts for the move to ");
    print_row(looked, D);
    printf(" (new weights, old values);\n"
           "the rest is wv's change to what the words hand over.\n");
}

/* ---- the gradient check ---- */

/* Check the step's gradient at the starting weights; returns 1 when it
 * passes, 0 when it fails, -1 when it could not run. */
static int check_step(int bug)
{
    ag_tensor *w[N_W] = {NULL, NULL, NULL};
    int verdict = -1;
    for (int m = 0; m < N_W; m++) {
        w[m] = ag_param_new(2, (const int[]){D, D});
        if (!w[m])
            goto done;
        w[m]->data[0] = w[m]->data[3] = 1; /* the identity */
    }
    /* every element, and the finite differences kept to show beside the gradient */
    ag_real num[N_W][D * D];
    ag_real *const numeric[N_W] = {num[0], num[1], num[2]};
    ag_gradcheck_opts opts = ag_gradcheck_defaults();
    opts.max_samples = 0;
    opts.bug = (ag_bug)bug;
    opts.numeric = numeric;
    ag_gradcheck_result r;
    char err[256];
    if (ag_gradcheck(build_loss, NULL, w, N_W, &opts, &r, err, sizeof(err)) != AG_OK) {
        ag_cli_error(&explain_attention_info, "gradient check: %s", err);
        goto done;
    }
    printf("\nGradient check of this step: ag_gradcheck moves each of the %d numbers in wq,\n"
           "wk and wv (at their starting values) by +-eps and +-2 eps, runs the forward\n"
           "pass again each time, and compares the finite difference\n"
           "(4 D(eps) - D(2 eps)) / 3, where D(h) = (L(w + h) - L(w - h)) / 2h and eps is\n"
           "%g, to the gradient the backward pass gave.\n",
           N_W * D * D, opts.eps);
    if (bug)
        printf("Injected bug (--inject-bug softmax): in this check, softmax's backward drops\n"
               "the - <dweights, weights> term and sends weights * dweights. (The step\n"
               "above used the correct backward.)\n");
    printf("\n");
    for (int m = 0; m < N_W; m++) {
        const ag_real *v[2] = {w[m]->grad, num[m]};
        static const char *const titles[2] = {"backward", "finite difference"};
        print_side_by_side(w_names[m], w[m], 2, v, m == 0 ? titles : NULL);
    }
    char where[48] = "", index[32];
    if (r.worst_input >= 0)
        snprintf(where, sizeof(where), "%s%s", w_names[r.worst_input],
                 ag_index_str(w[r.worst_input], r.worst_index, index, sizeof(index)));
    printf("max abs error %.1e, max rel error %.1e (at %s), tolerance %.0e: %s\n", r.max_abs,
           r.max_rel, where, r.tolerance, r.passed ? "PASS" : "FAIL");
    if (bug && !r.passed)
        printf("The check caught the wrong backward: wv's gradient does not pass through\n"
               "softmax and still agrees, but wq's and wk's do not.\n");
    else if (r.passed)
        printf("The backward pass and the finite differences agree.\n");
    verdict = r.passed;
done:
    for (int m = 0; m < N_W; m++)
        ag_param_free(w[m]);
    return verdict;
}

/* ---- the command ---- */

static const ag_option options[] = {
    AG_DOUBLE(ag_explain_opts, "--lr", lr, 1e-6, 100, 1, "X", "SGD learning rate (default %D)"),
    AG_PATH(ag_explain_opts, "--dot", dot, "FILE",
            "also write the tape as a Graphviz graph: every tensor\n"
            "with its shape, first values and gradient after the\n"
            "backward pass, every op between its inputs and output"),
    AG_PATH(ag_explain_opts, "--png", png, "FILE",
            "the same graph drawn as a picture by Graphviz's dot\n"
            "(exit 1 when Graphviz is not installed)"),
    AG_CHOICE(ag_explain_opts, "--inject-bug", bug, AG_BUG_SOFTMAX, AG_BUG_NONE, ag_cli_bug_word,
              "bug", "softmax",
              "check the step with a deliberately wrong softmax\n"
              "backward (the - <g, s> term dropped), to see it caught"),
};

static const ag_command explain_attention_info = {
    .name = "explain attention",
    .usage = "attograd explain attention [--lr X] [--dot FILE] [--png FILE] "
             "[--inject-bug softmax]",
    .summary = "one training step of the seed's attention",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 23,
};

static int print_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "One training step of the seed's self-attention, told in order. The words\n"
           "cat=[1,0], sat=[0,1], mat=[1,1] are the rows of x; wq, wk, wv start at the\n"
           "identity, so the first forward pass is the seed's (attograd demo). The target\n"
           "asks sat's output to be cat's vector. Shown: every tape entry of the forward\n"
           "pass with its values, the backward pass in reverse with what each entry sends\n"
           "to its inputs, the SGD update of wq, wk, wv, where sat looks before and\n"
           "after, and a gradient check of the step. Exit status 1 when the check fails.\n\n",
           cmd->usage);
    ag_cli_print_options(cmd);
    return AG_EXIT_OK;
}

/* The parse step: fills o from argv (argv[0] is "attention") and touches
 * nothing else. */
int ag_cli_explain_attention_parse(int argc, char **argv, ag_explain_opts *o)
{
    o->topic = AG_EXPLAIN_ATTENTION;
    int r = ag_cli_parse(&explain_attention_info, argc, argv, o, NULL);
    if (r == AG_CLI_GO && o->dot && o->png && strcmp(o->dot, o->png) == 0)
        return ag_cli_usage_error(&explain_attention_info, "--dot and --png both name '%s'",
                                  o->dot);
    return r;
}

void ag_cli_explain_attention_help(void)
{
    print_help(&explain_attention_info);
}

/* --dot and --png: the tape after backward, as a graph and as a picture.
 * Returns 0 after saying why one could not be written. */
static int draw_tape(const ag_explain_opts *o, const story *st, const ag_tape *tape)
{
    static const char *const title = "attograd explain attention: one step's tape after backward";
    char err[256];
    if ((o->dot && ag_tape_dot_save(tape, o->dot, st->names, st->n_names, title, err,
                                    sizeof(err)) != AG_OK) ||
        (o->png &&
         !ag_cli_render_dot(o->png, tape, st->names, st->n_names, title, err, sizeof(err)))) {
        ag_cli_error(&explain_attention_info, "%s", err);
        return 0;
    }
    return 1;
}

/* The run step: the story, told on stdout; 0, or 1 when the check fails or
 * something could not be done. */
int ag_cli_explain_attention_run(const ag_explain_opts *o)
{
    const double lr = o->lr;
    const char *dot = o->dot;
    const int bug = o->bug;
    if (o->png && !ag_cli_have_program("dot")) { /* before any file is written */
        ag_cli_error(&explain_attention_info, "Graphviz's dot is not installed, so no picture "
                                              "(apt-get install graphviz)");
        return AG_EXIT_FAIL;
    }
    const ag_cli_file files[] = {{"--dot", o->dot, 1, NULL}, {"--png", o->png, 1, NULL}};
    if (ag_cli_check_files(&explain_attention_info, files, AG_CLI_COUNT(files)) != AG_EXIT_OK)
        return AG_EXIT_FAIL;
    story st;
    memset(&st, 0, sizeof(st));
    ag_tape *tape = ag_tape_new();
    ag_optim *sgd = NULL;
    int status = AG_EXIT_FAIL;
    for (int m = 0; m < N_W; m++) {
        st.w[m] = ag_param_new(2, (const int[]){D, D});
        if (!st.w[m])
            goto oom;
        st.w[m]->data[0] = st.w[m]->data[3] = 1; /* the identity: Q = K = V = x */
    }
    sgd = ag_sgd_new(st.w, N_W, lr, 0);
    if (!tape || !sgd)
        goto oom;

    ag_tensor *loss = forward(tape, st.w, &st.s);
    if (!loss || ag_backward(tape, loss) != AG_OK) {
        ag_cli_error(&explain_attention_info, "%s", ag_tape_error(tape));
        goto done;
    }
    const step *s = &st.s;
    const ag_tensor_name names[] = {
        {s->x, "x"},           {st.w[WQ], "wq"},
        {st.w[WK], "wk"},      {st.w[WV], "wv"},
        {s->q, "Q"},           {s->k, "K"},
        {s->v, "V"},           {s->dots, "dots"},
        {s->scores, "scores"}, {s->weights, "weights"},
        {s->out, "out"},       {s->y, "y"},
        {s->loss, "loss"},
    };
    st.n_names = sizeof(names) / sizeof(names[0]);
    memcpy(st.names, names, sizeof(names));
    if (!draw_tape(o, &st, tape)) /* first: a file that cannot be written stops it early */
        goto done;
    print_intro();
    print_forward(&st, tape);
    print_backward(&st, tape);
    snapshot before;
    tell_update(&st, sgd, lr, &before);
    /* forward again with the new weights (the step's tensors are released) */
    ag_tape_reset(tape);
    step after;
    if (!forward(tape, st.w, &after)) {
        ag_cli_error(&explain_attention_info, "%s", ag_tape_error(tape));
        goto done;
    }
    tell_after(&before, &after, lr);

    int verdict = check_step(bug);
    status = verdict == 1 ? AG_EXIT_OK : AG_EXIT_FAIL;
    if (dot || o->png)
        printf("\n");
    if (dot)
        printf("The tape as a graph: %s (render it with: dot -Tpng %s -o tape.png)\n", dot, dot);
    if (o->png)
        printf("The tape as a picture: %s\n", o->png);
    goto done;
oom:
    ag_cli_error(&explain_attention_info, "out of memory");
done:
    ag_optim_free(sgd);
    for (int m = 0; m < N_W; m++)
        ag_param_free(st.w[m]);
    ag_tape_free(tape);
    return status;
}
