/*
 * train.c - `attograd train`: watch gradient descent learn a soft lookup.
 * Builds the toy model for a task, trains it with SGD or Adam on batches
 * drawn from one random stream, measures accuracy on held-out examples from
 * another, and ends with one `result:` line on stdout.
 */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EVAL_EXAMPLES 512
#define MAX_PARAMS 8

const ag_command ag_cmd_train_info = {
    "train", ag_cmd_train,
    "attograd train [--task lookup|lookup2|reverse|text] [--steps N] [--seed S] [options]",
    "train a toy attention model, or a GPT on a text file (--task text)",
};

/* Task defaults, chosen so that each task learns in seconds. */
static void task_defaults(ag_train_opts *o)
{
    ag_train_config *c = &o->config;
    ag_task_kind task = c->model.task;
    if (!o->set_seq)
        c->model.seq = task == AG_TASK_REVERSE ? 6 : 5;
    if (!o->set_dim)
        c->model.dim = 32;
    if (!o->set_heads)
        c->model.heads = task == AG_TASK_LOOKUP2 ? 2 : 1;
    if (!o->set_posenc)
        c->model.posenc = task == AG_TASK_REVERSE ? AG_POSENC_SINUSOIDAL : AG_POSENC_NONE;
    if (!o->set_lr)
        c->lr = c->optimizer_adam ? 3e-3 : 0.1;
}

static int print_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "Train the toy attention model (token embeddings, one attention layer, a\n"
           "linear readout) on a task generated on the fly, and report held-out accuracy.\n\n"
           "tasks:\n",
           cmd->usage);
    for (int k = 0; k < AG_TASK_COUNT; k++)
        printf("  %-8s %s\n", ag_task_name((ag_task_kind)k), ag_task_help((ag_task_kind)k));
    printf("  %-8s a GPT that learns to write like a text file (attograd train --task text --help)\n",
           "text");
    printf("\noptions:\n"
           "  --task NAME          the task (default lookup)\n"
           "  --steps N            training steps to run (default 600)\n"
           "  --batch N            examples per step (default 32)\n"
           "  --seq T              positions per example (default 5; reverse 6)\n"
           "  --dim D              width of every vector (default 32)\n"
           "  --heads H            attention heads, dividing D (default 1; lookup2 2)\n"
           "  --posenc KIND        none|sinusoidal|learned (default none; reverse sinusoidal)\n"
           "  --causal             each position sees only itself and earlier positions\n"
           "  --optimizer NAME     sgd|adam (default adam)\n"
           "  --lr X               learning rate (default 0.003 for adam, 0.1 for sgd)\n"
           "  --momentum X         SGD momentum (default 0.9)\n"
           "  --weight-decay X     AdamW decoupled weight decay (default 0)\n"
           "  --clip X             clip the global gradient norm at X; 0 turns it off (default 1)\n"
           "  --seed S             seeds the weights and the data (default 1)\n"
           "  --eval-every N       measure held-out accuracy every N steps (default 100)\n"
           "  --log FILE.csv       write step,loss,eval_loss,accuracy per step\n"
           "  --plot FILE.png      draw the loss curve, the held-out accuracy and one\n"
           "                       example's attention with gnuplot, when installed\n"
           "  --plot-heads FILE.png\n"
           "                       draw that example's attention, one heatmap per head\n"
           "  --save FILE          write a checkpoint (safetensors) at the end\n"
           "  --load FILE          continue from a checkpoint\n"
           "  --detect-anomaly     check every op for NaN/Inf and name the first\n"
           "  --threads N          threads for the matmuls and softmax (default 1, 1..256);\n"
           "                       the numbers are the same for every N\n"
           "  --quiet              print only the result line\n\n"
           "A flag given twice counts the last time. With --load the checkpoint fixes\n"
           "the model, the optimizer and the seed; --steps counts the steps to add.\n"
           "Ctrl-C (or SIGTERM, SIGHUP) stops after the current step and still saves\n"
           "the log and the checkpoint; the exit status is then 130 (143, 129). A loss\n"
           "or a weight that turns NaN or Inf stops the run naming the step and the op,\n"
           "exit 1, and nothing is saved. A plot gnuplot does not make (it fails, takes\n"
           "longer than AG_GNUPLOT_SECONDS, default 60, or writes no PNG) is said on\n"
           "stderr; the log and the checkpoint are still saved, and the exit status is 1.\n\n"
           "The last line on stdout is the summary:\n"
           "  result: task=lookup steps=N loss=L accuracy=A seconds=S\n");
    return AG_EXIT_OK;
}

