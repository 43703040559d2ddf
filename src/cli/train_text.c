/*
 * train_text.c - `attograd train --task text`: a GPT learns to write like a
 * text file, one character at a time. The library does the work (ag_text,
 * ag_gpt, ag_gpt_trainer, the checkpoint); this file reads the flags, runs
 * the loop with its progress, log, plot and Ctrl-C, and ends with the
 * result line, whose val_loss is the full validation loss: every window of
 * the last 10% of the text, a number any implementation can reproduce.
 *
 * Nothing trained is lost: the memory the run needs is checked before
 * anything is allocated; the log and the checkpoint are written as soon as
 * the steps end (a signal, a NaN or any error in a step ends them too),
 * before the full validation, which may take long; and a signal in any
 * phase stops it at once, with a line on what was saved.
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
           "add, and the other training flags replace the checkpoint's settings.\n\n"
           "The log and the checkpoint are written as soon as the steps end, before the\n"
           "full validation. Ctrl-C (or SIGTERM, SIGHUP) in any phase stops the run within\n"
           "about a second, still saving what was trained (a step cut short is not\n"
           "counted), and the exit status is 130 (143, 129); a second one ends it at\n"
           "once. A loss or gradient that turns NaN or Inf stops at that step and saves\n"
           "the step before it (exit 1). A run that would need more memory than\n"
           "AG_MAX_MEMORY (default: the machine's) is refused before it starts.\n\n"
           "The last line on stdout is the summary, with the full validation loss and\n"
           "the seconds of the steps and of the validation:\n"
           "  result: task=text steps=N loss=L val_loss=V seconds=S val_seconds=W\n");
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
 * (or of a validation chunk) holds more than AG_CLI_MAX_VALUES. file: the
 * sizes are a checkpoint's (with --load), and a failure names it, exit 1,
 * unless --batch was given. Returns AG_EXIT_OK or the status, said. */
static int check_sizes(const ag_text_opts *o, const char *file)
{
    const ag_command *cmd = &text_cmd;
    const ag_gpt_config *m = &o->model;
    if (m->heads > m->dim || m->dim % m->heads != 0)
        return ag_cli_usage_error(cmd, "--heads: %d does not divide --dim %d", m->heads, m->dim);
    uint64_t b = (uint64_t)(o->train.batch > EVAL_WINDOWS ? o->train.batch : EVAL_WINDOWS);
    uint64_t attn = ag_cli_attention_values(b, (uint64_t)m->heads, (uint64_t)m->seq);
    uint64_t act = ag_cli_activation_values(b, (uint64_t)m->seq, 4 * (uint64_t)m->dim);
    unsigned long long most = attn > act ? attn : act;
    if (attn <= AG_CLI_MAX_VALUES && act <= AG_CLI_MAX_VALUES)
        return AG_EXIT_OK;
    if (file && !given(o, "--batch"))
        return ag_cli_error(cmd,
                            "%s: its block_size %d with batch %d, n_embd %d and n_head %d is too "
                            "large: one step would hold %llu values in one tensor (at most %llu); "
                            "a smaller --batch may fit",
                            file, m->seq, o->train.batch, m->dim, m->heads, most,
                            (unsigned long long)AG_CLI_MAX_VALUES);
    return ag_cli_usage_error(cmd,
                              "--seq %d with --batch %d, --dim %d and --heads %d is too large: "
                              "one step would hold %llu values in one tensor (at most %llu)",
                              m->seq, o->train.batch, m->dim, m->heads, most,
                              (unsigned long long)AG_CLI_MAX_VALUES);
}

/* The schedule decays toward --min-lr: above --lr, the rate would rise. */
static int check_rates(const ag_text_opts *o, const char *file)
{
    const ag_gpt_train_config *t = &o->train;
    if (t->min_lr <= t->lr)
        return AG_EXIT_OK;
    if (file && !given(o, "--lr") && !given(o, "--min-lr"))
        return ag_cli_error(&text_cmd, "%s: metadata min_lr %g is above lr %g", file, t->min_lr,
                            t->lr);
    return ag_cli_usage_error(&text_cmd,
                              "--min-lr %g is above --lr %g%s: the learning rate would rise as "
                              "it decays",
                              t->min_lr, t->lr, file ? " (the one not given is --load's)" : "");
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
    if (!o->load_path && (check_sizes(o, NULL) != AG_EXIT_OK || check_rates(o, NULL) != AG_EXIT_OK))
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
    ag_status failed;          /* why a step failed (NaN, out of memory): said, exit 1 */
    int saved;                 /* --save was written */
    double seconds;            /* the steps' time */
} text_run;

