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
#include "ckpt.h"
#include "gpt.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "attograd-gpt"
#define VERSION "1"
#define NAME_MAX_LEN 96
#define MAX_STEPS AG_TRAIN_MAX_STEP
#define MAX_SETTING 1e9 /* learning rates, weight decay, clip */

/* Which setting calls for a file tensor, and which fix its shape. */
enum {
    NEED_ALWAYS,
    NEED_LAYER,
    NEED_BIAS,
    NEED_LAYERNORM,
    NEED_LN_BIAS,
    NEED_MLP,
    NEED_MLP_BIAS,
    NEED_MLP_LN,
    NEED_MLP_LN_BIAS,
    NEED_POSENC,
    NEED_TRAIN,
    N_NEED
};
enum { FIX_VC, FIX_TC, FIX_C, FIX_3C, FIX_3CC, FIX_CC, FIX_4C, FIX_4CC, FIX_C4C, N_FIX };

/* One tensor of the file: up to three parameters stacked along its rows. */
typedef struct file_tensor {
    char name[NAME_MAX_LEN];
    int ndim, shape[2];   /* the file's shape: (out, in) for a linear weight */
    int n;                /* parameters stacked */
    const char *parts[3]; /* their names, relative to "h.{layer}." in a block */
    int layer;            /* the block, or -1 */
    size_t param[3];      /* their indices in g->params (map_make) */
    int transpose;        /* 1: each is an (in, out) weight, stored (out, in) */
    size_t size;          /* elements */
    int need, fix;        /* NEED_*, FIX_* */
} file_tensor;

typedef struct file_map {
    file_tensor *t; /* (n) */
    size_t n;
    size_t size; /* elements of all of them */
    size_t wte;  /* which one is transformer.wte.weight */
} file_map;

/* Add the file tensor `name` (in block `layer`, or -1) made of parts. */
static void spec_add(file_map *m, int layer, const char *name, int transpose, int rows, int cols,
                     int ndim, int need, int fix, const char *const *parts)
{
    file_tensor *t = &m->t[m->n++];
    memset(t, 0, sizeof(*t));
    if (layer >= 0)
        snprintf(t->name, sizeof(t->name), "transformer.h.%d.%s", layer, name);
    else
        snprintf(t->name, sizeof(t->name), "%s", name);
    for (t->n = 0; parts[t->n]; t->n++)
        t->parts[t->n] = parts[t->n];
    t->layer = layer;
    t->transpose = transpose;
    t->ndim = ndim;
    t->shape[0] = rows;
    t->shape[1] = ndim == 2 ? cols : 1;
    t->size = (size_t)rows * (size_t)t->shape[1];
    t->need = need;
    t->fix = fix;
    m->size += t->size;
}

/* Every file tensor a model of c has but lm_head (which is wte again), in
 * the file's order, from the configuration alone: what a checkpoint of c
 * must hold, and (map_make) where each parameter goes. */