/* The flags into o; defaults first. */
static int parse_flags(const ag_command *cmd, int argc, char **argv, ag_train_opts *o)
{
    ag_train_config *c = &o->config;
    memset(o, 0, sizeof(*o));
    c->model.task = AG_TASK_LOOKUP;
    o->steps = 600;
    c->batch = 32;
    o->eval_every = 100;
    c->optimizer_adam = 1;
    c->clip = 1;
    c->momentum = 0.9;
    c->seed = 1;
    o->threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (ag_cli_is_help(argv[i]))
            return AG_CLI_HELP;
        if (ag_cli_switch(argv, i, "--causal")) {
            c->model.causal = 1;
            o->set_causal = 1;
        } else if (ag_cli_switch(argv, i, "--detect-anomaly")) {
            o->detect_anomaly = 1;
        } else if (ag_cli_switch(argv, i, "--quiet")) {
            o->quiet = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--task", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            if (!ag_task_parse(v, &c->model.task))
                return ag_cli_usage_error(cmd, "--task: unknown task '%s' (lookup, lookup2, reverse, text)", v);
            o->set_task = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--steps", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--steps", v, 1, 100000000, &o->steps))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--threads", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--threads", v, 1, 256, &o->threads))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--batch", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--batch", v, 1, AG_CLI_MAX_BATCH, &c->batch))
                return AG_EXIT_USAGE;
            o->set_batch = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--seq", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--seq", v, 1, AG_CLI_MAX_SIZE, &c->model.seq))
                return AG_EXIT_USAGE;
            o->set_seq = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--dim", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--dim", v, 1, AG_CLI_MAX_SIZE, &c->model.dim))
                return AG_EXIT_USAGE;
            o->set_dim = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--heads", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--heads", v, 1, AG_CLI_MAX_SIZE, &c->model.heads))
                return AG_EXIT_USAGE;
            o->set_heads = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--posenc", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            if (!ag_posenc_parse(v, &c->model.posenc))
                return ag_cli_usage_error(cmd, "--posenc: unknown kind '%s' (none, sinusoidal, learned)", v);
            o->set_posenc = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--optimizer", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            if (strcmp(v, "adam") == 0)
                c->optimizer_adam = 1;
            else if (strcmp(v, "sgd") == 0)
                c->optimizer_adam = 0;
            else
                return ag_cli_usage_error(cmd, "--optimizer: unknown optimizer '%s' (sgd, adam)", v);
            o->set_optimizer = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--lr", &v))) {
            if (r < 0 || !ag_cli_double(cmd, "--lr", v, AG_CLI_LR_MIN, AG_CLI_LR_MAX, &c->lr))
                return AG_EXIT_USAGE;
            o->set_lr = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--momentum", &v))) {
            if (r < 0 || !ag_cli_double(cmd, "--momentum", v, 0, AG_CLI_MOMENTUM_MAX, &c->momentum))
                return AG_EXIT_USAGE;
            o->set_momentum = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--weight-decay", &v))) {
            if (r < 0 || !ag_cli_double(cmd, "--weight-decay", v, 0, AG_CLI_WEIGHT_DECAY_MAX,
                                     &c->weight_decay))
                return AG_EXIT_USAGE;
            o->set_weight_decay = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--clip", &v))) {
            if (r < 0 || !ag_cli_double(cmd, "--clip", v, 0, AG_CLI_CLIP_MAX, &c->clip))
                return AG_EXIT_USAGE;
            o->set_clip = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--seed", &v))) {
            if (r < 0 || !ag_cli_u64(cmd, "--seed", v, &c->seed))
                return AG_EXIT_USAGE;
            o->set_seed = 1;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--eval-every", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--eval-every", v, 1, 100000000, &o->eval_every))
                return AG_EXIT_USAGE;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--log", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->log_path = v;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--plot", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->plot_path = v;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--plot-heads", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->heads_path = v;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--save", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->save_path = v;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--load", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->load_path = v;
        } else if (argv[i][0] == '-') {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else {
            return ag_cli_usage_error(cmd, "unexpected argument '%s' (options start with --)", argv[i]);
        }
    }
    return AG_CLI_GO;
}

