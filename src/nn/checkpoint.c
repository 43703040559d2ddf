/*
 * checkpoint.c - save and resume a training run as one safetensors file:
 * the model's parameters under their own names, the optimizer's state as
 * "optim.<param>.<slot>", and everything else a run needs to continue
 * exactly (configuration, step, the data stream's position) as metadata.
 * It sits with the models it saves, above the file layer it writes
 * through. Metadata is read as hostile input through src/io/meta.c: every
 * value parsed strictly, within the range the settings allow.
 */
#include "../io/io.h"
#include "nn.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKPOINT_FORMAT "attograd-checkpoint"
#define CHECKPOINT_VERSION "1"
#define MAX_PARAMS 8

struct ag_checkpoint {
    ag_st_file *file;
    char *path; /* for messages */
    long optim_steps;
};

ag_optim *ag_train_optim_new(const ag_train_config *c, ag_tensor *const *params, size_t n)
{
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
    ag_err(AG_ERR_FORMAT, err, errlen, "%s: %s", ck->path, msg);
    return 0;
}

/* The words: format and version first, then task, posenc and optimizer. */
static int read_words(const ag_checkpoint *ck, ag_train_config *c, char *err, size_t errlen)
{
    const char *s;
    if (!ag_meta_str(ck->file, ck->path, "format", &s, err, errlen))
        return 0;
    if (strcmp(s, CHECKPOINT_FORMAT) != 0)
        return bad_word(ck, "not an attograd checkpoint (format '%s')", s, err, errlen);
    if (!ag_meta_str(ck->file, ck->path, "version", &s, err, errlen))
        return 0;
    if (strcmp(s, CHECKPOINT_VERSION) != 0)
        return bad_word(ck,
                        "checkpoint version '%s' is not supported (only " CHECKPOINT_VERSION ")", s,
                        err, errlen);
    if (!ag_meta_str(ck->file, ck->path, "task", &s, err, errlen))
        return 0;
    if (!ag_task_parse(s, &c->model.task))
        return bad_word(ck, "metadata task '%s' is unknown", s, err, errlen);
    if (!ag_meta_str(ck->file, ck->path, "posenc", &s, err, errlen))
        return 0;
    if (!ag_posenc_parse(s, &c->model.posenc))
        return bad_word(ck, "metadata posenc '%s' is unknown", s, err, errlen);
    if (!ag_meta_str(ck->file, ck->path, "optimizer", &s, err, errlen))
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
    const ag_st_file *f = ck->file;
    const char *p = ck->path;
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
        !ag_meta_long(f, p, "step", 0, AG_TRAIN_MAX_STEP, &st->step, err, errlen) ||
        !ag_meta_long(f, p, "optim_steps", 0, AG_TRAIN_MAX_STEP, &st->optim_steps, err, errlen))
        return 0;
    c->model.causal = (int)causal;
    ck->optim_steps = st->optim_steps;
    char why[160];
    if (ag_model_config_check(&c->model, why, sizeof(why)) != AG_MODEL_OK) {
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: metadata %s", ck->path, why);
        return 0;
    }
    return 1;
}

ag_status ag_checkpoint_load(const char *path, ag_checkpoint **out, ag_train_state *st, char *err,
                             size_t errlen)
{
    *out = NULL;
    memset(st, 0, sizeof(*st));
    ag_checkpoint *ck = calloc(1, sizeof(*ck));
    char *copy = ck ? malloc(strlen(path) + 1) : NULL;
    if (!copy) {
        free(ck);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }
    ck->path = strcpy(copy, path);
    ag_status status = ag_st_load(path, &ck->file, err, errlen);
    if (status == AG_OK &&
        (!read_words(ck, &st->config, err, errlen) || !read_numbers(ck, st, err, errlen)))
        status = AG_ERR_FORMAT;
    if (status != AG_OK) {
        ag_checkpoint_free(ck);
        return status;
    }
    *out = ck;
    return AG_OK;
}

void ag_checkpoint_free(ag_checkpoint *ck)
{
    if (!ck)
        return;
    ag_st_free(ck->file);
    free(ck->path);
    free(ck);
}