static int map_of_config(file_map *m, const ag_gpt_config *c)
{
    memset(m, 0, sizeof(*m));
    m->t = malloc((4 + 12 * (size_t)c->layers) * sizeof(*m->t));
    if (!m->t)
        return 0;
    int V = c->vocab, T = c->seq, C = c->dim, bias = c->bias, ln = !c->no_layernorm;
#define ADD(layer, name, transpose, rows, cols, ndim, need, fix, ...)                              \
    spec_add(m, layer, name, transpose, rows, cols, ndim, need, fix,                               \
             (const char *const[]){__VA_ARGS__, NULL})
    ADD(-1, "transformer.wte.weight", 0, V, C, 2, NEED_ALWAYS, FIX_VC, "wte");
    if (!c->no_posenc)
        ADD(-1, "transformer.wpe.weight", 0, T, C, 2, NEED_POSENC, FIX_TC, "wpe");
    for (int i = 0; i < c->layers; i++) {
        if (ln)
            ADD(i, "ln_1.weight", 0, C, 1, 1, NEED_LAYERNORM, FIX_C, "ln_1.weight");
        if (ln && bias)
            ADD(i, "ln_1.bias", 0, C, 1, 1, NEED_LN_BIAS, FIX_C, "ln_1.bias");
        ADD(i, "attn.c_attn.weight", 1, 3 * C, C, 2, NEED_LAYER, FIX_3CC, "attn.wq", "attn.wk",
            "attn.wv");
        if (bias)
            ADD(i, "attn.c_attn.bias", 0, 3 * C, 1, 1, NEED_BIAS, FIX_3C, "attn.bq", "attn.bk",
                "attn.bv");
        ADD(i, "attn.c_proj.weight", 1, C, C, 2, NEED_LAYER, FIX_CC, "attn.wo");
        if (bias)
            ADD(i, "attn.c_proj.bias", 0, C, 1, 1, NEED_BIAS, FIX_C, "attn.bo");
        if (c->no_mlp)
            continue;
        if (ln)
            ADD(i, "ln_2.weight", 0, C, 1, 1, NEED_MLP_LN, FIX_C, "ln_2.weight");
        if (ln && bias)
            ADD(i, "ln_2.bias", 0, C, 1, 1, NEED_MLP_LN_BIAS, FIX_C, "ln_2.bias");
        ADD(i, "mlp.c_fc.weight", 1, 4 * C, C, 2, NEED_MLP, FIX_4CC, "mlp.w_fc");
        if (bias)
            ADD(i, "mlp.c_fc.bias", 0, 4 * C, 1, 1, NEED_MLP_BIAS, FIX_4C, "mlp.b_fc");
        ADD(i, "mlp.c_proj.weight", 1, C, 4 * C, 2, NEED_MLP, FIX_C4C, "mlp.w_proj");
        if (bias)
            ADD(i, "mlp.c_proj.bias", 0, C, 1, 1, NEED_MLP_BIAS, FIX_C, "mlp.b_proj");
    }
    if (ln)
        ADD(-1, "transformer.ln_f.weight", 0, C, 1, 1, NEED_LAYERNORM, FIX_C, "ln_f.weight");
    if (ln && bias)
        ADD(-1, "transformer.ln_f.bias", 0, C, 1, 1, NEED_LN_BIAS, FIX_C, "ln_f.bias");
#undef ADD
    m->wte = 0;
    return 1;
}

static long find_param(const ag_gpt *g, const char *name)
{
    for (size_t i = 0; i < g->n_params; i++)
        if (strcmp(g->names[i], name) == 0)
            return (long)i;
    return -1;
}

/* map_of_config for g, each file tensor's parameters found in g. */
static int map_make(file_map *m, const ag_gpt *g)
{
    if (!map_of_config(m, &g->cfg))
        return 0;
    for (size_t k = 0; k < m->n; k++) {
        file_tensor *t = &m->t[k];
        for (int j = 0; j < t->n; j++) {
            char pname[AG_GPT_NAME_MAX];
            if (t->layer >= 0)
                snprintf(pname, sizeof(pname), "h.%d.%s", t->layer, t->parts[j]);
            else
                snprintf(pname, sizeof(pname), "%s", t->parts[j]);
            long i = find_param(g, pname);
            if (i < 0) { /* the model and its layout disagree: a bug, not a file's fault */
                free(m->t);
                m->t = NULL;
                return 0;
            }
            t->param[j] = (size_t)i;
        }
    }
    return 1;
}

/* One file tensor as the writer asks for it (ag_st_fill_fn): its parts,
 * from the per-parameter buffers src[param] (the weights, or a slot of
 * AdamW's state), stacked, each transposed when the file wants it so. */
typedef struct file_fill {
    const ag_gpt *g;
    const file_tensor *t;
    ag_real *const *src;
} file_fill;

static void fill(const void *ctx, size_t at, size_t n, ag_real *out)
{
    const file_fill *f = ctx;
    /* at counts from the start of part k: the parts before are skipped whole */
    for (int k = 0; k < f->t->n && n > 0; k++) {
        const ag_tensor *p = f->g->params[f->t->param[k]];
        const ag_real *s = f->src[f->t->param[k]];
        if (at >= p->size) {
            at -= p->size;
            continue;
        }
        size_t run = p->size - at < n ? p->size - at : n;
        if (!f->t->transpose) {
            memcpy(out, s + at, run * sizeof(*out));
        } else { /* element `at` of the (cols, rows) file layout of s (rows, cols) */
            size_t rows = (size_t)p->shape[0], cols = (size_t)p->shape[1];
            size_t c = at / rows, r = at % rows;
            for (size_t j = 0; j < run; j++) {
                out[j] = s[r * cols + c];
                if (++r == rows)
                    r = 0, c++;
            }
        }
        out += run, n -= run, at = 0; /* the next part from its first element */
    }
}

