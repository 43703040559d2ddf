/*
 * gpt.c - a GPT: the attention layer grown into a language model. Token and
 * position vectors go through pre-norm residual blocks (attention, then an
 * MLP, each reading a layer-normed copy of the stream and adding its result
 * back), a final layer norm, and the token table again as the output head:
 *
 *   x = wte[ids] + wpe[0:T]                          (B,T,C)
 *   x = x + attention(ln_1(x))                       each block: tokens talk
 *   x = x + gelu(ln_2(x) w_fc) w_proj                each block: each thinks
 *   logits = ln_f(x) wte^T                           (B,T,V)
 *
 * Everything here is recorded on the tape with the library's ops, so the
 * model's gradient is checked like any op's; gpt_cache.c is the same math
 * without a tape, for sampling.
 */
#include "gpt.h"
#include "../kernels/cpu.h"
#include "../kernels/kernels.h"
#include "../kernels/threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GPT_STD 0.02       /* GPT-2's weight scale */
#define GPT_MAX_SIZE 65536 /* seq and dim */
#define GPT_MAX_LAYERS 1024

ag_gpt_config ag_gpt_defaults(int vocab)
{
    ag_gpt_config c;
    memset(&c, 0, sizeof(c));
    c.vocab = vocab;
    c.seq = AG_GPT_SEQ;
    c.layers = AG_GPT_LAYERS;
    c.heads = AG_GPT_HEADS;
    c.dim = AG_GPT_DIM;
    return c;
}

static int check_config(const ag_gpt_config *c, char *err, size_t errlen)
{
    if (!c) {
        ag_err(AG_ERR_ARG, err, errlen, "gpt: the configuration is NULL");
        return 0;
    }
    const char *bad = NULL;
    long v = 0, lo = 1, hi = GPT_MAX_SIZE;
    if (c->vocab < 1 || c->vocab > AG_VOCAB_MAX)
        bad = "vocab", v = c->vocab, hi = AG_VOCAB_MAX;
    else if (c->seq < 1 || c->seq > GPT_MAX_SIZE)
        bad = "seq", v = c->seq;
    else if (c->layers < 0 || c->layers > GPT_MAX_LAYERS)
        bad = "layers", v = c->layers, lo = 0, hi = GPT_MAX_LAYERS;
    else if (c->dim < 1 || c->dim > GPT_MAX_SIZE)
        bad = "dim", v = c->dim;
    else if (c->heads < 1 || c->heads > c->dim)
        bad = "heads", v = c->heads, hi = c->dim;
    if (bad) {
        ag_err(AG_ERR_ARG, err, errlen, "gpt: %s %ld is out of range (%ld..%ld)", bad, v, lo, hi);
        return 0;
    }
    if (c->dim % c->heads != 0) {
        ag_err(AG_ERR_ARG, err, errlen, "gpt: heads %d does not divide dim %d", c->heads, c->dim);
        return 0;
    }
    if (!(c->dropout >= 0 && c->dropout < 1)) {
        ag_err(AG_ERR_ARG, err, errlen, "gpt: dropout %g is not in [0, 1)", c->dropout);
        return 0;
    }
    return 1;
}

/* Append a parameter of the given shape (NULL when out of memory). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static ag_tensor *
add_param(ag_gpt *g, int ndim, const int *shape, const char *fmt, ...)
{
    ag_tensor *t = ag_param_new(ndim, shape);
    if (!t)
        return NULL;
    g->params[g->n_params] = t;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->names[g->n_params], AG_GPT_NAME_MAX, fmt, ap);
    va_end(ap);
    g->n_params++;
    return t;
}

/* Register a weight the attention layer owns. */
static void add_owned(ag_gpt *g, ag_tensor *t, int layer, const char *name)
{
    g->params[g->n_params] = t;
    g->borrowed[g->n_params] = 1;
    snprintf(g->names[g->n_params], AG_GPT_NAME_MAX, "h.%d.attn.%s", layer, name);
    g->n_params++;
}

static void fill_ones(ag_tensor *t)
{
    if (t)
        for (size_t i = 0; i < t->size; i++)
            t->data[i] = 1;
}