static int fail(const char *msg)
{
    ag_cli_error(&text_cmd, "%s", msg);
    return 0;
}

/* A signal stopped the run during `phase` (NULL: the steps): say what was
 * saved, and the status 128 + the signal. */
static int stopped(const text_run *r, const char *phase)
{
    return ag_cli_say_stopped(&text_cmd, phase, r->t != NULL, r->o->save_path, r->saved,
                              r->t ? ag_gpt_trainer_steps(r->t) : 0);
}

/* With --load, the checkpoint fixes the model and the seed: a flag that
 * says otherwise is a usage error; the training flags given (and --dropout)
 * replace its settings. Then the sizes and rates, the counters (one rule:
 * the run may not take them past what a checkpoint holds). AG_CLI_GO or
 * the status, said. */
static int adopt_checkpoint(ag_text_opts *o, const ag_gpt_file *f)
{
    static const char *const fixed[] = {"--layers", "--heads",       "--dim",          "--seq",
                                        "--bias",   "--no-residual", "--no-layernorm", "--no-mlp",
                                        "--posenc", "--seed"};
    const ag_command *cmd = &text_cmd;
    ag_text_opts saved = *o;
    long step = 0;
    saved.model = *ag_gpt_file_config(f);
    if (!ag_gpt_file_train(f, &saved.train, &step)) {
        return ag_cli_error(cmd,
                            "%s holds a model but no training state (it was not saved by a "
                            "training run)",
                            o->load_path);
    }
    if (!ag_cli_check_fixed(cmd, o->given, o, &saved, fixed, AG_CLI_COUNT(fixed), o->load_path))
        return AG_EXIT_USAGE;
    ag_cli_copy_given(cmd, o->given, &saved, o);
    *o = saved;
    int st = ag_cli_check_counts(cmd, o->load_path, o->steps, given(o, "--steps"), step,
                                 ag_gpt_file_optim_steps(f));
    if (st == AG_EXIT_OK)
        st = check_sizes(o, o->load_path);
    if (st == AG_EXIT_OK)
        st = check_rates(o, o->load_path);
    return st == AG_EXIT_OK ? AG_CLI_GO : st;
}

/* What the run will need against the limit: before the text is read (its
 * vocabulary not yet known: vocab is --load's, or 1), and again once it is
 * (vocab its own), before the model is made. file: where the sizes came
 * from, for the message (NULL: the flags). */
static int check_memory(const text_run *r, int vocab, const char *file)
{
    const ag_text_opts *o = r->o;
    ag_gpt_run run = {.batch = o->train.batch,
                      .validate = 1,
                      .save = o->save_path != NULL,
                      .threads = o->threads,
                      .text_bytes = ag_cli_file_bytes(o->text_path),
                      .file_bytes = ag_cli_file_bytes(o->load_path)};
    ag_gpt_config c = o->model;
    c.vocab = vocab;
    return ag_cli_gpt_memory_check(&text_cmd, &c, &run, file);
}

/* Before any work: every output can be written, none is another file of
 * the run under another name (--save over --load resumes in place); then
 * --load's checkpoint, its settings adopted; then the memory. AG_CLI_GO or
 * the status. */
