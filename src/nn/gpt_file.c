/*
 * gpt_file.c - GPT checkpoints that PyTorch loads as they are. The file
 * uses the names and (out, in) layouts of the common PyTorch GPT (nanoGPT's
 * GPT), so that a model trained here continues there with no renaming or
 * transposing; the library keeps y = x W, and this file converts: each file
 * tensor is one parameter, transposed when it is a linear weight, or (for
 * c_attn) Q's, K's and V's weights stacked. A trainer's checkpoint adds
 * AdamW's state in the same layout and the run's settings and progress,
 * so a run resumes bit for bit. Reading treats the file as hostile: every
 * value of the metadata is parsed strictly and every weight must be finite.
 */
#include "../io/io.h"
#include "gpt.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "attograd-gpt"
#define VERSION "1"
#define NAME_MAX_LEN 96
#define MAX_STEPS 2000000000L
#define MAX_SETTING 1e9 /* learning rates, weight decay, clip */

/* One tensor of the file: up to three parameters stacked along its rows. */
typedef struct file_tensor {
    char name[NAME_MAX_LEN];
    int ndim, shape[2]; /* the file's shape: (out, in) for a linear weight */
    int n;              /* parameters stacked */
    size_t param[3];    /* their indices in g->params */
    int transpose;      /* 1: each is an (in, out) weight, stored (out, in) */
    size_t size;        /* elements */
} file_tensor;

typedef struct file_map {
    file_tensor *t; /* (n) */
    size_t n;
    size_t size; /* elements of all of them */
    size_t wte;  /* which one is transformer.wte.weight */
} file_map;

static long find_param(const ag_gpt *g, const char *name)
{
    for (size_t i = 0; i < g->n_params; i++)
        if (strcmp(g->names[i], name) == 0)
            return (long)i;
    return -1;
}

/* Add file tensor `name` made of the parameters named in parts (NULL-ended)
 * when the model has them; in block `layer` (or -1 for none), both names are
 * the block's: "transformer.h.{layer}.<name>" made of "h.{layer}.<part>". */
static void map_add(file_map *m, const ag_gpt *g, int layer, const char *name,
                    const char *const *parts, int transpose)
{
    file_tensor *t = &m->t[m->n];
    memset(t, 0, sizeof(*t));
    for (int k = 0; parts[k]; k++) {
        char pname[AG_GPT_NAME_MAX];
        if (layer >= 0)
            snprintf(pname, sizeof(pname), "h.%d.%s", layer, parts[k]);
        else
            snprintf(pname, sizeof(pname), "%s", parts[k]);
        long i = find_param(g, pname);
        if (i < 0)
            return; /* not in this model (no bias, an ablation) */
        t->param[t->n++] = (size_t)i;
    }
    const ag_tensor *p = g->params[t->param[0]];
    if (layer >= 0)
        snprintf(t->name, sizeof(t->name), "transformer.h.%d.%s", layer, name);
    else
        snprintf(t->name, sizeof(t->name), "%s", name);
    t->transpose = transpose;
    t->ndim = p->ndim;
    t->shape[0] = (transpose ? p->shape[1] : p->shape[0]) * t->n;
    t->shape[1] = p->ndim == 2 ? (transpose ? p->shape[0] : p->shape[1]) : 1;
    t->size = p->size * (size_t)t->n;
    m->size += t->size;
    m->n++;
}

/* Every file tensor of g but lm_head (which is wte again). */
static int map_make(file_map *m, const ag_gpt *g)
{
    memset(m, 0, sizeof(*m));
    m->t = malloc((4 + 12 * (size_t)g->cfg.layers) * sizeof(*m->t));
    if (!m->t)
        return 0;
#define ADD(layer, name, transpose, ...)                                                           \
    map_add(m, g, layer, name, (const char *const[]){__VA_ARGS__, NULL}, transpose)
    ADD(-1, "transformer.wte.weight", 0, "wte");
    ADD(-1, "transformer.wpe.weight", 0, "wpe");
    for (int i = 0; i < g->cfg.layers; i++) {
        ADD(i, "ln_1.weight", 0, "ln_1.weight");
        ADD(i, "ln_1.bias", 0, "ln_1.bias");
        ADD(i, "attn.c_attn.weight", 1, "attn.wq", "attn.wk", "attn.wv");
        ADD(i, "attn.c_attn.bias", 0, "attn.bq", "attn.bk", "attn.bv");
        ADD(i, "attn.c_proj.weight", 1, "attn.wo");
        ADD(i, "attn.c_proj.bias", 0, "attn.bo");
        ADD(i, "ln_2.weight", 0, "ln_2.weight");
        ADD(i, "ln_2.bias", 0, "ln_2.bias");
        ADD(i, "mlp.c_fc.weight", 1, "mlp.w_fc");
        ADD(i, "mlp.c_fc.bias", 0, "mlp.b_fc");
        ADD(i, "mlp.c_proj.weight", 1, "mlp.w_proj");
        ADD(i, "mlp.c_proj.bias", 0, "mlp.b_proj");
    }
    ADD(-1, "transformer.ln_f.weight", 0, "ln_f.weight");
    ADD(-1, "transformer.ln_f.bias", 0, "ln_f.bias");
#undef ADD
    m->wte = 0;
    return 1;
}

