/*
 * gpt_cache.c - sampling from a GPT with a key/value cache. A causal model's
 * position t only reads the keys and values of positions 0..t, and those
 * never change once made, so generation keeps them: each new character runs
 * one position through the blocks (vector-matrix products) instead of the
 * whole window. The math is gpt.c's forward exactly (same layer norm, exact
 * GELU, causal softmax attention, tied head), written without a tape; a test
 * holds the two equal.
 */
#include "gpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_EPS 1e-5 /* as the layer-norm op */

struct ag_gpt_cache {
    ag_gpt *g;       /* borrowed */
    int len;         /* positions held */
    int *ids;        /* (T) the token at each held position */
    ag_real *k, *v;  /* (layers, T, C) every held position's keys and values */
    ag_real *x;      /* (C) the residual stream of the position being run */
    ag_real *h;      /* (C) its layer-normed copy */
    ag_real *q;      /* (C) its query */
    ag_real *o;      /* (C) the heads' outputs, concatenated */
    ag_real *a;      /* (C) a branch's output */
    ag_real *f;      /* (4C) the MLP's hidden layer */
    ag_real *att;    /* (T) one head's attention weights */
    ag_real *logits; /* (V) */
    double *sorted;  /* (V) for top-k */
};

ag_gpt_cache *ag_gpt_cache_new(ag_gpt *g, char *err, size_t errlen)
{
    if (!g) {
        ag_err(AG_ERR_ARG, err, errlen, "cache: the model is NULL");
        return NULL;
    }
    const ag_gpt_config *c = &g->cfg;
    size_t T = (size_t)c->seq, C = (size_t)c->dim, L = (size_t)c->layers, V = (size_t)c->vocab;
    ag_gpt_cache *k = ag_calloc(1, sizeof(*k));
    if (!k) {
        ag_err(AG_ERR_NOMEM, err, errlen, "cache: out of memory");
        return NULL;
    }
    k->g = g;
    size_t kv = L * T * C; /* the model exists, so (T, C) and (4C) fit; L is at most 1024 */
    k->ids = ag_malloc(T * sizeof(int));
    k->k = ag_malloc((kv ? kv : 1) * sizeof(ag_real));
    k->v = ag_malloc((kv ? kv : 1) * sizeof(ag_real));
    k->x = ag_malloc((9 * C + T + V) * sizeof(ag_real)); /* x, h, q, o, a: C each; f: 4C */
    k->sorted = ag_malloc(V * sizeof(double));
    if (!k->ids || !k->k || !k->v || !k->x || !k->sorted) {
        ag_gpt_cache_free(k);
        ag_err(AG_ERR_NOMEM, err, errlen, "cache: out of memory for %zu positions of %zu layers", T,
               L);
        return NULL;
    }
    k->h = k->x + C;
    k->q = k->h + C;
    k->o = k->q + C;
    k->a = k->o + C;
    k->f = k->a + C;
    k->att = k->f + 4 * C;
    k->logits = k->att + T;
    return k;
}

void ag_gpt_cache_free(ag_gpt_cache *c)
{
    if (!c)
        return;
    free(c->ids);
    free(c->k);
    free(c->v);
    free(c->x);
    free(c->sorted);
    free(c);
}

void ag_gpt_cache_reset(ag_gpt_cache *c)
{
    if (c)
        c->len = 0;
}

int ag_gpt_cache_len(const ag_gpt_cache *c)
{
    return c ? c->len : 0;
}

/* ---- one position's forward ---- */

/* y = x W (+ b): x (n), W (n, m) row-major, y (m). Four rows of W at a
 * time, so the inner loop runs along them (and vectorises) while y is read
 * and written once per four rows, not once per row. */
static void matvec(const ag_real *restrict x, const ag_tensor *w, const ag_tensor *b,
                   ag_real *restrict y)
{
    size_t n = (size_t)w->shape[0], m = (size_t)w->shape[1], i = 0;
    const ag_real *restrict W = w->data;
    for (size_t j = 0; j < m; j++)
        y[j] = b ? b->data[j] : 0;
    for (; i + 4 <= n; i += 4) {
        const ag_real *restrict r0 = W + i * m, *restrict r1 = r0 + m, *restrict r2 = r1 + m,
                                *restrict r3 = r2 + m;
        ag_real x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
        for (size_t j = 0; j < m; j++)
            y[j] += x0 * r0[j] + x1 * r1[j] + x2 * r2[j] + x3 * r3[j];
    }
    for (; i < n; i++) {
        const ag_real *restrict r = W + i * m;
        for (size_t j = 0; j < m; j++)
            y[j] += x[i] * r[j];
    }
}