int ag_cli_train_check(const ag_train_opts *o)
{
    const ag_command *cmd = &ag_cmd_train_info;
    const ag_model_config *m = &o->config.model;
    int lo = ag_task_min_seq(m->task), hi = ag_task_max_seq(m->task);
    if (m->seq < lo || m->seq > hi)
        return !ag_cli_usage_error(cmd, "--seq: %d is out of range for task %s (%d..%d)", m->seq,
                                   ag_task_name(m->task), lo, hi);
    if (m->heads > m->dim || m->dim % m->heads != 0)
        return !ag_cli_usage_error(cmd, "--heads: %d does not divide --dim %d", m->heads, m->dim);
    /* the held-out set is evaluated in one batch too; the attention weights
     * (T^2 per head) are made only for the one example the heatmap shows */
    uint64_t b = (uint64_t)(o->config.batch > EVAL_EXAMPLES ? o->config.batch : EVAL_EXAMPLES);
    uint64_t attn = ag_cli_attention_values(1, (uint64_t)m->heads, (uint64_t)m->seq);
    uint64_t act = ag_cli_activation_values(b, (uint64_t)m->seq, (uint64_t)m->dim);
    if (attn > AG_CLI_MAX_VALUES || act > AG_CLI_MAX_VALUES)
        return !ag_cli_usage_error(
            cmd, "--seq %d with --batch %d, --dim %d and --heads %d is too large: one step would "
            "hold %llu values in one tensor (at most %llu; the held-out set counts as a batch of %d)",
            m->seq, o->config.batch, m->dim, m->heads, (unsigned long long)(attn > act ? attn : act),
            (unsigned long long)AG_CLI_MAX_VALUES, EVAL_EXAMPLES);
    return 1;
}

int ag_cli_train_parse(int argc, char **argv, ag_train_opts *o)
{
    const ag_command *cmd = &ag_cmd_train_info;
    int r = parse_flags(cmd, argc, argv, o);
    if (r != AG_CLI_GO)
        return r;
    if (!o->load_path) {
        task_defaults(o);
        if (!ag_cli_train_check(o))
            return AG_EXIT_USAGE;
    }
    return AG_CLI_GO;
}

/* ---- one run ---- */

typedef struct run {
    ag_train_opts *o;
    ag_model *model;
    ag_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    size_t n_params;
    ag_optim *opt;
    ag_tape *tape;
    ag_batch *train, *eval;   /* a fresh training batch per step; one fixed held-out set */
    ag_rng data_rng;          /* the training stream */
    long step;                /* steps done, including those of a loaded checkpoint */
    double loss, eval_loss, accuracy;
    /* the last evaluation's outputs, kept on the tape for the final heatmap */
    const ag_tensor *kept_logits, *kept_attn;
    ag_csv *log;
    /* for --plot: a thinned loss history, the accuracy at each evaluation,
     * and the last heatmap's weights (head 1 of held-out example 0) */
    long *loss_step, *acc_step;
    double *loss_hist, *acc_hist, *attn0;
    double *heads0;           /* for --plot-heads: (H, T, T), every head of held-out example 0 */
    size_t n_loss, n_acc, cap_loss, cap_acc;
    long loss_stride;
} run;

/* The held-out set comes from its own stream, never from the training one. */
#define EVAL_STREAM 0x5ca1ab1e0ddba11ULL

static const char *token_label(const ag_batch *b, int ex, int t, char *buf, size_t len)
{
    int t0 = b->tok0[ex * b->seq + t], t1 = b->tok1[ex * b->seq + t];
    if (b->kind == AG_TASK_REVERSE)
        snprintf(buf, len, "s%d", t0);
    else if (t1 >= 8 && t1 < 16)
        snprintf(buf, len, "k%d:v%d", t0, t1 - 8);
    else if (t1 < 8)
        snprintf(buf, len, "?k%d,k%d", t0, t1);
    else
        snprintf(buf, len, "?k%d", t0);
    return buf;
}

/* The attention weights of held-out example 0 as a small text heatmap. */
static void print_heatmap(const ag_batch *b, const ag_tensor *attn, const ag_tensor *logits)
{
    static const char shades[] = " .:-=+*#%@";
    int H = attn->shape[1], T = attn->shape[2], A = b->answers, C = ag_task_classes(b->kind);
    char label[32];
    printf("\nattention of one held-out example (row: a position, columns: where it looks):\n");
    for (int h = 0; h < H; h++) {
        if (H > 1)
            printf("head %d:\n", h + 1);
        printf("  %-9s", "");
        for (int j = 0; j < T; j++)
            printf(" %8s", token_label(b, 0, j, label, sizeof(label)));
        printf("\n");
        for (int i = 0; i < T; i++) {
            printf("  %-9s", token_label(b, 0, i, label, sizeof(label)));
            for (int j = 0; j < T; j++) {
                double p = attn->data[(((size_t)h * T) + i) * T + j];
                int shade = (int)(p * 9.999);
                printf("   %4.2f %c", p, shades[shade < 0 ? 0 : shade > 9 ? 9 : shade]);
            }
            /* what this position answered, where it was asked something */
            const int *y = b->targets + (size_t)i * A;
            for (int a = 0; a < A; a++) {
                if (y[a] < 0)
                    continue;
                const ag_real *z = logits->data + ((size_t)i * A + a) * C;
                int best = 0;
                for (int c = 1; c < C; c++)
                    if (z[c] > z[best])
                        best = c;
                const char *sym = b->kind == AG_TASK_REVERSE ? "s" : "v";
                printf("%s %s%d (want %s%d)", a ? "," : "  ->", sym, best, sym, y[a]);
            }
            printf("\n");
        }
    }
}