/* Read tensor name of shape like's into dst and check its values. */
static ag_status read_tensor(const ag_checkpoint *ck, const char *name, const ag_tensor *like,
                             ag_real *dst, int nonneg, char *err, size_t errlen)
{
    return ag_st_get_finite(ck->file, name, like->ndim, like->shape, dst, nonneg, err, errlen);
}

ag_status ag_checkpoint_restore(const ag_checkpoint *ck, ag_model *model, ag_optim *opt, char *err,
                                size_t errlen)
{
    ag_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    size_t n = ag_model_params(model, params, names, MAX_PARAMS);
    ag_status st = AG_OK;
    for (size_t i = 0; i < n && st == AG_OK; i++) {
        st = read_tensor(ck, names[i], params[i], params[i]->data, 0, err, errlen);
        for (int slot = 0; slot < ag_optim_slots(opt) && st == AG_OK; slot++) {
            char key[64];
            const char *slot_name = ag_optim_slot_name(opt, slot);
            snprintf(key, sizeof(key), "optim.%s.%s", names[i], slot_name);
            /* Adam's v is a running mean of squares: a negative one is NaN at the next step */
            int nonneg = ag_optim_slots(opt) == 2 && strcmp(slot_name, "v") == 0;
            st = read_tensor(ck, key, params[i], ag_optim_state(opt, i, slot), nonneg, err, errlen);
        }
    }
    if (st == AG_OK && ag_optim_set_steps(opt, ck->optim_steps) != AG_OK)
        st = ag_err(AG_ERR_ARG, err, errlen, "checkpoint: bad optimizer step count %ld",
                    ck->optim_steps);
    return st;
}

/* ---- writing ---- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
add_meta(ag_st_writer *w, const char *key, const char *fmt, ...)
{
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ag_st_add_meta(w, key, buf); /* errors are sticky: ag_st_save reports them */
}

static void add_settings(ag_st_writer *w, const ag_train_state *st, long optim_steps)
{
    const ag_train_config *c = &st->config;
    ag_st_add_meta(w, "format", CHECKPOINT_FORMAT);
    ag_st_add_meta(w, "version", CHECKPOINT_VERSION);
    ag_st_add_meta(w, "task", ag_task_name(c->model.task));
    ag_st_add_meta(w, "posenc", ag_posenc_kind_name(c->model.posenc));
    ag_st_add_meta(w, "optimizer", c->optimizer_adam ? "adam" : "sgd");
    add_meta(w, "seq", "%d", c->model.seq);
    add_meta(w, "dim", "%d", c->model.dim);
    add_meta(w, "heads", "%d", c->model.heads);
    add_meta(w, "causal", "%d", c->model.causal ? 1 : 0);
    add_meta(w, "batch", "%d", c->batch);
    add_meta(w, "lr", "%.17g", c->lr);
    add_meta(w, "momentum", "%.17g", c->momentum);
    add_meta(w, "weight_decay", "%.17g", c->weight_decay);
    add_meta(w, "clip", "%.17g", c->clip);
    add_meta(w, "seed", "%" PRIu64, c->seed);
    add_meta(w, "data_rng", "%" PRIu64, st->data_rng);
    add_meta(w, "step", "%ld", st->step);
    add_meta(w, "optim_steps", "%ld", optim_steps);
}

ag_status ag_checkpoint_save(const char *path, ag_model *model, ag_optim *opt,
                             const ag_train_state *st, char *err, size_t errlen)
{
    /* the reader's range for the counts: a file written here always loads */
    long steps[2] = {st->step, ag_optim_steps(opt)};
    for (int k = 0; k < 2; k++)
        if (steps[k] < 0 || steps[k] > AG_TRAIN_MAX_STEP)
            return ag_err(AG_ERR_ARG, err, errlen,
                          "%s: not saved: the %s count %ld is beyond "
                          "%ld, the most a checkpoint holds",
                          path, k ? "optimizer step" : "step", steps[k], AG_TRAIN_MAX_STEP);
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    if (!w)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    add_settings(w, st, ag_optim_steps(opt));
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
    ag_status status = ag_st_save(w, path, err, errlen);
    ag_st_writer_free(w);
    return status;
}