static int prepare(text_run *r)
{
    ag_text_opts *o = r->o;
    char err[AG_CLI_ERR_LEN];
    const ag_cli_file files[] = {
        {"--log", o->log_path, 1, NULL},       {"--plot", o->plot_path, 1, NULL},
        {"--save", o->save_path, 1, "--load"}, {"--load", o->load_path, 0, NULL},
        {"--text", o->text_path, 0, NULL},     {"--plot-heads", o->heads_path, 1, NULL},
    };
    int st = ag_cli_check_files(&text_cmd, files, sizeof(files) / sizeof(files[0]));
    if (st != AG_EXIT_OK)
        return st;
    const char *from = NULL; /* where the model's sizes come from */
    int vocab = 1;
    if (o->load_path) {
        ag_status ls = ag_gpt_file_load(o->load_path, &r->file, err, sizeof(err));
        if (ls == AG_ERR_STOPPED)
            return stopped(r, "reading the checkpoint");
        if (ls != AG_OK)
            return ag_cli_error(&text_cmd, "%s%s", err, ag_cli_format_hint(err));
        if ((st = adopt_checkpoint(o, r->file)) != AG_CLI_GO)
            return st;
        vocab = ag_gpt_file_config(r->file)->vocab;
        from = given(o, "--batch") ? NULL : o->load_path;
    }
    st = check_memory(r, vocab, from);
    return st == AG_EXIT_OK ? AG_CLI_GO : st;
}

/* About the bytes of the run's checkpoint (ag_gpt_trainer_save): the
 * weights, the tied head written again, AdamW's m and v, the header. */
static double checkpoint_bytes(const ag_text_opts *o, int vocab)
{
    ag_gpt_config c = o->model;
    c.vocab = vocab;
    double values = 3 * ag_gpt_config_weights(&c) + (double)vocab * c.dim;
    return values * (double)sizeof(ag_real) + 65536 + 16.0 * vocab;
}

/* The text, the memory of the model it makes, the trainer with its model
 * (fresh, or --load's run). AG_EXIT_OK or the status, said. */
static int setup(text_run *r, char *err, size_t errlen)
{
    ag_text_opts *o = r->o;
    ag_text *text = NULL;
    const ag_vocab *vocab = r->file ? ag_gpt_file_vocab(r->file) : NULL;
    ag_status st = ag_text_load(o->text_path, vocab, &text, err, errlen);
    if (st == AG_ERR_STOPPED)
        return stopped(r, "reading the text");
    if (st != AG_OK)
        return fail(err), AG_EXIT_FAIL;
    int V = ag_vocab_size(text->vocab);
    /* the text's vocabulary sizes the head: it must fit too */
    uint64_t logits =
        ag_cli_activation_values((uint64_t)o->train.batch, (uint64_t)o->model.seq, (uint64_t)V);
    if (logits > AG_CLI_MAX_VALUES) {
        ag_text_free(text);
        snprintf(err, errlen,
                 "%s has %d distinct characters: the logits of a batch would hold "
                 "%llu values (at most %llu); try a smaller --batch or --seq",
                 o->text_path, V, (unsigned long long)logits,
                 (unsigned long long)AG_CLI_MAX_VALUES);
        return fail(err), AG_EXIT_FAIL;
    }
    int mem = r->file ? AG_EXIT_OK : check_memory(r, V, o->text_path);
    if (mem == AG_EXIT_OK && o->save_path)
        mem = ag_cli_check_space(&text_cmd, "--save", o->save_path, checkpoint_bytes(o, V));
    if (mem != AG_EXIT_OK) {
        ag_text_free(text);
        return mem;
    }
    r->t = ag_gpt_trainer_open_text(text, o->text_path, &o->model, &o->train, r->file, err,
                                    errlen); /* takes the text */
    ag_gpt_file_free(r->file);
    r->file = NULL;
    if (!r->t)
        return ag_cli_stop_requested() ? stopped(r, "making the model") : (fail(err), AG_EXIT_FAIL);
    r->g = ag_gpt_trainer_model(r->t);
    r->text = ag_gpt_trainer_text(r->t);
    o->model.vocab = V;
    return AG_EXIT_OK;
}