/* Why a step (or an evaluation after it) failed: the tape's message, which
 * for NaN or Inf names the first op that made one. */
static void report_failure(const run *r, ag_status st, const char *where)
{
    ag_cli_error(&ag_cmd_train_info, "step %ld%s: %s", r->step + (where[0] ? 0 : 1), where,
                 ag_tape_error(r->tape));
    if (st == AG_ERR_NUMERIC)
        ag_cli_error(&ag_cmd_train_info,
                     "stopped; try a smaller --lr or --clip (nothing was saved)");
}

/* Loss and accuracy on the held-out set. With keep, the tape is left as it
 * is, holding the logits and weights of held-out example 0, run once more
 * alone, for show_final (so the attention weights, which grow with T^2, are
 * made for the one example shown); otherwise it is reset. */
static int evaluate(run *r, int keep)
{
    ag_tensor *logits, *attn = NULL;
    ag_tensor *loss = ag_model_forward(r->tape, r->model, r->eval, &logits, NULL);
    ag_status st = ag_tape_status(r->tape);
    if (st == AG_OK && !isfinite(loss->data[0]))
        st = ag_tape_find_anomaly(r->tape);
    if (st != AG_OK) {
        report_failure(r, st, " (held-out evaluation)");
        ag_tape_reset(r->tape);
        return 0;
    }
    long correct = 0, total = 0;
    ag_model_score(r->eval, logits, &correct, &total);
    r->eval_loss = loss->data[0];
    r->accuracy = total ? (double)correct / (double)total : 0;
    if (r->acc_hist && r->n_acc < r->cap_acc) {
        r->acc_step[r->n_acc] = r->step;
        r->acc_hist[r->n_acc++] = r->accuracy;
    }
    if (!keep) {
        ag_tape_reset(r->tape);
        return 1;
    }
    ag_batch first = *r->eval;
    first.batch = 1;
    ag_model_forward(r->tape, r->model, &first, &logits, &attn);
    if ((st = ag_tape_status(r->tape)) != AG_OK) {
        report_failure(r, st, " (held-out evaluation)");
        ag_tape_reset(r->tape);
        return 0;
    }
    r->kept_logits = logits;
    r->kept_attn = attn;
    return 1;
}

/* After training: the heatmap of the evaluation evaluate(r, 1) kept, on the
 * terminal and for --plot; then the tape is released. */
static void show_final(run *r)
{
    if (!r->o->quiet)
        print_heatmap(r->eval, r->kept_attn, r->kept_logits);
    if (r->attn0) {
        int T = r->eval->seq;
        for (int i = 0; i < T * T; i++)
            r->attn0[i] = r->kept_attn->data[i];
    }
    if (r->heads0) {
        size_t n = (size_t)r->kept_attn->shape[1] * (size_t)r->eval->seq * (size_t)r->eval->seq;
        for (size_t i = 0; i < n; i++)
            r->heads0[i] = r->kept_attn->data[i];
    }
    r->kept_attn = r->kept_logits = NULL;
    ag_tape_reset(r->tape);
}

/* --plot-heads: held-out example 0's attention, a heatmap per head, its
 * positions named as on the terminal. Returns 1, or 0 after saying why on
 * stderr (and *sig, when a signal stopped gnuplot). */