/* The file layout of one tensor from per-parameter buffers src[param]. */
static void pack(const ag_gpt *g, const file_tensor *t, ag_real *const *src, ag_real *dst)
{
    for (int k = 0; k < t->n; k++) {
        const ag_tensor *p = g->params[t->param[k]];
        const ag_real *s = src[t->param[k]];
        if (!t->transpose) {
            memcpy(dst, s, p->size * sizeof(ag_real));
        } else {
            size_t in = (size_t)p->shape[0], out = (size_t)p->shape[1];
            for (size_t o = 0; o < out; o++) /* dst (out, in) = s (in, out)^T */
                for (size_t i = 0; i < in; i++)
                    dst[o * in + i] = s[i * out + o];
        }
        dst += p->size;
    }
}

/* The inverse of pack: file layout src into dst[param]. */
static void unpack(const ag_gpt *g, const file_tensor *t, const ag_real *src, ag_real *const *dst)
{
    for (int k = 0; k < t->n; k++) {
        const ag_tensor *p = g->params[t->param[k]];
        ag_real *d = dst[t->param[k]];
        if (!t->transpose) {
            memcpy(d, src, p->size * sizeof(ag_real));
        } else {
            size_t in = (size_t)p->shape[0], out = (size_t)p->shape[1];
            for (size_t o = 0; o < out; o++)
                for (size_t i = 0; i < in; i++)
                    d[i * out + o] = src[o * in + i];
        }
        src += p->size;
    }
}

/* ---- saving ---- */

static const char *tf(int v)
{
    return v ? "true" : "false";
}

/* The slot's buffer of every parameter (slot -1: the weights themselves). */
static void buffers(ag_gpt *g, ag_gpt_trainer *t, int slot, ag_real **buf)
{
    for (size_t i = 0; i < g->n_params; i++)
        buf[i] =
            slot < 0 ? g->params[i]->data : ag_optim_state(t->opt[t->group[i]], t->index[i], slot);
}

static void add_model_meta(ag_st_writer *w, const ag_gpt *g, const ag_vocab *vocab)
{
    const ag_gpt_config *c = &g->cfg;
    char buf[64];
#define META(key, ...) (snprintf(buf, sizeof(buf), __VA_ARGS__), ag_st_add_meta(w, key, buf))
    ag_st_add_meta(w, "format", FORMAT);
    ag_st_add_meta(w, "version", VERSION);
    ag_st_add_meta(w, "vocab", ag_vocab_chars(vocab));
    META("vocab_size", "%d", c->vocab);
    META("block_size", "%d", c->seq);
    META("n_layer", "%d", c->layers);
    META("n_head", "%d", c->heads);
    META("n_embd", "%d", c->dim);
    ag_st_add_meta(w, "bias", tf(c->bias));
    META("dropout", "%.17g", c->dropout);
    ag_st_add_meta(w, "residual", tf(!c->no_residual));
    ag_st_add_meta(w, "layernorm", tf(!c->no_layernorm));
    ag_st_add_meta(w, "mlp", tf(!c->no_mlp));
    ag_st_add_meta(w, "posenc", c->no_posenc ? "none" : "learned");
}

static void add_train_meta(ag_st_writer *w, const ag_gpt_trainer *t)
{
    const ag_gpt_train_config *c = &t->cfg;
    char buf[64];
    META("batch", "%d", c->batch);
    META("lr", "%.17g", c->lr);
    META("min_lr", "%.17g", c->min_lr);
    META("warmup", "%ld", c->warmup);
    META("decay_steps", "%ld", c->decay_steps);
    META("beta1", "%.17g", c->beta1);
    META("beta2", "%.17g", c->beta2);
    META("eps", "%.17g", c->eps);
    META("weight_decay", "%.17g", c->weight_decay);
    META("clip", "%.17g", c->clip);
    META("seed", "%" PRIu64, c->seed);
    META("step", "%ld", t->step);
    META("optim_steps", "%ld", ag_optim_steps(t->opt[0] ? t->opt[0] : t->opt[1]));
    META("data_rng", "%" PRIu64, t->data_rng.state);
    META("dropout_rng", "%" PRIu64, t->dropout_rng.state);
#undef META
}

