/*
 * glue.c - what the page calls in the library directly, beside the
 * command's main(): the seed example on any vectors, and training runs
 * taken a few steps at a time (a toy task's, drawn on the page while it
 * learns; a GPT's, in the page's Worker), so that the page can show the
 * loss and the attention as they change and stop between any two steps.
 * Compiled only into the WebAssembly module (make web); every agw_
 * function is exported to JavaScript as _agw_... (web.mk).
 *
 * A run is set up by the command's own parser from the command's own flags
 * (ag_cli_train_parse, ag_cli_text_parse), and steps, evaluates and reports
 * as `attograd train` does: the same flags and seed give the same numbers,
 * and the result line is the command's, without its seconds. Messages go
 * to stderr as the command words them.
 */
#include "../src/cli/opts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGW_MAX_ARGS 64

/* The page reads and writes ag_real through Float32Array views. */
_Static_assert(sizeof(ag_real) == 4, "the web build is the float build");

/* Split args (one flag or value per line) into argv after "train"; args
 * is modified. Returns argc, or -1 after saying so when there are more
 * than AGW_MAX_ARGS - 1. */
static int split_args(char *args, char **argv)
{
    int argc = 1;
    argv[0] = "train";
    for (char *s = args; *s;) {
        if (argc == AGW_MAX_ARGS) {
            ag_cli_usage_error(&ag_cmd_train_info, "more than %d arguments", AGW_MAX_ARGS - 1);
            return -1;
        }
        argv[argc++] = s;
        s += strcspn(s, "\n");
        if (*s)
            *s++ = '\0';
    }
    argv[argc] = NULL;
    return argc;
}

/* ---- the seed example: weights = softmax(x x^T / sqrt(d)), out = weights x ---- */

/* x (n, d) -> weights (n, n) and out (n, d), with the ops `attograd demo`
 * records (Q = K = V = x). Returns 0, or 1 after writing the tape's message
 * into err (errlen bytes). */
int agw_seed(int n, int d, const ag_real *x, ag_real *weights, ag_real *out, char *err, int errlen)
{
    ag_tape *tape = ag_tape_new();
    if (!tape) {
        snprintf(err, (size_t)errlen, "out of memory");
        return 1;
    }
    ag_tensor *xt = ag_tensor_from(tape, 2, (int[]){n, d}, x);
    ag_tensor *scores = ag_scale(tape, ag_matmul_bt(tape, xt, xt), 1 / sqrt((double)d));
    ag_tensor *w = ag_softmax(tape, scores);
    ag_tensor *o = ag_matmul(tape, w, xt);
    int failed = o == NULL;
    if (failed) {
        snprintf(err, (size_t)errlen, "%s", ag_tape_error(tape));
    } else {
        memcpy(weights, w->data, w->size * sizeof(ag_real));
        memcpy(out, o->data, o->size * sizeof(ag_real));
    }
    ag_tape_free(tape);
    return failed;
}

/* ---- a toy training run, a few steps at a time ---- */

typedef struct agw_train {
    ag_train_opts o;
    ag_trainer *t;
    char *args;            /* the flags' bytes, which o's strings point into */
    long done;             /* steps done of o.steps */
    double loss;           /* the last step's batch loss */
    double eval_loss, acc; /* the last held-out evaluation */
    ag_real *attn;         /* (H, T, T): held-out example 0's attention */
    int *answer, *want;    /* (T * answers): what the model answers there, and the truth */
    char label[32];
    char line[256];
} agw_train;

static void train_error(const char *err)
{
    ag_cli_error(&ag_cmd_train_info, "%s", err);
}

/* A run for the command's flags, args: one per line ("--task\nlookup2\n
 * --heads\n1"), as `attograd train` takes them; it evaluates the held-out
 * set once before the first step, as the command does. NULL after a usage
 * error or a failure, said on stderr as the command says it. */
