/*
 * train_text.c - `attograd train --task text`: a GPT learns to write like a
 * text file, one character at a time. The library does the work (ag_text,
 * ag_gpt, ag_gpt_trainer, the checkpoint); this file reads the flags, runs
 * the loop with its progress, log, plot and Ctrl-C, and ends with the
 * result line, whose val_loss is the full validation loss: every window of
 * the last 10% of the text, a number any implementation can reproduce.
 */
#include "opts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STEPS 100000000
#define EVAL_WINDOWS 32      /* the full validation loss runs this many windows at once */
#define PLOT_POINTS 10000

static const ag_command text_cmd = {
    "train", ag_cmd_train,
    "attograd train --task text --text FILE [--steps N] [--seed S] [options]",
    "train a GPT on a text file",
};

static int print_help(void)
{
    printf("usage: %s\n\n"
           "Train a GPT, a character-level language model, on a UTF-8 text file. The\n"
           "vocabulary is the file's distinct characters; the first 90%% of the text\n"
           "trains, the last 10%% validates.\n\n"
           "model:\n"
           "  --layers N           transformer blocks (default 4)\n"
           "  --heads H            attention heads, dividing --dim (default 4)\n"
           "  --dim C              width of the residual stream (default 128)\n"
           "  --seq T              context length in characters (default 64)\n"
           "  --bias               give linears and layer norms biases (default none)\n"
           "  --dropout P          dropout while training, 0..0.9 (default 0)\n"
           "ablations (what each part of a block is for):\n"
           "  --no-residual        no skip connections: x = branch(x)\n"
           "  --no-layernorm       no layer norms\n"
           "  --no-mlp             attention-only blocks\n"
           "  --posenc KIND        learned|none (default learned)\n"
           "training:\n"
           "  --steps N            steps to run (default 2000)\n"
           "  --batch B            windows per step (default 12)\n"
           "  --lr X               peak learning rate (default 0.001)\n"
           "  --min-lr X           learning rate at the end of the decay (default 0.0001)\n"
           "  --warmup N           steps of linear warmup (default 100)\n"
           "  --decay-steps N      the cosine decay reaches --min-lr at step N (default --steps)\n"
           "  --weight-decay X     AdamW weight decay on 2-D weights (default 0.1)\n"
           "  --clip X             clip the global gradient norm; 0 turns it off (default 1)\n"
           "  --seed S             seeds the weights, batches and dropout (default 1)\n"
           "  --threads N          threads for the matmuls (default 1); same numbers for any N\n"
           "progress and files:\n"
           "  --eval-every N       estimate the losses every N steps (default 250)\n"
           "  --eval-iters N       random batches per estimate (default 20)\n"
           "  --log FILE.csv       write step,loss,train_loss,val_loss,lr\n"
           "  --plot FILE.png      draw the training and validation loss (needs gnuplot)\n"
           "  --save FILE          write a checkpoint at the end (safetensors, PyTorch names)\n"
           "  --load FILE          continue a checkpoint's run, bit for bit\n"
           "  --quiet              print only the result line\n\n"
           "AdamW uses betas 0.9 and 0.99. With --load the checkpoint fixes the model and\n"
           "the seed (a model flag that differs is an error); --steps counts the steps to\n"
           "add, and the other training flags replace the checkpoint's settings. Ctrl-C\n"
           "(or SIGTERM, SIGHUP) stops after the current step and still saves; the exit\n"
           "status is then 130 (143, 129).\n\n"
           "The last line on stdout is the summary, with the full validation loss:\n"
           "  result: task=text steps=N loss=L val_loss=V seconds=S\n",
           text_cmd.usage);
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

static int parse_flags(int argc, char **argv, ag_text_opts *o)
{
    const ag_command *cmd = &text_cmd;
    ag_gpt_config *m = &o->model;
    ag_gpt_train_config *t = &o->train;
    memset(o, 0, sizeof(*o));
    *m = ag_gpt_defaults(1);
    *t = ag_gpt_train_defaults();
    t->decay_steps = 0;
    o->steps = 2000;
    o->eval_every = 250;
    o->eval_iters = 20;
    o->threads = 1;
    const char *task = "text", *posenc = NULL;
    const ag_cli_flag flags[] = {
        {"--task", AG_FLAG_STRING, &task, 0, 0, NULL},
        {"--text", AG_FLAG_PATH, &o->text_path, 0, 0, NULL},
        {"--layers", AG_FLAG_INT, &m->layers, 1, 256, &o->set_layers},
        {"--heads", AG_FLAG_INT, &m->heads, 1, AG_CLI_MAX_SIZE, &o->set_heads},
        {"--dim", AG_FLAG_INT, &m->dim, 1, AG_CLI_MAX_SIZE, &o->set_dim},
        {"--seq", AG_FLAG_INT, &m->seq, 1, AG_CLI_MAX_SIZE, &o->set_seq},
        {"--bias", AG_FLAG_SWITCH, &m->bias, 0, 0, &o->set_bias},
        {"--dropout", AG_FLAG_DOUBLE, &m->dropout, 0, 0.9, &o->set_dropout},
        {"--no-residual", AG_FLAG_SWITCH, &m->no_residual, 0, 0, &o->set_no_residual},
        {"--no-layernorm", AG_FLAG_SWITCH, &m->no_layernorm, 0, 0, &o->set_no_layernorm},
        {"--no-mlp", AG_FLAG_SWITCH, &m->no_mlp, 0, 0, &o->set_no_mlp},
        {"--posenc", AG_FLAG_STRING, &posenc, 0, 0, &o->set_posenc},
        {"--steps", AG_FLAG_INT, &o->steps, 1, MAX_STEPS, NULL},
        {"--batch", AG_FLAG_INT, &t->batch, 1, AG_CLI_MAX_BATCH, &o->set_batch},
        {"--lr", AG_FLAG_DOUBLE, &t->lr, AG_CLI_LR_MIN, AG_CLI_LR_MAX, &o->set_lr},
        {"--min-lr", AG_FLAG_DOUBLE, &t->min_lr, 0, AG_CLI_LR_MAX, &o->set_min_lr},
        {"--warmup", AG_FLAG_LONG, &t->warmup, 0, MAX_STEPS, &o->set_warmup},
        {"--decay-steps", AG_FLAG_LONG, &t->decay_steps, 1, AG_CLI_MAX_STEP, &o->set_decay_steps},
        {"--weight-decay", AG_FLAG_DOUBLE, &t->weight_decay, 0, AG_CLI_WEIGHT_DECAY_MAX,
         &o->set_weight_decay},
        {"--clip", AG_FLAG_DOUBLE, &t->clip, 0, AG_CLI_CLIP_MAX, &o->set_clip},
        {"--seed", AG_FLAG_U64, &t->seed, 0, 0, &o->set_seed},
        {"--threads", AG_FLAG_INT, &o->threads, 1, 256, NULL},
        {"--eval-every", AG_FLAG_INT, &o->eval_every, 1, MAX_STEPS, NULL},
        {"--eval-iters", AG_FLAG_INT, &o->eval_iters, 1, 100000, NULL},
        {"--log", AG_FLAG_PATH, &o->log_path, 0, 0, NULL},
        {"--plot", AG_FLAG_PATH, &o->plot_path, 0, 0, NULL},
        {"--save", AG_FLAG_PATH, &o->save_path, 0, 0, NULL},
        {"--load", AG_FLAG_PATH, &o->load_path, 0, 0, NULL},
        {"--quiet", AG_FLAG_SWITCH, &o->quiet, 0, 0, NULL},
    };
    int r = ag_cli_parse_flags(cmd, argc, argv, flags, sizeof(flags) / sizeof(flags[0]));
    if (r != AG_CLI_GO)
        return r;
    if (strcmp(task, "text") != 0)
        return ag_cli_usage_error(cmd, "--task: '%s' does not take --text (only text does)", task);
    if (posenc && strcmp(posenc, "learned") != 0 && strcmp(posenc, "none") != 0)
        return ag_cli_usage_error(cmd, "--posenc: '%s' is not learned or none (the text task's "
                                  "positions)", posenc);
    m->no_posenc = posenc && strcmp(posenc, "none") == 0;
    return AG_CLI_GO;
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
            cmd, "--seq %d with --batch %d, --dim %d and --heads %d is too large: one step would "
            "hold %llu values in one tensor (at most %llu)", m->seq, o->train.batch, m->dim,
            m->heads, (unsigned long long)(attn > act ? attn : act),
            (unsigned long long)AG_CLI_MAX_VALUES);
    return 1;
}

