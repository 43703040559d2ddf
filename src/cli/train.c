/*
 * train.c - `attograd train`: watch gradient descent learn a soft lookup.
 * Builds the toy model for a task, trains it with SGD or Adam on batches
 * drawn from one random stream, measures accuracy on held-out examples from
 * another, and ends with one `result:` line on stdout.
 */
#include "limits.h"
#include "opts.h"
#include "plot.h"
#include "progress.h"
#include "signals.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* The choices' words: the library's names for tasks and positions. */
static const char *task_word(int k)
{
    if (k == AG_TASK_COUNT)
        return "text"; /* train_text.c's, which ag_cmd_train sends there first */
    return k >= 0 && k < AG_TASK_COUNT ? ag_task_name((ag_task_kind)k) : NULL;
}

static const char *posenc_word(int k)
{
    return k >= AG_POSENC_NONE && k <= AG_POSENC_LEARNED ? ag_posenc_kind_name((ag_posenc_kind)k)
                                                         : NULL;
}

static const char *optimizer_word(int k)
{
    return k == 0 ? "sgd" : k == 1 ? "adam" : NULL; /* ag_train_config.optimizer_adam */
}

/* A choice sets an int; these two set an enum through it. */
_Static_assert(sizeof(ag_task_kind) == sizeof(int), "a task is not int-sized");
_Static_assert(sizeof(ag_posenc_kind) == sizeof(int), "a positional encoding is not int-sized");

#define CHOICE(...) AG_CHOICE(ag_train_opts, __VA_ARGS__)
#define INT(...) AG_INT(ag_train_opts, __VA_ARGS__)
#define DOUBLE(...) AG_DOUBLE(ag_train_opts, __VA_ARGS__)
static const ag_option options[] = {
    CHOICE("--task", config.model.task, 0, 0, task_word, "task", "NAME", "the task (default %D)"),
    INT("--steps", steps, 1, 100000000, 600, "N", "training steps to run (default %D)"),
    INT("--batch", config.batch, 1, AG_TRAIN_MAX_BATCH, 32, "N", "examples per step (default %D)"),
    INT("--seq", config.model.seq, 1, AG_TRAIN_MAX_SIZE, 5, "T",
        "positions per example (default %D; reverse 6)"),
    INT("--dim", config.model.dim, 1, AG_TRAIN_MAX_SIZE, 32, "D",
        "width of every vector (default %D)"),
    INT("--heads", config.model.heads, 1, AG_TRAIN_MAX_SIZE, 1, "H",
        "attention heads, dividing D (default %D; lookup2 2)"),
    CHOICE("--posenc", config.model.posenc, 0, 0, posenc_word, "kind", "KIND",
           "%C (default %D; reverse sinusoidal)"),
    AG_SWITCH(ag_train_opts, "--causal", config.model.causal,
              "each position sees only itself and earlier positions"),
    CHOICE("--optimizer", config.optimizer_adam, 0, 1, optimizer_word, "optimizer", "NAME",
           "%C (default %D)"),
    DOUBLE("--lr", config.lr, AG_TRAIN_LR_MIN, AG_TRAIN_LR_MAX, 3e-3, "X",
           "learning rate (default %D for adam, 0.1 for sgd)"),
    DOUBLE("--momentum", config.momentum, 0, AG_TRAIN_MOMENTUM_MAX, 0.9, "X",
           "SGD momentum (default %D)"),
    DOUBLE("--weight-decay", config.weight_decay, 0, AG_TRAIN_WEIGHT_DECAY_MAX, 0, "X",
           "AdamW decoupled weight decay (default %D)"),
    DOUBLE("--clip", config.clip, 0, AG_TRAIN_CLIP_MAX, 1, "X",
           "clip the global gradient norm at X; 0 turns it off (default %D)"),
    AG_U64(ag_train_opts, "--seed", config.seed, 1, "S",
           "seeds the weights and the data (default %D)"),
    INT("--eval-every", eval_every, 1, 100000000, 100, "N",
        "measure held-out accuracy every N steps (default %D)"),
    AG_PATH(ag_train_opts, "--log", log_path, "FILE.csv",
            "write step,loss,eval_loss,accuracy per step"),
    AG_PATH(ag_train_opts, "--plot", plot_path, "FILE.png",
            "draw the loss curve, the held-out accuracy and one\n"
            "example's attention with gnuplot, when installed"),
    AG_PATH(ag_train_opts, "--plot-heads", heads_path, "FILE.png",
            "draw that example's attention, one heatmap per head"),
    AG_PATH(ag_train_opts, "--save", save_path, "FILE",
            "write a checkpoint (safetensors) at the end"),
    AG_PATH(ag_train_opts, "--load", load_path, "FILE", "continue from a checkpoint"),
    AG_SWITCH(ag_train_opts, "--detect-anomaly", detect_anomaly,
              "check every op for NaN/Inf and name the first"),
    INT("--threads", threads, 1, 256, 1, "N",
        "threads for the matmuls and softmax (default %D, %R);\n"
        "the numbers are the same for every N"),
    AG_SWITCH(ag_train_opts, "--quiet", quiet, "print only the result line"),
};
#undef CHOICE
#undef INT
#undef DOUBLE