agw_train *agw_train_new(const char *args)
{
    agw_train *r = calloc(1, sizeof(*r));
    char *argv[AGW_MAX_ARGS + 1];
    if (!r || !(r->args = malloc(strlen(args) + 1))) {
        free(r);
        train_error("out of memory");
        return NULL;
    }
    strcpy(r->args, args);
    int argc = split_args(r->args, argv);
    int status = argc < 0 ? AG_EXIT_USAGE : ag_cli_train_parse(argc, argv, &r->o);
    if (status == AG_CLI_GO && (r->o.load_path || ag_cli_is_text_task(argc, argv)))
        status =
            ag_cli_usage_error(&ag_cmd_train_info, "the page trains toy tasks from fresh weights");
    char err[AG_CLI_ERR_LEN];
    const ag_model_config *m = &r->o.config.model;
    if (status == AG_CLI_GO) {
        r->t = ag_trainer_new(&r->o.config, NULL, NULL, err, sizeof(err));
        if (!r->t)
            train_error(err);
    }
    size_t tt = (size_t)m->seq * (size_t)m->seq, answers = (size_t)ag_task_answers(m->task);
    if (r->t) {
        r->attn = malloc((size_t)m->heads * tt * sizeof(ag_real));
        r->answer = malloc((size_t)m->seq * answers * sizeof(int));
        r->want = malloc((size_t)m->seq * answers * sizeof(int));
        if (!r->attn || !r->answer || !r->want)
            train_error("out of memory");
        else if (ag_trainer_evaluate(r->t, &r->eval_loss, &r->acc, err, sizeof(err)) != AG_OK)
            train_error(err);
        else
            return r;
    }
    ag_trainer_free(r->t);
    free(r->attn);
    free(r->answer);
    free(r->want);
    free(r->args);
    free(r);
    return NULL;
}

void agw_train_free(agw_train *r)
{
    if (!r)
        return;
    ag_trainer_free(r->t);
    free(r->attn);
    free(r->answer);
    free(r->want);
    free(r->args);
    free(r);
}

/* Up to n more steps (never past --steps), each followed by the held-out
 * evaluation when the command would make one: every --eval-every steps and
 * after the last. Returns the steps taken, or -1 after saying why on stderr
 * (a NaN or Inf names the step and the op, as the command does). */
int agw_train_steps(agw_train *r, int n)
{
    char err[AG_CLI_ERR_LEN];
    int taken = 0;
    while (taken < n && r->done < r->o.steps) {
        ag_status st = ag_trainer_step(r->t, &r->loss, err, sizeof(err));
        if (st == AG_OK) {
            r->done++;
            taken++;
            long step = ag_trainer_steps(r->t);
            if (step % r->o.eval_every == 0 || r->done == r->o.steps)
                st = ag_trainer_evaluate(r->t, &r->eval_loss, &r->acc, err, sizeof(err));
        }
        if (st != AG_OK) {
            train_error(err);
            if (st == AG_ERR_NUMERIC)
                train_error("stopped; try a smaller --lr or --clip (nothing was saved)");
            return -1;
        }
    }
    return taken;
}

/* The held-out evaluation now (after a stop between two of the command's).
 * Returns 0, or -1 after saying why. */
int agw_train_evaluate(agw_train *r)
{
    char err[AG_CLI_ERR_LEN];
    if (ag_trainer_evaluate(r->t, &r->eval_loss, &r->acc, err, sizeof(err)) != AG_OK) {
        train_error(err);
        return -1;
    }
    return 0;
}

long agw_train_done(const agw_train *r)
{
    return r->done;
}
long agw_train_total(const agw_train *r)
{
    return r->o.steps;
}
double agw_train_loss(const agw_train *r)
{
    return r->loss;
}
double agw_train_eval_loss(const agw_train *r)
{
    return r->eval_loss;
}
double agw_train_accuracy(const agw_train *r)
{
    return r->acc;
}
int agw_train_eval_every(const agw_train *r)
{
    return r->o.eval_every;
}
int agw_train_heads(const agw_train *r)
{
    return r->o.config.model.heads;
}
int agw_train_seq(const agw_train *r)
{
    return r->o.config.model.seq;
}
int agw_train_answers(const agw_train *r)
{
    return ag_task_answers(r->o.config.model.task);
}

/* Held-out example 0 run now: its attention (H, T, T) into the run's
 * buffer, and what the model answers at each position. Returns the buffer,
 * or NULL after saying why. */
const ag_real *agw_train_example(agw_train *r)
{
    const ag_tensor *logits, *attn;
    char err[AG_CLI_ERR_LEN];
    if (ag_trainer_example(r->t, &logits, &attn, err, sizeof(err)) != AG_OK) {
        train_error(err);
        return NULL;
    }
    memcpy(r->attn, attn->data, attn->size * sizeof(ag_real));
    const ag_batch *b = ag_trainer_held_out(r->t);
    int A = b->answers;
    for (int t = 0; t < b->seq; t++)
        for (int a = 0; a < A; a++) {
            r->want[t * A + a] = b->targets[t * A + a];
            r->answer[t * A + a] =
                b->targets[t * A + a] < 0 ? -1 : ag_model_answer(b, logits, 0, t, a);
        }
    return r->attn;
}