/* A layer norm's weight (ones) and, with bias, its bias (zeros). */
static int add_norm(ag_gpt *g, ag_tensor **w, ag_tensor **b, const char *name)
{
    int C = g->cfg.dim;
    *w = add_param(g, 1, &C, "%s.weight", name);
    fill_ones(*w);
    if (*w && g->cfg.bias)
        *b = add_param(g, 1, &C, "%s.bias", name);
    return *w && (!g->cfg.bias || *b);
}

/* The parameters of block i, in ag_gpt_params' order. */
static int make_layer(ag_gpt *g, int i, char *err, size_t errlen)
{
    ag_gpt_layer *l = &g->h[i];
    const ag_gpt_config *c = &g->cfg;
    int C = c->dim, C4 = 4 * c->dim;
    char name[AG_GPT_NAME_MAX];
    snprintf(name, sizeof(name), "h.%d.ln_1", i);
    if (!c->no_layernorm && !add_norm(g, &l->ln1_w, &l->ln1_b, name))
        return 0;
    l->attn = ag_attention_new(C, c->heads, 1, NULL, err, errlen);
    if (!l->attn)
        return 0;
    static const char *const w_names[4] = {"wq", "wk", "wv", "wo"};
    static const char *const b_names[4] = {"bq", "bk", "bv", "bo"};
    ag_tensor **bias[4] = {&l->bq, &l->bk, &l->bv, &l->bo};
    for (int k = 0; k < 4; k++) {
        add_owned(g, ag_attention_param(l->attn, w_names[k]), i, w_names[k]);
        if (c->bias && !(*bias[k] = add_param(g, 1, &C, "h.%d.attn.%s", i, b_names[k])))
            return 0;
    }
    if (c->no_mlp)
        return 1;
    snprintf(name, sizeof(name), "h.%d.ln_2", i);
    if (!c->no_layernorm && !add_norm(g, &l->ln2_w, &l->ln2_b, name))
        return 0;
    if (!(l->w_fc = add_param(g, 2, (int[]){C, C4}, "h.%d.mlp.w_fc", i)) ||
        (c->bias && !(l->b_fc = add_param(g, 1, &C4, "h.%d.mlp.b_fc", i))) ||
        !(l->w_proj = add_param(g, 2, (int[]){C4, C}, "h.%d.mlp.w_proj", i)) ||
        (c->bias && !(l->b_proj = add_param(g, 1, &C, "h.%d.mlp.b_proj", i))))
        return 0;
    return 1;
}

/* GPT-2's initialisation: normal(0, 0.02) everywhere, and the projections
 * that write into the residual stream scaled down by sqrt(2 layers), so
 * that the stream's variance does not grow with depth. */
static ag_status init_weights(ag_gpt *g, ag_rng *rng)
{
    double resid = GPT_STD / sqrt(2.0 * (g->cfg.layers > 0 ? g->cfg.layers : 1));
    ag_fill_normal(g->wte, rng, 0, GPT_STD);
    ag_fill_normal(g->wpe, rng, 0, GPT_STD);
    for (int i = 0; i < g->cfg.layers; i++) {
        /* a large model takes a while: shown, and stopped when interrupted */
        if (ag_progress_report("initialising", i, g->cfg.layers) != AG_OK)
            return AG_ERR_STOPPED;
        ag_gpt_layer *l = &g->h[i];
        ag_fill_normal(ag_attention_param(l->attn, "wq"), rng, 0, GPT_STD);
        ag_fill_normal(ag_attention_param(l->attn, "wk"), rng, 0, GPT_STD);
        ag_fill_normal(ag_attention_param(l->attn, "wv"), rng, 0, GPT_STD);
        ag_fill_normal(ag_attention_param(l->attn, "wo"), rng, 0, resid);
        ag_fill_normal(l->w_fc, rng, 0, GPT_STD);
        ag_fill_normal(l->w_proj, rng, 0, resid);
    }
    return AG_OK;
}