const ag_command ag_cmd_train_info = {
    .name = "train",
    .run = ag_cmd_train,
    .usage = "attograd train [--task lookup|lookup2|reverse|text] [--steps N] [--seed S] [options]",
    .summary = "train a toy attention model, or a GPT on a text file (--task text)",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 23,
};

static int given(const ag_train_opts *o, const char *name)
{
    return ag_cli_given(&ag_cmd_train_info, o->given, name);
}

/* Task defaults, chosen so that each task learns in seconds (the table's
 * are lookup's and adam's). */
static void task_defaults(ag_train_opts *o)
{
    ag_train_config *c = &o->config;
    ag_task_kind task = c->model.task;
    if (!given(o, "--seq"))
        c->model.seq = task == AG_TASK_REVERSE ? 6 : 5;
    if (!given(o, "--heads"))
        c->model.heads = task == AG_TASK_LOOKUP2 ? 2 : 1;
    if (!given(o, "--posenc"))
        c->model.posenc = task == AG_TASK_REVERSE ? AG_POSENC_SINUSOIDAL : AG_POSENC_NONE;
    if (!given(o, "--lr"))
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
    printf(
        "  %-8s a GPT that learns to write like a text file (attograd train --task text --help)\n",
        "text");
    printf("\noptions:\n");
    ag_cli_print_options(cmd);
    printf("\n"
           "A flag given twice counts the last time. With --load the checkpoint fixes\n"
           "the model, the optimizer and the seed; --steps counts the steps to add.\n"
           "The log and the checkpoint are written as soon as the steps end. Ctrl-C (or\n"
           "SIGTERM, SIGHUP) in any phase stops the run and still saves them; the exit\n"
           "status is then 130 (143, 129), and a second signal ends it at once. A loss or\n"
           "a gradient that turns NaN or Inf stops the run naming the step and the op,\n"
           "exit 1, and the step before it is saved (nothing, when the update itself made\n"
           "a weight NaN). A plot gnuplot does not make (it fails, takes longer than\n"
           "AG_GNUPLOT_SECONDS, default 60, or writes no PNG) is said on stderr; the log\n"
           "and the checkpoint are still saved, and the exit status is 1. A run that\n"
           "would need more memory than AG_MAX_MEMORY (default: the machine's) is\n"
           "refused before it starts.\n\n"
           "The last line on stdout is the summary:\n"
           "  result: task=lookup steps=N loss=L accuracy=A seconds=S\n");
    return AG_EXIT_OK;
}

static int check_sizes(const ag_train_opts *o, const char *file);

int ag_cli_train_check(const ag_train_opts *o)
{
    return check_sizes(o, NULL) == AG_EXIT_OK;
}

/* ag_cli_train_check, and with file (the sizes are --load's) a step too
 * large names the file, exit 1, unless --batch was given. Returns
 * AG_EXIT_OK or the status, said. */
