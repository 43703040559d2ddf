/*
 * train_text.c - `attograd train --task text`: a GPT learns to write like a
 * text file, one character at a time. The library does the work (ag_text,
 * ag_gpt, ag_gpt_trainer, the checkpoint); this file reads the flags, runs
 * the loop with its progress, log, plot and Ctrl-C, and ends with the
 * result line, whose val_loss is the full validation loss: every window of
 * the last 10% of the text, a number any implementation can reproduce.
 */
#include "limits.h"
#include "opts.h"
#include "plot.h"
#include "signals.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STEPS 100000000
#define EVAL_WINDOWS 32 /* the full validation loss runs this many windows at once */

static const char *posenc_word(int k)
{
    return k == 0 ? "learned" : k == 1 ? "none" : NULL; /* ag_gpt_config.no_posenc */
}

#define INT(...) AG_INT(ag_text_opts, __VA_ARGS__)
#define LONG(...) AG_LONG(ag_text_opts, __VA_ARGS__)
#define DOUBLE(...) AG_DOUBLE(ag_text_opts, __VA_ARGS__)
#define SWITCH(...) AG_SWITCH(ag_text_opts, __VA_ARGS__)
#define PATH(...) AG_PATH(ag_text_opts, __VA_ARGS__)
static const ag_option options[] = {
    /* --task text chose this table (ag_cli_is_text_task); not shown */
    AG_STRING(ag_text_opts, "--task", task, "text", NULL),
    AG_HEADING("model:"),
    INT("--layers", model.layers, 1, 256, AG_GPT_LAYERS, "N", "transformer blocks (default %D)"),
    INT("--heads", model.heads, 1, AG_TRAIN_MAX_SIZE, AG_GPT_HEADS, "H",
        "attention heads, dividing --dim (default %D)"),
    INT("--dim", model.dim, 1, AG_TRAIN_MAX_SIZE, AG_GPT_DIM, "C",
        "width of the residual stream (default %D)"),
    INT("--seq", model.seq, 1, AG_TRAIN_MAX_SIZE, AG_GPT_SEQ, "T",
        "context length in characters (default %D)"),
    SWITCH("--bias", model.bias, "give linears and layer norms biases (default none)"),
    DOUBLE("--dropout", model.dropout, 0, 0.9, 0, "P", "dropout while training, %R (default %D)"),
    AG_HEADING("ablations (what each part of a block is for):"),
    SWITCH("--no-residual", model.no_residual, "no skip connections: x = branch(x)"),
    SWITCH("--no-layernorm", model.no_layernorm, "no layer norms"),
    SWITCH("--no-mlp", model.no_mlp, "attention-only blocks"),
    AG_CHOICE(ag_text_opts, "--posenc", model.no_posenc, 0, 0, posenc_word, "kind", "KIND",
              "%C (default %D)"),
    AG_HEADING("training:"),
    INT("--steps", steps, 1, MAX_STEPS, 2000, "N", "steps to run (default %D)"),
    INT("--batch", train.batch, 1, AG_TRAIN_MAX_BATCH, AG_GPT_BATCH, "B",
        "windows per step (default %D)"),
    DOUBLE("--lr", train.lr, AG_TRAIN_LR_MIN, AG_TRAIN_LR_MAX, AG_GPT_LR, "X",
           "peak learning rate (default %D)"),
    DOUBLE("--min-lr", train.min_lr, 0, AG_TRAIN_LR_MAX, AG_GPT_MIN_LR, "X",
           "learning rate at the end of the decay (default %D)"),
    LONG("--warmup", train.warmup, 0, MAX_STEPS, AG_GPT_WARMUP, "N",
         "steps of linear warmup (default %D)"),
    LONG("--decay-steps", train.decay_steps, 1, AG_TRAIN_MAX_STEP, 0, "N",
         "the cosine decay reaches --min-lr at step N (default --steps)"),
    DOUBLE("--weight-decay", train.weight_decay, 0, AG_TRAIN_WEIGHT_DECAY_MAX, AG_GPT_WEIGHT_DECAY,
           "X", "AdamW weight decay on 2-D weights (default %D)"),
    DOUBLE("--clip", train.clip, 0, AG_TRAIN_CLIP_MAX, AG_GPT_CLIP, "X",
           "clip the global gradient norm; 0 turns it off (default %D)"),
    AG_U64(ag_text_opts, "--seed", train.seed, 1, "S",
           "seeds the weights, batches and dropout (default %D)"),
    INT("--threads", threads, 1, 256, 1, "N",
        "threads for the matmuls (default %D); same numbers for any N"),
    AG_HEADING("progress and files:"),
    PATH("--text", text_path, "FILE", "the UTF-8 text to learn from (required)"),
    INT("--eval-every", eval_every, 1, MAX_STEPS, 250, "N",
        "estimate the losses every N steps (default %D)"),
    INT("--eval-iters", eval_iters, 1, 100000, 20, "N", "random batches per estimate (default %D)"),
    PATH("--log", log_path, "FILE.csv",
         "write step,loss,train_loss,val_loss,lr and, at each\n"
         "estimate, the gradient flow: grad_norm.L, resid_rms.L"),
    PATH("--plot", plot_path, "FILE.png", "draw the losses and the gradient flow (needs gnuplot)"),
    PATH("--plot-heads", heads_path, "FILE.png",
         "draw every head's attention on the first validation\n"
         "window at the end (needs gnuplot)"),
    PATH("--save", save_path, "FILE", "write a checkpoint at the end (safetensors, PyTorch names)"),
    PATH("--load", load_path, "FILE", "continue a checkpoint's run, bit for bit"),
    SWITCH("--quiet", quiet, "print only the result line"),
};
#undef INT
#undef LONG
#undef DOUBLE
#undef SWITCH
#undef PATH