/* After agw_train_example: answer a at position t, the model's and the
 * truth's class (-1 where nothing is asked). */
int agw_train_answer(const agw_train *r, int t, int a)
{
    return r->answer[t * agw_train_answers(r) + a];
}
int agw_train_want(const agw_train *r, int t, int a)
{
    return r->want[t * agw_train_answers(r) + a];
}

/* Position t of held-out example 0, as the command's heatmap names it ("k3:v5"). */
const char *agw_train_token(agw_train *r, int t)
{
    return ag_task_token_label(ag_trainer_held_out(r->t), 0, t, r->label, sizeof(r->label));
}

/* Class c as the command names it ("v5"). */
const char *agw_train_class(agw_train *r, int c)
{
    return ag_task_class_label(r->o.config.model.task, c, r->label, sizeof(r->label));
}

/* The command's result line for the steps done so far, without seconds=. */
const char *agw_train_result(agw_train *r)
{
    snprintf(r->line, sizeof(r->line), "result: task=%s steps=%ld loss=%.6f accuracy=%.4f",
             ag_task_name(r->o.config.model.task), ag_trainer_steps(r->t), r->eval_loss, r->acc);
    return r->line;
}

/* ---- a GPT trained on a text, a few steps at a time ---- */

typedef struct agw_gpt {
    ag_text_opts o;
    ag_gpt_trainer *t; /* owns the text and the model */
    char *args;
    long done;                 /* steps done of o.steps in this run */
    double loss;               /* the last step's batch loss */
    double train_est, val_est; /* the last estimates */
    long est_step;             /* the step they were made at (-1: none yet) */
    double val_loss;           /* the full validation loss, after agw_gpt_val_loss */
    size_t windows;
    char line[256];
} agw_gpt;

static void text_error(const char *err)
{
    ag_cli_error(&ag_cmd_train_info, "%s", err);
}

void agw_gpt_free(agw_gpt *r)
{
    if (!r)
        return;
    ag_gpt_trainer_free(r->t);
    free(r->args);
    free(r);
}

/* A run of `attograd train --task text` for args (one flag or value per
 * line, e.g. "--text\nplay.txt\n--layers\n2"). With --load FILE it
 * continues that checkpoint's run with the checkpoint's own settings (the
 * model flags, the seed and the training flags are then the file's), on
 * the text of --text. NULL after a usage error or a failure, said on stderr
 * as the command says it. */
agw_gpt *agw_gpt_new(const char *args)
{
    agw_gpt *r = calloc(1, sizeof(*r));
    char *argv[AGW_MAX_ARGS + 1];
    char err[AG_CLI_ERR_LEN];
    if (!r || !(r->args = malloc(strlen(args) + 1))) {
        free(r);
        text_error("out of memory");
        return NULL;
    }
    strcpy(r->args, args);
    int argc = split_args(r->args, argv);
    r->est_step = -1;
    if (argc < 0 || ag_cli_text_parse(argc, argv, &r->o) != AG_CLI_GO) {
        agw_gpt_free(r);
        return NULL;
    }
    ag_gpt_file *f = NULL;
    ag_gpt_train_config train = r->o.train;
    if (r->o.load_path) {
        if (ag_gpt_file_load(r->o.load_path, &f, err, sizeof(err)) != AG_OK) {
            text_error(err);
        } else if (!ag_gpt_file_train(f, &train, NULL)) {
            snprintf(err, sizeof(err),
                     "%s holds a model but no training state (it was not saved by a "
                     "training run)",
                     r->o.load_path);
            text_error(err);
        } else {
            r->o.model = *ag_gpt_file_config(f);
            r->o.train = train;
            r->t = ag_gpt_trainer_open(r->o.text_path, &r->o.model, &train, f, err, sizeof(err));
            if (!r->t)
                text_error(err);
        }
    } else {
        r->t = ag_gpt_trainer_open(r->o.text_path, &r->o.model, &train, NULL, err, sizeof(err));
        if (!r->t)
            text_error(err);
    }
    ag_gpt_file_free(f);
    if (!r->t) {
        agw_gpt_free(r);
        return NULL;
    }
    r->o.model = *ag_gpt_get_config(ag_gpt_trainer_model(r->t));
    return r;
}

/* The estimates of both losses now (--eval-iters batches of each part). */
int agw_gpt_estimate(agw_gpt *r)
{
    char err[AG_CLI_ERR_LEN];
    if (ag_gpt_trainer_estimate(r->t, AG_SPLIT_TRAIN, r->o.eval_iters, &r->train_est, err,
                                sizeof(err)) != AG_OK ||
        ag_gpt_trainer_estimate(r->t, AG_SPLIT_VAL, r->o.eval_iters, &r->val_est, err,
                                sizeof(err)) != AG_OK) {
        text_error(err);
        return -1;
    }
    r->est_step = ag_gpt_trainer_steps(r->t);
    return 0;
}