static ag_status save(ag_gpt *g, const ag_vocab *vocab, ag_gpt_trainer *t, const char *path,
                      char *err, size_t errlen)
{
    if (!g || !vocab || !path)
        return ag_err(AG_ERR_ARG, err, errlen, "save: %s is NULL",
                      !g       ? "the model"
                      : !vocab ? "the vocabulary"
                               : "path");
    if (ag_vocab_size(vocab) != g->cfg.vocab)
        return ag_err(AG_ERR_ARG, err, errlen,
                      "%s: the vocabulary has %d characters, the "
                      "model %d",
                      path, ag_vocab_size(vocab), g->cfg.vocab);
    file_map m;
    int slots = t ? 2 : 0;
    ag_real **src = malloc(g->n_params * sizeof(*src));
    ag_real *data = NULL;
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    if (!map_make(&m, g) || !src || !w ||
        !(data = malloc(m.size * (size_t)(1 + slots) * sizeof(ag_real)))) {
        free(m.t), free(src), free(data), ag_st_writer_free(w);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }
    add_model_meta(w, g, vocab);
    if (t)
        add_train_meta(w, t);
    ag_real *d = data;
    for (int slot = -1; slot < slots; slot++) {
        buffers(g, t, slot, src);
        for (size_t k = 0; k < m.n; k++) {
            file_tensor *ft = &m.t[k];
            char name[NAME_MAX_LEN + 16];
            pack(g, ft, src, d);
            if (slot < 0)
                snprintf(name, sizeof(name), "%s", ft->name);
            else
                snprintf(name, sizeof(name), "optim.%s.%s", ft->name, slot ? "v" : "m");
            ag_st_add(w, name, ft->ndim, ft->shape, d);
            if (slot < 0 && k == m.wte) /* the tied head: the same numbers again */
                ag_st_add(w, "lm_head.weight", ft->ndim, ft->shape, d);
            d += ft->size;
        }
    }
    ag_status st = ag_st_save(w, path, err, errlen);
    ag_st_writer_free(w);
    free(m.t);
    free(src);
    free(data);
    return st;
}

ag_status ag_gpt_save(ag_gpt *g, const ag_vocab *vocab, const char *path, char *err, size_t errlen)
{
    return save(g, vocab, NULL, path, err, errlen);
}

ag_status ag_gpt_trainer_save(ag_gpt_trainer *t, const char *path, char *err, size_t errlen)
{
    if (!t)
        return ag_err(AG_ERR_ARG, err, errlen, "save: the trainer is NULL");
    return save(t->g, t->text->vocab, t, path, err, errlen);
}

/* ---- loading ---- */

struct ag_gpt_file {
    char *path;
    ag_st_file *st;
    ag_gpt_config cfg;
    ag_vocab *vocab;
    int has_train;
    ag_gpt_train_config train;
    long step, optim_steps;
    uint64_t data_rng, dropout_rng;
};