static const ag_command text_cmd = {
    .name = "train",
    .run = ag_cmd_train,
    .usage = "attograd train --task text --text FILE [--steps N] [--seed S] [options]",
    .summary = "train a GPT on a text file",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 23,
};

static int given(const ag_text_opts *o, const char *name)
{
    return ag_cli_given(&text_cmd, o->given, name);
}

static int print_help(void)
{
    printf("usage: %s\n\n"
           "Train a GPT, a character-level language model, on a UTF-8 text file. The\n"
           "vocabulary is the file's distinct characters; the first 90%% of the text\n"
           "trains, the last 10%% validates.\n\n",
           text_cmd.usage);
    ag_cli_print_options(&text_cmd);
    printf("\nAdamW uses betas 0.9 and 0.99. With --load the checkpoint fixes the model and\n"
           "the seed (a model flag that differs is an error); --steps counts the steps to\n"
           "add, and the other training flags replace the checkpoint's settings. Ctrl-C\n"
           "(or SIGTERM, SIGHUP) stops after the current step and still saves; the exit\n"
           "status is then 130 (143, 129).\n\n"
           "The last line on stdout is the summary, with the full validation loss:\n"
           "  result: task=text steps=N loss=L val_loss=V seconds=S\n");
    return AG_EXIT_OK;
}

int ag_cli_is_text_task(int argc, char **argv)
{
    const char *task = NULL;
    int text = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--task") == 0 && i + 1 < argc)
            task = argv[++i];
        else if (strncmp(argv[i], "--task=", 7) == 0)
            task = argv[i] + 7;
        else if (strcmp(argv[i], "--text") == 0 || strncmp(argv[i], "--text=", 7) == 0)
            text = 1;
    }
    return task ? strcmp(task, "text") == 0 : text;
}

/* The flags into o: the library's defaults, then the table's rows. */
static int parse_flags(int argc, char **argv, ag_text_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->model = ag_gpt_defaults(1);
    o->train = ag_gpt_train_defaults(); /* what no flag sets: betas, eps */
    int r = ag_cli_parse(&text_cmd, argc, argv, o, &o->given);
    if (r == AG_CLI_GO && o->task && strcmp(o->task, "text") != 0)
        return ag_cli_usage_error(&text_cmd, "--task: '%s' does not take --text (only text does)",
                                  o->task);
    return r;
}

