/*
 * checkpoint.c - save and resume a training run as one safetensors file:
 * the model's parameters under their own names, the optimizer's state as
 * "optim.<param>.<slot>", and everything else a run needs to continue
 * exactly (configuration, step, the data stream's position) as metadata.
 * It sits with the models it saves, above the file layer it writes
 * through. Metadata is read as hostile input through src/io/meta.c: every
 * value parsed strictly, within the range the settings allow.
 */
#include "ckpt.h"
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKPOINT_FORMAT "attograd-checkpoint"
#define CHECKPOINT_VERSION "1"
#define MAX_PARAMS AG_MODEL_MAX_PARAMS

struct ag_checkpoint {
    ag_ckpt ck;             /* the file and its name */
    ag_train_config config; /* the file's own settings */
    long optim_steps;
};

ag_optim *ag_train_optim_new(const ag_train_config *c, ag_tensor *const *params, size_t n)
{
    if (!c)
        return NULL;
    if (c->optimizer_adam)
        return ag_adam_new(params, n, c->lr, 0.9, 0.999, 1e-8, c->weight_decay);
    return ag_sgd_new(params, n, c->lr, c->momentum);
}

/* ---- reading ---- */

/* A word in the metadata that is not one we know: "path: " and fmt with
 * the word quoted for %s. Returns 0. */
static int bad_word(const ag_checkpoint *ck, const char *fmt, const char *word, char *err,
                    size_t errlen)
{
    char q[AG_QUOTE_LEN], msg[160];
    snprintf(msg, sizeof(msg), fmt, ag_quote(word, q, sizeof(q)));
    return ag_ckpt_fail(&ck->ck, err, errlen, "%s", msg);
}

/* The words: task, posenc and optimizer (format and version are ag_ckpt_open's). */
static int read_words(const ag_checkpoint *ck, ag_train_config *c, char *err, size_t errlen)
{
    const ag_st_file *f = ck->ck.st;
    const char *p = ck->ck.path, *s;
    if (!ag_meta_str(f, p, "task", &s, err, errlen))
        return 0;
    if (!ag_task_parse(s, &c->model.task))
        return bad_word(ck, "metadata task '%s' is unknown", s, err, errlen);
    if (!ag_meta_str(f, p, "posenc", &s, err, errlen))
        return 0;
    if (!ag_posenc_parse(s, &c->model.posenc))
        return bad_word(ck, "metadata posenc '%s' is unknown", s, err, errlen);
    if (!ag_meta_str(f, p, "optimizer", &s, err, errlen))
        return 0;
    if (strcmp(s, "adam") != 0 && strcmp(s, "sgd") != 0)
        return bad_word(ck, "metadata optimizer '%s' is unknown", s, err, errlen);
    c->optimizer_adam = strcmp(s, "adam") == 0;
    return 1;
}

/* The numbers, each within the range the settings allow; then together
 * they must make a model. */