static int plot_heads(const run *r, const char *png, int *sig)
{
    int T = r->eval->seq, H = r->o->config.model.heads;
    char (*names)[32] = malloc((size_t)T * sizeof(*names));
    const char **labels = malloc((size_t)T * sizeof(*labels));
    char err[AG_CLI_ERR_LEN] = "out of memory", title[160], shown[AG_IO_SHOW_LEN];
    int ok = 0;
    *sig = 0;
    if (names && labels) {
        for (int t = 0; t < T; t++)
            labels[t] = token_label(r->eval, 0, t, names[t], sizeof(names[t]));
        snprintf(title, sizeof(title), "attention of one held-out example (%s, %ld steps)",
                 ag_task_name(r->o->config.model.task), r->step);
        ok = ag_cli_plot_heads(png, title, H, T, r->heads0, labels, sig, err, sizeof(err));
    }
    if (ok && !r->o->quiet)
        printf("plot: %s\n", ag_io_show(png, shown, sizeof(shown)));
    else if (!ok)
        ag_cli_error(&ag_cmd_train_info, "%s", err);   /* the log and checkpoint still follow */
    free(names);
    free(labels);
    return ok;
}

/* History for --plot, allocated before training: at most PLOT_POINTS
 * points of each curve, so a long run is thinned, not stored whole. */
#define PLOT_POINTS 10000
static int alloc_history(run *r)
{
    long steps = r->o->steps, evals = steps / r->o->eval_every + 3;
    r->cap_loss = steps < PLOT_POINTS ? (size_t)steps : PLOT_POINTS;
    r->loss_stride = (steps + (long)r->cap_loss - 1) / (long)r->cap_loss;
    r->cap_acc = evals < PLOT_POINTS ? (size_t)evals : PLOT_POINTS;
    int T = r->o->config.model.seq;
    r->loss_step = malloc(r->cap_loss * sizeof(long));
    r->loss_hist = malloc(r->cap_loss * sizeof(double));
    r->acc_step = malloc(r->cap_acc * sizeof(long));
    r->acc_hist = malloc(r->cap_acc * sizeof(double));
    r->attn0 = calloc((size_t)T * (size_t)T, sizeof(double));
    return r->loss_step && r->loss_hist && r->acc_step && r->acc_hist && r->attn0;
}

/* The first non-finite value among the parameters, after an update: its
 * parameter's index and *elem, or -1. */
static long first_bad_param(const run *r, size_t *elem)
{
    for (size_t p = 0; p < r->n_params; p++) {
        const ag_tensor *t = r->params[p];
        for (size_t i = 0; i < t->size; i++) {
            if (!isfinite(t->data[i])) {
                *elem = i;
                return (long)p;
            }
        }
    }
    return -1;
}

/* One step: a fresh batch, forward, backward, clip, update. A NaN or Inf
 * stops the run at the step that made it: in the loss or a gradient (the
 * tape names the first op), or in a weight after the update. */
static int train_step(run *r)
{
    ag_task_sample(r->train, &r->data_rng);
    ag_zero_grad(r->params, r->n_params);
    ag_tensor *loss = ag_model_forward(r->tape, r->model, r->train, NULL, NULL);
    ag_status st = ag_backward(r->tape, loss);
    /* measures the gradients' norm, and clips them when --clip is on */
    double norm = st == AG_OK ? ag_clip_grad_norm(r->params, r->n_params, r->o->config.clip) : 0;
    if (st == AG_OK && (!isfinite(loss->data[0]) || !isfinite(norm)))
        st = ag_tape_find_anomaly(r->tape);
    if (st != AG_OK) {
        report_failure(r, st, "");
        ag_tape_reset(r->tape);
        return 0;
    }
    r->loss = loss->data[0];
    ag_tape_reset(r->tape);
    if (r->loss_hist && r->step % r->loss_stride == 0 && r->n_loss < r->cap_loss) {
        r->loss_step[r->n_loss] = r->step + 1;
        r->loss_hist[r->n_loss++] = r->loss;
    }
    ag_optim_step(r->opt);
    size_t elem;
    long bad = first_bad_param(r, &elem);
    if (bad >= 0) {
        double v = r->params[bad]->data[elem];
        ag_cli_error(&ag_cmd_train_info,
                     "step %ld: the %s update (lr %g) made parameter '%s' %s "
                     "at element %zu (the gradient norm was %g)",
                     r->step + 1, ag_optim_name(r->opt), r->o->config.lr, r->names[bad],
                     isnan(v) ? "NaN" : "Inf", elem, norm);
        ag_cli_error(&ag_cmd_train_info,
                     "stopped; try a smaller --lr or --clip (nothing was saved)");
        return 0;
    }
    r->step++;
    return 1;
}

static void print_progress(const run *r, long done, long todo, double elapsed, int tty)
{
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    double left = rate > 0 ? (double)(todo - done) / rate : 0;
    if (tty) {
        int width = 24, filled = (int)((double)width * (double)done / (double)todo);
        printf("\r[%.*s%*s] step %ld loss %.4f accuracy %.3f %.0f steps/s %.1fs left ", filled,
               "########################", width - filled, "", r->step, r->loss, r->accuracy, rate,
               left);
    } else {
        printf("step %ld loss %.4f eval_loss %.4f accuracy %.4f steps/s %.0f\n", r->step, r->loss,
               r->eval_loss, r->accuracy, rate);
    }
    fflush(stdout);
}

