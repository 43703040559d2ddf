/*
 * gpt_train.c - training a GPT on a text, as the common PyTorch recipe
 * does: random windows of the training part, AdamW (weight decay on the
 * 2-D weights only: decaying a layer norm's gain or a bias toward zero only
 * fights the normalisation), the global gradient norm clipped, and the
 * learning rate warmed up linearly, then decayed along a cosine.
 */
#include "gpt.h"

#include "../kernels/kernels.h"
#include "../kernels/threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DATA_STREAM 0xda7aULL
#define DROPOUT_STREAM 0xd209057ULL
#define ESTIMATE_STREAM 0xe571a7e5ULL

ag_gpt_train_config ag_gpt_train_defaults(void)
{
    ag_gpt_train_config c;
    memset(&c, 0, sizeof(c));
    c.batch = AG_GPT_BATCH;
    c.lr = AG_GPT_LR;
    c.min_lr = AG_GPT_MIN_LR;
    c.warmup = AG_GPT_WARMUP;
    c.decay_steps = AG_GPT_DECAY_STEPS;
    c.beta1 = 0.9;
    c.beta2 = 0.99;
    c.eps = 1e-8;
    c.weight_decay = AG_GPT_WEIGHT_DECAY;
    c.clip = AG_GPT_CLIP;
    c.seed = 1;
    return c;
}

double ag_gpt_lr_at(const ag_gpt_train_config *c, long step)
{
    if (!c)
        return 0;
    if (step < c->warmup)
        return c->lr * (double)(step + 1) / (double)(c->warmup + 1);
    long end = c->decay_steps - 1; /* the last step of the schedule runs at min_lr */
    if (step >= end)
        return c->min_lr;
    double r = (double)(step - c->warmup) / (double)(end - c->warmup);
    return c->min_lr + 0.5 * (1.0 + cos(3.14159265358979323846 * r)) * (c->lr - c->min_lr);
}

static int check_train_config(const ag_gpt_train_config *c, char *err, size_t errlen)
{
    const char *bad = NULL;
    if (c->batch < 1)
        bad = "batch must be at least 1";
    else if (!(c->lr > 0 && isfinite(c->lr)) || !(c->min_lr >= 0 && isfinite(c->min_lr)))
        bad = "learning rates must be finite, lr > 0 and min_lr >= 0";
    else if (c->min_lr > c->lr)
        bad = "min_lr is above lr: the learning rate would rise as it decays";
    else if (c->warmup < 0 || c->decay_steps < 1)
        bad = "warmup must be >= 0 and decay_steps >= 1";
    else if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1) ||
             !(c->eps > 0 && isfinite(c->eps)))
        bad = "betas must be in [0, 1) and eps > 0";
    else if (!(c->weight_decay >= 0 && isfinite(c->weight_decay)) ||
             !(c->clip >= 0 && isfinite(c->clip)))
        bad = "weight_decay and clip must be finite and >= 0";
    if (bad)
        ag_err(AG_ERR_ARG, err, errlen, "trainer: %s", bad);
    return bad == NULL;
}

/* The two parameter groups: 2-D weights decay, the rest do not. */
static int make_optimizers(ag_gpt_trainer *t)
{
    ag_gpt *g = t->g;
    size_t n = g->n_params, count[2] = {0, 0};
    ag_tensor **groups = ag_malloc(2 * n * sizeof(*groups));
    if (!groups)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int k = g->params[i]->ndim >= 2 ? 0 : 1;
        t->group[i] = k;
        t->index[i] = count[k];
        groups[k * n + count[k]++] = g->params[i];
    }
    const ag_gpt_train_config *c = &t->cfg;
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        if (count[k] == 0)
            continue;
        t->opt[k] = ag_adam_new(groups + k * n, count[k], c->lr, c->beta1, c->beta2, c->eps,
                                k == 0 ? c->weight_decay : 0);
        ok &= t->opt[k] != NULL;
    }
    free(groups);
    return ok;
}