/* Two outputs naming one file would overwrite each other; --save over
 * --load is resuming in place; the text is only read. */
static int check_paths(const ag_text_opts *o)
{
    const char *flag[5] = {"--log", "--plot", "--save", "--load", "--text"};
    const char *path[5] = {o->log_path, o->plot_path, o->save_path, o->load_path, o->text_path};
    for (int a = 0; a < 5; a++)
        for (int b = a + 1; b < 5; b++)
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
    if (!o->set_decay_steps && !o->load_path)
        o->train.decay_steps = o->steps;
    if (!o->load_path && !check_sizes(o))
        return AG_EXIT_USAGE;
    return AG_CLI_GO;
}

/* ---- one run ---- */

typedef struct text_run {
    ag_text_opts *o;
    ag_gpt_file *file;           /* --load's checkpoint, until restored */
    ag_text *text;
    ag_gpt *g;
    ag_gpt_trainer *t;
    ag_csv *log;
    double loss;                 /* the last step's batch loss */
    double train_est, val_est;   /* the last estimates; NAN before the first */
    long est_step;               /* the step they were made at */
    /* for --plot: the losses, thinned to PLOT_POINTS, and the estimates */
    double *hist;                /* (3 * cap) step, loss; then the estimates' step, train, val */
    size_t n_loss, n_est, cap;
    long stride;
    int plot_failed, plot_sig;   /* the plot was not made (and the signal that stopped gnuplot) */
} text_run;