static int read_model_meta(ag_gpt_file *f, char *err, size_t errlen)
{
    const ag_st_file *s = f->st;
    const char *p = f->path, *v;
    char q[AG_IO_QUOTE_LEN];
    ag_gpt_config *c = &f->cfg;
    int residual, layernorm, mlp;
    if (!ag_meta_str(s, p, "format", &v, err, errlen))
        return 0;
    if (strcmp(v, FORMAT) != 0) {
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: not an attograd GPT checkpoint (format '%s')", p,
               ag_io_show(v, q, sizeof(q)));
        return 0;
    }
    if (!ag_meta_str(s, p, "version", &v, err, errlen))
        return 0;
    if (strcmp(v, VERSION) != 0) {
        ag_err(AG_ERR_FORMAT, err, errlen,
               "%s: checkpoint version '%s' is not supported "
               "(only %s)",
               p, ag_io_show(v, q, sizeof(q)), VERSION);
        return 0;
    }
    if (!ag_meta_int(s, p, "vocab_size", 1, AG_VOCAB_MAX, &c->vocab, err, errlen) ||
        !ag_meta_int(s, p, "block_size", 1, 65536, &c->seq, err, errlen) ||
        !ag_meta_int(s, p, "n_layer", 0, 1024, &c->layers, err, errlen) ||
        !ag_meta_int(s, p, "n_head", 1, 65536, &c->heads, err, errlen) ||
        !ag_meta_int(s, p, "n_embd", 1, 65536, &c->dim, err, errlen) ||
        !ag_meta_bool(s, p, "bias", &c->bias, err, errlen) ||
        !ag_meta_double(s, p, "dropout", 0, 0.999999, &c->dropout, err, errlen) ||
        !ag_meta_bool(s, p, "residual", &residual, err, errlen) ||
        !ag_meta_bool(s, p, "layernorm", &layernorm, err, errlen) ||
        !ag_meta_bool(s, p, "mlp", &mlp, err, errlen) ||
        !ag_meta_str(s, p, "posenc", &v, err, errlen))
        return 0;
    if (strcmp(v, "learned") != 0 && strcmp(v, "none") != 0) {
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: metadata posenc '%s' is not learned or none", p,
               ag_io_show(v, q, sizeof(q)));
        return 0;
    }
    c->no_posenc = strcmp(v, "none") == 0;
    c->no_residual = !residual, c->no_layernorm = !layernorm, c->no_mlp = !mlp;
    if (c->dim % c->heads != 0) {
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: metadata n_head %d does not divide n_embd %d", p,
               c->heads, c->dim);
        return 0;
    }
    char verr[192];
    if (!ag_meta_str(s, p, "vocab", &v, err, errlen))
        return 0;
    if (!(f->vocab = ag_vocab_from_chars(v, verr, sizeof(verr)))) {
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: metadata %s", p, verr);
        return 0;
    }
    if (ag_vocab_size(f->vocab) != c->vocab) {
        ag_err(AG_ERR_FORMAT, err, errlen,
               "%s: metadata vocab has %d characters, vocab_size "
               "says %d",
               p, ag_vocab_size(f->vocab), c->vocab);
        return 0;
    }
    return 1;
}

/* A trainer's settings and progress, when the file has them. */
static int read_train_meta(ag_gpt_file *f, char *err, size_t errlen)
{
    const ag_st_file *s = f->st;
    const char *p = f->path;
    ag_gpt_train_config *c = &f->train;
    if (!ag_st_meta(s, "step"))
        return 1; /* a model only */
    f->has_train = 1;
    return ag_meta_int(s, p, "batch", 1, 1 << 20, &c->batch, err, errlen) &&
           ag_meta_double(s, p, "lr", 1e-12, MAX_SETTING, &c->lr, err, errlen) &&
           ag_meta_double(s, p, "min_lr", 0, MAX_SETTING, &c->min_lr, err, errlen) &&
           ag_meta_long(s, p, "warmup", 0, MAX_STEPS, &c->warmup, err, errlen) &&
           ag_meta_long(s, p, "decay_steps", 1, MAX_STEPS, &c->decay_steps, err, errlen) &&
           ag_meta_double(s, p, "beta1", 0, 0.999999, &c->beta1, err, errlen) &&
           ag_meta_double(s, p, "beta2", 0, 0.999999, &c->beta2, err, errlen) &&
           ag_meta_double(s, p, "eps", 1e-30, 1, &c->eps, err, errlen) &&
           ag_meta_double(s, p, "weight_decay", 0, MAX_SETTING, &c->weight_decay, err, errlen) &&
           ag_meta_double(s, p, "clip", 0, MAX_SETTING, &c->clip, err, errlen) &&
           ag_meta_u64(s, p, "seed", &c->seed, err, errlen) &&
           ag_meta_long(s, p, "step", 0, MAX_STEPS, &f->step, err, errlen) &&
           ag_meta_long(s, p, "optim_steps", 0, MAX_STEPS, &f->optim_steps, err, errlen) &&
           ag_meta_u64(s, p, "data_rng", &f->data_rng, err, errlen) &&
           ag_meta_u64(s, p, "dropout_rng", &f->dropout_rng, err, errlen);
}

ag_status ag_gpt_file_load(const char *path, ag_gpt_file **out, char *err, size_t errlen)
{
    if (!out || !path)
        return ag_err(AG_ERR_ARG, err, errlen, "load: %s is NULL", out ? "path" : "out");
    *out = NULL;
    ag_gpt_file *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = malloc(strlen(path) + 1))) {
        free(f);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }
    strcpy(f->path, path);
    ag_status st = ag_st_load(path, &f->st, err, errlen);
    if (st == AG_OK && (!read_model_meta(f, err, errlen) || !read_train_meta(f, err, errlen)))
        st = AG_ERR_FORMAT;
    if (st != AG_OK) {
        ag_gpt_file_free(f);
        return st;
    }
    *out = f;
    return AG_OK;
}

void ag_gpt_file_free(ag_gpt_file *f)
{
    if (!f)
        return;
    ag_st_free(f->st);
    ag_vocab_free(f->vocab);
    free(f->path);
    free(f);
}