static int check_sizes(const ag_train_opts *o, const char *file)
{
    const ag_command *cmd = &ag_cmd_train_info;
    const ag_model_config *m = &o->config.model;
    char err[160];
    switch (ag_model_config_check(m, err, sizeof(err))) {
    case AG_MODEL_OK: break;
    case AG_MODEL_SEQ: /* the flags' words for the library's message */
        return ag_cli_usage_error(cmd, "--seq: %d is out of range for task %s (%d..%d)", m->seq,
                                  ag_task_name(m->task), ag_task_min_seq(m->task),
                                  ag_task_max_seq(m->task));
    case AG_MODEL_HEADS:
        return ag_cli_usage_error(cmd, "--heads: %d does not divide --dim %d", m->heads, m->dim);
    default: return ag_cli_usage_error(cmd, "%s", err);
    }
    /* the held-out set is evaluated in one batch too; the attention weights
     * (T^2 per head) are made only for the one example the heatmap shows */
    uint64_t b =
        (uint64_t)(o->config.batch > AG_TRAINER_HELD_OUT ? o->config.batch : AG_TRAINER_HELD_OUT);
    uint64_t attn = ag_cli_attention_values(1, (uint64_t)m->heads, (uint64_t)m->seq);
    uint64_t act = ag_cli_activation_values(b, (uint64_t)m->seq, (uint64_t)m->dim);
    unsigned long long most = attn > act ? attn : act;
    if (attn <= AG_CLI_MAX_VALUES && act <= AG_CLI_MAX_VALUES)
        return AG_EXIT_OK;
    if (file && !ag_cli_given(cmd, o->given, "--batch"))
        return ag_cli_error(cmd,
                            "%s: its seq %d with batch %d, dim %d and heads %d is too large: one "
                            "step would hold %llu values in one tensor (at most %llu)",
                            file, m->seq, o->config.batch, m->dim, m->heads, most,
                            (unsigned long long)AG_CLI_MAX_VALUES);
    return ag_cli_usage_error(
        cmd,
        "--seq %d with --batch %d, --dim %d and --heads %d is too large: one step would "
        "hold %llu values in one tensor (at most %llu; the held-out set counts as a batch of %d)",
        m->seq, o->config.batch, m->dim, m->heads, most, (unsigned long long)AG_CLI_MAX_VALUES,
        AG_TRAINER_HELD_OUT);
}

int ag_cli_train_parse(int argc, char **argv, ag_train_opts *o)
{
    const ag_command *cmd = &ag_cmd_train_info;
    memset(o, 0, sizeof(*o));
    int r = ag_cli_parse(cmd, argc, argv, o, &o->given);
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
    ag_trainer *t;        /* the model, its optimizer, the batches (src/nn/trainer.c) */
    const ag_batch *eval; /* the trainer's held-out set */
    long step;            /* steps done, including those of a loaded checkpoint */
    double loss, eval_loss, accuracy;
    /* the last evaluation's example 0, kept on the trainer's tape for the final heatmap */
    const ag_tensor *kept_logits, *kept_attn;
    ag_csv *log;
    /* for --plot: a thinned loss history and the accuracy at each evaluation */
    ag_curve loss_curve, acc_curve;
    double *attn0;        /* (H, T, T), held-out example 0's last heatmap: --plot shows
                               * head 1, --plot-heads every head */
    int plot, plot_heads; /* --plot, --plot-heads, and gnuplot is there */
    double seconds;       /* the training loop's time */
    ag_status failed;     /* why a step or an evaluation failed (said), or AG_OK */
    int saved;            /* --save was written */
} run;

/* A step or an evaluation that did not run: stopped by a signal (nothing
 * to say yet: the run ends, saving), or failed: the trainer's message,
 * which for NaN or Inf names the first op that made one (or the parameter
 * an update broke). Returns 0. */
static int step_failed(run *r, ag_status st, const char *err)
{
    if (st == AG_ERR_STOPPED && ag_cli_stop_requested())
        return 0;
    ag_cli_error(&ag_cmd_train_info, "%s", err);
    r->failed = st;
    return 0;
}

/* Loss and accuracy on the held-out set. With keep, held-out example 0
 * is run once more alone and kept on the trainer's tape for show_final (so
 * the attention weights, which grow with T^2, are made for the one example
 * shown). */