/* The estimates of both losses, for the progress line, the log and the plot. */
static ag_status estimate(text_run *r, char *err, size_t errlen)
{
    int iters = r->o->eval_iters;
    ag_status st = ag_gpt_trainer_estimate(r->t, AG_SPLIT_TRAIN, iters, &r->train_est, err, errlen);
    if (st == AG_OK)
        st = ag_gpt_trainer_estimate(r->t, AG_SPLIT_VAL, iters, &r->val_est, err, errlen);
    if (st != AG_OK)
        return st;
    r->est_step = ag_gpt_trainer_steps(r->t);
    ag_curve_add(&r->est_curve, r->est_step, (double[]){r->train_est, r->val_est});
    int L = ag_gpt_get_config(r->g)->layers;
    if (r->flow) {
        st = ag_gpt_trainer_flow(r->t, r->flow, r->flow + L, err, errlen);
        if (st != AG_OK)
            return st;
        ag_curve_add(&r->flow_curve, r->est_step, r->flow);
    }
    return AG_OK;
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

/* One step and what follows it: the log row, an estimate, the progress.
 * Returns 1 to go on; 0 when the steps end here: stopped by a signal, or
 * failed (said, r->failed). */
static int step(text_run *r, long done, double start, double *last_draw, int tty, char *err,
                size_t errlen)
{
    ag_text_opts *o = r->o;
    ag_status st = ag_gpt_trainer_step(r->t, &r->loss, err, errlen);
    if (st == AG_ERR_STOPPED && ag_cli_stop_requested())
        return 0; /* the step cut short is not counted; finish() says the rest */
    if (st != AG_OK) {
        r->failed = st;
        return fail(err);
    }
    long s = ag_gpt_trainer_steps(r->t);
    int last = done == o->steps, eval_now = s % o->eval_every == 0 || last;
    ag_curve_add(&r->loss_curve, s, &r->loss); /* kept with --plot, thinned */
    if (eval_now)
        st = estimate(r, err, errlen);
    int estimated = eval_now && st == AG_OK;
    if (r->log) { /* the step's row, also when its estimate did not run */
        int L = ag_gpt_get_config(r->g)->layers;
        double *row = r->row;
        row[0] = (double)s, row[1] = r->loss;
        row[2] = estimated ? r->train_est : NAN, row[3] = estimated ? r->val_est : NAN;
        row[4] = ag_gpt_lr_at(ag_gpt_trainer_config(r->t), s - 1);
        for (int k = 0; k < 2 * L; k++)
            row[5 + k] = estimated ? r->flow[k] : NAN;
        ag_csv_row(r->log, row, 5 + 2 * (size_t)L); /* errors are sticky; ag_csv_close says */
    }
    if (st == AG_ERR_STOPPED && ag_cli_stop_requested())
        return 0;
    if (st != AG_OK) {
        r->failed = st;
        return fail(err);
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

/* As soon as the steps end (done, stopped or failed): the log, then the
 * checkpoint, unless a weight is no longer finite (the update broke it:
 * what is on disk stays). Returns 0 when either could not be written
 * (said). */
static int save_first(text_run *r, char *err, size_t errlen)
{
    ag_text_opts *o = r->o;
    int ok = 1;
    char shown[AG_QUOTE_LEN];
    size_t n = ag_gpt_params(r->g, NULL, NULL, 0), elem;
    ag_tensor **params = malloc((n ? n : 1) * sizeof(*params));
    if (!params)
        return fail("out of memory");
    ag_gpt_params(r->g, params, NULL, n);
    int broken = ag_first_nonfinite_param(params, n, &elem) >= 0;
    free(params);
    if (r->log && !broken) {
        ag_csv *log = r->log;
        r->log = NULL;
        if (ag_csv_close(log, err, errlen) != AG_OK)
            ok = fail(err); /* the checkpoint is still written */
    }
    if (o->save_path && !broken) {
        if (ag_gpt_trainer_save(r->t, o->save_path, err, errlen) != AG_OK)
            return fail(err);
        r->saved = 1;
        if (!o->quiet)
            printf("saved: %s (step %ld)\n", ag_quote(o->save_path, shown, sizeof(shown)),
                   ag_gpt_trainer_steps(r->t));
        fflush(stdout);
    }
    if (r->failed)
        ag_cli_say_failed(&text_cmd, r->failed, broken, o->save_path, r->saved,
                          ag_gpt_trainer_steps(r->t));
    return ok;
}

static void result(const text_run *r, double val, double val_seconds)
{
    printf("result: task=text steps=%ld loss=%.6f val_loss=%.6f seconds=%.2f val_seconds=%.2f\n",
           ag_gpt_trainer_steps(r->t), r->train_est, val, r->seconds, val_seconds);
}

/* After the steps, and their log and checkpoint: the full validation loss
 * (which may take long: shown, and stopped by a signal like any phase),
 * the plot and the result line. Returns the exit status. */
static int finish(text_run *r, char *err, size_t errlen)
{
    ag_text_opts *o = r->o;
    double val = NAN;
    size_t windows = 0;
    if (ag_cli_stop_requested()) {
        int st = stopped(r, NULL);
        result(r, NAN, 0);
        return st;
    }
    double start = ag_cli_now();
    ag_status vs = ag_gpt_trainer_val_loss(r->t, &val, &windows, err, errlen);
    double val_seconds = ag_cli_now() - start;
    if (vs == AG_ERR_STOPPED || ag_cli_stop_requested()) {
        int st = stopped(r, "the validation");
        result(r, NAN, val_seconds);
        return st;
    }
    if (vs != AG_OK) {
        fail(err);
        if (r->saved)
            fail("the checkpoint was saved before the validation");
        return AG_EXIT_FAIL;
    }
    char shown[AG_QUOTE_LEN];
    if (o->plot_path && r->plots) {
        if (plot(r, val, &r->plot_sig, err, errlen)) {
            if (!o->quiet)
                printf("plot: %s\n", ag_quote(o->plot_path, shown, sizeof(shown)));
        } else {
            fail(err); /* the log and the checkpoint are written; the status says it */
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
    if (!o->quiet)
        printf("validation: %zu windows of %d characters\n", windows, o->model.seq);
    result(r, val, val_seconds);
    return r->plot_sig ? 128 + r->plot_sig : r->plot_failed ? AG_EXIT_FAIL : AG_EXIT_OK;
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

/* --log's file with its header. Returns 0 when it cannot be opened (said). */
static int open_log(text_run *r, char *err, size_t errlen)
{
    char *header = log_header(ag_gpt_get_config(r->g)->layers);
    ag_status st = AG_ERR_NOMEM;
    snprintf(err, errlen, "out of memory");
    if (header)
        st = ag_csv_open(r->o->log_path, header, &r->log, err, errlen);
    free(header);
    return st == AG_OK ? 1 : fail(err);
}

/* The text and the model, the log, the steps, then what follows them.
 * Returns the exit status. */
static int train(text_run *r)
{
    ag_text_opts *o = r->o;
    char err[AG_CLI_ERR_LEN];
    int st = setup(r, err, sizeof(err));
    if (st != AG_EXIT_OK)
        return st;
    if (!alloc_history(r))
        return AG_EXIT_FAIL;
    if (ag_cli_stop_requested())
        return stopped(r, "making the model");
    if (o->log_path && !open_log(r, err, sizeof(err)))
        return AG_EXIT_FAIL;
    int tty = !o->quiet && isatty(STDOUT_FILENO);
    if (!o->quiet)
        print_header(r);
    double start = ag_cli_now(), last_draw = 0;
    long done_steps = 0;
    while (done_steps < o->steps && !ag_cli_stop_requested())
        if (!step(r, ++done_steps, start, &last_draw, tty, err, sizeof(err)))
            break;
    r->seconds = ag_cli_now() - start;
    if (tty)
        printf("\n");
    int wrote = save_first(r, err, sizeof(err));
    if (r->failed)
        return AG_EXIT_FAIL;
    st = finish(r, err, sizeof(err));
    return !wrote && st == AG_EXIT_OK ? AG_EXIT_FAIL : st;
}

int ag_cli_text_run(ag_text_opts *o)
{
    text_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.train_est = r.val_est = NAN;
    r.est_step = -1;
    /* from here on every phase honours a signal: it only asks the run to stop */
    ag_cli_stop stop_signals = {0};
    ag_cli_stop_begin(&stop_signals);
    ag_cli_progress_begin(&text_cmd, o->quiet);
    ag_set_threads(o->threads);
    int status = prepare(&r);
    if (status == AG_CLI_GO)
        status = train(&r);
    ag_csv_free(r.log); /* an unfinished log is discarded, never left half-written */
    ag_cli_progress_end();
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