/* The model and a step fit: --heads divides --dim, and no tensor of a step
 * (or of a validation batch) holds more than AG_CLI_MAX_VALUES. */
static int check_sizes(const ag_text_opts *o)
{
    const ag_command *cmd = &text_cmd;
    const ag_gpt_config *m = &o->model;
    if (m->heads > m->dim || m->dim % m->heads != 0)
        return !ag_cli_usage_error(cmd, "--heads: %d does not divide --dim %d", m->heads, m->dim);
    uint64_t b = (uint64_t)(o->train.batch > EVAL_WINDOWS ? o->train.batch : EVAL_WINDOWS);
    uint64_t attn = ag_cli_attention_values(b, (uint64_t)m->heads, (uint64_t)m->seq);
    uint64_t act = ag_cli_activation_values(b, (uint64_t)m->seq, 4 * (uint64_t)m->dim);
    if (attn > AG_CLI_MAX_VALUES || act > AG_CLI_MAX_VALUES)
        return !ag_cli_usage_error(
            cmd,
            "--seq %d with --batch %d, --dim %d and --heads %d is too large: one step would "
            "hold %llu values in one tensor (at most %llu)",
            m->seq, o->train.batch, m->dim, m->heads, (unsigned long long)(attn > act ? attn : act),
            (unsigned long long)AG_CLI_MAX_VALUES);
    return 1;
}

/* Two outputs naming one file would overwrite each other; --save over
 * --load is resuming in place; the text is only read. */
static int check_paths(const ag_text_opts *o)
{
    const char *flag[6] = {"--log", "--plot", "--save", "--load", "--text", "--plot-heads"};
    const char *path[6] = {o->log_path,  o->plot_path, o->save_path,
                           o->load_path, o->text_path, o->heads_path};
    for (int a = 0; a < 6; a++)
        for (int b = a + 1; b < 6; b++)
            if (path[a] && path[b] && strcmp(path[a], path[b]) == 0 && !(a == 2 && b == 3) &&
                !(a == 3 && b == 4))
                return !ag_cli_usage_error(&text_cmd, "%s and %s both name '%s'", flag[a], flag[b],
                                           path[a]);
    return 1;
}

int ag_cli_text_parse(int argc, char **argv, ag_text_opts *o)
{
    int r = parse_flags(argc, argv, o);
    if (r != AG_CLI_GO)
        return r;
    if (!o->text_path)
        return ag_cli_usage_error(&text_cmd, "--text FILE is required: the text to learn from");
    if (!check_paths(o))
        return AG_EXIT_USAGE;
    if (!given(o, "--decay-steps") && !o->load_path)
        o->train.decay_steps = o->steps;
    if (!o->load_path && !check_sizes(o))
        return AG_EXIT_USAGE;
    return AG_CLI_GO;
}

/* ---- one run ---- */

typedef struct text_run {
    ag_text_opts *o;
    ag_gpt_file *file;   /* --load's checkpoint, until restored */
    const ag_text *text; /* the trainer's */
    ag_gpt *g;
    ag_gpt_trainer *t; /* owns the text and the model */
    ag_csv *log;
    double loss;               /* the last step's batch loss */
    double train_est, val_est; /* the last estimates; NAN before the first */
    long est_step;             /* the step they were made at */
    /* for --plot: the losses, thinned to AG_CLI_PLOT_POINTS, the estimates (train, val)
     * and the gradient flow at each estimate */
    ag_curve loss_curve, est_curve, flow_curve;
    double *flow;              /* (2 layers) the last estimate's grad_norm.L, then resid_rms.L; NULL
                   * when neither --log nor --plot asks for it */
    double *row;               /* (5 + 2 layers) a log row */
    int plots;                 /* gnuplot is there for --plot and --plot-heads */
    int plot_failed, plot_sig; /* the plot was not made (and the signal that stopped gnuplot) */
} text_run;