ag_gpt_trainer *ag_gpt_trainer_new(ag_gpt *g, const ag_text *text, const ag_gpt_train_config *cfg,
                                   char *err, size_t errlen)
{
    if (!g || !text || !cfg) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: %s is NULL",
               !g      ? "the model"
               : !text ? "the text"
                       : "the configuration");
        return NULL;
    }
    if (!check_train_config(cfg, err, errlen))
        return NULL;
    if (ag_vocab_size(text->vocab) != g->cfg.vocab) {
        ag_err(AG_ERR_ARG, err, errlen,
               "trainer: the text has %d distinct characters, the model a "
               "vocabulary of %d",
               ag_vocab_size(text->vocab), g->cfg.vocab);
        return NULL;
    }
    if (ag_text_check_seq(text, g->cfg.seq, err, errlen) != AG_OK)
        return NULL;
    size_t cells;
    if (!ag_mul_size((size_t)cfg->batch, (size_t)g->cfg.seq, &cells) || cells > INT32_MAX) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: batch %d of %d positions is too large",
               cfg->batch, g->cfg.seq);
        return NULL;
    }
    ag_gpt_trainer *t = ag_calloc(1, sizeof(*t));
    if (!t) {
        ag_err(AG_ERR_NOMEM, err, errlen, "trainer: out of memory");
        return NULL;
    }
    t->g = g;
    t->text = text;
    t->cfg = *cfg;
    t->data_rng = ag_rng_new(cfg->seed ^ DATA_STREAM);
    t->dropout_rng = ag_rng_new(cfg->seed ^ DROPOUT_STREAM);
    t->tape = ag_tape_new();
    t->twin = ag_gpt_twin(g);
    t->twin_tape = ag_tape_new();
    t->group = ag_calloc(g->n_params, sizeof(*t->group));
    t->index = ag_calloc(g->n_params, sizeof(*t->index));
    t->x = ag_malloc(2 * cells * sizeof(int));
    if (!t->tape || !t->twin || !t->twin_tape || !t->group || !t->index || !t->x ||
        !make_optimizers(t)) {
        ag_gpt_trainer_free(t);
        ag_err(AG_ERR_NOMEM, err, errlen, "trainer: out of memory");
        return NULL;
    }
    t->y = t->x + cells;
    /* only the parameters' gradients are read */
    ag_tape_reuse_grads(t->tape, 1);
    ag_tape_reuse_grads(t->twin_tape, 1);
    return t;
}

void ag_gpt_trainer_free(ag_gpt_trainer *t)
{
    if (!t)
        return;
    ag_tape_free(t->tape);
    ag_tape_free(t->twin_tape);
    ag_gpt_free(t->twin);
    ag_optim_free(t->opt[0]);
    ag_optim_free(t->opt[1]);
    free(t->group);
    free(t->index);
    free(t->x);
    ag_gpt_free(t->own_g);
    ag_text_free(t->own_text);
    free(t);
}

size_t ag_gpt_trainer_peak_bytes(const ag_gpt_trainer *t)
{
    return t ? ag_tape_peak_bytes(t->tape) + ag_tape_peak_bytes(t->twin_tape) : 0;
}

long ag_gpt_trainer_steps(const ag_gpt_trainer *t)
{
    return t ? t->step : 0;
}

const ag_gpt_train_config *ag_gpt_trainer_config(const ag_gpt_trainer *t)
{
    return t ? &t->cfg : NULL;
}

/* ---- the step: the batch in two halves (gpt.h) ---- */

/* One half of the batch, through the model or its twin (gpt_twin.c): each
 * half's backward adds into its own gradients. Its tape is kept afterwards
 * (keep), or reset for the next half to use (gpt.h). */
typedef struct half {
    ag_gpt *g;
    ag_tape *tape;
    int keep;
    const int *x, *y; /* (batch, seq) */
    int batch;
    uint64_t seed;   /* of its dropout masks' stream */
    ag_tensor *loss; /* on the tape, when kept */
    double mean;     /* the half's mean loss */
    ag_status st;
} half;

static void run_half(void *ctx, size_t i)
{
    half *h = (half *)ctx + i;
    ag_rng drop = ag_rng_new(h->seed);
    h->loss = ag_gpt_loss(h->tape, h->g, h->x, h->y, h->batch, h->g->cfg.seq,
                          h->g->cfg.dropout > 0 ? &drop : NULL, NULL);
    h->st = ag_backward(h->tape, h->loss);
    if (h->st != AG_OK)
        return; /* the tape keeps the error */
    h->mean = (double)h->loss->data[0];
    if (!h->keep) {
        ag_tape_reset(h->tape);
        h->loss = NULL;
    }
}

/* The step's batch as halves (one when the batch is a single window): the
 * first through g, the second through its twin, each with its own dropout
 * stream drawn from the run's. At once, each has a tape of its own, kept;
 * one after the other, they share t->tape, reset after each. Returns how
 * many. */
static size_t split_batch(ag_gpt_trainer *t, half *hv)
{
    int B = t->cfg.batch, first = (int)ag_gpt_first_half((size_t)B);
    size_t n = ag_gpt_halves((size_t)B);
    int at_once = ag_gpt_halves_at_once(n, ag_get_threads());
    ag_gpt *model[2] = {t->g, t->twin};
    ag_tape *tape[2] = {t->tape, at_once ? t->twin_tape : t->tape};
    for (size_t i = 0; i < n; i++) {
        size_t at = i ? (size_t)first * (size_t)t->g->cfg.seq : 0;
        hv[i] = (half){.g = model[i],
                       .tape = tape[i],
                       .keep = at_once,
                       .x = t->x + at,
                       .y = t->y + at,
                       .batch = i ? B - first : first,
                       .seed = t->g->cfg.dropout > 0 ? ag_rng_next(&t->dropout_rng) : 0,
                       .st = AG_OK};
    }
    return n;
}