static int read_numbers(ag_checkpoint *ck, ag_train_state *st, char *err, size_t errlen)
{
    ag_train_config *c = &st->config;
    const ag_st_file *f = ck->ck.st;
    const char *p = ck->ck.path;
    long causal;
    if (!ag_meta_int(f, p, "seq", 1, AG_TRAIN_MAX_SIZE, &c->model.seq, err, errlen) ||
        !ag_meta_int(f, p, "dim", 1, AG_TRAIN_MAX_SIZE, &c->model.dim, err, errlen) ||
        !ag_meta_int(f, p, "heads", 1, AG_TRAIN_MAX_SIZE, &c->model.heads, err, errlen) ||
        !ag_meta_long(f, p, "causal", 0, 1, &causal, err, errlen) ||
        !ag_meta_int(f, p, "batch", 1, AG_TRAIN_MAX_BATCH, &c->batch, err, errlen) ||
        !ag_meta_double(f, p, "lr", AG_TRAIN_LR_MIN, AG_TRAIN_LR_MAX, &c->lr, err, errlen) ||
        !ag_meta_double(f, p, "momentum", 0, AG_TRAIN_MOMENTUM_MAX, &c->momentum, err, errlen) ||
        !ag_meta_double(f, p, "weight_decay", 0, AG_TRAIN_WEIGHT_DECAY_MAX, &c->weight_decay, err,
                        errlen) ||
        !ag_meta_double(f, p, "clip", 0, AG_TRAIN_CLIP_MAX, &c->clip, err, errlen) ||
        !ag_meta_u64(f, p, "seed", &c->seed, err, errlen) ||
        !ag_meta_u64(f, p, "data_rng", &st->data_rng, err, errlen) ||
        !ag_ckpt_counts_read(&ck->ck, &st->step, &st->optim_steps, err, errlen))
        return 0;
    c->model.causal = (int)causal;
    ck->optim_steps = st->optim_steps;
    char why[160];
    if (ag_model_config_check(&c->model, why, sizeof(why)) != AG_MODEL_OK)
        return ag_ckpt_fail(&ck->ck, err, errlen, "metadata %s", why);
    return 1;
}

/* The optimizer's state buffers per parameter for c: Adam's m and v, SGD's
 * velocity when it has momentum (ag_adam_new's, ag_sgd_new's slots). */
static int slot_names(const ag_train_config *c, const char **names)
{
    if (c->optimizer_adam)
        return names[0] = "m", names[1] = "v", 2;
    if (c->momentum > 0)
        return names[0] = "velocity", 1;
    return 0;
}

/* The tensors the settings call for, each with its shape, and no other:
 * from the header, before a model is made for them. */
static ag_status check_tensors(const ag_checkpoint *ck, char *err, size_t errlen)
{
    const ag_model_config *m = &ck->config.model;
    const char *names[AG_MODEL_MAX_PARAMS], *slots[2];
    int shape[AG_MODEL_MAX_PARAMS][2];
    char need[2][64], fix[96];
    size_t n = ag_model_layout(m, names, shape);
    int n_slots = slot_names(&ck->config, slots);
    snprintf(need[0], sizeof(need[0]), "task %s, posenc %s", ag_task_name(m->task),
             ag_posenc_kind_name(m->posenc));
    snprintf(need[1], sizeof(need[1]), "optimizer %s%s", ck->config.optimizer_adam ? "adam" : "sgd",
             ck->config.optimizer_adam ? "" : " with momentum");
    snprintf(fix, sizeof(fix), "task %s, seq %d, dim %d", ag_task_name(m->task), m->seq, m->dim);
    ag_ckpt_list l = {0};
    for (size_t i = 0; i < n; i++) {
        ag_ckpt_list_add(&l, 2, shape[i][0], shape[i][1], need[0], fix, 0, "%s", names[i]);
        for (int k = 0; k < n_slots; k++)
            ag_ckpt_list_add(&l, 2, shape[i][0], shape[i][1], need[1], fix, 0, "optim.%s.%s",
                             names[i], slots[k]);
    }
    ag_status st = ag_ckpt_expect(&ck->ck, &l, NULL, NULL, err, errlen);
    ag_ckpt_list_free(&l);
    return st;
}

ag_status ag_checkpoint_load(const char *path, ag_checkpoint **out, ag_train_state *st, char *err,
                             size_t errlen)
{
    if (out)
        *out = NULL;
    if (!path || !out || !st)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_checkpoint_load: %s is NULL",
                      !path  ? "path"
                      : !out ? "out"
                             : "st");
    memset(st, 0, sizeof(*st));
    ag_checkpoint *ck = calloc(1, sizeof(*ck));
    if (!ck)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    ag_status status = ag_ckpt_open(&ck->ck, path, NULL, 0, CHECKPOINT_FORMAT,
                                    "attograd checkpoint", CHECKPOINT_VERSION, err, errlen);
    if (status == AG_OK &&
        (!read_words(ck, &st->config, err, errlen) || !read_numbers(ck, st, err, errlen)))
        status = AG_ERR_FORMAT;
    if (status == AG_OK) {
        ck->config = st->config;
        status = check_tensors(ck, err, errlen);
    }
    if (status != AG_OK) {
        ag_checkpoint_free(ck);
        memset(st, 0, sizeof(*st));
        return status;
    }
    *out = ck;
    return AG_OK;
}