ag_gpt *ag_gpt_new(const ag_gpt_config *cfg, ag_rng *rng, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!check_config(cfg, err, errlen))
        return NULL;
    ag_gpt *g = ag_calloc(1, sizeof(*g));
    if (!g) {
        ag_err(AG_ERR_NOMEM, err, errlen, "gpt: out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    int V = cfg->vocab, T = cfg->seq, C = cfg->dim, L = cfg->layers;
    size_t most = 4 + (size_t)L * 16; /* wte, wpe, ln_f's two; 16 per block at most */
    g->params = ag_calloc(most, sizeof(*g->params));
    g->names = ag_calloc(most, sizeof(*g->names));
    g->stash = ag_calloc(most, sizeof(*g->stash));
    g->borrowed = ag_calloc(most, 1);
    g->h = ag_calloc(L > 0 ? (size_t)L : 1, sizeof(*g->h));
    g->positions = ag_malloc((size_t)T * sizeof(int));
    if (!g->params || !g->names || !g->stash || !g->borrowed || !g->h || !g->positions)
        goto nomem;
    for (int t = 0; t < T; t++)
        g->positions[t] = t;
    if (!(g->wte = add_param(g, 2, (int[]){V, C}, "wte")) ||
        (!cfg->no_posenc && !(g->wpe = add_param(g, 2, (int[]){T, C}, "wpe"))))
        goto nomem;
    for (int i = 0; i < L; i++) {
        char lerr[128] = "";
        if (!make_layer(g, i, lerr, sizeof(lerr))) {
            if (lerr[0])
                ag_err(AG_ERR_ARG, err, errlen, "gpt: %s", lerr);
            else
                ag_err(AG_ERR_NOMEM, err, errlen, "gpt: out of memory");
            ag_gpt_free(g);
            return NULL;
        }
    }
    if (!cfg->no_layernorm && !add_norm(g, &g->lnf_w, &g->lnf_b, "ln_f"))
        goto nomem;
    if (rng && init_weights(g, rng) != AG_OK) {
        ag_err(AG_ERR_STOPPED, err, errlen, "gpt: stopped while initialising (interrupted)");
        ag_gpt_free(g);
        return NULL;
    }
    return g;
nomem:
    ag_err(AG_ERR_NOMEM, err, errlen,
           "gpt: out of memory for a model of dim %d, %d layers, vocab %d", C, L, V);
    ag_gpt_free(g);
    return NULL;
}

void ag_gpt_free(ag_gpt *g)
{
    if (!g)
        return;
    /* the attention layers own their weights; every other parameter is ours */
    for (size_t i = 0; i < g->n_params; i++)
        if (!g->borrowed[i])
            ag_param_free(g->params[i]);
    if (g->h)
        for (int i = 0; i < g->cfg.layers; i++)
            ag_attention_free(g->h[i].attn);
    free(g->h);
    free(g->params);
    free(g->names);
    free(g->stash);
    free(g->borrowed);
    free(g->positions);
    free(g);
}

const ag_gpt_config *ag_gpt_get_config(const ag_gpt *g)
{
    return g ? &g->cfg : NULL;
}

ag_status ag_gpt_set_dropout(ag_gpt *g, double p)
{
    if (!g || !(p >= 0 && p < 1))
        return AG_ERR_ARG;
    g->cfg.dropout = p;
    return AG_OK;
}

size_t ag_gpt_params(ag_gpt *g, ag_tensor **params, const char **names, size_t max)
{
    if (!g)
        return 0;
    for (size_t i = 0; i < g->n_params && i < max; i++) {
        if (params)
            params[i] = g->params[i];
        if (names)
            names[i] = g->names[i];
    }
    return g->n_params;
}

ag_tensor *ag_gpt_param(ag_gpt *g, const char *name)
{
    if (!g || !name)
        return NULL;
    for (size_t i = 0; i < g->n_params; i++)
        if (strcmp(g->names[i], name) == 0)
            return g->params[i];
    return NULL;
}

size_t ag_gpt_n_weights(const ag_gpt *g)
{
    size_t n = 0;
    for (size_t i = 0; g && i < g->n_params; i++)
        n += g->params[i]->size;
    return n;
}

void ag_gpt_grads_off(ag_gpt *g)
{
    for (size_t i = 0; i < g->n_params; i++) {
        g->stash[i] = g->params[i]->grad;
        g->params[i]->grad = NULL;
    }
}

void ag_gpt_grads_on(ag_gpt *g)
{
    for (size_t i = 0; i < g->n_params; i++)
        g->params[i]->grad = g->stash[i];
}

/* ---- the forward pass ---- */

/* x W (+ b): (..., d_in) @ (d_in, d_out) -> (..., d_out). */
static ag_tensor *linear(ag_tape *tape, const ag_tensor *x, const ag_tensor *w, const ag_tensor *b)
{
    ag_tensor *y = ag_matmul(tape, x, w);
    return b ? ag_add(tape, y, b) : y;
}

/* Layer norm over C, or x itself when the ablation removed it (w NULL). */
static ag_tensor *norm(ag_tape *tape, ag_tensor *x, const ag_tensor *w, const ag_tensor *b)
{
    return w ? ag_layernorm(tape, x, w, b) : x;
}

static ag_tensor *drop(ag_tape *tape, const ag_gpt *g, ag_tensor *x, ag_rng *rng)
{
    return rng && g->cfg.dropout > 0 ? ag_dropout(tape, x, g->cfg.dropout, rng) : x;
}

/* Causal self-attention, C -> C. Without biases it is the attention layer
 * itself (the fused op, or op by op after ag_gpt_set_fused(g, 0)); with
 * them, the op-by-op form with the biases added to Q, K, V and the output.
 * *p (may be NULL) gets the softmax weights P (B,H,T,T). */
static ag_tensor *attention(ag_tape *tape, const ag_gpt *g, const ag_gpt_layer *l,
                            const ag_tensor *x, ag_tensor **p)
{
    if (!g->cfg.bias)
        return ag_attention_forward(tape, l->attn, x, p);
    ag_attention *a = l->attn;
    ag_tensor *q = linear(tape, x, ag_attention_param(a, "wq"), l->bq);
    ag_tensor *k = linear(tape, x, ag_attention_param(a, "wk"), l->bk);
    ag_tensor *v = linear(tape, x, ag_attention_param(a, "wv"), l->bv);
    ag_tensor *o = ag_nn_attend(tape, q, k, v, g->cfg.heads, 1, p);
    ag_tensor *out = linear(tape, o, ag_attention_param(a, "wo"), l->bo);
    if (!out && p)
        *p = NULL;
    return out;
}

/* x + branch, or the branch alone without residual connections. */
static ag_tensor *residual(ag_tape *tape, const ag_gpt *g, ag_tensor *x, ag_tensor *branch)
{
    return g->cfg.no_residual ? branch : ag_add(tape, x, branch);
}

/* Block `layer` on x; *p (may be NULL) gets its attention weights. */
static ag_tensor *block(ag_tape *tape, ag_gpt *g, int layer, const ag_tensor *x,
                        ag_rng *dropout_rng, ag_tensor **p)
{
    if (p)
        *p = NULL;
    if (!tape || ag_tape_status(tape) != AG_OK)
        return NULL;
    if (!g || !x || layer < 0 || layer >= g->cfg.layers) {
        ag_tape_fail(tape, AG_ERR_ARG, "gpt block: %s",
                     !g   ? "the model is NULL"
                     : !x ? "x is NULL"
                          : "no such layer");
        return NULL;
    }
    const ag_gpt_layer *l = &g->h[layer];
    ag_tensor *h = (ag_tensor *)x;
    /* x = x + attn(ln_1(x)): the tokens exchange information */
    ag_tensor *a = attention(tape, g, l, norm(tape, h, l->ln1_w, l->ln1_b), p);
    h = residual(tape, g, h, drop(tape, g, a, dropout_rng));
    if (g->cfg.no_mlp)
        return h;
    /* x = x + mlp(ln_2(x)): each position computes on what it gathered */
    ag_tensor *m = norm(tape, h, l->ln2_w, l->ln2_b);
    m = linear(tape, ag_gelu(tape, linear(tape, m, l->w_fc, l->b_fc)), l->w_proj, l->b_proj);
    return residual(tape, g, h, drop(tape, g, m, dropout_rng));
}

/* Tokens and positions: (B,T,C) + (T,C), and dropout. */
static ag_tensor *embed(ag_tape *tape, ag_gpt *g, const int *ids, int batch, int seq,
                        ag_rng *dropout_rng)
{
    ag_tensor *x = ag_embedding(tape, g->wte, ids, 2, (int[]){batch, seq});
    if (g->wpe)
        x = ag_add(tape, x, ag_embedding(tape, g->wpe, g->positions, 1, &seq));
    return drop(tape, g, x, dropout_rng);
}

ag_tensor *ag_gpt_block(ag_tape *tape, ag_gpt *g, int layer, const ag_tensor *x,
                        ag_rng *dropout_rng)
{
    return block(tape, g, layer, x, dropout_rng, NULL);
}

ag_tensor *ag_gpt_forward_taps(ag_tape *tape, ag_gpt *g, const int *ids, int batch, int seq,
                               ag_rng *dropout_rng, const ag_gpt_taps *taps)
{
    for (int i = 0; taps && g && i < g->cfg.layers; i++) {
        if (taps->attn)
            taps->attn[i] = NULL;
        if (taps->resid)
            taps->resid[i] = NULL;
    }
    if (!tape || ag_tape_status(tape) != AG_OK)
        return NULL;
    if (!g || !ids) {
        ag_tape_fail(tape, AG_ERR_ARG, "gpt: %s is NULL", g ? "ids" : "the model");
        return NULL;
    }
    if (batch < 1 || seq < 1 || seq > g->cfg.seq) {
        ag_tape_fail(tape, AG_ERR_ARG, "gpt: ids are (%d,%d): needs batch >= 1 and 1..%d positions",
                     batch, seq, g->cfg.seq);
        return NULL;
    }
    ag_tensor *x = embed(tape, g, ids, batch, seq, dropout_rng);
    for (int i = 0; i < g->cfg.layers; i++) {
        x = block(tape, g, i, x, dropout_rng, taps && taps->attn ? &taps->attn[i] : NULL);
        if (taps && taps->resid)
            taps->resid[i] = x;
    }
    x = norm(tape, x, g->lnf_w, g->lnf_b);
    /* the head is the token table: logits = x wte^T, (B,T,C) x (V,C) -> (B,T,V) */
    ag_tensor *logits = ag_matmul_bt(tape, x, g->wte);
    for (int i = 0; !logits && taps && i < g->cfg.layers; i++) {
        if (taps->attn) /* a failed pass hands out nothing */
            taps->attn[i] = NULL;
        if (taps->resid)
            taps->resid[i] = NULL;
    }
    return logits;
}

ag_tensor *ag_gpt_forward(ag_tape *tape, ag_gpt *g, const int *ids, int batch, int seq,
                          ag_rng *dropout_rng)
{
    return ag_gpt_forward_taps(tape, g, ids, batch, seq, dropout_rng, NULL);
}

void ag_gpt_set_fused(ag_gpt *g, int fused)
{
    for (int i = 0; g && i < g->cfg.layers; i++)
        ag_attention_set_fused(g->h[i].attn, fused);
}

ag_tensor *ag_gpt_loss(ag_tape *tape, ag_gpt *g, const int *ids, const int *targets, int batch,
                       int seq, ag_rng *dropout_rng, ag_tensor **logits_out)
{
    ag_tensor *logits = ag_gpt_forward(tape, g, ids, batch, seq, dropout_rng);
    if (logits_out)
        *logits_out = logits;
    return ag_cross_entropy(tape, logits, targets, (size_t)batch * (size_t)(seq > 0 ? seq : 0));
}

/* ---- evaluation ---- */

/* The rows' losses are summed LOSS_ROWS at a time, in row order, over the
 * threads; the chunks' sums are then added in order (LOSS_CHUNKS at a
 * time), so any number of threads gives the same bits. */
#define LOSS_ROWS 64
#define LOSS_CHUNKS 256

typedef struct loss_job {
    const ag_real *z; /* (rows, V) */
    const int *y;
    size_t V;
    int level; /* the rows' vector level (kernels.h), 0 for the plain row */
    double sums[LOSS_CHUNKS];
} loss_job;

static void loss_chunk(void *ctx, size_t lo, size_t hi)
{
    loss_job *j = ctx;
    double s = 0;
    for (size_t r = lo; r < hi; r++) /* -log softmax(z)[y], as cross_entropy's rows */
        s += ag_fast_cross_entropy_row(j->z + r * j->V, j->V, j->y[r], NULL, j->level);
    j->sums[lo / LOSS_ROWS] = s;
}

/* The loss of each of rows rows of logits z (rows, V) against y, summed
 * in double into *acc. */
static void rows_loss(const ag_real *z, const int *y, size_t rows, size_t V, double *acc)
{
    loss_job j = {.V = V, .level = ag_reference_kernels() ? 0 : ag_cpu_row_level()};
    for (size_t r0 = 0; r0 < rows; r0 += LOSS_ROWS * LOSS_CHUNKS) {
        size_t n = rows - r0 < LOSS_ROWS * LOSS_CHUNKS ? rows - r0 : LOSS_ROWS * LOSS_CHUNKS;
        j.z = z + r0 * V, j.y = y + r0;
        ag_parallel_range(n, LOSS_ROWS, loss_chunk, &j);
        for (size_t c = 0; c < (n + LOSS_ROWS - 1) / LOSS_ROWS; c++)
            *acc += j.sums[c];
    }
}

/* A loss that is not finite, where it came from ("" or " of validation
 * windows 32..63"). */
static ag_status not_finite(double acc, const char *where, char *err, size_t errlen)
{
    return ag_err(AG_ERR_NUMERIC, err, errlen, "gpt: the loss%s is %s", where,
                  isnan(acc) ? "NaN" : "infinite");
}

ag_status ag_gpt_eval_batch(ag_tape *tape, ag_gpt *g, const int *x, const int *y, int batch,
                            int seq, double *sum, char *err, size_t errlen)
{
    ag_tensor *logits = ag_gpt_forward(tape, g, x, batch, seq, NULL);
    ag_status st = ag_tape_status(tape);
    if (st != AG_OK) {
        ag_err(st, err, errlen, "%s", ag_tape_error(tape));
        ag_tape_reset(tape);
        return st;
    }
    double acc = 0;
    rows_loss(logits->data, y, (size_t)batch * (size_t)seq, (size_t)g->cfg.vocab, &acc);
    ag_tape_reset(tape);
    if (!isfinite(acc))
        return not_finite(acc, "", err, errlen);
    *sum += acc;
    return AG_OK;
}

size_t ag_gpt_val_chunk(const ag_gpt_config *c)
{
    size_t per = (size_t)c->seq * (size_t)c->dim; /* one window's residual stream */
    size_t attn = (size_t)c->heads * (size_t)c->seq * (size_t)c->seq; /* its weights, with bias */
    if (c->bias && attn > per)
        per = attn;
    size_t n = AG_GPT_VAL_VALUES / (per ? per : 1);
    return n < 1 ? 1 : n > AG_GPT_VAL_WINDOWS ? AG_GPT_VAL_WINDOWS : n;
}

size_t ag_gpt_head_rows(const ag_gpt_config *c)
{
    size_t n = AG_GPT_HEAD_VALUES / (size_t)(c->vocab > 0 ? c->vocab : 1);
    return n < 1 ? 1 : n;
}

/* The tape's error as the caller's, and the tape reset. */
static ag_status tape_error(ag_tape *tape, char *err, size_t errlen)
{
    ag_status st = ag_tape_status(tape);
    ag_err(st, err, errlen, "%s", ag_tape_error(tape));
    ag_tape_reset(tape);
    return st;
}

/* dst[0, n) = src[0, n), shared out over the threads 64 KB at a time. */
#define COPY_GRAIN 16384

typedef struct copy_job {
    ag_real *dst;
    const ag_real *src;
} copy_job;

static void copy_chunk(void *ctx, size_t lo, size_t hi)
{
    const copy_job *j = ctx;
    memcpy(j->dst + lo, j->src + lo, (hi - lo) * sizeof(ag_real));
}

static void copy_stream(ag_real *dst, const ag_real *src, size_t n)
{
    copy_job j = {dst, src};
    ag_parallel_range(n, COPY_GRAIN, copy_chunk, &j);
}

/* Whether a validation that reports (report: on the calling thread) or
 * not (on a worker) was interrupted; done of total windows so far. */
static int val_stopped(int report, double done, double total)
{
    return report ? ag_progress_report("validation", done, total) != AG_OK : ag_interrupted();
}

/* The summed loss of n windows x (n,T) against y, forward only: the stream
 * goes through one block at a time (each block's tensors released before the
 * next, the stream kept in buf, n*T*C values), and the head's logits through
 * ag_gpt_head_rows rows at a time. Gradients must be off. */
static ag_status eval_windows(ag_tape *tape, ag_gpt *g, const int *x, const int *y, int n, int T,
                              ag_real *buf, double *acc, int report, double w0, double W, char *err,
                              size_t errlen)
{
    int C = g->cfg.dim;
    size_t cells = (size_t)n * (size_t)T, V = (size_t)g->cfg.vocab;
    /* the stream between blocks: buf itself, read in place by the next block */
    ag_tensor stream = {3, {n, T, C, 1}, cells * (size_t)C, buf, NULL};
    ag_tape_reset(tape);
    ag_tensor *h = embed(tape, g, x, n, T, NULL);
    for (int l = 0; l <= g->cfg.layers; l++) {
        if (l == g->cfg.layers)
            h = norm(tape, h, g->lnf_w, g->lnf_b);
        else
            h = ag_gpt_block(tape, g, l, h, NULL);
        if (!h)
            return tape_error(tape, err, errlen);
        copy_stream(buf, h->data, stream.size);
        ag_tape_reset(tape);
        /* a block of a long chunk may take a while: its part of the chunk done */
        double part = (double)n * (l + 1) / (g->cfg.layers + 2);
        if (val_stopped(report, w0 + part, W))
            return ag_err(AG_ERR_STOPPED, err, errlen, "validation: stopped (interrupted)");
        h = &stream;
    }
    size_t step = ag_gpt_head_rows(&g->cfg);
    for (size_t r0 = 0; r0 < cells; r0 += step) {
        size_t rows = cells - r0 < step ? cells - r0 : step;
        ag_tensor hr = {2, {(int)rows, C, 1, 1}, rows * (size_t)C, buf + r0 * (size_t)C, NULL};
        ag_tensor *z = ag_matmul_bt(tape, &hr, g->wte);
        if (!z)
            return tape_error(tape, err, errlen);
        rows_loss(z->data, y + r0, rows, V, acc);
        ag_tape_reset(tape);
    }
    return AG_OK;
}

int ag_gpt_halves_at_once(size_t halves, int threads)
{
    return halves == 2 && threads >= 2 && threads <= 3;
}

void ag_gpt_run_halves(size_t halves, void (*fn)(void *ctx, size_t half), void *ctx)
{
    if (ag_gpt_halves_at_once(halves, ag_get_threads()))
        ag_parallel_for(halves, fn, ctx);
    else
        for (size_t i = 0; i < halves; i++)
            fn(ctx, i);
}

/* Half of a chunk of validation windows, on its tape (its own when the
 * halves run at once, gpt.h) and its part of the stream's buffer
 * (ag_gpt_run_halves); the halves' sums are added in order, so the bits do
 * not depend on whether they ran at once. */
typedef struct val_half {
    ag_gpt *g;
    ag_tape *tape;
    const int *x, *y;
    int n;
    ag_real *buf;
    int report;   /* 1: on the calling thread, progress reported */
    double w0, W; /* its first window, of W */
    double acc;   /* its windows' summed loss */
    ag_status st;
    char err[256];
} val_half;

static void val_half_run(void *ctx, size_t i)
{
    val_half *h = (val_half *)ctx + i;
    h->acc = 0;
    h->st = eval_windows(h->tape, h->g, h->x, h->y, h->n, h->g->cfg.seq, h->buf, &h->acc, h->report,
                         h->w0, h->W, h->err, sizeof(h->err));
}

/* The summed loss of the n windows of a chunk (x, y), in halves: on
 * tapes[0] and tapes[1] when at once, else both on tapes[0] (gpt.h). */
static ag_status eval_chunk(ag_tape *tapes[2], ag_gpt *g, const int *x, const int *y, int n,
                            ag_real *buf, double *acc, double w0, double W, char *err,
                            size_t errlen)
{
    int first = (int)ag_gpt_first_half((size_t)n);
    size_t halves = ag_gpt_halves((size_t)n), at = (size_t)first * (size_t)g->cfg.seq;
    int at_once = ag_gpt_halves_at_once(halves, ag_get_threads());
    int report = !at_once; /* a worker must not call the hook */
    val_half hv[2] = {{g, tapes[0], x, y, first, buf, report, w0, W, 0, AG_OK, ""},
                      {g, tapes[at_once ? 1 : 0], x + at, y + at, n - first,
                       buf + at * (size_t)g->cfg.dim, report, w0 + first, W, 0, AG_OK, ""}};
    ag_gpt_run_halves(halves, val_half_run, hv);
    for (size_t i = 0; i < halves; i++) {
        if (hv[i].st != AG_OK)
            return ag_err(hv[i].st, err, errlen, "%s", hv[i].err);
        *acc += hv[i].acc;
    }
    return AG_OK;
}

ag_status ag_gpt_val_loss(ag_gpt *g, const ag_text *text, double *loss, size_t *windows, char *err,
                          size_t errlen)
{
    ag_tape *tapes[2] = {ag_tape_new(), ag_tape_new()};
    ag_status st = tapes[0] && tapes[1]
                       ? ag_gpt_val_loss_on(tapes, g, text, loss, windows, err, errlen)
                       : ag_err(AG_ERR_NOMEM, err, errlen, "validation loss: out of memory");
    ag_tape_free(tapes[0]);
    ag_tape_free(tapes[1]);
    return st;
}

ag_status ag_gpt_val_loss_on(ag_tape *tapes[2], ag_gpt *g, const ag_text *text, double *loss,
                             size_t *windows, char *err, size_t errlen)
{
    if (!g || !text || !loss) {
        ag_err(AG_ERR_ARG, err, errlen, "validation loss: a NULL argument");
        return AG_ERR_ARG;
    }
    int T = g->cfg.seq;
    if (ag_vocab_size(text->vocab) != g->cfg.vocab) {
        ag_err(AG_ERR_ARG, err, errlen, "validation loss: the text has %d characters, the model %d",
               ag_vocab_size(text->vocab), g->cfg.vocab);
        return AG_ERR_ARG;
    }
    size_t W = ag_text_windows(text, T);
    if (W == 0) {
        ag_err(AG_ERR_ARG, err, errlen,
               "validation loss: the validation part (the last 10%%) has %zu characters; a "
               "window of %d needs %d",
               text->len - text->n_train, T, T + 1);
        return AG_ERR_ARG;
    }
    size_t nb = ag_gpt_val_chunk(&g->cfg), cells = nb * (size_t)T;
    if (nb > W)
        nb = W, cells = nb * (size_t)T;
    int *x = ag_malloc(2 * cells * sizeof(int));
    ag_real *buf = ag_malloc(cells * (size_t)g->cfg.dim * sizeof(ag_real));
    if (!x || !buf) {
        free(x), free(buf);
        ag_err(AG_ERR_NOMEM, err, errlen, "validation loss: out of memory");
        return AG_ERR_NOMEM;
    }
    int *y = x + cells;
    double sum = 0;
    ag_status st = AG_OK;
    size_t done = 0;
    ag_gpt_grads_off(g);
    for (size_t w0 = 0; w0 < W && st == AG_OK; w0 += nb) {
        size_t n = W - w0 < nb ? W - w0 : nb;
        if (ag_progress_report("validation", (double)w0, (double)W) != AG_OK)
            break;
        /* window i: x = val[i*T .. (i+1)*T), y = val[i*T+1 .. (i+1)*T] */
        ag_text_ids(text, text->n_train + w0 * (size_t)T, n * (size_t)T, x);
        ag_text_ids(text, text->n_train + w0 * (size_t)T + 1, n * (size_t)T, y);
        double acc = 0;
        st = eval_chunk(tapes, g, x, y, (int)n, buf, &acc, (double)w0, (double)W, err, errlen);
        if (st == AG_OK && !isfinite(acc)) {
            char where[64];
            snprintf(where, sizeof(where), " of validation windows %zu..%zu", w0, w0 + n - 1);
            st = not_finite(acc, where, err, errlen);
        }
        sum += acc;
        done += st == AG_OK ? n : 0;
    }
    if ((st == AG_OK || st == AG_ERR_STOPPED) && done < W)
        st = ag_err(AG_ERR_STOPPED, err, errlen,
                    "validation: stopped after %zu of %zu windows (interrupted)", done, W);
    else if (st == AG_OK)
        ag_progress_report("validation", (double)W, (double)W);
    ag_gpt_grads_on(g);
    free(x);
    free(buf);
    if (st != AG_OK)
        return st;
    *loss = sum / ((double)W * (double)T);
    if (windows)
        *windows = W;
    return AG_OK;
}