/* The batch's gradient from the halves': g's = wa g's + wb the twin's
 * (each half's share of the windows), the twin's zeroed for the next step.
 * Element by element, so any number of threads gives the same bits. The
 * fast kernels measure the norm in the same pass (ag_fast_grad_weigh); the
 * plain loop below is the reference kernels' (ag_reference_kernels). */
typedef struct combine_job {
    ag_tensor *const *a, *const *b;
    ag_real wa, wb;
} combine_job;

static void combine_piece(void *ctx, size_t chunk, size_t p, size_t lo, size_t hi)
{
    const combine_job *j = ctx;
    ag_real *a = j->a[p]->grad, *b = j->b[p]->grad;
    (void)chunk;
    for (size_t i = lo; i < hi; i++) {
        a[i] = j->wa * a[i] + j->wb * b[i];
        b[i] = 0;
    }
}

#define COMBINE_GRAIN 16384

/* The batch's gradient in g's from n halves, clipped; returns its norm. */
static double combine_and_clip(ag_gpt_trainer *t, const half *hv, size_t n)
{
    ag_gpt *g = t->g;
    if (n == 1)
        return ag_clip_grad_norm(g->params, g->n_params, t->cfg.clip);
    ag_real B = (ag_real)t->cfg.batch;
    combine_job j = {g->params, t->twin->params, (ag_real)hv[0].batch / B,
                     (ag_real)hv[1].batch / B};
    if (!ag_reference_kernels()) {
        double sq = ag_fast_grad_weigh(j.a, j.b, g->n_params, j.wa, j.wb);
        return ag_clip_to(g->params, g->n_params, t->cfg.clip, sqrt(sq));
    }
    ag_params_range(g->params, g->n_params, COMBINE_GRAIN, combine_piece, &j);
    return ag_clip_grad_norm(g->params, g->n_params, t->cfg.clip);
}

/* Which op made the step's loss or gradients NaN or Inf (the tape's
 * error), or AG_OK if none. Backward reused the intermediate gradients'
 * buffers, so it runs again keeping them, for the search to read. (The
 * parameters' gradients get a second share: the step is not taken.) */
static ag_status find_anomaly(ag_tape *tape, ag_tensor *loss)
{
    ag_tape_reuse_grads(tape, 0);
    ag_status st = ag_backward(tape, loss);
    ag_tape_reuse_grads(tape, 1);
    return st != AG_OK ? st : ag_tape_find_anomaly(tape);
}

/* The error of the first of n halves that failed, with the tape that
 * holds its message in *failed; AG_OK when none did. */
static ag_status first_failed(const half *hv, size_t n, ag_tape **failed)
{
    for (size_t i = 0; i < n; i++)
        if (hv[i].st != AG_OK) {
            *failed = hv[i].tape;
            return hv[i].st;
        }
    return AG_OK;
}

/* Which op made the step NaN or Inf. Halves that shared a tape (reset)
 * run again first, the same windows and masks, each on its own tape, kept
 * for the search. */
static ag_status find_anomalies(ag_gpt_trainer *t, half *hv, size_t n, double norm,
                                ag_tape **failed)
{
    if (!hv[0].keep) {
        for (size_t i = 0; i < n; i++) {
            hv[i].tape = i ? t->twin_tape : t->tape;
            hv[i].keep = 1;
            run_half(hv, i);
        }
        ag_status st = first_failed(hv, n, failed);
        if (st != AG_OK)
            return st;
    }
    for (size_t i = 0; i < n; i++) {
        ag_status st = find_anomaly(hv[i].tape, hv[i].loss);
        if (st != AG_OK) {
            *failed = hv[i].tape;
            return st;
        }
    }
    *failed = t->tape;
    return ag_tape_fail(t->tape, AG_ERR_NUMERIC, "the gradient norm is %g", norm);
}

/* The halves' forward and backward, the batch's gradient in g's, clipped:
 * the batch's mean loss in *loss and the gradients' norm in *norm, or the
 * error, with the tape that holds its message in *failed. */