void ag_checkpoint_free(ag_checkpoint *ck)
{
    if (!ck)
        return;
    ag_ckpt_close(&ck->ck);
    free(ck);
}

ag_status ag_checkpoint_restore(const ag_checkpoint *ck, ag_model *model, ag_optim *opt, char *err,
                                size_t errlen)
{
    if (!ck || !model || !opt)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_checkpoint_restore: %s is NULL",
                      !ck      ? "the checkpoint"
                      : !model ? "the model"
                               : "the optimizer");
    ag_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    size_t n = ag_model_params(model, params, names, MAX_PARAMS);
    ag_status st = AG_OK;
    for (size_t i = 0; i < n && st == AG_OK; i++) {
        const ag_tensor *p = params[i];
        st = ag_ckpt_read(&ck->ck, names[i], p->ndim, p->shape, params[i]->data, 0, err, errlen);
        for (int slot = 0; slot < ag_optim_slots(opt) && st == AG_OK; slot++) {
            char key[64];
            const char *slot_name = ag_optim_slot_name(opt, slot);
            snprintf(key, sizeof(key), "optim.%s.%s", names[i], slot_name);
            /* an SGD run given momentum on resuming starts its velocity at zero */
            if (!ag_st_dtype(ck->ck.st, key) && !ck->config.optimizer_adam &&
                ck->config.momentum == 0)
                continue;
            /* Adam's v is a running mean of squares: a negative one is NaN at the next step */
            int nonneg = ag_optim_slots(opt) == 2 && strcmp(slot_name, "v") == 0;
            st = ag_ckpt_read(&ck->ck, key, p->ndim, p->shape, ag_optim_state(opt, i, slot), nonneg,
                              err, errlen);
        }
    }
    if (st == AG_OK && ag_optim_set_steps(opt, ck->optim_steps) != AG_OK)
        st = ag_err(AG_ERR_ARG, err, errlen, "checkpoint: bad optimizer step count %ld",
                    ck->optim_steps);
    return st;
}

/* ---- writing ---- */

int ag_train_config_check(const ag_train_config *c, char *err, size_t errlen)
{
    const char *name = NULL;
    double lo = 0, hi = 0;
    if (c->batch < 1 || c->batch > AG_TRAIN_MAX_BATCH)
        name = "batch", lo = 1, hi = AG_TRAIN_MAX_BATCH;
    else if (!(c->lr >= AG_TRAIN_LR_MIN && c->lr <= AG_TRAIN_LR_MAX))
        name = "lr", lo = AG_TRAIN_LR_MIN, hi = AG_TRAIN_LR_MAX;
    else if (!(c->momentum >= 0 && c->momentum <= AG_TRAIN_MOMENTUM_MAX))
        name = "momentum", hi = AG_TRAIN_MOMENTUM_MAX;
    else if (!(c->weight_decay >= 0 && c->weight_decay <= AG_TRAIN_WEIGHT_DECAY_MAX))
        name = "weight_decay", hi = AG_TRAIN_WEIGHT_DECAY_MAX;
    else if (!(c->clip >= 0 && c->clip <= AG_TRAIN_CLIP_MAX))
        name = "clip", hi = AG_TRAIN_CLIP_MAX;
    if (name)
        ag_err(AG_ERR_ARG, err, errlen, "trainer: %s must be in %g..%g", name, lo, hi);
    return name == NULL;
}