/* With --load, the checkpoint fixes the model and the seed: a flag that
 * says otherwise is a usage error; the training flags given (and --dropout)
 * replace its settings. */
static int adopt_checkpoint(ag_text_opts *o, const ag_gpt_file *f)
{
    static const char *const fixed[] = {"--layers", "--heads",       "--dim",          "--seq",
                                        "--bias",   "--no-residual", "--no-layernorm", "--no-mlp",
                                        "--posenc", "--seed"};
    const ag_command *cmd = &text_cmd;
    ag_text_opts saved = *o;
    saved.model = *ag_gpt_file_config(f);
    if (!ag_gpt_file_train(f, &saved.train, NULL)) {
        return ag_cli_error(cmd,
                            "%s holds a model but no training state (it was not saved by a "
                            "training run)",
                            o->load_path);
    }
    if (!ag_cli_check_fixed(cmd, o->given, o, &saved, fixed, AG_CLI_COUNT(fixed), o->load_path))
        return AG_EXIT_USAGE;
    ag_cli_copy_given(cmd, o->given, &saved, o);
    *o = saved;
    return check_sizes(o) ? AG_CLI_GO : AG_EXIT_USAGE;
}

static int fail(const char *msg)
{
    ag_cli_error(&ag_cmd_train_info, "%s", msg);
    return 0;
}

/* The trainer, with its text and model (fresh, or --load's run); then the
 * logits of a batch must fit (the vocabulary is the text's). */
static int setup(text_run *r, char *err, size_t errlen)
{
    ag_text_opts *o = r->o;
    r->t = ag_gpt_trainer_open(o->text_path, &o->model, &o->train, r->file, err, errlen);
    ag_gpt_file_free(r->file);
    r->file = NULL;
    if (!r->t)
        return fail(err);
    r->g = ag_gpt_trainer_model(r->t);
    r->text = ag_gpt_trainer_text(r->t);
    o->model.vocab = ag_gpt_get_config(r->g)->vocab;
    uint64_t logits = ag_cli_activation_values((uint64_t)o->train.batch, (uint64_t)o->model.seq,
                                               (uint64_t)o->model.vocab);
    if (logits > AG_CLI_MAX_VALUES) {
        snprintf(err, errlen,
                 "%s has %d distinct characters: the logits of a batch would hold "
                 "%llu values (at most %llu); try a smaller --batch or --seq",
                 o->text_path, o->model.vocab, (unsigned long long)logits,
                 (unsigned long long)AG_CLI_MAX_VALUES);
        return fail(err);
    }
    return 1;
}

/* The estimates of both losses, for the progress line, the log and the plot. */
static int estimate(text_run *r, char *err, size_t errlen)
{
    int iters = r->o->eval_iters;
    if (ag_gpt_trainer_estimate(r->t, AG_SPLIT_TRAIN, iters, &r->train_est, err, errlen) != AG_OK ||
        ag_gpt_trainer_estimate(r->t, AG_SPLIT_VAL, iters, &r->val_est, err, errlen) != AG_OK)
        return fail(err);
    r->est_step = ag_gpt_trainer_steps(r->t);
    ag_curve_add(&r->est_curve, r->est_step, (double[]){r->train_est, r->val_est});
    int L = ag_gpt_get_config(r->g)->layers;
    if (r->flow) {
        if (ag_gpt_trainer_flow(r->t, r->flow, r->flow + L, err, errlen) != AG_OK)
            return fail(err);
        ag_curve_add(&r->flow_curve, r->est_step, r->flow);
    }
    return 1;
}

static void progress(const text_run *r, long done, double elapsed, int tty)
{
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    long step = ag_gpt_trainer_steps(r->t);
    if (tty) {
        int width = 24, filled = (int)((double)width * (double)done / (double)r->o->steps);
        double left = rate > 0 ? (double)(r->o->steps - done) / rate : 0;
        char val[32] = "-";
        if (!isnan(r->val_est))
            snprintf(val, sizeof(val), "%.4f", r->val_est);
        printf("\r[%.*s%*s] step %ld loss %.4f val_loss %s %.0f steps/s %.1fs left ", filled,
               "########################", width - filled, "", step, r->loss, val, rate, left);
    } else {
        printf("step %ld train_loss %.4f val_loss %.4f lr %.6f steps/s %.0f\n", step, r->train_est,
               r->val_est, ag_gpt_lr_at(ag_gpt_trainer_config(r->t), step - 1), rate);
    }
    fflush(stdout);
}