static ag_status forward_backward(ag_gpt_trainer *t, double *loss, double *norm, ag_tape **failed)
{
    half hv[2];
    size_t n = split_batch(t, hv);
    ag_gpt_run_halves(n, run_half, hv);
    ag_status st = first_failed(hv, n, failed);
    if (st != AG_OK)
        return st;
    *loss = 0;
    for (size_t i = 0; i < n; i++)
        *loss += (double)hv[i].batch * hv[i].mean;
    *loss /= (double)t->cfg.batch;
    /* measures the gradients' norm, and clips them when clip > 0 */
    *norm = combine_and_clip(t, hv, n);
    if (isfinite(*loss) && isfinite(*norm))
        return AG_OK;
    return find_anomalies(t, hv, n, *norm, failed);
}

/* Each parameter's AdamW update: 0, or the error of one left NaN or Inf. */
static ag_status update(ag_gpt_trainer *t, double lr, double norm, char *err, size_t errlen)
{
    ag_gpt *g = t->g;
    int finite = 1;
    for (int k = 0; k < 2; k++)
        if (t->opt[k]) {
            ag_optim_step(t->opt[k]);
            finite &= ag_optim_left_finite(t->opt[k]);
        }
    size_t elem;
    long bad = finite ? -1 : ag_first_nonfinite_param(g->params, g->n_params, &elem);
    if (bad < 0)
        return AG_OK;
    ag_real v = g->params[bad]->data[elem];
    return ag_err(AG_ERR_NUMERIC, err, errlen,
                  "step %ld: the AdamW update (lr %g) made parameter '%s' %s at element %zu (the "
                  "gradient norm was %g)",
                  t->step + 1, lr, g->names[bad], isnan(v) ? "NaN" : "Inf", elem, norm);
}

ag_status ag_gpt_trainer_step(ag_gpt_trainer *t, double *loss, char *err, size_t errlen)
{
    if (!t) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: NULL");
        return AG_ERR_ARG;
    }
    ag_gpt *g = t->g;
    if (t->step >= AG_TRAIN_MAX_STEP)
        return ag_err(AG_ERR_ARG, err, errlen,
                      "step %ld: a run stops at %ld steps, the most a checkpoint holds",
                      t->step + 1, AG_TRAIN_MAX_STEP);
    /* a step that fails (stopped, or NaN) leaves the run as it was, its
     * streams too: saved, it resumes with the very same step */
    ag_rng data = t->data_rng, dropout = t->dropout_rng;
    ag_text_batch(t->text, AG_SPLIT_TRAIN, t->cfg.batch, g->cfg.seq, &t->data_rng, t->x, t->y);
    double lr = ag_gpt_lr_at(&t->cfg, t->step), l = 0, norm = 0;
    for (int k = 0; k < 2; k++)
        if (t->opt[k])
            ag_optim_set_lr(t->opt[k], lr);
    ag_zero_grad(g->params, g->n_params);
    ag_gpt_twin_sync(t->twin, g);
    ag_tape *failed = NULL;
    ag_status st = forward_backward(t, &l, &norm, &failed);
    if (st != AG_OK) {
        ag_err(AG_ERR_ARG, err, errlen, "step %ld: %s", t->step + 1, ag_tape_error(failed));
        ag_tape_reset(t->tape);
        ag_tape_reset(t->twin_tape);
        ag_zero_grad(t->twin->params, t->twin->n_params); /* for the next try */
        t->data_rng = data, t->dropout_rng = dropout;
        return st;
    }
    if (loss)
        *loss = l;
    ag_tape_reset(t->tape);
    ag_tape_reset(t->twin_tape);
    st = update(t, lr, norm, err, errlen);
    if (st == AG_OK)
        t->step++;
    return st;
}

ag_status ag_gpt_trainer_estimate(ag_gpt_trainer *t, int split, int iters, double *loss, char *err,
                                  size_t errlen)
{
    if (!t || !loss || iters < 1 || (split != AG_SPLIT_TRAIN && split != AG_SPLIT_VAL)) {
        ag_err(AG_ERR_ARG, err, errlen, "estimate: bad arguments");
        return AG_ERR_ARG;
    }
    int B = t->cfg.batch, T = t->g->cfg.seq;
    ag_rng rng = ag_rng_new(t->cfg.seed ^ ESTIMATE_STREAM ^ (uint64_t)split);
    double sum = 0;
    ag_status st = AG_OK;
    ag_gpt_grads_off(t->g);
    for (int i = 0; i < iters && st == AG_OK; i++) {
        ag_text_batch(t->text, split, B, T, &rng, t->x, t->y);
        st = ag_gpt_eval_batch(t->tape, t->g, t->x, t->y, B, T, &sum, err, errlen);
    }
    ag_gpt_grads_on(t->g);
    if (st == AG_OK)
        *loss = sum / ((double)iters * (double)B * (double)T);
    return st;
}