static int evaluate(run *r, int keep)
{
    char err[AG_CLI_ERR_LEN];
    ag_status st = ag_trainer_evaluate(r->t, &r->eval_loss, &r->accuracy, err, sizeof(err));
    if (st != AG_OK)
        return step_failed(r, st, err);
    ag_curve_add(&r->acc_curve, r->step, &r->accuracy); /* kept with --plot */
    if (keep &&
        (st = ag_trainer_example(r->t, &r->kept_logits, &r->kept_attn, err, sizeof(err))) != AG_OK)
        return step_failed(r, st, err);
    return 1;
}

/* After training: the heatmap of the evaluation evaluate(r, 1) kept, on the
 * terminal and for --plot. */
static void show_final(run *r)
{
    if (!r->o->quiet) {
        printf("\nattention of one held-out example (row: a position, columns: where it looks):\n");
        ag_model_print_attention(stdout, r->eval, r->kept_attn, r->kept_logits);
    }
    for (size_t i = 0; r->attn0 && i < r->kept_attn->size; i++)
        r->attn0[i] = r->kept_attn->data[i];
    r->kept_attn = r->kept_logits = NULL;
}

/* --plot-heads: held-out example 0's attention, a heatmap per head, its
 * positions named as on the terminal. Returns 1, or 0 after saying why on
 * stderr (and *sig, when a signal stopped gnuplot). */
static int plot_heads(const run *r, const char *png, int *sig)
{
    int T = r->eval->seq, H = r->o->config.model.heads;
    char(*names)[32] = malloc((size_t)T * sizeof(*names));
    const char **labels = malloc((size_t)T * sizeof(*labels));
    char err[AG_CLI_ERR_LEN] = "out of memory", title[160], shown[AG_QUOTE_LEN];
    int ok = 0;
    *sig = 0;
    if (names && labels) {
        for (int t = 0; t < T; t++)
            labels[t] = ag_task_token_label(r->eval, 0, t, names[t], sizeof(names[t]));
        snprintf(title, sizeof(title), "attention of one held-out example (%s, %ld steps)",
                 ag_task_name(r->o->config.model.task), r->step);
        ok = ag_cli_plot_heads(png, title, H, T, r->attn0, labels, sig, err, sizeof(err));
    }
    if (ok && !r->o->quiet)
        printf("plot: %s\n", ag_quote(png, shown, sizeof(shown)));
    else if (!ok)
        ag_cli_error(&ag_cmd_train_info, "%s", err); /* the log and checkpoint still follow */
    free(names);
    free(labels);
    return ok;
}

/* History for --plot, allocated before training. */
static int alloc_history(run *r)
{
    long steps = r->o->steps, evals = steps / r->o->eval_every + 3;
    return ag_curve_init_thinned(&r->loss_curve, 1, steps, AG_CLI_PLOT_POINTS) == AG_OK &&
           ag_curve_init(&r->acc_curve, 1,
                         evals < AG_CLI_PLOT_POINTS ? (size_t)evals : AG_CLI_PLOT_POINTS,
                         1) == AG_OK;
}

