/*
 * trainer.c - a whole training run of the toy model, as `attograd train`
 * runs it and as a program can: the model, its optimizer, one tape, a fresh
 * batch per step from the data stream, a fixed held-out set from a stream of
 * its own, and checkpoints. A step stops at the first NaN or Inf, naming
 * the op that made it (or the parameter an update broke). The caller keeps
 * only its own reporting: progress, logs, plots.
 */
#include "nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 8
/* The run's streams, each derived from its seed: the weights take the seed
 * itself, the training batches and the held-out set one each. */
#define DATA_STREAM 0xda7aULL
#define EVAL_STREAM 0x5ca1ab1e0ddba11ULL

struct ag_trainer {
    ag_train_config cfg;
    ag_model *model;
    ag_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    size_t n_params;
    ag_optim *opt;
    ag_tape *tape;
    ag_batch *train, *eval; /* a fresh training batch per step; one fixed held-out set */
    ag_rng data_rng;        /* the training stream */
    long step;              /* steps done, including those of a checkpoint */
};

/* Continue ck's run: its weights, optimizer state, step and data stream. */
static int resume(ag_trainer *t, const ag_checkpoint *ck, const ag_train_state *st, char *err,
                  size_t errlen)
{
    if (!st) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: a checkpoint without its ag_train_state");
        return 0;
    }
    if (st->step < 0 || st->step > AG_TRAIN_MAX_STEP) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: step %ld is out of range", st->step);
        return 0;
    }
    if (ag_checkpoint_restore(ck, t->model, t->opt, err, errlen) != AG_OK)
        return 0;
    t->data_rng.state = st->data_rng;
    t->step = st->step;
    return 1;
}

ag_trainer *ag_trainer_new(const ag_train_config *cfg, const ag_checkpoint *ck,
                           const ag_train_state *st, char *err, size_t errlen)
{
    if (!cfg) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: the configuration is NULL");
        return NULL;
    }
    if (!ag_train_config_check(cfg, err, errlen))
        return NULL;
    ag_trainer *t = ag_calloc(1, sizeof(*t));
    if (!t) {
        ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
        return NULL;
    }
    t->cfg = *cfg;
    ag_rng init = ag_rng_new(cfg->seed), eval_rng = ag_rng_new(cfg->seed ^ EVAL_STREAM);
    t->data_rng = ag_rng_new(cfg->seed ^ DATA_STREAM);
    /* from a checkpoint the weights are its own: no need to draw them */
    t->model = ag_model_new(&cfg->model, ck ? NULL : &init, err, errlen);
    if (!t->model) {
        free(t);
        return NULL;
    }
    t->n_params = ag_model_params(t->model, t->params, t->names, MAX_PARAMS);
    t->opt = ag_train_optim_new(cfg, t->params, t->n_params);
    t->tape = ag_tape_new();
    t->train = ag_batch_new(cfg->model.task, cfg->batch, cfg->model.seq);
    t->eval = ag_batch_new(cfg->model.task, AG_TRAINER_HELD_OUT, cfg->model.seq);
    if (!t->opt || !t->tape || !t->train || !t->eval) {
        ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
        ag_trainer_free(t);
        return NULL;
    }
    if (ck && !resume(t, ck, st, err, errlen)) {
        ag_trainer_free(t);
        return NULL;
    }
    ag_task_sample(t->eval, &eval_rng);
    return t;
}

void ag_trainer_free(ag_trainer *t)
{
    if (!t)
        return;
    ag_batch_free(t->train);
    ag_batch_free(t->eval);
    ag_tape_free(t->tape);
    ag_optim_free(t->opt);
    ag_model_free(t->model);
    free(t);
}

/* A failed step or evaluation: the tape's message (for NaN or Inf it names
 * the first op that made one) after where it happened. */
static ag_status tape_failure(ag_trainer *t, ag_status st, long step, const char *where, char *err,
                              size_t errlen)
{
    ag_err(AG_ERR_ARG, err, errlen, "step %ld%s: %s", step, where, ag_tape_error(t->tape));
    ag_tape_reset(t->tape);
    return st;
}