/* With --load, the checkpoint fixes the model and the seed; other training
 * settings come from it unless given. */
static int adopt_checkpoint(ag_text_opts *o, const ag_gpt_file *f)
{
    const ag_command *cmd = &text_cmd;
    const ag_gpt_config *c = ag_gpt_file_config(f);
    ag_gpt_train_config saved;
    const ag_gpt_config *m = &o->model;
    if (!ag_gpt_file_train(f, &saved, NULL)) {
        ag_cli_error(&ag_cmd_train_info, "%s holds a model but no training state (it was not "
                "saved by a training run)", o->load_path);
        return AG_EXIT_FAIL;
    }
    struct {
        int set;
        const char *flag;
        long mine, theirs;
    } fixed[] = {
        {o->set_layers, "--layers", m->layers, c->layers},
        {o->set_heads, "--heads", m->heads, c->heads},
        {o->set_dim, "--dim", m->dim, c->dim},
        {o->set_seq, "--seq", m->seq, c->seq},
        {o->set_bias, "--bias", m->bias, c->bias},
        {o->set_no_residual, "--no-residual", m->no_residual, c->no_residual},
        {o->set_no_layernorm, "--no-layernorm", m->no_layernorm, c->no_layernorm},
        {o->set_no_mlp, "--no-mlp", m->no_mlp, c->no_mlp},
        {o->set_posenc, "--posenc", m->no_posenc, c->no_posenc},
    };
    for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++) {
        if (!fixed[k].set || fixed[k].mine == fixed[k].theirs)
            continue;
        if (strncmp(fixed[k].flag, "--no-", 5) == 0 || strcmp(fixed[k].flag, "--bias") == 0)
            return ag_cli_usage_error(cmd, "%s conflicts with %s, made without it (--load fixes "
                                      "the model)", fixed[k].flag, o->load_path);
        if (strcmp(fixed[k].flag, "--posenc") == 0)
            return ag_cli_usage_error(cmd, "--posenc %s conflicts with %s, made with %s positions "
                                      "(--load fixes the model)", m->no_posenc ? "none" : "learned",
                                      o->load_path, c->no_posenc ? "no" : "learned");
        return ag_cli_usage_error(cmd, "%s %ld conflicts with %s, made with %ld (--load fixes the "
                                  "model)", fixed[k].flag, fixed[k].mine, o->load_path,
                                  fixed[k].theirs);
    }
    if (o->set_seed && o->train.seed != saved.seed)
        return ag_cli_usage_error(cmd, "--seed %llu conflicts with %s, made with %llu (--load "
                                  "fixes the seed)", (unsigned long long)o->train.seed,
                                  o->load_path, (unsigned long long)saved.seed);
    const ag_gpt_train_config given = o->train;
    double dropout = m->dropout;
    o->model = *c;
    if (o->set_dropout)
        o->model.dropout = dropout;
    o->train = saved;
#define KEEP(set, field) if (set) o->train.field = given.field;
    KEEP(o->set_batch, batch)
    KEEP(o->set_lr, lr)
    KEEP(o->set_min_lr, min_lr)
    KEEP(o->set_warmup, warmup)
    KEEP(o->set_decay_steps, decay_steps)
    KEEP(o->set_weight_decay, weight_decay)
    KEEP(o->set_clip, clip)
#undef KEEP
    return check_sizes(o) ? AG_CLI_GO : AG_EXIT_USAGE;
}

static int fail(const char *msg)
{
    ag_cli_error(&ag_cmd_train_info, "%s", msg);
    return 0;
}

