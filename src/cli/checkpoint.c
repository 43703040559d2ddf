/*
 * checkpoint.c - save and resume a training run as one safetensors file:
 * the model's parameters under their own names, the optimizer's state as
 * "optim.<param>.<slot>", and everything else a run needs to continue
 * exactly (configuration, step, the data stream's position) as metadata.
 * Metadata is read as hostile input: every value is parsed strictly.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKPOINT_FORMAT "attograd-checkpoint"
#define CHECKPOINT_VERSION "1"
#define MAX_PARAMS 8

static int meta_str(const ag_st_file *f, const char *path, const char *key, const char **out,
                    char *err, size_t errlen)
{
    *out = ag_st_meta(f, key);
    if (!*out)
        snprintf(err, errlen, "%s: checkpoint metadata '%s' is missing", path, key);
    return *out != NULL;
}

static int meta_long(const ag_st_file *f, const char *path, const char *key, long lo, long hi,
                     long *out, char *err, size_t errlen)
{
    const char *s;
    char q[AG_CLI_QUOTE_LEN];
    if (!meta_str(f, path, key, &s, err, errlen))
        return 0;
    long v = 0;
    if (ag_cli_parse_long(s, &v) != AG_PARSE_OK || v < lo || v > hi) {
        snprintf(err, errlen, "%s: checkpoint metadata %s '%s' is not a whole number in %ld..%ld",
                 path, key, ag_cli_quote(s, q, sizeof(q)), lo, hi);
        return 0;
    }
    *out = v;
    return 1;
}

static int meta_int(const ag_st_file *f, const char *path, const char *key, int lo, int hi,
                    int *out, char *err, size_t errlen)
{
    long v;
    if (!meta_long(f, path, key, lo, hi, &v, err, errlen))
        return 0;
    *out = (int)v;
    return 1;
}

static int meta_u64(const ag_st_file *f, const char *path, const char *key, uint64_t *out,
                    char *err, size_t errlen)
{
    const char *s;
    char q[AG_CLI_QUOTE_LEN];
    if (!meta_str(f, path, key, &s, err, errlen))
        return 0;
    if (ag_cli_parse_u64(s, out) != AG_PARSE_OK) {
        snprintf(err, errlen, "%s: checkpoint metadata %s '%s' is not an unsigned 64-bit number",
                 path, key, ag_cli_quote(s, q, sizeof(q)));
        return 0;
    }
    return 1;
}

static int meta_double(const ag_st_file *f, const char *path, const char *key, double lo,
                       double hi, double *out, char *err, size_t errlen)
{
    const char *s;
    char q[AG_CLI_QUOTE_LEN];
    if (!meta_str(f, path, key, &s, err, errlen))
        return 0;
    double v = 0;
    int r = ag_cli_parse_double(s, &v);
    if (r == AG_PARSE_TINY)
        r = AG_PARSE_OK, v = 0;   /* %.17g never writes one, but it is a number */
    if (r != AG_PARSE_OK || v < lo || v > hi) {
        snprintf(err, errlen, "%s: checkpoint metadata %s '%s' is not a number in %g..%g", path,
                 key, ag_cli_quote(s, q, sizeof(q)), lo, hi);
        return 0;
    }
    *out = v;
    return 1;
}

int ag_cli_checkpoint_open(const char *path, ag_st_file **file, ag_train_state *st, char *err,
                           size_t errlen)
{
    *file = NULL;
    ag_train_config *c = &st->config;
    ag_st_file *f;
    if (ag_st_load(path, &f, err, errlen) != AG_OK)
        return 0;
    const char *s;
    char q[AG_CLI_QUOTE_LEN];
    long causal;
    if (!meta_str(f, path, "format", &s, err, errlen))
        goto fail;
    if (strcmp(s, CHECKPOINT_FORMAT) != 0) {
        snprintf(err, errlen, "%s: not an attograd checkpoint (format '%s')", path, ag_cli_quote(s, q, sizeof(q)));
        goto fail;
    }
    if (!meta_str(f, path, "version", &s, err, errlen))
        goto fail;
    if (strcmp(s, CHECKPOINT_VERSION) != 0) {
        snprintf(err, errlen, "%s: checkpoint version '%s' is not supported (only %s)", path, ag_cli_quote(s, q, sizeof(q)),
                 CHECKPOINT_VERSION);
        goto fail;
    }
    if (!meta_str(f, path, "task", &s, err, errlen))
        goto fail;
    if (!ag_task_parse(s, &c->model.task)) {
        snprintf(err, errlen, "%s: checkpoint metadata task '%s' is unknown", path, ag_cli_quote(s, q, sizeof(q)));
        goto fail;
    }
    if (!meta_str(f, path, "posenc", &s, err, errlen))
        goto fail;
    if (!ag_posenc_parse(s, &c->model.posenc)) {
        snprintf(err, errlen, "%s: checkpoint metadata posenc '%s' is unknown", path, ag_cli_quote(s, q, sizeof(q)));
        goto fail;
    }
    if (!meta_str(f, path, "optimizer", &s, err, errlen))
        goto fail;
    if (strcmp(s, "adam") != 0 && strcmp(s, "sgd") != 0) {
        snprintf(err, errlen, "%s: checkpoint metadata optimizer '%s' is unknown", path, ag_cli_quote(s, q, sizeof(q)));
        goto fail;
    }
    c->optimizer_adam = strcmp(s, "adam") == 0;
    if (!meta_int(f, path, "seq", 1, AG_CLI_MAX_SIZE, &c->model.seq, err, errlen) ||
        !meta_int(f, path, "dim", 1, AG_CLI_MAX_SIZE, &c->model.dim, err, errlen) ||
        !meta_int(f, path, "heads", 1, AG_CLI_MAX_SIZE, &c->model.heads, err, errlen) ||
        !meta_long(f, path, "causal", 0, 1, &causal, err, errlen) ||
        !meta_int(f, path, "batch", 1, AG_CLI_MAX_BATCH, &c->batch, err, errlen) ||
        !meta_double(f, path, "lr", AG_CLI_LR_MIN, AG_CLI_LR_MAX, &c->lr, err, errlen) ||
        !meta_double(f, path, "momentum", 0, AG_CLI_MOMENTUM_MAX, &c->momentum, err, errlen) ||
        !meta_double(f, path, "weight_decay", 0, AG_CLI_WEIGHT_DECAY_MAX, &c->weight_decay, err, errlen) ||
        !meta_double(f, path, "clip", 0, AG_CLI_CLIP_MAX, &c->clip, err, errlen) ||
        !meta_u64(f, path, "seed", &c->seed, err, errlen) ||
        !meta_u64(f, path, "data_rng", &st->data_rng, err, errlen) ||
        !meta_long(f, path, "step", 0, AG_CLI_MAX_STEP, &st->step, err, errlen) ||
        !meta_long(f, path, "optim_steps", 0, AG_CLI_MAX_STEP, &st->optim_steps, err, errlen))
        goto fail;
    c->model.causal = (int)causal;
    /* each value alone is in range; together they must make a model */
    int lo = ag_task_min_seq(c->model.task), hi = ag_task_max_seq(c->model.task);
    if (c->model.seq < lo || c->model.seq > hi) {
        snprintf(err, errlen, "%s: checkpoint metadata seq %d is out of range for task %s (%d..%d)",
                 path, c->model.seq, ag_task_name(c->model.task), lo, hi);
        goto fail;
    }
    if (c->model.heads > c->model.dim || c->model.dim % c->model.heads != 0) {
        snprintf(err, errlen, "%s: checkpoint metadata heads %d does not divide dim %d", path,
                 c->model.heads, c->model.dim);
        goto fail;
    }
    *file = f;
    return 1;
fail:
    ag_st_free(f);
    return 0;
}