/* The inverse of fill: file layout src into dst[param]. */
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
    ag_st_add_meta(w, "vocab", ag_vocab_chars(vocab));
    ag_ckpt_meta(w, "vocab_size", "%d", c->vocab);
    ag_ckpt_meta(w, "block_size", "%d", c->seq);
    ag_ckpt_meta(w, "n_layer", "%d", c->layers);
    ag_ckpt_meta(w, "n_head", "%d", c->heads);
    ag_ckpt_meta(w, "n_embd", "%d", c->dim);
    ag_st_add_meta(w, "bias", tf(c->bias));
    ag_ckpt_meta(w, "dropout", "%.17g", c->dropout);
    ag_st_add_meta(w, "residual", tf(!c->no_residual));
    ag_st_add_meta(w, "layernorm", tf(!c->no_layernorm));
    ag_st_add_meta(w, "mlp", tf(!c->no_mlp));
    ag_st_add_meta(w, "posenc", c->no_posenc ? "none" : "learned");
}

static long optim_steps(const ag_gpt_trainer *t)
{
    return ag_optim_steps(t->opt[0] ? t->opt[0] : t->opt[1]);
}

static void add_train_meta(ag_st_writer *w, const ag_gpt_trainer *t)
{
    const ag_gpt_train_config *c = &t->cfg;
    ag_ckpt_run_meta(w, c->batch, c->lr, c->weight_decay, c->clip, c->seed, t->data_rng.state);
    ag_ckpt_meta(w, "min_lr", "%.17g", c->min_lr);
    ag_ckpt_meta(w, "warmup", "%ld", c->warmup);
    ag_ckpt_meta(w, "decay_steps", "%ld", c->decay_steps);
    ag_ckpt_meta(w, "beta1", "%.17g", c->beta1);
    ag_ckpt_meta(w, "beta2", "%.17g", c->beta2);
    ag_ckpt_meta(w, "eps", "%.17g", c->eps);
    ag_ckpt_meta(w, "dropout_rng", "%" PRIu64, t->dropout_rng.state);
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
    size_t sets = (size_t)(1 + slots);
    /* every tensor is made as it is written (fill), from sets of buffers:
     * the weights, then AdamW's m and v; nothing a model's size is copied */
    ag_real **src = malloc(sets * g->n_params * sizeof(*src));
    file_fill *fills = NULL;
    ag_st_writer *w = ag_ckpt_writer_new(FORMAT, VERSION);
    if (!map_make(&m, g) || !src || !w || !(fills = malloc(sets * m.n * sizeof(*fills)))) {
        free(m.t), free(src), ag_st_writer_free(w);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }
    add_model_meta(w, g, vocab);
    ag_status st = AG_OK;
    if (t) {
        add_train_meta(w, t);
        /* the counters within what every reader accepts, so the file loads again */
        st = ag_ckpt_counts_write(w, path, t->step, optim_steps(t), err, errlen);
    }
    for (int slot = -1; st == AG_OK && slot < slots; slot++) {
        ag_real **set = src + (size_t)(slot + 1) * g->n_params;
        buffers(g, t, slot, set);
        for (size_t k = 0; k < m.n; k++) {
            file_tensor *ft = &m.t[k];
            file_fill *f = &fills[(size_t)(slot + 1) * m.n + k];
            *f = (file_fill){.g = g, .t = ft, .src = set};
            char name[NAME_MAX_LEN + 16];
            if (slot < 0)
                snprintf(name, sizeof(name), "%s", ft->name);
            else
                snprintf(name, sizeof(name), "optim.%s.%s", ft->name, slot ? "v" : "m");
            ag_st_add_fill(w, name, ft->ndim, ft->shape, fill, f);
            if (slot < 0 && k == m.wte) /* the tied head: the same numbers again */
                ag_st_add_fill(w, "lm_head.weight", ft->ndim, ft->shape, fill, f);
        }
    }
    if (st == AG_OK)
        st = ag_st_save(w, path, err, errlen);
    ag_st_writer_free(w);
    free(m.t);
    free(src);
    free(fills);
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
    ag_ckpt ck; /* the file and its name */
    ag_gpt_config cfg;
    ag_vocab *vocab;
    int has_train;
    ag_gpt_train_config train;
    long step, optim_steps;
    uint64_t data_rng, dropout_rng;
};