/* Read the text, make (or load) the model and its trainer. */
static int setup(text_run *r, char *err, size_t errlen)
{
    ag_text_opts *o = r->o;
    const ag_vocab *vocab = r->file ? ag_gpt_file_vocab(r->file) : NULL;
    if (ag_text_load(o->text_path, vocab, &r->text, err, errlen) != AG_OK)
        return fail(err);
    o->model.vocab = ag_vocab_size(r->text->vocab);
    uint64_t logits = ag_cli_activation_values((uint64_t)o->train.batch, (uint64_t)o->model.seq,
                                               (uint64_t)o->model.vocab);
    if (logits > AG_CLI_MAX_VALUES) {
        snprintf(err, errlen, "%s has %d distinct characters: the logits of a batch would hold "
                 "%llu values (at most %llu); try a smaller --batch or --seq", o->text_path,
                 o->model.vocab, (unsigned long long)logits, (unsigned long long)AG_CLI_MAX_VALUES);
        return fail(err);
    }
    if (ag_text_check_seq(r->text, o->model.seq, err, errlen) != AG_OK) {
        ag_cli_error(&ag_cmd_train_info, "%s: %s", o->text_path, err);
        return 0;
    }
    if (r->file) {
        r->g = ag_gpt_file_model(r->file, err, errlen);
        if (r->g)
            ag_gpt_set_dropout(r->g, o->model.dropout);
    } else {
        ag_rng init = ag_rng_new(o->train.seed);
        r->g = ag_gpt_new(&o->model, &init, err, errlen);
    }
    if (!r->g)
        return fail(err);
    r->t = ag_gpt_trainer_new(r->g, r->text, &o->train, err, errlen);
    if (!r->t)
        return fail(err);
    if (r->file && ag_gpt_trainer_restore(r->t, r->file, err, errlen) != AG_OK)
        return fail(err);
    ag_gpt_file_free(r->file);
    r->file = NULL;
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
    if (r->hist && r->n_est < r->cap) {
        double *e = r->hist + 2 * r->cap + 3 * r->n_est++;
        e[0] = (double)r->est_step, e[1] = r->train_est, e[2] = r->val_est;
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
    ag_cli_gnuplot gp;
    *sig = 0;
    if (!ag_cli_gnuplot_begin(&gp, 900, 500, err, errlen))
        return 0;
    FILE *g = gp.f;
    snprintf(title, sizeof(title), "attograd train --task text: %ld steps, full validation loss %.4f",
             ag_gpt_trainer_steps(r->t), val_loss);
    fprintf(g, "set title ");
    ag_cli_gnuplot_quote(g, title);
    fprintf(g, "\nset xlabel 'step'\nset ylabel 'loss (nats per character)'\nset grid\n"
               "set key top right\nplot '-' using 1:2 with lines lc rgb '#bbbbbb' title 'batch loss', "
               "'-' using 1:2 with linespoints title 'training (estimate)', "
               "'-' using 1:3 with linespoints title 'validation (estimate)'\n");
    for (size_t i = 0; i < r->n_loss; i++)
        fprintf(g, "%.0f %.9g\n", r->hist[2 * i], r->hist[2 * i + 1]);
    for (int k = 0; k < 2; k++) {
        fprintf(g, "e\n");
        for (size_t i = 0; i < r->n_est; i++) {
            const double *e = r->hist + 2 * r->cap + 3 * i;
            fprintf(g, "%.0f %.9g %.9g\n", e[0], e[1], e[2]);
        }
    }
    fprintf(g, "e\n");
    return ag_cli_gnuplot_end(&gp, r->o->plot_path, sig, err, errlen);
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
    if (r->hist && (s - 1) % r->stride == 0 && r->n_loss < r->cap) {
        r->hist[2 * r->n_loss] = (double)s;
        r->hist[2 * r->n_loss++ + 1] = r->loss;
    }
    if (eval_now && !estimate(r, err, errlen))
        return 0;
    if (r->log) {
        double row[5] = {(double)s, r->loss, eval_now ? r->train_est : NAN,
                         eval_now ? r->val_est : NAN, ag_gpt_lr_at(ag_gpt_trainer_config(r->t), s - 1)};
        ag_csv_row(r->log, row, 5);   /* errors are sticky; ag_csv_close reports them */
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
        return 0;   /* stopped between estimates: the result's loss is this step's */
    if (ag_gpt_val_loss(r->g, r->text, &val, &windows, err, errlen) != AG_OK)
        return fail(err);
    char shown[AG_IO_SHOW_LEN];
    if (o->plot_path && r->hist) {
        if (plot(r, val, &r->plot_sig, err, errlen)) {
            if (!o->quiet)
                printf("plot: %s\n", ag_io_show(o->plot_path, shown, sizeof(shown)));
        } else {
            fail(err);   /* the log and the checkpoint still follow; the status says it */
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
            printf("saved: %s (step %ld)\n", ag_io_show(o->save_path, shown, sizeof(shown)), steps);
    }
    if (stop)
        ag_cli_error(&ag_cmd_train_info, "%s after step %ld", ag_cli_stop_reason(stop), steps);
    if (!o->quiet)
        printf("validation: %zu windows of %d characters\n", windows, o->model.seq);
    printf("result: task=text steps=%ld loss=%.6f val_loss=%.6f seconds=%.2f\n", steps,
           r->train_est, val, seconds);
    return 1;
}

int ag_cli_text_run(ag_text_opts *o)
{
    char err[AG_CLI_ERR_LEN];
    text_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.train_est = r.val_est = NAN;
    r.est_step = -1;
    int status = AG_EXIT_FAIL;
    ag_cli_stop stop_signals = {0};
    /* before any work: every output can be written, none is another file
     * of the run under another name (--save over --load resumes in place) */
    const ag_cli_file files[] = {
        {"--log", o->log_path, 1, NULL},   {"--plot", o->plot_path, 1, NULL},
        {"--save", o->save_path, 1, "--load"}, {"--load", o->load_path, 0, NULL},
        {"--text", o->text_path, 0, NULL},
    };
    int checked = ag_cli_check_files(&ag_cmd_train_info, files, sizeof(files) / sizeof(files[0]));
    if (checked != AG_EXIT_OK)
        return checked;
    if (o->load_path) {
        if (ag_gpt_file_load(o->load_path, &r.file, err, sizeof(err)) != AG_OK) {
            fail(err);
            return AG_EXIT_FAIL;
        }
        int a = adopt_checkpoint(o, r.file);
        if (a != AG_CLI_GO) {
            ag_gpt_file_free(r.file);
            return a;
        }
    }
    if (!setup(&r, err, sizeof(err)))
        goto done;
    if (o->plot_path && !ag_cli_have_program("gnuplot")) {
        fail("gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
    } else if (o->plot_path) {
        r.cap = (size_t)(o->steps < PLOT_POINTS ? o->steps : PLOT_POINTS);
        r.stride = (o->steps + (long)r.cap - 1) / (long)r.cap;
        if (!(r.hist = malloc(5 * r.cap * sizeof(double)))) {
            fail("out of memory");
            goto done;
        }
    }
    ag_set_threads(o->threads);
    /* from here on a temporary file may exist: a signal only asks the loop to stop */
    ag_cli_stop_begin(&stop_signals);
    if (o->log_path &&
        ag_csv_open(o->log_path, "step,loss,train_loss,val_loss,lr", &r.log, err, sizeof(err)) != AG_OK) {
        fail(err);
        goto done;
    }
    int tty = !o->quiet && isatty(STDOUT_FILENO);
    const ag_gpt_config *m = &o->model;
    if (!o->quiet) {
        printf("training text: %s, %zu characters (%d distinct), %zu to train, %zu to validate\n"
               "model: %d layer%s, %d head%s, dim %d, seq %d%s%s%s%s%s, %zu weights\n"
               "adamw: lr %g to %g, warmup %ld, batch %d, %d steps from step %ld\n",
               o->text_path, r.text->len, m->vocab, r.text->n_train, r.text->len - r.text->n_train,
               m->layers, m->layers == 1 ? "" : "s", m->heads, m->heads == 1 ? "" : "s", m->dim, m->seq, m->bias ? ", bias" : "",
               m->no_residual ? ", no residual" : "", m->no_layernorm ? ", no layernorm" : "",
               m->no_mlp ? ", no mlp" : "", m->no_posenc ? ", no positions" : "",
               ag_gpt_n_weights(r.g), o->train.lr, o->train.min_lr, o->train.warmup,
               o->train.batch, o->steps, ag_gpt_trainer_steps(r.t));
        fflush(stdout);
    }
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
    ag_csv_free(r.log);   /* an unfinished log is discarded, never left half-written */
    ag_cli_stop_end(&stop_signals);
    ag_gpt_file_free(r.file);
    ag_gpt_trainer_free(r.t);
    ag_gpt_free(r.g);
    ag_text_free(r.text);
    free(r.hist);
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