/* y = (x - mean) / sqrt(var + eps) * w (+ b) over n, or a copy without w. */
static void layernorm(const ag_real *x, const ag_tensor *w, const ag_tensor *b, ag_real *y,
                      size_t n)
{
    if (!w) {
        memcpy(y, x, n * sizeof(ag_real));
        return;
    }
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += x[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += ((double)x[i] - mean) * ((double)x[i] - mean);
    double rstd = 1.0 / sqrt(var / (double)n + LN_EPS);
    for (size_t i = 0; i < n; i++)
        y[i] = (ag_real)(((double)x[i] - mean) * rstd * w->data[i] + (b ? b->data[i] : 0));
}

/* Exact GELU: x Phi(x) = x (1 + erf(x / sqrt 2)) / 2. */
static ag_real gelu(ag_real x)
{
    return (ag_real)(0.5 * (double)x * (1.0 + erf((double)x * 0.70710678118654752440)));
}

/* Position t's attention in block l over positions 0..t: q in c->q, the
 * keys and values (this one's included) in the cache; out in c->o. */
static void attend(ag_gpt_cache *c, int l, int t)
{
    const ag_gpt_config *cfg = &c->g->cfg;
    size_t C = (size_t)cfg->dim, H = (size_t)cfg->heads, dh = C / H, T = (size_t)cfg->seq;
    const ag_real *K = c->k + (size_t)l * T * C, *Vv = c->v + (size_t)l * T * C;
    ag_real scale = (ag_real)(1.0 / sqrt((double)dh));
    for (size_t hd = 0; hd < H; hd++) {
        const ag_real *q = c->q + hd * dh;
        ag_real max = -INFINITY;
        for (int j = 0; j <= t; j++) {
            const ag_real *kj = K + (size_t)j * C + hd * dh;
            ag_real s = 0;
            for (size_t d = 0; d < dh; d++)
                s += q[d] * kj[d];
            c->att[j] = s * scale;
            max = c->att[j] > max ? c->att[j] : max;
        }
        ag_real sum = 0;
        for (int j = 0; j <= t; j++)
            sum += (c->att[j] = AG_EXP(c->att[j] - max));
        ag_real *o = c->o + hd * dh;
        memset(o, 0, dh * sizeof(ag_real));
        for (int j = 0; j <= t; j++) {
            ag_real p = c->att[j] / sum;
            const ag_real *vj = Vv + (size_t)j * C + hd * dh;
            for (size_t d = 0; d < dh; d++)
                o[d] += p * vj[d];
        }
    }
}

/* x = x + branch (a), or x = branch without residual connections. */
static void add_branch(const ag_gpt *g, ag_real *x, const ag_real *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = g->cfg.no_residual ? a[i] : x[i] + a[i];
}

static void run_position(ag_gpt_cache *c, int id)
{
    const ag_gpt *g = c->g;
    const ag_gpt_config *cfg = &g->cfg;
    size_t C = (size_t)cfg->dim, T = (size_t)cfg->seq, C4 = 4 * C;
    int t = c->len;
    for (size_t i = 0; i < C; i++)
        c->x[i] = g->wte->data[(size_t)id * C + i] + (g->wpe ? g->wpe->data[(size_t)t * C + i] : 0);
    for (int l = 0; l < cfg->layers; l++) {
        const ag_gpt_layer *b = &g->h[l];
        ag_attention *att = b->attn;
        layernorm(c->x, b->ln1_w, b->ln1_b, c->h, C);
        ag_real *kt = c->k + ((size_t)l * T + (size_t)t) * C;
        ag_real *vt = c->v + ((size_t)l * T + (size_t)t) * C;
        matvec(c->h, ag_attention_param(att, "wq"), b->bq, c->q);
        matvec(c->h, ag_attention_param(att, "wk"), b->bk, kt);
        matvec(c->h, ag_attention_param(att, "wv"), b->bv, vt);
        attend(c, l, t);
        matvec(c->o, ag_attention_param(att, "wo"), b->bo, c->a);
        add_branch(g, c->x, c->a, C);
        if (cfg->no_mlp)
            continue;
        layernorm(c->x, b->ln2_w, b->ln2_b, c->h, C);
        matvec(c->h, b->w_fc, b->b_fc, c->f);
        for (size_t i = 0; i < C4; i++)
            c->f[i] = gelu(c->f[i]);
        matvec(c->f, b->w_proj, b->b_proj, c->a);
        add_branch(g, c->x, c->a, C);
    }
    layernorm(c->x, g->lnf_w, g->lnf_b, c->h, C);
    /* the tied head: logits[v] = x . wte[v] */
    for (int v = 0; v < cfg->vocab; v++) {
        const ag_real *e = g->wte->data + (size_t)v * C;
        ag_real s = 0;
        for (size_t i = 0; i < C; i++)
            s += c->h[i] * e[i];
        c->logits[v] = s;
    }
    c->ids[t] = id;
    c->len = t + 1;
}

ag_status ag_gpt_cache_push(ag_gpt_cache *c, int id, const ag_real **logits, char *err,
                            size_t errlen)
{
    if (!c) {
        ag_err(AG_ERR_ARG, err, errlen, "cache: NULL");
        return AG_ERR_ARG;
    }
    const ag_gpt_config *cfg = &c->g->cfg;
    if (c->len >= cfg->seq) {
        ag_err(AG_ERR_ARG, err, errlen, "cache: full (%d positions)", cfg->seq);
        return AG_ERR_ARG;
    }
    if (id < 0 || id >= cfg->vocab) {
        ag_err(AG_ERR_ARG, err, errlen, "cache: token id %d is out of range [0, %d)", id,
               cfg->vocab);
        return AG_ERR_ARG;
    }
    run_position(c, id);
    if (logits)
        *logits = c->logits;
    return AG_OK;
}

/* ---- choosing and generating ---- */

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

int ag_gpt_cache_pick(ag_gpt_cache *c, const ag_real *logits, double temperature, int top_k,
                      ag_rng *rng)
{
    int V = c->g->cfg.vocab, best = 0;
    for (int j = 1; j < V; j++)
        if (logits[j] > logits[best])
            best = j;
    if (!(temperature > 0) || !rng)
        return best;
    /* top-k: keep the logits at least as large as the k-th largest */
    double cut = -INFINITY;
    if (top_k > 0 && top_k < V) {
        for (int j = 0; j < V; j++)
            c->sorted[j] = logits[j];
        qsort(c->sorted, (size_t)V, sizeof(double), cmp_desc);
        cut = c->sorted[top_k - 1];
    }
    /* softmax(z / temperature) over those, stably, in double */
    double total = 0;
    for (int j = 0; j < V; j++) {
        double p = logits[j] >= cut ? exp(((double)logits[j] - logits[best]) / temperature) : 0;
        c->sorted[j] = p;
        total += p;
    }
    double u = ag_rng_uniform(rng) * total, cum = 0;
    int last = best;
    for (int j = 0; j < V; j++) {
        if (c->sorted[j] <= 0)
            continue;
        cum += c->sorted[j];
        last = j;
        if (u < cum)
            return j;
    }
    return last; /* u within rounding of the total */
}

/* Push id; when the window is full, keep its last seq / 2 tokens, run them
 * again from position 0, then push. */
static ag_status feed(ag_gpt_cache *c, int id, const ag_real **logits, char *err, size_t errlen)
{
    int T = c->g->cfg.seq;
    if (c->len == T) {
        int keep = T / 2;
        memmove(c->ids, c->ids + (T - keep), (size_t)keep * sizeof(int));
        c->len = 0;
        for (int i = 0; i < keep; i++)
            run_position(c, c->ids[i]);
    }
    return ag_gpt_cache_push(c, id, logits, err, errlen);
}

ag_status ag_gpt_generate(ag_gpt_cache *c, const int *prompt, size_t n_prompt, size_t n_new,
                          double temperature, int top_k, ag_rng *rng, ag_gpt_emit_fn emit,
                          void *ctx, char *err, size_t errlen)
{
    if (!c || !prompt || n_prompt == 0 || !rng) {
        ag_err(AG_ERR_ARG, err, errlen, "generate: %s",
               !c     ? "the cache is NULL"
               : !rng ? "rng is NULL"
                      : "the prompt is empty");
        return AG_ERR_ARG;
    }
    if (!(temperature >= 0 && isfinite(temperature))) {
        ag_err(AG_ERR_ARG, err, errlen, "generate: temperature %g is not a finite number >= 0",
               temperature);
        return AG_ERR_ARG;
    }
    ag_gpt_cache_reset(c);
    const ag_real *logits = NULL;
    for (size_t i = 0; i < n_prompt; i++) {
        ag_status st = feed(c, prompt[i], &logits, err, errlen);
        if (st != AG_OK)
            return st;
    }
    int V = c->g->cfg.vocab;
    for (size_t n = 0; n < n_new; n++) {
        /* finite weights can still overflow to logits that choose nothing */
        size_t bad = ag_first_nonfinite(logits, (size_t)V);
        if (bad < (size_t)V)
            return ag_err(AG_ERR_NUMERIC, err, errlen,
                          "generate: the logits for character %zu are %s (token %zu): the model's "
                          "weights are too large for its arithmetic",
                          n + 1, isnan(logits[bad]) ? "NaN" : "infinite", bad);
        if (ag_progress_report("sampling", (double)n, (double)n_new) != AG_OK)
            return ag_err(AG_ERR_STOPPED, err, errlen,
                          "generate: stopped after %zu characters (interrupted)", n);
        int id = ag_gpt_cache_pick(c, logits, temperature, top_k, rng);
        if (emit && emit(id, ctx))
            break;
        if (n + 1 < n_new)
            feed(c, id, &logits, err, errlen); /* id came from the model: cannot fail */
    }
    return AG_OK;
}