/* What a checkpoint records of this run. */
static ag_train_state state_of(const ag_train_opts *o, const run *r)
{
    ag_train_state st;
    memset(&st, 0, sizeof(st));
    st.config = o->config;
    st.data_rng = r->data_rng.state;
    st.step = r->step;
    st.optim_steps = ag_optim_steps(r->opt);
    return st;
}

/* With --load, the checkpoint fixes the model, the optimizer and the seed:
 * a flag that says otherwise is a usage error; the rest take its values
 * unless given (a new --lr, --clip or --batch may be given on purpose). */
static int adopt_checkpoint(const ag_command *cmd, ag_train_opts *o, const ag_train_state *st)
{
    const ag_train_config given = o->config;   /* the flags' settings, defaults included */
    const ag_train_config *saved = &st->config;
    const ag_model_config *m = &saved->model;
#define CONFLICT(set, flag, differs, fmt, mine, theirs)                                          \
    if ((set) && (differs))                                                                      \
        return !ag_cli_usage_error(cmd, flag " " fmt " conflicts with %s, made with " fmt        \
                                   " (--load fixes the model)", mine, o->load_path, theirs);
    CONFLICT(o->set_task, "--task", given.model.task != m->task, "%s", ag_task_name(given.model.task),
             ag_task_name(m->task))
    CONFLICT(o->set_seq, "--seq", given.model.seq != m->seq, "%d", given.model.seq, m->seq)
    CONFLICT(o->set_dim, "--dim", given.model.dim != m->dim, "%d", given.model.dim, m->dim)
    CONFLICT(o->set_heads, "--heads", given.model.heads != m->heads, "%d", given.model.heads, m->heads)
    CONFLICT(o->set_posenc, "--posenc", given.model.posenc != m->posenc, "%s",
             ag_posenc_kind_name(given.model.posenc), ag_posenc_kind_name(m->posenc))
    CONFLICT(o->set_causal, "--causal", !m->causal, "%s", "on", "off")
    CONFLICT(o->set_optimizer, "--optimizer", given.optimizer_adam != saved->optimizer_adam, "%s",
             given.optimizer_adam ? "adam" : "sgd", saved->optimizer_adam ? "adam" : "sgd")
    CONFLICT(o->set_seed, "--seed", given.seed != saved->seed, "%llu", (unsigned long long)given.seed,
             (unsigned long long)saved->seed)
#undef CONFLICT
    /* The checkpoint's settings win over defaults; a flag given on purpose
     * wins over them (the fixed ones agree by now, so only these differ). */
    o->config = *saved;
    if (o->set_lr)
        o->config.lr = given.lr;
    if (o->set_momentum)
        o->config.momentum = given.momentum;
    if (o->set_weight_decay)
        o->config.weight_decay = given.weight_decay;
    if (o->set_clip)
        o->config.clip = given.clip;
    if (o->set_batch)
        o->config.batch = given.batch;
    return 1;
}

/* Before any work: the files the run names (ag_cli_check_files). Two
 * outputs naming one file would overwrite each other, and a log written
 * over --load's checkpoint would destroy it; --save over --load is fine:
 * that is resuming in place. */
static int check_files(const ag_train_opts *o)
{
    const ag_cli_file files[] = {
        {"--log", o->log_path, 1, NULL},
        {"--plot", o->plot_path, 1, NULL},
        {"--save", o->save_path, 1, "--load"},
        {"--load", o->load_path, 0, NULL},
        {"--plot-heads", o->heads_path, 1, NULL},
    };
    return ag_cli_check_files(&ag_cmd_train_info, files, sizeof(files) / sizeof(files[0]));
}