static int read_model_meta(ag_gpt_file *f, char *err, size_t errlen)
{
    const ag_st_file *s = f->ck.st;
    const char *p = f->ck.path, *v;
    char q[AG_IO_QUOTE_LEN];
    ag_gpt_config *c = &f->cfg;
    int residual, layernorm, mlp;
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
    if (strcmp(v, "learned") != 0 && strcmp(v, "none") != 0)
        return ag_ckpt_fail(&f->ck, err, errlen, "metadata posenc '%s' is not learned or none",
                            ag_io_show(v, q, sizeof(q)));
    c->no_posenc = strcmp(v, "none") == 0;
    c->no_residual = !residual, c->no_layernorm = !layernorm, c->no_mlp = !mlp;
    if (c->dim % c->heads != 0)
        return ag_ckpt_fail(&f->ck, err, errlen, "metadata n_head %d does not divide n_embd %d",
                            c->heads, c->dim);
    char verr[192];
    if (!ag_meta_str(s, p, "vocab", &v, err, errlen))
        return 0;
    if (!(f->vocab = ag_vocab_from_chars(v, verr, sizeof(verr))))
        return ag_ckpt_fail(&f->ck, err, errlen, "metadata %s", verr);
    if (ag_vocab_size(f->vocab) != c->vocab)
        return ag_ckpt_fail(&f->ck, err, errlen,
                            "metadata vocab has %d characters, vocab_size says %d",
                            ag_vocab_size(f->vocab), c->vocab);
    return 1;
}

/* A trainer's settings and progress, when the file has them. */
static int read_train_meta(ag_gpt_file *f, char *err, size_t errlen)
{
    const ag_st_file *s = f->ck.st;
    const char *p = f->ck.path;
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
           ag_ckpt_counts_read(&f->ck, &f->step, &f->optim_steps, err, errlen) &&
           ag_meta_u64(s, p, "data_rng", &f->data_rng, err, errlen) &&
           ag_meta_u64(s, p, "dropout_rng", &f->dropout_rng, err, errlen);
}

/* The metadata's words for what calls for a file tensor and what fixes
 * its shape (ag_ckpt_tensor's need and fix), made once per file. */
typedef struct file_words {
    char need[N_NEED][48];
    char block_need[N_NEED][64]; /* the same in a block: "n_layer 2, bias true" */
    char fix[N_FIX][64];
    const ag_gpt_file *f;
} file_words;