static int plot(const text_run *r, double val_loss, int *sig, char *err, size_t errlen)
{
    char title[256];
    snprintf(title, sizeof(title),
             "attograd train --task text: %ld steps, full validation loss %.4f",
             ag_gpt_trainer_steps(r->t), val_loss);
    ag_text_plot d = {title, &r->loss_curve, &r->est_curve, &r->flow_curve,
                      ag_gpt_get_config(r->g)->layers};
    return ag_cli_text_plot(r->o->plot_path, &d, sig, err, errlen);
}

/* One step and what follows it: the log row, an estimate, the progress. */
static int step(text_run *r, long done, double start, double *last_draw, int tty, char *err,
                size_t errlen)
{
    ag_text_opts *o = r->o;
    ag_status st = ag_gpt_trainer_step(r->t, &r->loss, err, errlen);
    if (st != AG_OK) {
        fail(err);
        if (st == AG_ERR_NUMERIC)
            fail("stopped; try a smaller --lr or --clip (nothing was saved)");
        return 0;
    }
    long s = ag_gpt_trainer_steps(r->t);
    int last = done == o->steps, eval_now = s % o->eval_every == 0 || last;
    ag_curve_add(&r->loss_curve, s, &r->loss); /* kept with --plot, thinned */
    if (eval_now && !estimate(r, err, errlen))
        return 0;
    if (r->log) {
        int L = ag_gpt_get_config(r->g)->layers;
        double *row = r->row;
        row[0] = (double)s, row[1] = r->loss;
        row[2] = eval_now ? r->train_est : NAN, row[3] = eval_now ? r->val_est : NAN;
        row[4] = ag_gpt_lr_at(ag_gpt_trainer_config(r->t), s - 1);
        for (int k = 0; k < 2 * L; k++)
            row[5 + k] = eval_now ? r->flow[k] : NAN;
        ag_csv_row(r->log, row, 5 + 2 * (size_t)L); /* errors are sticky; ag_csv_close says */
    }
    double t = ag_cli_now() - start;
    if (tty && (t - *last_draw > 0.1 || last)) {
        progress(r, done, t, 1);
        *last_draw = t;
    } else if (!tty && !o->quiet && eval_now) {
        progress(r, done, t, 0);
    }
    return 1;
}

/* After the loop: the full validation loss, the plot, the log, the
 * checkpoint and the result line. */
static int finish(text_run *r, double seconds, int stop, char *err, size_t errlen)
{
    ag_text_opts *o = r->o;
    double val = 0;
    size_t windows = 0;
    if (r->est_step != ag_gpt_trainer_steps(r->t) && !estimate(r, err, errlen))
        return 0; /* stopped between estimates: the result's loss is this step's */
    if (ag_gpt_trainer_val_loss(r->t, &val, &windows, err, errlen) != AG_OK)
        return fail(err);
    char shown[AG_QUOTE_LEN];
    if (o->plot_path && r->plots) {
        if (plot(r, val, &r->plot_sig, err, errlen)) {
            if (!o->quiet)
                printf("plot: %s\n", ag_quote(o->plot_path, shown, sizeof(shown)));
        } else {
            fail(err); /* the log and the checkpoint still follow; the status says it */
            r->plot_failed = 1;
        }
    }
    if (o->heads_path && r->plots && !r->plot_sig) {
        if (ag_cli_text_plot_heads(o->heads_path, r->g, r->text, &r->plot_sig, err, errlen)) {
            if (!o->quiet)
                printf("plot: %s\n", ag_quote(o->heads_path, shown, sizeof(shown)));
        } else {
            fail(err);
            r->plot_failed = 1;
        }
    }
    if (r->log) {
        ag_csv *log = r->log;
        r->log = NULL;
        if (ag_csv_close(log, err, errlen) != AG_OK)
            return fail(err);
    }
    long steps = ag_gpt_trainer_steps(r->t);
    if (o->save_path) {
        if (ag_gpt_trainer_save(r->t, o->save_path, err, errlen) != AG_OK)
            return fail(err);
        if (!o->quiet)
            printf("saved: %s (step %ld)\n", ag_quote(o->save_path, shown, sizeof(shown)), steps);
    }
    if (stop)
        ag_cli_error(&ag_cmd_train_info, "%s after step %ld", ag_cli_stop_reason(stop), steps);
    if (!o->quiet)
        printf("validation: %zu windows of %d characters\n", windows, o->model.seq);
    printf("result: task=text steps=%ld loss=%.6f val_loss=%.6f seconds=%.2f\n", steps,
           r->train_est, val, seconds);
    return 1;
}