/* One step (ag_trainer_step), its loss kept for --plot. */
static int train_step(run *r)
{
    char err[AG_CLI_ERR_LEN];
    ag_status st = ag_trainer_step(r->t, &r->loss, err, sizeof(err));
    if (st != AG_OK)
        return step_failed(r, st, err);
    ag_curve_add(&r->loss_curve, r->step + 1, &r->loss); /* kept with --plot, thinned */
    r->step = ag_trainer_steps(r->t);
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

/* With --load, the checkpoint fixes the model, the optimizer and the seed:
 * a flag that says otherwise is a usage error; the rest take its values
 * unless given (a new --lr, --clip or --batch may be given on purpose). */
static int adopt_checkpoint(const ag_command *cmd, ag_train_opts *o, const ag_train_state *st)
{
    static const char *const fixed[] = {"--task",   "--seq",    "--dim",       "--heads",
                                        "--posenc", "--causal", "--optimizer", "--seed"};
    ag_train_opts saved = *o;
    saved.config = st->config;
    if (!ag_cli_check_fixed(cmd, o->given, o, &saved, fixed, AG_CLI_COUNT(fixed), o->load_path))
        return 0;
    /* The checkpoint's settings win over defaults; a flag given on purpose
     * wins over them (the fixed ones agree by now, so only --lr, --momentum,
     * --weight-decay, --clip and --batch can differ). */
    ag_cli_copy_given(cmd, o->given, &saved, o);
    *o = saved;
    return 1;
}

/* Before any work: the files the run names (ag_cli_check_files). Two
 * outputs naming one file would overwrite each other, and a log written
 * over --load's checkpoint would destroy it; --save over --load is fine:
 * that is resuming in place. */
static int check_files(const ag_train_opts *o)
{
    const ag_cli_file files[] = {
        {"--log", o->log_path, 1, NULL},          {"--plot", o->plot_path, 1, NULL},
        {"--save", o->save_path, 1, "--load"},    {"--load", o->load_path, 0, NULL},
        {"--plot-heads", o->heads_path, 1, NULL},
    };
    return ag_cli_check_files(&ag_cmd_train_info, files, sizeof(files) / sizeof(files[0]));
}

/* With --load: read the checkpoint into *ck and *st and adopt its settings
 * (the flags checked against them), then the one rule for the counters: the
 * run may not take them past what a checkpoint holds. Returns AG_EXIT_OK or
 * the status to exit with, after saying why. */
static int load_checkpoint(ag_train_opts *o, ag_checkpoint **ck, ag_train_state *st)
{
    const ag_command *cmd = &ag_cmd_train_info;
    char err[AG_CLI_ERR_LEN];
    ag_status ls = ag_checkpoint_load(o->load_path, ck, st, err, sizeof(err));
    if (ls == AG_ERR_STOPPED)
        return ag_cli_say_stopped(cmd, "reading the checkpoint", 0, NULL, 0, 0);
    if (ls != AG_OK)
        return ag_cli_error(cmd, "%s%s", err, ag_cli_format_hint(err));
    if (!adopt_checkpoint(cmd, o, st))
        return AG_EXIT_USAGE;
    int status = check_sizes(o, o->load_path);
    if (status != AG_EXIT_OK)
        return status;
    return ag_cli_check_counts(cmd, o->load_path, o->steps, given(o, "--steps"), st->step,
                               st->optim_steps);
}

/* What the run will need against the limit, before the model is made. */
static int check_memory(const ag_train_opts *o)
{
    ag_memory m;
    ag_train_memory(&o->config, o->threads, ag_cli_file_bytes(o->load_path), &m);
    return ag_cli_memory_check(&ag_cmd_train_info, &m,
                               o->load_path && !given(o, "--batch") ? o->load_path : NULL);
}

/* The trainer (fresh from the seed, or ck's run) and the history for
 * --plot. Returns 0 after saying why not. */
static int run_setup(run *r, const ag_checkpoint *ck, const ag_train_state *st)
{
    const ag_train_opts *o = r->o;
    const ag_train_config *c = &o->config;
    char err[AG_CLI_ERR_LEN];
    r->t = ag_trainer_new(c, ck, ck ? st : NULL, err, sizeof(err));
    if (!r->t) {
        ag_cli_error(&ag_cmd_train_info, "%s", err);
        return 0;
    }
    r->eval = ag_trainer_held_out(r->t);
    r->step = ag_trainer_steps(r->t);
    if (r->plot || r->plot_heads)
        r->attn0 = malloc((size_t)c->model.heads * (size_t)c->model.seq * (size_t)c->model.seq *
                          sizeof(double));
    if ((r->plot && !alloc_history(r)) || ((r->plot || r->plot_heads) && !r->attn0)) {
        ag_cli_error(&ag_cmd_train_info, "out of memory");
        return 0;
    }
    ag_tape_detect_anomaly(ag_trainer_tape(r->t), o->detect_anomaly);
    return 1;
}

static void run_free(run *r)
{
    ag_csv_free(r->log); /* an unfinished log is discarded, never left half-written */
    ag_curve_free(&r->loss_curve);
    ag_curve_free(&r->acc_curve);
    free(r->attn0);
    ag_trainer_free(r->t);
}

/* The steps, until --steps are done, a signal asks to stop or one fails
 * (r->failed): evaluate, log and show progress as asked. */
static void train_loop(run *r)
{
    const ag_train_opts *o = r->o;
    int tty = !o->quiet && isatty(STDOUT_FILENO);
    double start = ag_cli_now(), last_draw = 0;
    long done_steps = 0;
    while (done_steps < o->steps && !ag_cli_stop_requested()) {
        if (!train_step(r))
            break;
        done_steps++;
        int last = done_steps == o->steps;
        int eval_now = r->step % o->eval_every == 0 || last;
        /* the last evaluation is kept for the heatmap, not run twice */
        int evaluated = eval_now && evaluate(r, last);
        if (r->log) { /* the step's row, also when its evaluation did not run */
            double row[4] = {(double)r->step, r->loss, evaluated ? r->eval_loss : NAN,
                             evaluated ? r->accuracy : NAN};
            ag_csv_row(r->log, row, 4); /* errors are sticky; ag_csv_close reports them */
        }
        if (eval_now && !evaluated)
            break;
        double t = ag_cli_now() - start;
        if (tty && (t - last_draw > 0.1 || last)) {
            print_progress(r, done_steps, o->steps, t, 1);
            last_draw = t;
        } else if (!tty && !o->quiet && eval_now) {
            print_progress(r, done_steps, o->steps, t, 0);
        }
    }
    r->seconds = ag_cli_now() - start;
    if (tty)
        printf("\n");
}

/* --plot, when gnuplot is there. Returns 1, or 0 after saying why (and
 * *sig when a signal stopped gnuplot); the log and checkpoint still follow. */
static int draw_plot(run *r, int *sig)
{
    const ag_train_opts *o = r->o;
    char title[160], err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    snprintf(title, sizeof(title), "attograd train --task %s: %ld steps, held-out accuracy %.3f",
             ag_task_name(o->config.model.task), r->step, r->accuracy);
    ag_plot_data pd = {title, &r->loss_curve, &r->acc_curve, r->attn0, o->config.model.seq};
    if (!ag_cli_plot_run(o->plot_path, &pd, sig, err, sizeof(err)))
        return ag_cli_error(&ag_cmd_train_info, "%s", err), 0;
    if (!o->quiet)
        printf("plot: %s\n", ag_quote(o->plot_path, shown, sizeof(shown)));
    return 1;
}

/* The plots asked for; a failed one is said and makes the status 1 (a
 * signal that stopped gnuplot becomes *stop, as one during the steps). */
static int draw_plots(run *r, int *stop)
{
    int failed = 0, sig = 0;
    if (r->plot && !draw_plot(r, &sig))
        failed = 1;
    if (sig && !*stop)
        *stop = sig;
    sig = 0;
    if (r->plot_heads && !plot_heads(r, r->o->heads_path, &sig))
        failed = 1;
    if (sig && !*stop)
        *stop = sig;
    return failed;
}

/* As soon as the steps end (done, stopped or failed): the log, then the
 * checkpoint, unless a weight is no longer finite (the update broke it:
 * what is on disk stays). Returns 0 when either could not be written
 * (said). */
static int save_first(run *r)
{
    const ag_train_opts *o = r->o;
    const ag_command *cmd = &ag_cmd_train_info;
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    ag_tensor *params[8];
    size_t n = ag_model_params(ag_trainer_model(r->t), params, NULL, 8), elem;
    int broken = ag_first_nonfinite_param(params, n, &elem) >= 0, ok = 1;
    ag_csv *log = r->log;
    r->log = NULL;
    if (log && !broken && ag_csv_close(log, err, sizeof(err)) != AG_OK)
        ok = !ag_cli_error(cmd, "%s", err); /* the checkpoint is still written */
    else if (log && broken)
        ag_csv_free(log);
    if (o->save_path && !broken) {
        if (ag_trainer_save(r->t, o->save_path, err, sizeof(err)) != AG_OK)
            return !ag_cli_error(cmd, "%s", err);
        r->saved = 1;
        if (!o->quiet)
            printf("saved: %s (step %ld)\n", ag_quote(o->save_path, shown, sizeof(shown)), r->step);
        fflush(stdout);
    }
    if (r->failed)
        ag_cli_say_failed(cmd, r->failed, broken, o->save_path, r->saved, r->step);
    return ok;
}

static void print_result(const run *r)
{
    printf("result: task=%s steps=%ld loss=%.6f accuracy=%.4f seconds=%.2f\n",
           ag_task_name(r->o->config.model.task), r->step, r->eval_loss, r->accuracy, r->seconds);
}

/* After the loop and the files it wrote: the last evaluation and its
 * heatmap, the plots and the result line. Stopped by a signal, the result
 * line reports the last evaluation made. Returns the exit status. */
static int run_finish(run *r, int wrote)
{
    const ag_command *cmd = &ag_cmd_train_info;
    if (r->failed)
        return AG_EXIT_FAIL;
    int stop = ag_cli_stop_requested();
    if (!stop && !r->kept_attn && !evaluate(r, 1) && r->failed)
        return AG_EXIT_FAIL;
    if ((stop = ag_cli_stop_requested()) != 0) {
        int status = ag_cli_say_stopped(cmd, NULL, 1, r->o->save_path, r->saved, r->step);
        print_result(r);
        return status;
    }
    show_final(r);
    int plot_failed = draw_plots(r, &stop);
    print_result(r);
    return stop ? 128 + stop : plot_failed || !wrote ? AG_EXIT_FAIL : AG_EXIT_OK;
}

/* Set up (releasing the checkpoint once it is restored), open the log,
 * train, write what was trained and finish. */
static int run_train(run *r, ag_checkpoint **ck, const ag_train_state *st)
{
    const ag_train_opts *o = r->o;
    const ag_train_config *c = &o->config;
    char err[AG_CLI_ERR_LEN];
    int ready = run_setup(r, *ck, st);
    ag_checkpoint_free(*ck);
    *ck = NULL;
    if (!ready)
        return AG_EXIT_FAIL;
    if (ag_cli_stop_requested())
        return ag_cli_say_stopped(&ag_cmd_train_info, "making the model", 0, NULL, 0, 0);
    if (o->log_path && ag_csv_open(o->log_path, "step,loss,eval_loss,accuracy", &r->log, err,
                                   sizeof(err)) != AG_OK)
        return ag_cli_error(&ag_cmd_train_info, "%s", err);
    if (!o->quiet) {
        printf("training %s: seq %d, dim %d, heads %d, posenc %s%s, %s lr %g, batch %d, %d steps\n",
               ag_task_name(c->model.task), c->model.seq, c->model.dim, c->model.heads,
               ag_posenc_kind_name(c->model.posenc), c->model.causal ? ", causal" : "",
               c->optimizer_adam ? "adam" : "sgd", c->lr, c->batch, o->steps);
        fflush(stdout);
    }
    if (evaluate(r, 0))
        train_loop(r);
    int wrote = save_first(r);
    return run_finish(r, wrote);
}

int ag_cli_train_run(ag_train_opts *o)
{
    ag_checkpoint *ck = NULL;
    ag_train_state loaded;
    memset(&loaded, 0, sizeof(loaded));
    /* from here on every phase honours a signal: it only asks the run to
     * stop, so that a temporary file is always committed or removed */
    ag_cli_stop stop_signals = {0};
    ag_cli_stop_begin(&stop_signals);
    ag_cli_progress_begin(&ag_cmd_train_info, o->quiet);
    int status = check_files(o);
    if (status == AG_EXIT_OK && o->load_path)
        status = load_checkpoint(o, &ck, &loaded);
    if (status == AG_EXIT_OK)
        status = check_memory(o);
    run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.eval_loss = r.accuracy = NAN; /* until the first evaluation */
    if (status == AG_EXIT_OK) {
        r.plot = o->plot_path != NULL;
        r.plot_heads = o->heads_path != NULL;
        if ((r.plot || r.plot_heads) && !ag_cli_have_program("gnuplot")) {
            /* said once, before the run; training goes on without the plot */
            ag_cli_error(&ag_cmd_train_info,
                         "gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
            r.plot = r.plot_heads = 0;
        }
        ag_set_threads(o->threads);
        status = run_train(&r, &ck, &loaded);
    }
    ag_checkpoint_free(ck);
    run_free(&r);
    ag_cli_progress_end();
    ag_cli_stop_end(&stop_signals);
    ag_set_threads(1);
    return status;
}

int ag_cmd_train(int argc, char **argv)
{
    if (ag_cli_is_text_task(argc, argv))
        return ag_cli_text_main(argc, argv); /* train_text.c */
    ag_train_opts o;
    int r = ag_cli_train_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help(&ag_cmd_train_info);
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_train_run(&o);
}