static void words_make(file_words *w, const ag_gpt_file *f)
{
    const ag_gpt_config *c = &f->cfg;
    int V = c->vocab, T = c->seq, L = c->layers, C = c->dim;
    w->f = f;
    snprintf(w->need[NEED_ALWAYS], 48, "format %s", FORMAT);
    snprintf(w->need[NEED_LAYER], 48, "n_layer %d", L);
    snprintf(w->need[NEED_BIAS], 48, "bias true");
    snprintf(w->need[NEED_LAYERNORM], 48, "layernorm true");
    snprintf(w->need[NEED_LN_BIAS], 48, "layernorm true, bias true");
    snprintf(w->need[NEED_MLP], 48, "mlp true");
    snprintf(w->need[NEED_MLP_BIAS], 48, "mlp true, bias true");
    snprintf(w->need[NEED_MLP_LN], 48, "mlp true, layernorm true");
    snprintf(w->need[NEED_MLP_LN_BIAS], 48, "mlp true, layernorm true, bias true");
    snprintf(w->need[NEED_POSENC], 48, "posenc learned");
    snprintf(w->need[NEED_TRAIN], 48, "step (a trainer's checkpoint)");
    for (int k = 0; k < N_NEED; k++)
        if (k == NEED_LAYER || k == NEED_ALWAYS)
            snprintf(w->block_need[k], 64, "n_layer %d", L);
        else
            snprintf(w->block_need[k], 64, "n_layer %d, %s", L, w->need[k]);
    snprintf(w->fix[FIX_VC], 64, "vocab_size %d, n_embd %d", V, C);
    snprintf(w->fix[FIX_TC], 64, "block_size %d, n_embd %d", T, C);
    snprintf(w->fix[FIX_C], 64, "n_embd %d", C);
    snprintf(w->fix[FIX_3C], 64, "n_embd %d (3 x n_embd)", C);
    snprintf(w->fix[FIX_3CC], 64, "n_embd %d (3 x n_embd by n_embd)", C);
    snprintf(w->fix[FIX_CC], 64, "n_embd %d (n_embd by n_embd)", C);
    snprintf(w->fix[FIX_4C], 64, "n_embd %d (4 x n_embd)", C);
    snprintf(w->fix[FIX_4CC], 64, "n_embd %d (4 x n_embd by n_embd)", C);
    snprintf(w->fix[FIX_C4C], 64, "n_embd %d (n_embd by 4 x n_embd)", C);
}

/* Which setting rules out a tensor the file holds (ag_ckpt_extra_fn). */
static const char *why_extra(const void *ctx, const char *name, char *buf, size_t len)
{
    const file_words *w = ctx;
    const ag_gpt_config *c = &w->f->cfg;
    const char *base = strncmp(name, "optim.", 6) == 0 ? name + 6 : name;
    int layer;
    if (base != name && !w->f->has_train)
        snprintf(buf, len,
                 "the metadata has no step (a model, not a trainer's checkpoint), but "
                 "the file holds optimizer state");
    else if (sscanf(base, "transformer.h.%d.", &layer) == 1 && layer >= c->layers)
        snprintf(buf, len, "metadata n_layer is %d, but the file holds block %d", c->layers, layer);
    else if ((strstr(base, ".mlp.") || strstr(base, ".ln_2.")) && c->no_mlp)
        snprintf(buf, len, "metadata mlp is false, but the file holds an MLP (or its layer norm)");
    else if (strstr(base, "ln_") && c->no_layernorm)
        snprintf(buf, len, "metadata layernorm is false, but the file holds a layer norm");
    else if (strstr(base, ".bias") && !c->bias)
        snprintf(buf, len, "metadata bias is false, but the file holds a bias");
    else if (strcmp(base, "transformer.wpe.weight") == 0 && c->no_posenc)
        snprintf(buf, len, "metadata posenc is none, but the file holds position vectors");
    else
        return NULL;
    return buf;
}

/* Every tensor the settings call for, with its shape, and nothing else:
 * from the header, before a model is made from it. */
static ag_status check_tensors(const ag_gpt_file *f, char *err, size_t errlen)
{
    file_map m;
    file_words *w = malloc(sizeof(*w));
    if (!w || !map_of_config(&m, &f->cfg)) {
        free(w);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", f->ck.path);
    }
    words_make(w, f);
    ag_ckpt_list l = {0};
    for (int slot = -1; slot < (f->has_train ? 2 : 0); slot++)
        for (size_t k = 0; k < m.n; k++) {
            const file_tensor *t = &m.t[k];
            const char *need = slot >= 0       ? w->need[NEED_TRAIN]
                               : t->layer >= 0 ? w->block_need[t->need]
                                               : w->need[t->need];
            if (slot < 0)
                ag_ckpt_list_add(&l, t->ndim, t->shape[0], t->shape[1], need, w->fix[t->fix], 0,
                                 "%s", t->name);
            else
                ag_ckpt_list_add(&l, t->ndim, t->shape[0], t->shape[1], need, w->fix[t->fix], 0,
                                 "optim.%s.%s", t->name, slot ? "v" : "m");
            if (slot < 0 && k == m.wte) /* the tied head: may be there, as wte */
                ag_ckpt_list_add(&l, t->ndim, t->shape[0], t->shape[1], need, w->fix[t->fix], 1,
                                 "lm_head.weight");
        }
    ag_status st = ag_ckpt_expect(&f->ck, &l, why_extra, w, err, errlen);
    ag_ckpt_list_free(&l);
    free(m.t);
    free(w);
    return st;
}