/* Why ag_checkpoint_load would refuse what is about to be saved, into why:
 * settings out of their ranges, a model they did not make, an optimizer
 * other than the one they name (Adam; SGD with or without momentum) over
 * the model's parameters. 0 when it would take it back. */
static int refused(ag_model *model, const ag_optim *opt, const ag_train_config *c, char *why,
                   size_t len)
{
    if (ag_model_config_check(&c->model, why, len) != AG_MODEL_OK ||
        !ag_train_config_check(c, why, len))
        return 1;
    const ag_model_config *mc = ag_model_get_config(model);
    if (mc->task != c->model.task || mc->seq != c->model.seq || mc->dim != c->model.dim ||
        mc->heads != c->model.heads || mc->causal != c->model.causal ||
        mc->posenc != c->model.posenc)
        return snprintf(why, len, "the model was not made with the settings given with it"), 1;
    int slots = c->optimizer_adam ? 2 : c->momentum > 0 ? 1 : 0;
    if (ag_optim_slots(opt) != slots ||
        ag_optim_n_params(opt) != ag_model_params(model, NULL, NULL, 0))
        return snprintf(why, len, "the optimizer is not the one the settings name (%s)",
                        slots == 2 ? "adam"
                        : slots    ? "sgd with momentum"
                                   : "sgd"),
               1;
    return 0;
}

static void add_settings(ag_st_writer *w, const ag_train_state *st)
{
    const ag_train_config *c = &st->config;
    ag_st_add_meta(w, "task", ag_task_name(c->model.task));
    ag_st_add_meta(w, "posenc", ag_posenc_kind_name(c->model.posenc));
    ag_st_add_meta(w, "optimizer", c->optimizer_adam ? "adam" : "sgd");
    ag_ckpt_meta(w, "seq", "%d", c->model.seq);
    ag_ckpt_meta(w, "dim", "%d", c->model.dim);
    ag_ckpt_meta(w, "heads", "%d", c->model.heads);
    ag_ckpt_meta(w, "causal", "%d", c->model.causal ? 1 : 0);
    ag_ckpt_meta(w, "momentum", "%.17g", c->momentum);
    ag_ckpt_run_meta(w, c->batch, c->lr, c->weight_decay, c->clip, c->seed, st->data_rng);
}

ag_status ag_checkpoint_save(const char *path, ag_model *model, ag_optim *opt,
                             const ag_train_state *st, char *err, size_t errlen)
{
    if (!path || !model || !opt || !st)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_checkpoint_save: %s is NULL",
                      !path    ? "path"
                      : !model ? "the model"
                      : !opt   ? "the optimizer"
                               : "the state");
    char why[200];
    if (refused(model, opt, &st->config, why, sizeof(why)))
        return ag_err(AG_ERR_ARG, err, errlen, "%s: not saved: %s", path, why);
    ag_st_writer *w = ag_ckpt_writer_new(CHECKPOINT_FORMAT, CHECKPOINT_VERSION);
    if (!w)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    add_settings(w, st);
    /* the reader's range for the counts: a file written here always loads */
    ag_status status = ag_ckpt_counts_write(w, path, st->step, ag_optim_steps(opt), err, errlen);
    if (status != AG_OK) {
        ag_st_writer_free(w);
        return status;
    }
    ag_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    size_t n = ag_model_params(model, params, names, MAX_PARAMS);
    for (size_t i = 0; i < n; i++) {
        ag_st_add_tensor(w, names[i], params[i]);
        for (int slot = 0; slot < ag_optim_slots(opt); slot++) {
            char key[64];
            snprintf(key, sizeof(key), "optim.%s.%s", names[i], ag_optim_slot_name(opt, slot));
            ag_st_add(w, key, params[i]->ndim, params[i]->shape, ag_optim_state(opt, i, slot));
        }
    }
    status = ag_st_save(w, path, err, errlen);
    ag_st_writer_free(w);
    return status;
}