/* Up to n more steps (never past --steps), each followed by the estimates
 * when the command makes them: every --eval-every steps and after the
 * last. Returns the steps taken, or -1 after saying why on stderr. */
int agw_gpt_steps(agw_gpt *r, int n)
{
    char err[AG_CLI_ERR_LEN];
    int taken = 0;
    while (taken < n && r->done < r->o.steps) {
        ag_status st = ag_gpt_trainer_step(r->t, &r->loss, err, sizeof(err));
        if (st != AG_OK) {
            text_error(err);
            if (st == AG_ERR_NUMERIC)
                text_error("stopped; try a smaller --lr or --clip (nothing was saved)");
            return -1;
        }
        r->done++;
        taken++;
        long s = ag_gpt_trainer_steps(r->t);
        if ((s % r->o.eval_every == 0 || r->done == r->o.steps) && agw_gpt_estimate(r) != 0)
            return -1;
    }
    return taken;
}

/* The end of a run, as the command ends it: the estimates at this step
 * (unless made already) and the full validation loss. Returns 0 or -1. */
int agw_gpt_finish(agw_gpt *r)
{
    char err[AG_CLI_ERR_LEN];
    if (r->est_step != ag_gpt_trainer_steps(r->t) && agw_gpt_estimate(r) != 0)
        return -1;
    if (ag_gpt_trainer_val_loss(r->t, &r->val_loss, &r->windows, err, sizeof(err)) != AG_OK) {
        text_error(err);
        return -1;
    }
    return 0;
}

/* The run as a checkpoint at path, as `--save` writes it. Returns 0 or -1. */
int agw_gpt_save(agw_gpt *r, const char *path)
{
    char err[AG_CLI_ERR_LEN];
    if (ag_gpt_trainer_save(r->t, path, err, sizeof(err)) != AG_OK) {
        text_error(err);
        return -1;
    }
    return 0;
}

long agw_gpt_done(const agw_gpt *r)
{
    return r->done;
}
long agw_gpt_total(const agw_gpt *r)
{
    return r->o.steps;
}
long agw_gpt_step(const agw_gpt *r)
{
    return ag_gpt_trainer_steps(r->t);
}
double agw_gpt_loss(const agw_gpt *r)
{
    return r->loss;
}
double agw_gpt_train_est(const agw_gpt *r)
{
    return r->train_est;
}
double agw_gpt_val_est(const agw_gpt *r)
{
    return r->val_est;
}
long agw_gpt_est_step(const agw_gpt *r)
{
    return r->est_step;
}
double agw_gpt_lr(const agw_gpt *r)
{
    long s = ag_gpt_trainer_steps(r->t);
    return ag_gpt_lr_at(ag_gpt_trainer_config(r->t), s > 0 ? s - 1 : 0);
}

/* What the command prints before its first step: the text, the model, the
 * schedule (three lines). */
const char *agw_gpt_header(agw_gpt *r)
{
    const ag_text *text = ag_gpt_trainer_text(r->t);
    const ag_gpt_config *m = &r->o.model;
    const ag_gpt_train_config *c = ag_gpt_trainer_config(r->t);
    snprintf(r->line, sizeof(r->line),
             "%zu characters (%d distinct), %zu to train, %zu to validate\n"
             "model: %d layer%s, %d head%s, dim %d, seq %d, %zu weights\n"
             "adamw: lr %g to %g, warmup %ld, batch %d, %d steps from step %ld",
             text->len, m->vocab, text->n_train, text->len - text->n_train, m->layers,
             m->layers == 1 ? "" : "s", m->heads, m->heads == 1 ? "" : "s", m->dim, m->seq,
             ag_gpt_n_weights(ag_gpt_trainer_model(r->t)), c->lr, c->min_lr, c->warmup, c->batch,
             r->o.steps, ag_gpt_trainer_steps(r->t) - r->done);
    return r->line;
}

/* The command's result line (after agw_gpt_finish), without seconds=. */
const char *agw_gpt_result(agw_gpt *r)
{
    snprintf(r->line, sizeof(r->line), "result: task=text steps=%ld loss=%.6f val_loss=%.6f",
             ag_gpt_trainer_steps(r->t), r->train_est, r->val_loss);
    return r->line;
}