const ag_gpt_config *ag_gpt_file_config(const ag_gpt_file *f)
{
    return f ? &f->cfg : NULL;
}

const ag_vocab *ag_gpt_file_vocab(const ag_gpt_file *f)
{
    return f ? f->vocab : NULL;
}

int ag_gpt_file_train(const ag_gpt_file *f, ag_gpt_train_config *cfg, long *steps)
{
    if (!f || !f->has_train)
        return 0;
    if (cfg)
        *cfg = f->train;
    if (steps)
        *steps = f->step;
    return 1;
}

/* Read tensor name (the file layout of t) into tmp, check its values, and
 * unpack it into dst. nonneg: Adam's v, a mean of squares. */
static int read_tensor(const ag_gpt_file *f, const ag_gpt *g, const file_tensor *t,
                       const char *name, ag_real *tmp, ag_real *const *dst, int nonneg, char *err,
                       size_t errlen)
{
    if (ag_st_get_finite(f->st, name, t->ndim, t->shape, tmp, nonneg, err, errlen) != AG_OK)
        return 0;
    unpack(g, t, tmp, dst);
    return 1;
}

/* Copy the file's weights (slot -1) or an optimizer slot into g or t. */
static ag_status load_slot(const ag_gpt_file *f, ag_gpt *g, ag_gpt_trainer *t, int slot, char *err,
                           size_t errlen)
{
    file_map m;
    ag_real **dst = malloc(g->n_params * sizeof(*dst));
    ag_real *tmp = NULL;
    if (!dst || !map_make(&m, g) || !(tmp = malloc((m.size ? m.size : 1) * sizeof(ag_real)))) {
        free(dst), free(tmp);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", f->path);
    }
    buffers(g, t, slot, dst);
    int ok = 1;
    for (size_t k = 0; k < m.n && ok; k++) {
        char name[NAME_MAX_LEN + 16];
        if (slot < 0)
            snprintf(name, sizeof(name), "%s", m.t[k].name);
        else
            snprintf(name, sizeof(name), "optim.%s.%s", m.t[k].name, slot ? "v" : "m");
        ok = read_tensor(f, g, &m.t[k], name, tmp, dst, slot == 1, err, errlen);
    }
    /* lm_head, when there, must be wte: the head is tied */
    if (ok && slot < 0 && ag_st_dtype(f->st, "lm_head.weight")) {
        const file_tensor *e = &m.t[m.wte];
        ok = ag_st_get(f->st, "lm_head.weight", e->ndim, e->shape, tmp, err, errlen) == AG_OK;
        if (ok && memcmp(tmp, g->wte->data, e->size * sizeof(ag_real)) != 0) {
            ag_err(AG_ERR_FORMAT, err, errlen,
                   "%s: lm_head.weight differs from "
                   "transformer.wte.weight (the output head is tied to the embedding)",
                   f->path);
            ok = 0;
        }
    }
    free(m.t);
    free(dst);
    free(tmp);
    return ok ? AG_OK : AG_ERR_FORMAT;
}

ag_gpt *ag_gpt_file_model(const ag_gpt_file *f, char *err, size_t errlen)
{
    if (!f) {
        ag_err(AG_ERR_ARG, err, errlen, "load: the file is NULL");
        return NULL;
    }
    char gerr[192];
    ag_gpt *g = ag_gpt_new(&f->cfg, NULL, gerr, sizeof(gerr));
    if (!g) {
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: %s", f->path, gerr);
        return NULL;
    }
    if (load_slot(f, g, NULL, -1, err, errlen) != AG_OK) {
        ag_gpt_free(g);
        return NULL;
    }
    return g;
}

ag_status ag_gpt_trainer_restore(ag_gpt_trainer *t, const ag_gpt_file *f, char *err, size_t errlen)
{
    if (!t || !f)
        return ag_err(AG_ERR_ARG, err, errlen, "restore: %s is NULL",
                      t ? "the file" : "the trainer");
    if (!f->has_train)
        return ag_err(AG_ERR_FORMAT, err, errlen,
                      "%s: holds a model but no training state "
                      "(saved without a trainer)",
                      f->path);
    for (int slot = 0; slot < 2; slot++) {
        ag_status st = load_slot(f, t->g, t, slot, err, errlen);
        if (st != AG_OK)
            return st;
    }
    for (int k = 0; k < 2; k++)
        if (t->opt[k])
            ag_optim_set_steps(t->opt[k], f->optim_steps);
    t->step = f->step;
    t->data_rng.state = f->data_rng;
    t->dropout_rng.state = f->dropout_rng;
    return AG_OK;
}