int ag_cli_checkpoint_restore(const ag_command *cmd, const ag_st_file *f, const char *path,
                              ag_model *model, ag_optim *opt, const ag_train_state *st, char *err,
                              size_t errlen)
{
    ag_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    size_t n = ag_model_params(model, params, names, MAX_PARAMS);
    /* a weight or an optimizer state that is NaN or Inf would only make the
     * first step fail: ag_cli_read_tensor says where it is now */
    for (size_t i = 0; i < n; i++) {
        if (!ag_cli_read_tensor(cmd, f, path, names[i], params[i]->ndim, params[i]->shape,
                                params[i]->data, 0, err, errlen))
            return 0;
        for (int slot = 0; slot < ag_optim_slots(opt); slot++) {
            char key[64];
            const char *slot_name = ag_optim_slot_name(opt, slot);
            snprintf(key, sizeof(key), "optim.%s.%s", names[i], slot_name);
            /* Adam's v is a running mean of squares: a negative one is NaN at the next step */
            int nonneg = ag_optim_slots(opt) == 2 && strcmp(slot_name, "v") == 0;
            if (!ag_cli_read_tensor(cmd, f, path, key, params[i]->ndim, params[i]->shape,
                                    ag_optim_state(opt, i, slot), nonneg, err, errlen))
                return 0;
        }
    }
    if (ag_optim_set_steps(opt, st->optim_steps) != AG_OK) {
        snprintf(err, errlen, "checkpoint: bad optimizer step count %ld", st->optim_steps);
        return 0;
    }
    return 1;
}

int ag_cli_checkpoint_save(const char *path, ag_model *model, ag_optim *opt,
                           const ag_train_state *st, char *err, size_t errlen)
{
    /* the reader's range for the counts: a file written here always loads */
    long steps[2] = {st->step, ag_optim_steps(opt)};
    for (int k = 0; k < 2; k++) {
        if (steps[k] < 0 || steps[k] > AG_CLI_MAX_STEP) {
            snprintf(err, errlen, "%s: not saved: the %s count %ld is beyond %ld, the most a "
                     "checkpoint holds", path, k ? "optimizer step" : "step", steps[k],
                     AG_CLI_MAX_STEP);
            return 0;
        }
    }
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", path);
        return 0;
    }
    const ag_train_config *c = &st->config;
    char buf[64];
#define META(key, ...) (snprintf(buf, sizeof(buf), __VA_ARGS__), ag_st_add_meta(w, key, buf))
    ag_st_add_meta(w, "format", CHECKPOINT_FORMAT);
    ag_st_add_meta(w, "version", CHECKPOINT_VERSION);
    ag_st_add_meta(w, "task", ag_task_name(c->model.task));
    ag_st_add_meta(w, "posenc", ag_posenc_kind_name(c->model.posenc));
    ag_st_add_meta(w, "optimizer", c->optimizer_adam ? "adam" : "sgd");
    META("seq", "%d", c->model.seq);
    META("dim", "%d", c->model.dim);
    META("heads", "%d", c->model.heads);
    META("causal", "%d", c->model.causal ? 1 : 0);
    META("batch", "%d", c->batch);
    META("lr", "%.17g", c->lr);
    META("momentum", "%.17g", c->momentum);
    META("weight_decay", "%.17g", c->weight_decay);
    META("clip", "%.17g", c->clip);
    META("seed", "%" PRIu64, c->seed);
    META("data_rng", "%" PRIu64, st->data_rng);
    META("step", "%ld", st->step);
    META("optim_steps", "%ld", ag_optim_steps(opt));
#undef META
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
    int ok = ag_st_save(w, path, err, errlen) == AG_OK;
    ag_st_writer_free(w);
    return ok;
}