/* What is about to be trained: the text, the model, the schedule. */
static void print_header(const text_run *r)
{
    const ag_text_opts *o = r->o;
    const ag_gpt_config *m = &o->model;
    printf("training text: %s, %zu characters (%d distinct), %zu to train, %zu to validate\n",
           o->text_path, r->text->len, m->vocab, r->text->n_train, r->text->len - r->text->n_train);
    printf("model: %d layer%s, %d head%s, dim %d, seq %d%s%s%s%s%s, %zu weights\n", m->layers,
           m->layers == 1 ? "" : "s", m->heads, m->heads == 1 ? "" : "s", m->dim, m->seq,
           m->bias ? ", bias" : "", m->no_residual ? ", no residual" : "",
           m->no_layernorm ? ", no layernorm" : "", m->no_mlp ? ", no mlp" : "",
           m->no_posenc ? ", no positions" : "", ag_gpt_n_weights(r->g));
    printf("adamw: lr %g to %g, warmup %ld, batch %d, %d steps from step %ld\n", o->train.lr,
           o->train.min_lr, o->train.warmup, o->train.batch, o->steps, ag_gpt_trainer_steps(r->t));
    fflush(stdout);
}

/* Before any work: every output can be written, none is another file of
 * the run under another name (--save over --load resumes in place); then
 * --load's checkpoint, its settings adopted. AG_CLI_GO or the status. */
static int prepare(text_run *r)
{
    ag_text_opts *o = r->o;
    char err[AG_CLI_ERR_LEN];
    const ag_cli_file files[] = {
        {"--log", o->log_path, 1, NULL},       {"--plot", o->plot_path, 1, NULL},
        {"--save", o->save_path, 1, "--load"}, {"--load", o->load_path, 0, NULL},
        {"--text", o->text_path, 0, NULL},     {"--plot-heads", o->heads_path, 1, NULL},
    };
    int checked = ag_cli_check_files(&ag_cmd_train_info, files, sizeof(files) / sizeof(files[0]));
    if (checked != AG_EXIT_OK)
        return checked;
    if (!o->load_path)
        return AG_CLI_GO;
    if (ag_gpt_file_load(o->load_path, &r->file, err, sizeof(err)) != AG_OK)
        return fail(err), AG_EXIT_FAIL;
    return adopt_checkpoint(o, r->file);
}

/* --plot's history, when gnuplot is there (else said, and no plot), and the
 * gradient flow's buffers for --log and --plot. Returns 0 when out of memory. */