ag_status ag_trainer_step(ag_trainer *t, double *loss, char *err, size_t errlen)
{
    if (!t)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_trainer_step: the trainer is NULL");
    if (t->step >= AG_TRAIN_MAX_STEP)
        return ag_err(AG_ERR_ARG, err, errlen,
                      "step %ld: a run stops at %ld steps, the most a checkpoint holds",
                      t->step + 1, AG_TRAIN_MAX_STEP);
    ag_tape_reset(t->tape); /* an example's tensors may still be on it */
    /* a step that fails (stopped, or NaN) leaves the stream as it was */
    ag_rng data = t->data_rng;
    ag_task_sample(t->train, &t->data_rng);
    ag_zero_grad(t->params, t->n_params);
    ag_tensor *l = ag_model_forward(t->tape, t->model, t->train, NULL, NULL);
    ag_status st = ag_backward(t->tape, l);
    /* measures the gradients' norm, and clips them when clip is on */
    double norm = st == AG_OK ? ag_clip_grad_norm(t->params, t->n_params, t->cfg.clip) : 0;
    if (st == AG_OK && (!isfinite(l->data[0]) || !isfinite(norm)))
        st = ag_tape_find_anomaly(t->tape);
    if (st != AG_OK) {
        t->data_rng = data;
        return tape_failure(t, st, t->step + 1, "", err, errlen);
    }
    if (loss)
        *loss = l->data[0];
    ag_tape_reset(t->tape);
    ag_optim_step(t->opt);
    size_t elem;
    long bad =
        ag_optim_left_finite(t->opt) ? -1 : ag_first_nonfinite_param(t->params, t->n_params, &elem);
    if (bad >= 0) {
        double v = t->params[bad]->data[elem];
        ag_err(AG_ERR_ARG, err, errlen,
               "step %ld: the %s update (lr %g) made parameter '%s' %s at element %zu "
               "(the gradient norm was %g)",
               t->step + 1, ag_optim_name(t->opt), t->cfg.lr, t->names[bad],
               isnan(v) ? "NaN" : "Inf", elem, norm);
        return AG_ERR_NUMERIC;
    }
    t->step++;
    return AG_OK;
}

ag_status ag_trainer_evaluate(ag_trainer *t, double *loss, double *accuracy, char *err,
                              size_t errlen)
{
    if (!t)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_trainer_evaluate: the trainer is NULL");
    ag_tensor *logits;
    ag_tape_reset(t->tape);
    ag_tensor *l = ag_model_forward(t->tape, t->model, t->eval, &logits, NULL);
    ag_status st = ag_tape_status(t->tape);
    if (st == AG_OK && !isfinite(l->data[0]))
        st = ag_tape_find_anomaly(t->tape);
    if (st != AG_OK)
        return tape_failure(t, st, t->step, " (held-out evaluation)", err, errlen);
    long correct = 0, total = 0;
    ag_model_score(t->eval, logits, &correct, &total);
    if (loss)
        *loss = l->data[0];
    if (accuracy)
        *accuracy = total ? (double)correct / (double)total : 0;
    ag_tape_reset(t->tape);
    return AG_OK;
}

ag_status ag_trainer_example(ag_trainer *t, const ag_tensor **logits, const ag_tensor **attn,
                             char *err, size_t errlen)
{
    if (!t)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_trainer_example: the trainer is NULL");
    ag_tensor *z = NULL, *a = NULL;
    ag_batch first = *t->eval;
    first.batch = 1;
    ag_tape_reset(t->tape);
    ag_model_forward(t->tape, t->model, &first, &z, &a);
    ag_status st = ag_tape_status(t->tape);
    if (st != AG_OK)
        return tape_failure(t, st, t->step, " (held-out evaluation)", err, errlen);
    if (logits)
        *logits = z;
    if (attn)
        *attn = a;
    return AG_OK;
}

ag_status ag_trainer_save(ag_trainer *t, const char *path, char *err, size_t errlen)
{
    if (!t)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_trainer_save: the trainer is NULL");
    ag_train_state st;
    memset(&st, 0, sizeof(st));
    st.config = t->cfg;
    st.data_rng = t->data_rng.state;
    st.step = t->step;
    return ag_checkpoint_save(path, t->model, t->opt, &st, err, errlen);
}

long ag_trainer_steps(const ag_trainer *t)
{
    return t ? t->step : 0;
}

const ag_train_config *ag_trainer_config(const ag_trainer *t)
{
    return t ? &t->cfg : NULL;
}

ag_model *ag_trainer_model(ag_trainer *t)
{
    return t->model;
}

ag_tape *ag_trainer_tape(ag_trainer *t)
{
    return t->tape;
}

const ag_batch *ag_trainer_held_out(const ag_trainer *t)
{
    return t->eval;
}