int ag_cli_train_run(ag_train_opts *o)
{
    const ag_command *cmd = &ag_cmd_train_info;
    char err[AG_CLI_ERR_LEN];
    ag_st_file *ckpt = NULL;
    const ag_train_config *c = &o->config;   /* with --load, set from the checkpoint below */
    ag_train_state loaded;
    memset(&loaded, 0, sizeof(loaded));
    int checked = check_files(o);
    if (checked != AG_EXIT_OK)
        return checked;
    if (o->load_path) {
        if (!ag_cli_checkpoint_open(o->load_path, &ckpt, &loaded, err, sizeof(err))) {
            ag_cli_error(&ag_cmd_train_info, "%s", err);
            return AG_EXIT_FAIL;
        }
        if (!adopt_checkpoint(cmd, o, &loaded) || !ag_cli_train_check(o)) {
            ag_st_free(ckpt);
            return AG_EXIT_USAGE;
        }
        /* the checkpoint this run saves must load: its counts stay in range */
        if (loaded.step > AG_CLI_MAX_STEP - o->steps ||
            loaded.optim_steps > AG_CLI_MAX_STEP - o->steps) {
            ag_st_free(ckpt);
            int opt = loaded.optim_steps > loaded.step;
            return ag_cli_usage_error(cmd, "--steps %d: %s is at %s %ld, and a run stops at %ld",
                                      o->steps, o->load_path, opt ? "optimizer step" : "step",
                                      opt ? loaded.optim_steps : loaded.step, AG_CLI_MAX_STEP);
        }
    }
    int plot = o->plot_path != NULL, plot_h = o->heads_path != NULL;
    if ((plot || plot_h) && !ag_cli_have_program("gnuplot")) {
        /* said once, before the run; training goes on without the plot */
        ag_cli_error(cmd, "gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
        plot = plot_h = 0;
    }

    run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    int status = AG_EXIT_FAIL;
    ag_cli_stop stop_signals = {0};
    ag_rng init_rng = ag_rng_new(c->seed);
    r.data_rng = ag_rng_new(c->seed ^ 0xda7aULL);
    ag_rng eval_rng = ag_rng_new(c->seed ^ EVAL_STREAM);
    r.model = ag_model_new(&c->model, ckpt ? NULL : &init_rng, err, sizeof(err));
    if (!r.model) {
        ag_cli_error(&ag_cmd_train_info, "%s", err);
        goto done;
    }
    r.n_params = ag_model_params(r.model, r.params, r.names, MAX_PARAMS);
    r.opt = c->optimizer_adam ? ag_adam_new(r.params, r.n_params, c->lr, 0.9, 0.999, 1e-8, c->weight_decay)
                              : ag_sgd_new(r.params, r.n_params, c->lr, c->momentum);
    ag_set_threads(o->threads);
    r.tape = ag_tape_new();
    r.train = ag_batch_new(c->model.task, c->batch, c->model.seq);
    r.eval = ag_batch_new(c->model.task, EVAL_EXAMPLES, c->model.seq);
    if (!r.opt || !r.tape || !r.train || !r.eval) {
        ag_cli_error(&ag_cmd_train_info, "out of memory");
        goto done;
    }
    if (ckpt) {
        if (!ag_cli_checkpoint_restore(cmd, ckpt, o->load_path, r.model, r.opt, &loaded, err,
                                       sizeof(err))) {
            ag_cli_error(&ag_cmd_train_info, "%s", err);
            goto done;
        }
        r.data_rng.state = loaded.data_rng;
        r.step = loaded.step;
        ag_st_free(ckpt);
        ckpt = NULL;
    }
    ag_task_sample(r.eval, &eval_rng);
    if (plot_h)
        r.heads0 = malloc((size_t)c->model.heads * (size_t)c->model.seq * (size_t)c->model.seq *
                          sizeof(double));
    if ((plot && !alloc_history(&r)) || (plot_h && !r.heads0)) {
        ag_cli_error(cmd, "out of memory");
        goto done;
    }
    ag_tape_detect_anomaly(r.tape, o->detect_anomaly);

    /* From here on a temporary file may exist: Ctrl-C and SIGTERM only ask
     * the loop to stop, so that it is always committed or removed. */
    ag_cli_stop_begin(&stop_signals);

    if (o->log_path &&
        ag_csv_open(o->log_path, "step,loss,eval_loss,accuracy", &r.log, err, sizeof(err)) != AG_OK) {
        ag_cli_error(&ag_cmd_train_info, "%s", err);
        goto done;
    }

    int tty = !o->quiet && isatty(STDOUT_FILENO);
    if (!o->quiet) {
        printf("training %s: seq %d, dim %d, heads %d, posenc %s%s, %s lr %g, batch %d, %d steps\n",
               ag_task_name(c->model.task), c->model.seq, c->model.dim, c->model.heads,
               ag_posenc_kind_name(c->model.posenc), c->model.causal ? ", causal" : "",
               c->optimizer_adam ? "adam" : "sgd", c->lr, c->batch, o->steps);
        fflush(stdout);
    }
    if (!evaluate(&r, 0))
        goto done;
    double start = ag_cli_now(), last_draw = 0;
    long done_steps = 0;
    while (done_steps < o->steps && !ag_cli_stop_requested()) {
        if (!train_step(&r))
            goto done;
        done_steps++;
        int last = done_steps == o->steps;
        int eval_now = r.step % o->eval_every == 0 || last;
        /* the last evaluation is kept for the heatmap, not run twice */
        if (eval_now && !evaluate(&r, last))
            goto done;
        if (r.log) {
            double row[4] = {(double)r.step, r.loss, eval_now ? r.eval_loss : NAN,
                             eval_now ? r.accuracy : NAN};
            ag_csv_row(r.log, row, 4);   /* errors are sticky; ag_csv_close reports them */
        }
        double t = ag_cli_now() - start;
        if (tty && (t - last_draw > 0.1 || last)) {
            print_progress(&r, done_steps, o->steps, t, 1);
            last_draw = t;
        } else if (!tty && !o->quiet && eval_now) {
            print_progress(&r, done_steps, o->steps, t, 0);
        }
    }
    double seconds = ag_cli_now() - start;
    if (tty)
        printf("\n");
    int stop = ag_cli_stop_requested(), plot_failed = 0;
    if (stop)
        ag_cli_error(cmd, "%s after step %ld", ag_cli_stop_reason(stop), r.step);
    if (!r.kept_attn && !evaluate(&r, 1))   /* interrupted before the last step */
        goto done;
    show_final(&r);
    if (plot) {
        char title[160];
        snprintf(title, sizeof(title), "attograd train --task %s: %ld steps, held-out accuracy %.3f",
                 ag_task_name(c->model.task), r.step, r.accuracy);
        ag_plot_data pd = {title, r.loss_step, r.loss_hist, r.n_loss, r.acc_step, r.acc_hist,
                           r.n_acc, r.attn0, c->model.seq};
        char shown[AG_IO_SHOW_LEN];
        int sig = 0;
        if (ag_cli_plot_run(o->plot_path, &pd, &sig, err, sizeof(err))) {
            if (!o->quiet)
                printf("plot: %s\n", ag_io_show(o->plot_path, shown, sizeof(shown)));
        } else {
            /* the log and the checkpoint are still written; the status says it */
            ag_cli_error(cmd, "%s", err);
            plot_failed = 1;
            if (sig && !stop)
                stop = sig;
        }
    }
    if (plot_h) {
        int sig = 0;
        if (!plot_heads(&r, o->heads_path, &sig)) {
            plot_failed = 1;
            if (sig && !stop)
                stop = sig;
        }
    }
    if (r.log) {
        ag_csv *log = r.log;
        r.log = NULL;
        if (ag_csv_close(log, err, sizeof(err)) != AG_OK) {
            ag_cli_error(&ag_cmd_train_info, "%s", err);
            goto done;
        }
    }
    if (o->save_path) {
        ag_train_state st = state_of(o, &r);
        if (!ag_cli_checkpoint_save(o->save_path, r.model, r.opt, &st, err, sizeof(err))) {
            ag_cli_error(&ag_cmd_train_info, "%s", err);
            goto done;
        }
        char shown[AG_IO_SHOW_LEN];
        if (!o->quiet)
            printf("saved: %s (step %ld)\n", ag_io_show(o->save_path, shown, sizeof(shown)), r.step);
    }
    printf("result: task=%s steps=%ld loss=%.6f accuracy=%.4f seconds=%.2f\n",
           ag_task_name(c->model.task), r.step, r.eval_loss, r.accuracy, seconds);
    status = stop ? 128 + stop : plot_failed ? AG_EXIT_FAIL : AG_EXIT_OK;
done:
    ag_csv_free(r.log);   /* an unfinished log is discarded, never left half-written */
    ag_cli_stop_end(&stop_signals);
    ag_st_free(ckpt);
    ag_batch_free(r.train);
    ag_batch_free(r.eval);
    free(r.loss_step);
    free(r.loss_hist);
    free(r.acc_step);
    free(r.acc_hist);
    free(r.attn0);
    free(r.heads0);
    ag_tape_free(r.tape);
    ag_optim_free(r.opt);
    ag_model_free(r.model);
    ag_set_threads(1);
    return status;
}

int ag_cmd_train(int argc, char **argv)
{
    if (ag_cli_is_text_task(argc, argv))
        return ag_cli_text_main(argc, argv);   /* train_text.c */
    ag_train_opts o;
    int r = ag_cli_train_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help(&ag_cmd_train_info);
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_train_run(&o);
}