static int alloc_history(text_run *r)
{
    const ag_text_opts *o = r->o;
    int L = ag_gpt_get_config(r->g)->layers;
    if (o->log_path || o->plot_path) {
        r->flow = calloc(2 * (size_t)L + 1, sizeof(double));
        r->row = calloc(5 + 2 * (size_t)L, sizeof(double));
        if (!r->flow || !r->row)
            return fail("out of memory");
    }
    if (!o->plot_path && !o->heads_path)
        return 1;
    if (!ag_cli_have_program("gnuplot"))
        return fail("gnuplot is not installed, so no plot (apt-get install gnuplot-nox)"), 1;
    r->plots = 1;
    if (!o->plot_path)
        return 1;
    size_t cap = (size_t)(o->steps < AG_CLI_PLOT_POINTS ? o->steps : AG_CLI_PLOT_POINTS);
    if (ag_curve_init_thinned(&r->loss_curve, 1, o->steps, AG_CLI_PLOT_POINTS) != AG_OK ||
        ag_curve_init(&r->est_curve, 2, cap, 1) != AG_OK ||
        (L > 0 && ag_curve_init(&r->flow_curve, 2 * L, cap, 1) != AG_OK))
        return fail("out of memory");
    return 1;
}

/* The log's columns: step,loss,train_loss,val_loss,lr, then grad_norm.0 ..
 * grad_norm.L-1 and resid_rms.0 .. resid_rms.L-1. NULL when out of memory. */
static char *log_header(int layers)
{
    static const char *const base = "step,loss,train_loss,val_loss,lr";
    size_t cap = strlen(base) + 2 * (size_t)layers * 24 + 1, n = strlen(base);
    char *h = malloc(cap);
    if (!h)
        return NULL;
    memcpy(h, base, n + 1);
    for (int k = 0; k < 2 * layers; k++)
        n += (size_t)snprintf(h + n, cap - n, ",%s.%d", k < layers ? "grad_norm" : "resid_rms",
                              k % layers);
    return h;
}

int ag_cli_text_run(ag_text_opts *o)
{
    char err[AG_CLI_ERR_LEN];
    text_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.train_est = r.val_est = NAN;
    r.est_step = -1;
    int status = prepare(&r);
    ag_cli_stop stop_signals = {0};
    if (status != AG_CLI_GO) {
        ag_gpt_file_free(r.file);
        return status;
    }
    status = AG_EXIT_FAIL;
    if (!setup(&r, err, sizeof(err)) || !alloc_history(&r))
        goto done;
    ag_set_threads(o->threads);
    /* from here on a temporary file may exist: a signal only asks the loop to stop */
    ag_cli_stop_begin(&stop_signals);
    if (o->log_path) {
        char *header = log_header(ag_gpt_get_config(r.g)->layers);
        ag_status st = AG_ERR_NOMEM;
        snprintf(err, sizeof(err), "out of memory");
        if (header)
            st = ag_csv_open(o->log_path, header, &r.log, err, sizeof(err));
        free(header);
        if (st != AG_OK) {
            fail(err);
            goto done;
        }
    }
    int tty = !o->quiet && isatty(STDOUT_FILENO);
    if (!o->quiet)
        print_header(&r);
    double start = ag_cli_now(), last_draw = 0;
    long done_steps = 0;
    while (done_steps < o->steps && !ag_cli_stop_requested()) {
        if (!step(&r, ++done_steps, start, &last_draw, tty, err, sizeof(err)))
            goto done;
    }
    double seconds = ag_cli_now() - start;
    if (tty)
        printf("\n");
    int stop = ag_cli_stop_requested();
    if (finish(&r, seconds, stop, err, sizeof(err))) {
        if (r.plot_sig && !stop)
            stop = r.plot_sig;
        status = stop ? 128 + stop : r.plot_failed ? AG_EXIT_FAIL : AG_EXIT_OK;
    }
done:
    ag_csv_free(r.log); /* an unfinished log is discarded, never left half-written */
    ag_cli_stop_end(&stop_signals);
    ag_gpt_file_free(r.file);
    ag_gpt_trainer_free(r.t);
    ag_curve_free(&r.loss_curve);
    ag_curve_free(&r.est_curve);
    ag_curve_free(&r.flow_curve);
    free(r.flow);
    free(r.row);
    ag_set_threads(1);
    return status;
}

int ag_cli_text_main(int argc, char **argv)
{
    ag_text_opts o;
    int r = ag_cli_text_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help();
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_text_run(&o);
}