static ag_status file_open(const char *path, const void *buf, size_t len, ag_gpt_file **out,
                           char *err, size_t errlen)
{
    if (!out || !path)
        return ag_err(AG_ERR_ARG, err, errlen, "load: %s is NULL", out ? "path" : "out");
    *out = NULL;
    ag_gpt_file *f = calloc(1, sizeof(*f));
    if (!f)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    ag_status st = ag_ckpt_open(&f->ck, path, buf, len, FORMAT, "attograd GPT checkpoint", VERSION,
                                err, errlen);
    if (st == AG_OK && (!read_model_meta(f, err, errlen) || !read_train_meta(f, err, errlen)))
        st = AG_ERR_FORMAT;
    if (st == AG_OK)
        st = check_tensors(f, err, errlen);
    if (st != AG_OK) {
        ag_gpt_file_free(f);
        return st;
    }
    *out = f;
    return AG_OK;
}

ag_status ag_gpt_file_load(const char *path, ag_gpt_file **out, char *err, size_t errlen)
{
    return file_open(path, NULL, 0, out, err, errlen);
}

ag_status ag_gpt_file_parse(const void *buf, size_t len, const char *name, ag_gpt_file **out,
                            char *err, size_t errlen)
{
    if (!buf)
        return ag_err(AG_ERR_ARG, err, errlen, "load: the buffer is NULL");
    return file_open(name ? name : "<buffer>", buf, len, out, err, errlen);
}

void ag_gpt_file_free(ag_gpt_file *f)
{
    if (!f)
        return;
    ag_ckpt_close(&f->ck);
    ag_vocab_free(f->vocab);
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

const char *ag_gpt_file_path(const ag_gpt_file *f)
{
    return f ? f->ck.path : NULL;
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

long ag_gpt_file_optim_steps(const ag_gpt_file *f)
{
    return f && f->has_train ? f->optim_steps : 0;
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
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", f->ck.path);
    }
    buffers(g, t, slot, dst);
    int ok = 1;
    for (size_t k = 0; k < m.n && ok; k++) {
        char name[NAME_MAX_LEN + 16];
        const file_tensor *ft = &m.t[k];
        if (m.size >= (1 << 22) && ag_progress_report("loading", (double)k, (double)m.n) != AG_OK) {
            ag_err(AG_ERR_STOPPED, err, errlen, "%s: stopped while loading (interrupted)",
                   f->ck.path);
            ok = 0;
            break;
        }
        if (slot < 0)
            snprintf(name, sizeof(name), "%s", ft->name);
        else
            snprintf(name, sizeof(name), "optim.%s.%s", ft->name, slot ? "v" : "m");
        /* Adam's v is a mean of squares: a negative one is NaN at the next step */
        ok = ag_ckpt_read(&f->ck, name, ft->ndim, ft->shape, tmp, slot == 1, err, errlen) == AG_OK;
        if (ok)
            unpack(g, ft, tmp, dst);
    }
    /* lm_head, when there, must be wte: the head is tied */
    if (ok && slot < 0 && ag_st_dtype(f->ck.st, "lm_head.weight")) {
        const file_tensor *e = &m.t[m.wte];
        ok = ag_st_get(f->ck.st, "lm_head.weight", e->ndim, e->shape, tmp, err, errlen) == AG_OK;
        if (ok && memcmp(tmp, g->wte->data, e->size * sizeof(ag_real)) != 0)
            ok = ag_ckpt_fail(&f->ck, err, errlen,
                              "lm_head.weight differs from transformer.wte.weight (the output "
                              "head is tied to the embedding)");
    }
    free(m.t);
    free(dst);
    free(tmp);
    return ok ? AG_OK : ag_interrupted() ? AG_ERR_STOPPED : AG_ERR_FORMAT;
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
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: %s", f->ck.path, gerr);
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
                      f->ck.path);
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
