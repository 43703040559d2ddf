/*
 * test_gpt.c - the GPT in the library: its parameters and initialisation,
 * finite-difference checks of one block and of a whole 2-layer model (with
 * biases, dropout and each ablation too), the key/value cache against the
 * tape forward, sampling's determinism, the full validation loss against
 * its definition, the learning-rate schedule, a trainer's step that
 * allocates nothing, and checkpoints: PyTorch's names and layouts, a round
 * trip, a resumed run equal bit for bit to one that never stopped, and
 * hostile files refused.
 */
#include "test_util.h"
#include "nn/gpt.h"
#include "run.h"

#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef AG_REAL_DOUBLE
#define CACHE_TOL 1e-10
#else
#define CACHE_TOL 2e-4
#endif

/* A small model: V 7, T 6, 2 layers, 2 heads, C 8, initialised from seed. */
static ag_gpt *small_gpt(const ag_gpt_config *over, uint64_t seed)
{
    ag_gpt_config c = ag_gpt_defaults(7);
    c.seq = 6, c.layers = 2, c.heads = 2, c.dim = 8;
    if (over)
        c = *over;
    ag_rng rng = ag_rng_new(seed);
    char err[256];
    ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
    ck_assert_msg(g != NULL, "%s", err);
    return g;
}

static ag_gpt_config small_config(void)
{
    ag_gpt_config c = ag_gpt_defaults(7);
    c.seq = 6, c.layers = 2, c.heads = 2, c.dim = 8;
    return c;
}

/* GPT-2's tiny initial weights make every function nearly linear; larger
 * ones give the checks curvature to find a wrong formula in. */
static void scale_weights(ag_gpt *g, double s, uint64_t seed)
{
    ag_tensor *p[128];
    const char *names[128];
    size_t n = ag_gpt_params(g, p, names, 128);
    ag_rng rng = ag_rng_new(seed);
    for (size_t i = 0; i < n; i++)
        if (p[i]->ndim == 2)
            ag_fill_normal(p[i], &rng, 0, s);
        else /* layer norms and biases away from 1 and 0 */
            ag_fill_normal(p[i], &rng, strstr(names[i], "ln") ? 1 : 0, 0.3);
}

START_TEST(test_gpt_params)
{
    ag_gpt *g = small_gpt(NULL, 1);
    const char *names[64];
    ag_tensor *p[64];
    size_t n = ag_gpt_params(g, p, names, 64);
    ck_assert_uint_eq(n, 2 + 8 * 2 + 1);
    const char *want[] = {"wte",          "wpe",           "h.0.ln_1.weight", "h.0.attn.wq",
                          "h.0.attn.wk",  "h.0.attn.wv",   "h.0.attn.wo",     "h.0.ln_2.weight",
                          "h.0.mlp.w_fc", "h.0.mlp.w_proj"};
    for (int i = 0; i < 10; i++)
        ck_assert_str_eq(names[i], want[i]);
    ck_assert_str_eq(names[n - 1], "ln_f.weight");
    ck_assert_ptr_eq(ag_gpt_param(g, "h.1.mlp.w_fc"), p[16]);
    ck_assert_ptr_null(ag_gpt_param(g, "h.2.mlp.w_fc"));
    ck_assert_int_eq(p[8]->shape[0], 8);
    ck_assert_int_eq(p[8]->shape[1], 32); /* w_fc (C, 4C) */
    ck_assert_uint_eq(ag_gpt_n_weights(g), 7 * 8 + 6 * 8 + 2 * (8 + 4 * 64 + 8 + 2 * 256) + 8);
    ag_gpt_free(g);
    /* with biases: every linear and layer norm gets one */
    ag_gpt_config c = small_config();
    c.bias = 1;
    g = small_gpt(&c, 1);
    ck_assert_uint_eq(ag_gpt_params(g, NULL, NULL, 0), 2 + 16 * 2 + 2);
    ck_assert_ptr_nonnull(ag_gpt_param(g, "h.0.attn.bq"));
    ck_assert_ptr_nonnull(ag_gpt_param(g, "h.1.mlp.b_proj"));
    ck_assert_ptr_nonnull(ag_gpt_param(g, "ln_f.bias"));
    ag_gpt_free(g);
    /* ablations take their parameters away */
    c = small_config();
    c.no_mlp = 1, c.no_layernorm = 1, c.no_posenc = 1;
    g = small_gpt(&c, 1);
    ck_assert_uint_eq(ag_gpt_params(g, NULL, NULL, 0), 1 + 4 * 2);
    ck_assert_ptr_null(ag_gpt_param(g, "wpe"));
    ag_gpt_free(g);
    ag_gpt_free(NULL);
}
END_TEST

START_TEST(test_gpt_config_errors)
{
    char err[256];
    ag_gpt_config c = small_config();
    c.heads = 3;
    ck_assert_ptr_null(ag_gpt_new(&c, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "gpt: heads 3 does not divide dim 8");
    c = small_config();
    c.vocab = 0;
    ck_assert_ptr_null(ag_gpt_new(&c, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "gpt: vocab 0 is out of range (1..65536)");
    c = small_config();
    c.dropout = 1;
    ck_assert_ptr_null(ag_gpt_new(&c, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "gpt: dropout 1 is not in [0, 1)");
    ck_assert_ptr_null(ag_gpt_new(NULL, NULL, err, sizeof(err)));
    /* forward errors stay on the tape */
    ag_gpt *g = small_gpt(NULL, 1);
    ag_tape *tape = ag_tape_new();
    int ids[7] = {0, 1, 2, 3, 4, 5, 6};
    ck_assert_ptr_null(ag_gpt_forward(tape, g, ids, 1, 7, NULL));
    test_expect_error(tape, AG_ERR_ARG, "gpt: ids are (1,7): needs batch >= 1 and 1..6 positions");
    ids[2] = 7;
    ck_assert_ptr_null(ag_gpt_forward(tape, g, ids, 1, 6, NULL));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_ARG);
    ag_tape_reset(tape);
    ck_assert_int_eq(ag_gpt_set_dropout(g, 1.5), AG_ERR_ARG);
    ag_tape_free(tape);
    ag_gpt_free(g);
}
END_TEST

START_TEST(test_gpt_init)
{
    ag_gpt_config c = ag_gpt_defaults(50);
    c.layers = 8;
    ag_gpt *g = small_gpt(&c, 7);
    /* sample standard deviations within 5% of GPT-2's */
    struct {
        const char *name;
        double std;
    } w[] = {{"wte", 0.02},
             {"wpe", 0.02},
             {"h.3.attn.wq", 0.02},
             {"h.3.mlp.w_fc", 0.02},
             {"h.3.attn.wo", 0.02 / 4},
             {"h.3.mlp.w_proj", 0.02 / 4}};
    for (size_t k = 0; k < sizeof(w) / sizeof(w[0]); k++) {
        const ag_tensor *t = ag_gpt_param(g, w[k].name);
        double s = 0;
        for (size_t i = 0; i < t->size; i++)
            s += (double)t->data[i] * t->data[i];
        s = sqrt(s / (double)t->size);
        ck_assert_msg(fabs(s / w[k].std - 1) < 0.05, "%s: std %g, want %g", w[k].name, s, w[k].std);
    }
    const ag_tensor *ln = ag_gpt_param(g, "h.0.ln_2.weight");
    for (size_t i = 0; i < ln->size; i++)
        ck_assert(ln->data[i] == 1);
    ag_gpt_free(g);
}
END_TEST

/* ---- gradient checks ---- */

typedef struct gpt_ctx {
    ag_gpt *g;
    int *ids, *targets;
    int batch, seq;
    int layer;          /* >= 0: check block `layer` on inputs[0] */
    uint64_t drop_seed; /* non-zero: dropout with a mask fixed by this seed */
} gpt_ctx;

static ag_tensor *build_gpt(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    gpt_ctx *c = ctx;
    ag_rng rng = ag_rng_new(c->drop_seed); /* the same mask on every pass */
    ag_rng *drop = c->drop_seed ? &rng : NULL;
    if (c->layer >= 0)
        return ag_gpt_block(tape, c->g, c->layer, in[0], drop);
    if (c->targets)
        return ag_gpt_loss(tape, c->g, c->ids, c->targets, c->batch, c->seq, drop, NULL);
    return ag_gpt_forward(tape, c->g, c->ids, c->batch, c->seq, drop);
}

/* Check the model's every parameter (and, for a block, x) by finite
 * differences; loss: the cross-entropy instead of the projected logits. */
static void check_gpt(const ag_gpt_config *cfg, int layer, int loss, uint64_t drop_seed)
{
    ag_gpt *g = small_gpt(cfg, 3);
    scale_weights(g, 0.5, 4);
    ag_rng rng = ag_rng_new(5);
    int B = 2, T = cfg->seq, ids[2 * 8], targets[2 * 8];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int)ag_rng_below(&rng, (uint32_t)cfg->vocab);
        targets[i] = (int)ag_rng_below(&rng, (uint32_t)cfg->vocab);
    }
    gpt_ctx c = {g, ids, loss ? targets : NULL, B, T, layer, drop_seed};
    ag_tensor *in[128];
    int n = 0;
    ag_tensor *x = NULL;
    if (layer >= 0) {
        x = test_param(&rng, 3, (int[]){B, T, cfg->dim});
        in[n++] = x;
        const char *names[128];
        ag_tensor *p[128];
        size_t np = ag_gpt_params(g, p, names, 128);
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "h.%d.", layer);
        for (size_t i = 0; i < np; i++)
            if (strncmp(names[i], prefix, strlen(prefix)) == 0)
                in[n++] = p[i];
    } else {
        n = (int)ag_gpt_params(g, in, NULL, 128);
    }
    ag_gradcheck_opts opts = ag_gradcheck_defaults();
    opts.max_samples = 0;
#ifndef AG_REAL_DOUBLE
    /* In float, the projected output of ~30 ops carries rounding noise of a
     * few parts in 100 of the finite differences (measured, worst element at
     * the default step: 2.4% with the fast kernels, 7.2% with the portable
     * build's, which use no FMA); the double build checks the same math at 1e-6, and a wrong
     * formula is off by far more than 10% in either. */
    opts.rtol = 1e-1;
#endif
    test_gradcheck_with(build_gpt, &c, in, n, &opts);
    ag_param_free(x);
    ag_gpt_free(g);
}

START_TEST(test_gradcheck_block)
{
    ag_gpt_config c = small_config();
    check_gpt(&c, 1, 0, 0);
    c.bias = 1;
    check_gpt(&c, 0, 0, 0);
}
END_TEST

START_TEST(test_gradcheck_gpt)
{
    ag_gpt_config c = small_config();
    check_gpt(&c, -1, 0, 0); /* the logits, projected on random weights */
    check_gpt(&c, -1, 1, 0); /* the loss */
}
END_TEST

START_TEST(test_gradcheck_gpt_variants)
{
    ag_gpt_config c = small_config();
    c.layers = 1;
    c.bias = 1;
    c.dropout = 0.25;
    check_gpt(&c, -1, 0, 11); /* biases and dropout */
    static const int off[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    for (int k = 0; k < 4; k++) {
        c = small_config();
        c.layers = 1;
        c.no_residual = off[k][0], c.no_layernorm = off[k][1], c.no_mlp = off[k][2];
        c.no_posenc = off[k][3];
        check_gpt(&c, -1, 0, 0);
    }
}
END_TEST

/* ---- the cache ---- */

/* The tape's logits for ids (one sequence of n), into a new array. */
static ag_real *tape_logits(ag_gpt *g, const int *ids, int n)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *z = ag_gpt_forward(tape, g, ids, 1, n, NULL);
    ck_assert_msg(z != NULL, "%s", ag_tape_error(tape));
    ag_real *copy = malloc(z->size * sizeof(ag_real));
    memcpy(copy, z->data, z->size * sizeof(ag_real));
    ag_tape_free(tape);
    return copy;
}

static void check_cache(const ag_gpt_config *cfg)
{
    ag_gpt *g = small_gpt(cfg, 21);
    scale_weights(g, 0.5, 22);
    int T = cfg->seq, V = cfg->vocab, ids[16];
    ag_rng rng = ag_rng_new(23);
    for (int i = 0; i < T; i++)
        ids[i] = (int)ag_rng_below(&rng, (uint32_t)V);
    ag_real *want = tape_logits(g, ids, T);
    char err[256];
    ag_gpt_cache *c = ag_gpt_cache_new(g, err, sizeof(err));
    ck_assert_msg(c != NULL, "%s", err);
    for (int t = 0; t < T; t++) {
        const ag_real *z;
        ck_assert_int_eq(ag_gpt_cache_push(c, ids[t], &z, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(ag_gpt_cache_len(c), t + 1);
        for (int v = 0; v < V; v++) {
            double a = z[v], b = want[t * V + v];
            ck_assert_msg(fabs(a - b) <= CACHE_TOL * (1 + fabs(b)),
                          "position %d logit %d: cache %.9g, tape %.9g", t, v, a, b);
        }
    }
    ck_assert_int_eq(ag_gpt_cache_push(c, 0, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "cache: full (6 positions)");
    ag_gpt_cache_reset(c);
    ck_assert_int_eq(ag_gpt_cache_push(c, V, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "cache: token id 7 is out of range [0, 7)");
    ag_gpt_cache_free(c);
    free(want);
    ag_gpt_free(g);
}

START_TEST(test_cache_equals_tape)
{
    ag_gpt_config c = small_config();
    check_cache(&c);
    c.bias = 1;
    check_cache(&c);
    c = small_config();
    c.no_residual = 1, c.no_posenc = 1;
    check_cache(&c);
    c = small_config();
    c.no_layernorm = 1, c.no_mlp = 1, c.layers = 3;
    check_cache(&c);
}
END_TEST

typedef struct collected {
    int ids[256];
    int n;
} collected;

static int collect(int id, void *ctx)
{
    collected *c = ctx;
    c->ids[c->n++] = id;
    return 0;
}

static collected generate(ag_gpt_cache *c, const int *prompt, size_t n_prompt, size_t n_new,
                          double temperature, int top_k, uint64_t seed)
{
    collected out = {{0}, 0};
    ag_rng rng = ag_rng_new(seed);
    char err[256];
    ck_assert_int_eq(ag_gpt_generate(c, prompt, n_prompt, n_new, temperature, top_k, &rng, collect,
                                     &out, err, sizeof(err)),
                     AG_OK);
    ck_assert_int_eq(out.n, (int)n_new);
    return out;
}

/* Greedy generation with the tape: the same windows as the cache (when T
 * positions are full, keep the last T / 2). */
static int tape_greedy(ag_gpt *g, int *ctx, int *len, int T, int V)
{
    ag_real *z = tape_logits(g, ctx, *len);
    const ag_real *last = z + (size_t)(*len - 1) * V;
    int best = 0;
    for (int v = 1; v < V; v++)
        if (last[v] > last[best])
            best = v;
    free(z);
    if (*len == T) {
        memmove(ctx, ctx + T - T / 2, (size_t)(T / 2) * sizeof(int));
        *len = T / 2;
    }
    ctx[(*len)++] = best;
    return best;
}

START_TEST(test_sampling)
{
    ag_gpt_config cfg = small_config();
    ag_gpt *g = small_gpt(&cfg, 31);
    scale_weights(g, 0.7, 32);
    char err[256];
    ag_gpt_cache *c = ag_gpt_cache_new(g, err, sizeof(err));
    ck_assert_ptr_nonnull(c);
    const int prompt[3] = {1, 2, 3};
    /* the same seed, the same text; another seed, another text */
    collected a = generate(c, prompt, 3, 40, 1.0, 0, 5);
    collected b = generate(c, prompt, 3, 40, 1.0, 0, 5);
    collected d = generate(c, prompt, 3, 40, 1.0, 0, 6);
    ck_assert(memcmp(a.ids, b.ids, sizeof(a.ids)) == 0);
    ck_assert(memcmp(a.ids, d.ids, sizeof(a.ids)) != 0);
    /* top-k 1 and temperature 0 both take the likeliest, whatever the seed */
    collected k1 = generate(c, prompt, 3, 40, 1.0, 1, 7);
    collected t0 = generate(c, prompt, 3, 40, 0.0, 0, 8);
    ck_assert(memcmp(k1.ids, t0.ids, sizeof(k1.ids)) == 0);
    /* and that is what the tape forward picks, over windows that slide */
    int ctx[8] = {1, 2, 3}, len = 3;
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(t0.ids[i], tape_greedy(g, ctx, &len, cfg.seq, cfg.vocab));
    /* a prompt longer than the window is fine */
    int longp[20];
    for (int i = 0; i < 20; i++)
        longp[i] = i % 7;
    generate(c, longp, 20, 5, 0.8, 3, 9);
    /* the draws follow the softmax: token frequencies near its probabilities */
    const ag_real logits[7] = {0, 1, 2, -1, 0.5f, -30, 1};
    double p[7], total = 0;
    for (int v = 0; v < 7; v++)
        total += p[v] = exp(logits[v]);
    int count[7] = {0};
    ag_rng rng = ag_rng_new(10);
    for (int i = 0; i < 20000; i++)
        count[ag_gpt_cache_pick(c, logits, 1.0, 0, &rng)]++;
    for (int v = 0; v < 7; v++)
        ck_assert_msg(fabs(count[v] / 20000.0 - p[v] / total) < 0.015, "token %d: %d draws", v,
                      count[v]);
    /* top-k 2 keeps only the two largest (2 and one of the 1s... ties both stay) */
    memset(count, 0, sizeof(count));
    for (int i = 0; i < 2000; i++)
        count[ag_gpt_cache_pick(c, logits, 1.0, 2, &rng)]++;
    ck_assert_int_eq(count[0] + count[3] + count[4] + count[5], 0);
    ck_assert(count[1] > 0 && count[2] > 0 && count[6] > 0);
    ck_assert_int_eq(ag_gpt_generate(c, prompt, 0, 5, 1, 0, &rng, NULL, NULL, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_int_eq(ag_gpt_generate(c, prompt, 3, 5, -1, 0, &rng, NULL, NULL, err, sizeof(err)),
                     AG_ERR_ARG);
    ag_gpt_cache_free(c);
    ag_gpt_free(g);
}
END_TEST

/* ---- validation loss ---- */

static ag_text *letters(size_t n, int alphabet)
{
    char *s = malloc(n + 1);
    ag_rng rng = ag_rng_new(41);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + (i % 3 == 0 ? (int)ag_rng_below(&rng, (uint32_t)alphabet)
                                        : (int)(i % alphabet)));
    s[n] = '\0';
    ag_text *t;
    char err[256];
    ck_assert_int_eq(ag_text_parse(s, n, "letters", NULL, &t, err, sizeof(err)), AG_OK);
    free(s);
    return t;
}

START_TEST(test_val_loss)
{
    ag_text *text = letters(1000, 7); /* 100 validation characters */
    ag_gpt_config cfg = small_config();
    ag_gpt *g = small_gpt(&cfg, 51);
    scale_weights(g, 0.3, 52);
    double loss;
    size_t windows;
    char err[256];
    ck_assert_int_eq(ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(windows, 99 / 6);
    /* the definition: window i is val[6i .. 6i+6) against val[6i+1 .. 6i+7) */
    int *val = malloc((text->len - text->n_train) * sizeof(int));
    ck_assert_ptr_nonnull(val);
    ag_text_ids(text, text->n_train, text->len - text->n_train, val);
    double sum = 0;
    ag_tape *tape = ag_tape_new();
    for (size_t i = 0; i < windows; i++) {
        ag_tensor *l = ag_gpt_loss(tape, g, val + 6 * i, val + 6 * i + 1, 1, 6, NULL, NULL);
        ck_assert_ptr_nonnull(l);
        sum += l->data[0];
        ag_tape_reset(tape);
    }
    ck_assert_msg(fabs(loss - sum / (double)windows) < 1e-5 * loss, "%.9g vs %.9g", loss,
                  sum / (double)windows);
    /* no gradient was touched */
    ck_assert(ag_gpt_param(g, "wte")->grad[0] == 0);
    ag_tape_free(tape);
    free(val);
    ag_text_free(text);
    /* a vocabulary that does not fit */
    text = letters(1000, 5);
    ck_assert_int_eq(ag_gpt_val_loss(g, text, &loss, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "validation loss: the text has 5 characters, the model 7");
    ag_text_free(text);
    ag_gpt_free(g);
}
END_TEST

/* The validation pass in chunks (fewer windows when a window is wide, the
 * head's logits a few rows at a time when the vocabulary is large) is still
 * the definition: the mean over windows of each window's own loss. The
 * same bits on 1 and 2 threads, and its memory does not grow with the
 * number of windows. */
START_TEST(test_val_loss_chunks)
{
    static const struct {
        int V, T, C, H, L, bias, no_mlp;
        size_t chunk, head_rows;
    } cases[] = {
        {10, 64, 2048, 1, 0, 0, 0, 16, 209715}, /* wide windows: chunks of 16 */
        {3000, 32, 8, 2, 1, 0, 0, 32, 699},     /* a large vocabulary: the head in parts */
        {40, 9, 12, 3, 2, 1, 0, 32, 52428},     /* biases: the op-by-op attention */
        {40, 9, 12, 3, 1, 0, 1, 32, 52428},     /* no MLP */
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        ag_gpt_config c = ag_gpt_defaults(cases[k].V);
        c.seq = cases[k].T, c.dim = cases[k].C, c.heads = cases[k].H, c.layers = cases[k].L;
        c.bias = cases[k].bias, c.no_mlp = cases[k].no_mlp;
        ck_assert_uint_eq(ag_gpt_val_chunk(&c), cases[k].chunk);
        ck_assert_uint_eq(ag_gpt_head_rows(&c), cases[k].head_rows);
        ag_gpt *g = small_gpt(&c, 60 + k);
        scale_weights(g, 0.3, 70 + k);
        size_t n = (size_t)cases[k].T * 600 + 100 + (size_t)cases[k].V; /* 60 windows or more */
        ag_text *text = test_wide_text(n, cases[k].V, k + 1);
        double loss[2];
        size_t windows;
        char err[256];
        for (int th = 0; th < 2; th++) {
            ag_set_threads(th + 1);
            ck_assert_msg(ag_gpt_val_loss(g, text, &loss[th], &windows, err, sizeof(err)) == AG_OK,
                          "%s", err);
        }
        ag_set_threads(1);
        ck_assert_msg(loss[0] == loss[1], "case %zu: %.17g on 1 thread, %.17g on 2", k, loss[0],
                      loss[1]);
        int T = cases[k].T;
        ck_assert_uint_eq(windows, (text->len - text->n_train - 1) / (size_t)T);
        int *val = malloc((text->len - text->n_train) * sizeof(int));
        ck_assert_ptr_nonnull(val);
        ag_text_ids(text, text->n_train, text->len - text->n_train, val);
        double sum = 0;
        ag_tape *tape = ag_tape_new();
        for (size_t i = 0; i < windows; i++) {
            ag_tensor *l = ag_gpt_loss(tape, g, val + (size_t)T * i, val + (size_t)T * i + 1, 1, T,
                                       NULL, NULL);
            ck_assert_ptr_nonnull(l);
            sum += l->data[0];
            ag_tape_reset(tape);
        }
        ck_assert_msg(fabs(loss[0] - sum / (double)windows) < 1e-5 * loss[0],
                      "case %zu: %.9g vs %.9g", k, loss[0], sum / (double)windows);
        ag_tape_free(tape);
        free(val);
        /* one chunk of windows or many: the same peak, and a second pass on the same tape
         * allocates its two buffers (ids and the stream) and nothing else */
        ag_text *few = test_wide_text((size_t)T * (cases[k].chunk + 3) * 10 + (size_t)cases[k].V,
                                      cases[k].V, k + 1);
        const ag_text *texts[2] = {few, text};
        size_t peak[2];
        for (int j = 0; j < 2; j++) {
            ag_tape *vt[2] = {ag_tape_new(), ag_tape_new()};
            ck_assert_int_eq(ag_gpt_val_loss_on(vt, g, texts[j], &loss[0], NULL, err, sizeof(err)),
                             AG_OK);
            peak[j] = ag_tape_peak_bytes(vt[0]) + ag_tape_peak_bytes(vt[1]);
            size_t before = ag_alloc_count();
            ck_assert_int_eq(ag_gpt_val_loss_on(vt, g, texts[j], &loss[0], NULL, err, sizeof(err)),
                             AG_OK);
            ck_assert_uint_eq(ag_alloc_count() - before, 2);
            ag_tape_free(vt[0]);
            ag_tape_free(vt[1]);
        }
        ck_assert_msg(peak[0] == peak[1],
                      "case %zu: a peak of %zu bytes for %zu windows, %zu for more", k, peak[0],
                      ag_text_windows(few, T), peak[1]);
        ag_text_free(few);
        ag_text_free(text);
        ag_gpt_free(g);
    }
}
END_TEST

/* ---- training ---- */

START_TEST(test_lr_schedule)
{
    ag_gpt_train_config c = ag_gpt_train_defaults();
    ck_assert_int_eq(c.batch, 12);
    ck_assert(c.beta2 == 0.99 && c.weight_decay == 0.1 && c.clip == 1.0);
    /* warmup: lr (s+1)/(W+1); then the cosine from lr to min_lr at the last step */
    ck_assert(fabs(ag_gpt_lr_at(&c, 0) - 1e-3 / 101) < 1e-15);
    ck_assert(fabs(ag_gpt_lr_at(&c, 99) - 1e-3 * 100 / 101) < 1e-15);
    ck_assert(fabs(ag_gpt_lr_at(&c, 100) - 1e-3) < 1e-15);
    double mid = ag_gpt_lr_at(&c, 100 + (1999 - 100) / 2);
    ck_assert(fabs(mid - 0.55e-3) < 1e-6);
    ck_assert(ag_gpt_lr_at(&c, 1999) == 1e-4);
    ck_assert(ag_gpt_lr_at(&c, 5000) == 1e-4);
    for (long s = 100; s < 1999; s++)
        ck_assert(ag_gpt_lr_at(&c, s + 1) <= ag_gpt_lr_at(&c, s));
}
END_TEST

static ag_gpt_trainer *small_trainer(ag_gpt *g, const ag_text *text, uint64_t seed)
{
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    tc.batch = 3, tc.warmup = 2, tc.decay_steps = 8, tc.lr = 3e-3, tc.seed = seed;
    char err[256];
    ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
    ck_assert_msg(t != NULL, "%s", err);
    return t;
}

static void steps(ag_gpt_trainer *t, int n)
{
    char err[256];
    for (int i = 0; i < n; i++)
        ck_assert_msg(ag_gpt_trainer_step(t, NULL, err, sizeof(err)) == AG_OK, "%s", err);
}

START_TEST(test_trainer_learns)
{
    ag_text *text = letters(3000, 7);
    ag_gpt_config cfg = small_config();
    ag_gpt *g = small_gpt(&cfg, 61);
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    tc.batch = 8, tc.warmup = 5, tc.decay_steps = 150, tc.lr = 1e-2;
    char err[256];
    ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
    ck_assert_ptr_nonnull(t);
    double before, after, again;
    ck_assert_int_eq(ag_gpt_trainer_estimate(t, AG_SPLIT_VAL, 5, &before, err, sizeof(err)), AG_OK);
    steps(t, 150);
    ck_assert_int_eq(ag_gpt_trainer_steps(t), 150);
    ck_assert_int_eq(ag_gpt_trainer_estimate(t, AG_SPLIT_VAL, 5, &after, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_trainer_estimate(t, AG_SPLIT_VAL, 5, &again, err, sizeof(err)), AG_OK);
    ck_assert(after == again); /* the same batches every time */
    ck_assert_msg(after < before - 0.15, "validation loss %g -> %g", before, after);
    ag_gpt_trainer_free(t);
    /* settings the trainer refuses */
    tc.batch = 0;
    ck_assert_ptr_null(ag_gpt_trainer_new(g, text, &tc, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: batch must be at least 1");
    ag_gpt_free(g);
    ag_text_free(text);
    text = letters(40, 7); /* 36 to train, 4 to validate: too short for windows of 6 */
    g = small_gpt(&cfg, 61);
    tc = ag_gpt_train_defaults();
    ck_assert_ptr_null(ag_gpt_trainer_new(g, text, &tc, err, sizeof(err)));
    run_assert_has(err, "too short for windows of 6");
    ag_gpt_free(g);
    ag_text_free(text);
}
END_TEST

static void trainer_allocs(int threads)
{
    ag_set_threads(threads);
    ag_text *text = letters(2000, 7);
    ag_gpt_config cfg = small_config();
    cfg.dropout = 0.1;
    ag_gpt *g = small_gpt(&cfg, 71);
    ag_gpt_trainer *t = small_trainer(g, text, 72);
    size_t before = ag_alloc_count();
    steps(t, 1);
    ck_assert_uint_gt(ag_alloc_count() - before, 0);
    before = ag_alloc_count();
    steps(t, 30);
    ck_assert_uint_eq(ag_alloc_count() - before, 0);
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
    ag_set_threads(1);
}

START_TEST(test_trainer_step_allocates_nothing)
{
    trainer_allocs(1);
    trainer_allocs(2);
}
END_TEST

/* ---- checkpoints ---- */

static int same_params(ag_gpt *a, ag_gpt *b)
{
    ag_tensor *pa[128], *pb[128];
    size_t n = ag_gpt_params(a, pa, NULL, 128);
    ck_assert_uint_eq(ag_gpt_params(b, pb, NULL, 128), n);
    for (size_t i = 0; i < n; i++)
        if (!ag_same_shape(pa[i], pb[i]) ||
            memcmp(pa[i]->data, pb[i]->data, pa[i]->size * sizeof(ag_real)))
            return 0;
    return 1;
}

/* The model f makes has g's weights, bit for bit. */
static void assert_model_of(const ag_gpt_file *f, ag_gpt *g)
{
    char err[600];
    ag_gpt *m = ag_gpt_file_model(f, err, sizeof(err));
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert(same_params(g, m));
    ag_gpt_free(m);
}

START_TEST(test_checkpoint_layout)
{
    char dir[256], path[512], err[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "g.safetensors");
    ag_text *text = letters(500, 7);
    ag_gpt_config cfg = small_config();
    cfg.bias = 1;
    ag_gpt *g = small_gpt(&cfg, 81);
    scale_weights(g, 1, 82);
    ck_assert_msg(ag_gpt_save(g, text->vocab, path, err, sizeof(err)) == AG_OK, "%s", err);
    /* PyTorch's names, shapes and (out, in) layouts */
    ag_st_file *f;
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    struct {
        const char *name;
        int ndim, d0, d1;
    } want[] = {{"transformer.wte.weight", 2, 7, 8},
                {"transformer.wpe.weight", 2, 6, 8},
                {"transformer.h.1.ln_1.weight", 1, 8, 0},
                {"transformer.h.1.ln_1.bias", 1, 8, 0},
                {"transformer.h.1.attn.c_attn.weight", 2, 24, 8},
                {"transformer.h.1.attn.c_attn.bias", 1, 24, 0},
                {"transformer.h.1.attn.c_proj.weight", 2, 8, 8},
                {"transformer.h.1.mlp.c_fc.weight", 2, 32, 8},
                {"transformer.h.1.mlp.c_proj.weight", 2, 8, 32},
                {"transformer.ln_f.weight", 1, 8, 0},
                {"lm_head.weight", 2, 7, 8}};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        int nd, d[AG_MAX_DIMS];
        ck_assert_msg(ag_st_shape(f, want[k].name, &nd, d, err, sizeof(err)) == AG_OK, "%s", err);
        ck_assert_int_eq(nd, want[k].ndim);
        ck_assert_int_eq(d[0], want[k].d0);
        if (nd == 2)
            ck_assert_int_eq(d[1], want[k].d1);
    }
    ck_assert_uint_eq(ag_st_count(f), 2 + 2 * 12 + 2 + 1);
    ck_assert_str_eq(ag_st_meta(f, "vocab"), "abcdefg");
    ck_assert_str_eq(ag_st_meta(f, "n_embd"), "8");
    ck_assert_str_eq(ag_st_meta(f, "bias"), "true");
    ck_assert_ptr_null(ag_st_meta(f, "step"));
    /* c_attn row r: Q's output r (column r of wq), then K's, then V's */
    ag_real c_attn[24 * 8], fc[32 * 8];
    ck_assert_int_eq(ag_st_get(f, "transformer.h.1.attn.c_attn.weight", 2, (int[]){24, 8}, c_attn,
                               err, sizeof(err)),
                     AG_OK);
    ck_assert_int_eq(
        ag_st_get(f, "transformer.h.1.mlp.c_fc.weight", 2, (int[]){32, 8}, fc, err, sizeof(err)),
        AG_OK);
    const ag_tensor *wq = ag_gpt_param(g, "h.1.attn.wq"), *wv = ag_gpt_param(g, "h.1.attn.wv");
    const ag_tensor *wfc = ag_gpt_param(g, "h.1.mlp.w_fc");
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < 8; i++) {
            ck_assert(c_attn[r * 8 + i] == wq->data[i * 8 + r]);
            ck_assert(c_attn[(16 + r) * 8 + i] == wv->data[i * 8 + r]);
        }
    for (int r = 0; r < 32; r++)
        for (int i = 0; i < 8; i++)
            ck_assert(fc[r * 8 + i] == wfc->data[i * 32 + r]);
    ag_st_free(f);
    /* and back: the same model, bit for bit */
    ag_gpt_file *gf;
    ck_assert_msg(ag_gpt_file_load(path, &gf, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert_int_eq(ag_gpt_file_train(gf, NULL, NULL), 0);
    const ag_gpt_config *lc = ag_gpt_file_config(gf);
    ck_assert(lc->vocab == 7 && lc->seq == 6 && lc->layers == 2 && lc->heads == 2 && lc->dim == 8 &&
              lc->bias == 1);
    ck_assert_str_eq(ag_vocab_chars(ag_gpt_file_vocab(gf)), "abcdefg");
    assert_model_of(gf, g);
    ag_gpt_file_free(gf);
    ag_gpt_free(g);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

/* This process's address space now, in bytes (0: unknown). */
static double address_space(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    int got = f && fscanf(f, "%lu", &pages) == 1;
    if (f)
        fclose(f);
    return got ? (double)pages * (double)sysconf(_SC_PAGESIZE) : 0;
}

/* Saving needs no memory a model's size: the file's tensors are made as
 * they are written. With the address space held to 4 MB above what the
 * trained model takes (the file, its weights and AdamW's state, is 19 MB in
 * float), the save still succeeds, and writes what an unlimited one does.
 * A run must never train for hours and then fail to save. */
START_TEST(test_save_in_little_memory)
{
    double now = address_space();
    struct rlimit old;
    if (run_sanitized() || now <= 0 || getrlimit(RLIMIT_AS, &old) != 0)
        return; /* sanitizers reserve terabytes of address space */
    char dir[256], p1[512], p2[512], err[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(p1, sizeof(p1), dir, "free.safetensors");
    file_path(p2, sizeof(p2), dir, "held.safetensors");
    ag_text *text = letters(2000, 7);
    ag_gpt_config cfg = small_config();
    cfg.dim = 256, cfg.layers = 2, cfg.heads = 4, cfg.seq = 8;
    ag_gpt *g = small_gpt(&cfg, 5);
    ag_gpt_trainer *t = small_trainer(g, text, 6);
    steps(t, 1);
    ck_assert_int_eq(ag_gpt_trainer_save(t, p1, err, sizeof(err)), AG_OK);
    struct rlimit held = old;
    held.rlim_cur = (rlim_t)(address_space() + 4 * 1024.0 * 1024.0);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &held), 0);
    ag_status st = ag_gpt_trainer_save(t, p2, err, sizeof(err));
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
    ck_assert_msg(st == AG_OK, "%s", err);
    size_t la = 0, lb = 1;
    char *fa = file_read(p1, &la), *fb = file_read(p2, &lb);
    ck_assert_msg(la > 3 * 4e6 && la == lb && memcmp(fa, fb, la) == 0, "%zu and %zu bytes", la, lb);
    free(fa), free(fb);
    /* read back: every weight as it was, through tensors of many chunks of values
     * (a block's (256, 768) weight written (768, 256), chunks starting mid-row) */
    ag_gpt_file *f;
    ck_assert_msg(ag_gpt_file_load(p2, &f, err, sizeof(err)) == AG_OK, "%s", err);
    assert_model_of(f, g);
    ag_gpt_file_free(f);
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

/* n steps, save, load into a fresh model and trainer, m more: the same
 * weights and the same checkpoint, bit for bit, as n + m steps at once. */
START_TEST(test_resume_bitwise)
{
    char dir[256], p1[512], p2[512], err[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(p1, sizeof(p1), dir, "whole.safetensors");
    file_path(p2, sizeof(p2), dir, "resumed.safetensors");
    ag_text *text = letters(2000, 7);
    ag_gpt_config cfg = small_config();
    cfg.dropout = 0.2;
    ag_gpt *a = small_gpt(&cfg, 91);
    ag_gpt_trainer *ta = small_trainer(a, text, 92);
    steps(ta, 7);
    ck_assert_int_eq(ag_gpt_trainer_save(ta, p1, err, sizeof(err)), AG_OK);

    ag_gpt *b = small_gpt(&cfg, 91);
    ag_gpt_trainer *tb = small_trainer(b, text, 92);
    steps(tb, 3);
    ck_assert_int_eq(ag_gpt_trainer_save(tb, p2, err, sizeof(err)), AG_OK);
    ag_gpt_trainer_free(tb);
    ag_gpt_free(b);
    ag_gpt_file *f;
    ck_assert_msg(ag_gpt_file_load(p2, &f, err, sizeof(err)) == AG_OK, "%s", err);
    ag_gpt_train_config tc;
    long done;
    ck_assert_int_eq(ag_gpt_file_train(f, &tc, &done), 1);
    ck_assert_int_eq(done, 3);
    ck_assert_int_eq(tc.decay_steps, 8);
    b = ag_gpt_file_model(f, err, sizeof(err));
    ck_assert_ptr_nonnull(b);
    tb = ag_gpt_trainer_new(b, text, &tc, err, sizeof(err));
    ck_assert_ptr_nonnull(tb);
    ck_assert_msg(ag_gpt_trainer_restore(tb, f, err, sizeof(err)) == AG_OK, "%s", err);
    ag_gpt_file_free(f);
    steps(tb, 4);
    ck_assert(same_params(a, b));
    ck_assert_int_eq(ag_gpt_trainer_save(tb, p2, err, sizeof(err)), AG_OK);
    size_t la = 0, lb = 1;
    char *fa = file_read(p1, &la), *fb = file_read(p2, &lb);
    ck_assert(la == lb && memcmp(fa, fb, la) == 0);
    free(fa), free(fb);
    ag_gpt_trainer_free(ta), ag_gpt_trainer_free(tb);
    ag_gpt_free(a), ag_gpt_free(b);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

/* Rewrite a saved checkpoint with one thing changed, and load it. */
typedef void (*tamper_fn)(ag_st_writer *w, const ag_st_file *f, const char *name, int *skip);

static void tamper_meta(ag_st_writer *w, const ag_st_file *f, const char *key, const char *value)
{
    for (size_t i = 0; i < ag_st_meta_count(f); i++) {
        const char *k = ag_st_meta_key(f, i);
        if (strcmp(k, key) != 0)
            ag_st_add_meta(w, k, ag_st_meta(f, k));
    }
    if (value)
        ag_st_add_meta(w, key, value);
}

/* Copy src to dst with one change: metadata key set to value (NULL:
 * removed); tensor `poison` given a NaN (nan) or its first element
 * changed; tensor `drop` left out; a tensor `extra` of (rows) zeros added.
 * A NULL name changes nothing. */
typedef struct tamper {
    const char *key, *value, *poison;
    int nan;
    const char *drop, *extra;
    int rows;
} tamper;

static void rewrite_with(const char *src, const char *dst, const tamper *t)
{
    ag_st_file *f;
    char err[600];
    ck_assert_int_eq(ag_st_load(src, &f, err, sizeof(err)), AG_OK);
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    tamper_meta(w, f, t->key ? t->key : "", t->key ? t->value : NULL);
    size_t n = ag_st_count(f);
    ag_real **bufs = calloc(n + 1, sizeof(*bufs));
    for (size_t i = 0; i < n; i++) {
        const char *name = ag_st_name(f, i);
        int nd, d[AG_MAX_DIMS];
        ck_assert_int_eq(ag_st_shape(f, name, &nd, d, err, sizeof(err)), AG_OK);
        size_t size = 1;
        for (int k = 0; k < nd; k++)
            size *= (size_t)d[k];
        bufs[i] = malloc(size * sizeof(ag_real) + 1);
        ck_assert_int_eq(ag_st_get(f, name, nd, d, bufs[i], err, sizeof(err)), AG_OK);
        if (t->poison && strcmp(name, t->poison) == 0)
            bufs[i][0] = t->nan ? (ag_real)NAN : bufs[i][0] + 1;
        if (!t->drop || strcmp(name, t->drop) != 0)
            ag_st_add(w, name, nd, d, bufs[i]);
    }
    if (t->extra) {
        bufs[n] = calloc((size_t)t->rows, sizeof(ag_real));
        ag_st_add(w, t->extra, 1, &t->rows, bufs[n]);
    }
    ck_assert_int_eq(ag_st_save(w, dst, err, sizeof(err)), AG_OK);
    ag_st_writer_free(w);
    for (size_t i = 0; i <= n; i++)
        free(bufs[i]);
    free(bufs);
    ag_st_free(f);
}

static void rewrite(const char *src, const char *dst, const char *key, const char *value,
                    const char *poison, int nan)
{
    rewrite_with(src, dst, &(tamper){.key = key, .value = value, .poison = poison, .nan = nan});
}

static void rewrite_tensors(const char *src, const char *dst, const char *drop, const char *extra,
                            int rows)
{
    rewrite_with(src, dst, &(tamper){.drop = drop, .extra = extra, .rows = rows});
}

static void load_fails(const char *path, const char *message)
{
    ag_gpt_file *f;
    char err[600] = "";
    ag_gpt *g = NULL;
    if (ag_gpt_file_load(path, &f, err, sizeof(err)) == AG_OK) {
        g = ag_gpt_file_model(f, err, sizeof(err));
        ag_gpt_file_free(f);
    }
    ck_assert_ptr_null(g);
    run_assert_has(err, message);
}

START_TEST(test_checkpoint_hostile)
{
    char dir[256], good[512], bad[512], err[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(good, sizeof(good), dir, "good.safetensors");
    file_path(bad, sizeof(bad), dir, "bad.safetensors");
    ag_text *text = letters(500, 7);
    ag_gpt_config cfg = small_config();
    ag_gpt *g = small_gpt(&cfg, 101);
    ck_assert_int_eq(ag_gpt_save(g, text->vocab, good, err, sizeof(err)), AG_OK);
    rewrite(good, bad, "format", "attograd-checkpoint", NULL, 0);
    load_fails(bad, "not an attograd GPT checkpoint (format 'attograd-checkpoint')");
    rewrite(good, bad, "n_head", NULL, NULL, 0);
    load_fails(bad, "metadata 'n_head' is missing");
    rewrite(good, bad, "n_head", "3", NULL, 0);
    load_fails(bad, "metadata n_head 3 does not divide n_embd 8");
    rewrite(good, bad, "n_layer", " 2", NULL, 0);
    load_fails(bad, "metadata n_layer ' 2' is not a whole number in 0..1024");
    rewrite(good, bad, "dropout", "nan", NULL, 0);
    load_fails(bad, "metadata dropout 'nan' is not a number in 0..");
    rewrite(good, bad, "bias", "yes", NULL, 0);
    load_fails(bad, "metadata bias 'yes' is not true or false");
    rewrite(good, bad, "vocab", "abcdef", NULL, 0);
    load_fails(bad, "metadata vocab has 6 characters, vocab_size says 7");
    rewrite(good, bad, "vocab", "abcdeff", NULL, 0);
    load_fails(bad, "the characters must be distinct and in increasing order");
    rewrite(good, bad, "block_size", "5", NULL, 0);
    load_fails(bad, "bad.safetensors: tensor 'transformer.wpe.weight' has shape [6x8], but the "
                    "metadata's block_size 5, n_embd 8 call for [5x8]");
    rewrite(good, bad, NULL, NULL, "transformer.h.1.mlp.c_fc.weight", 1);
    load_fails(bad, "tensor 'transformer.h.1.mlp.c_fc.weight' holds NaN at element 0");
    rewrite(good, bad, NULL, NULL, "lm_head.weight", 0);
    load_fails(bad, "lm_head.weight differs from transformer.wte.weight");
    /* a model's file cannot resume a run */
    ag_gpt_file *f;
    ck_assert_int_eq(ag_gpt_file_load(good, &f, err, sizeof(err)), AG_OK);
    ag_gpt_trainer *t = small_trainer(g, text, 1);
    ck_assert_int_eq(ag_gpt_trainer_restore(t, f, err, sizeof(err)), AG_ERR_FORMAT);
    run_assert_has(err, "holds a model but no training state");
    ag_gpt_trainer_free(t);
    ag_gpt_file_free(f);
    ag_gpt_free(g);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

/* The settings and the tensors of a checkpoint agree exactly, or it is
 * refused at load, before a model is made: each setting that changes which
 * tensors exist or their shape, both ways, and tensors dropped or added. */
START_TEST(test_checkpoint_disagrees)
{
    char dir[256], good[512], trained[512], bad[512], err[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(good, sizeof(good), dir, "good.st");
    file_path(trained, sizeof(trained), dir, "trained.st");
    file_path(bad, sizeof(bad), dir, "bad.st");
    ag_text *text = letters(500, 7);
    ag_gpt_config cfg = small_config(); /* 2 layers, dim 8, seq 6, vocab 7, no bias */
    ag_gpt *g = small_gpt(&cfg, 101);
    ck_assert_int_eq(ag_gpt_save(g, text->vocab, good, err, sizeof(err)), AG_OK);
    ag_gpt_trainer *t = small_trainer(g, text, 1);
    ck_assert_int_eq(ag_gpt_trainer_save(t, trained, err, sizeof(err)), AG_OK);
    static const struct {
        const char *key, *value, *message;
    } meta[] = {
        {"n_layer", "1",
         "tensor 'transformer.h.1.attn.c_attn.weight' disagrees with the metadata: "
         "metadata n_layer is 1, but the file holds block 1"},
        {"n_layer", "3",
         "tensor 'transformer.h.2.ln_1.weight' is missing (the metadata's "
         "n_layer 3, layernorm true calls for it)"},
        {"n_layer", "1024", "tensor 'transformer.h.2.ln_1.weight' is missing"},
        {"mlp", "false",
         "tensor 'transformer.h.0.ln_2.weight' disagrees with the metadata: "
         "metadata mlp is false, but the file holds an MLP"},
        {"bias", "true",
         "tensor 'transformer.h.0.ln_1.bias' is missing (the metadata's "
         "n_layer 2, layernorm true, bias true calls for it)"},
        {"layernorm", "false",
         "tensor 'transformer.h.0.ln_1.weight' disagrees with the "
         "metadata: metadata layernorm is false"},
        {"posenc", "none",
         "tensor 'transformer.wpe.weight' disagrees with the metadata: "
         "metadata posenc is none, but the file holds position vectors"},
        {"n_embd", "4096",
         "tensor 'transformer.wte.weight' has shape [7x8], but the metadata's "
         "vocab_size 7, n_embd 4096 call for [7x4096]"},
        {"n_embd", "16",
         "has shape [7x8], but the metadata's vocab_size 7, n_embd 16 call for "
         "[7x16]"},
        {"block_size", "65536",
         "tensor 'transformer.wpe.weight' has shape [6x8], but the "
         "metadata's block_size 65536, n_embd 8 call for [65536x8]"},
    };
    for (size_t k = 0; k < sizeof(meta) / sizeof(meta[0]); k++) {
        rewrite(good, bad, meta[k].key, meta[k].value, NULL, 0);
        load_fails(bad, meta[k].message);
        load_fails(bad, "bad.st: ");
    }
    /* a trainer's file: its optimizer state too */
    rewrite(trained, bad, "n_layer", "1", NULL, 0);
    load_fails(bad, "metadata n_layer is 1, but the file holds block 1");
    rewrite(trained, bad, "step", NULL, NULL, 0); /* a model's, with optimizer state left over */
    load_fails(bad, "the metadata has no step (a model, not a trainer's checkpoint), but the "
                    "file holds optimizer state");
    rewrite_tensors(trained, bad, "optim.transformer.h.1.mlp.c_fc.weight.v", NULL, 0);
    load_fails(bad, "tensor 'optim.transformer.h.1.mlp.c_fc.weight.v' is missing (the "
                    "metadata's step (a trainer's checkpoint) calls for it)");
    /* tensors dropped or added */
    rewrite_tensors(good, bad, "transformer.h.1.attn.c_proj.weight", NULL, 0);
    load_fails(bad, "tensor 'transformer.h.1.attn.c_proj.weight' is missing (the metadata's "
                    "n_layer 2 calls for it)");
    rewrite_tensors(good, bad, NULL, "transformer.h.2.ln_1.weight", 8);
    load_fails(bad, "metadata n_layer is 2, but the file holds block 2");
    rewrite_tensors(good, bad, NULL, "something.else", 3);
    load_fails(bad, "tensor 'something.else' is not one the metadata calls for (a left-over?)");
    rewrite_tensors(good, bad, NULL, "transformer.h.0.attn.c_attn.bias", 24);
    load_fails(bad, "metadata bias is false, but the file holds a bias");
    rewrite_tensors(good, bad, "lm_head.weight", NULL, 0); /* optional: the head is tied */
    ag_gpt_file *f;
    ck_assert_msg(ag_gpt_file_load(bad, &f, err, sizeof(err)) == AG_OK, "%s", err);
    ag_gpt_file_free(f);
    rewrite_tensors(good, bad, "lm_head.weight", "lm_head.weight", 7);
    load_fails(bad, "tensor 'lm_head.weight' has shape [7], but the metadata's vocab_size 7, "
                    "n_embd 8 call for [7x8]");
    /* the untouched files load, from memory as from disk */
    size_t len;
    char *bytes = file_read(trained, &len);
    ck_assert_int_eq(ag_gpt_file_parse(bytes, len, "mem", &f, err, sizeof(err)), AG_OK);
    ck_assert_str_eq(ag_gpt_file_path(f), "mem");
    long steps = -1;
    ck_assert_int_eq(ag_gpt_file_train(f, NULL, &steps), 1);
    ck_assert_int_eq(steps, 0);
    ag_gpt_file_free(f);
    bytes[len / 2] ^= 0x55; /* somewhere in the data: still a file, other numbers */
    if (ag_gpt_file_parse(bytes, 12, "cut", &f, err, sizeof(err)) == AG_OK)
        ag_gpt_file_free(f);
    else
        run_assert_has(err, "cut: ");
    free(bytes);
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

/* The GPT's loss and parameter gradients, on batch (ids, targets), into
 * grads (the parameters one after another), with the tape reusing its
 * gradient buffers or not. Returns how many values. */
static size_t gpt_grads(ag_gpt *g, const int *ids, const int *targets, int B, int T, int reuse,
                        ag_real *grads, size_t max)
{
    ag_tensor *p[128];
    size_t n = ag_gpt_params(g, p, NULL, 128), at = 0;
    ag_tape *tape = ag_tape_new();
    ag_tape_reuse_grads(tape, reuse);
    ag_zero_grad(p, n);
    ag_rng drop = ag_rng_new(9);
    ag_tensor *l = ag_gpt_loss(tape, g, ids, targets, B, T, &drop, NULL);
    ck_assert_int_eq(ag_backward(tape, l), AG_OK);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_le(at + p[i]->size, max);
        memcpy(grads + at, p[i]->grad, p[i]->size * sizeof(ag_real));
        at += p[i]->size;
    }
    grads[at++] = l->data[0];
    ag_tape_free(tape);
    return at;
}

/* The trainer's backward reuses its gradient buffers: the GPT's gradients
 * (with dropout and without) are the same bits as with every buffer kept. */
START_TEST(test_reused_grads_same_bits)
{
    for (int k = 0; k < 2; k++) {
        ag_gpt_config c = small_config();
        c.dropout = k ? 0.2 : 0;
        ag_gpt *g = small_gpt(&c, 12);
        scale_weights(g, 0.5, 13);
        ag_rng rng = ag_rng_new(14);
        int B = 3, T = c.seq, ids[3 * 6], targets[3 * 6];
        for (int i = 0; i < B * T; i++) {
            ids[i] = (int)ag_rng_below(&rng, (uint32_t)c.vocab);
            targets[i] = (int)ag_rng_below(&rng, (uint32_t)c.vocab);
        }
        enum { MAX = 4096 };
        ag_real *kept = malloc(2 * MAX * sizeof(ag_real)), *reused = kept + MAX;
        ck_assert_ptr_nonnull(kept);
        size_t n = gpt_grads(g, ids, targets, B, T, 0, kept, MAX);
        ck_assert_uint_eq(gpt_grads(g, ids, targets, B, T, 1, reused, MAX), n);
        ck_assert(kept[0] != 0); /* a gradient, not zeros */
        ck_assert_msg(memcmp(kept, reused, n * sizeof(ag_real)) == 0, "dropout %g: differ",
                      c.dropout);
        free(kept);
        ag_gpt_free(g);
    }
}
END_TEST

/* The parameters' values and gradients, one after another, into out. */
static size_t params_of(ag_gpt *g, int grads, ag_real *out, size_t max)
{
    ag_tensor *p[128];
    size_t n = ag_gpt_params(g, p, NULL, 128), at = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_le(at + p[i]->size, max);
        memcpy(out + at, grads ? p[i]->grad : p[i]->data, p[i]->size * sizeof(ag_real));
        at += p[i]->size;
    }
    return at;
}

/* The parameters' values from src, as params_of wrote them. */
static void params_set(ag_gpt *g, const ag_real *src)
{
    ag_tensor *p[128];
    size_t n = ag_gpt_params(g, p, NULL, 128), at = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(p[i]->data, src + at, p[i]->size * sizeof(ag_real));
        at += p[i]->size;
    }
}

/* The trainer runs its batch in two halves (the second through the model's
 * twin): its gradient is the whole batch's, at the weights of that step
 * (the twin follows the updates), for halves equal or not. */
START_TEST(test_trainer_halves_make_the_batch)
{
    enum { MAX = 4096 };
    ag_real *w = malloc(3 * MAX * sizeof(ag_real)), *got = w + MAX, *want = w + 2 * MAX;
    ck_assert_ptr_nonnull(w);
    ag_text *text = letters(2000, 7);
    for (int B = 1; B <= 4; B++) {
        ag_gpt_config cfg = small_config();
        ag_gpt *g = small_gpt(&cfg, 81);
        scale_weights(g, 0.5, 82);
        ag_gpt_train_config tc = ag_gpt_train_defaults();
        tc.batch = B, tc.clip = 0, tc.lr = 1e-2, tc.seed = 83;
        char err[256];
        ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
        ck_assert_msg(t != NULL, "%s", err);
        for (int step = 0; step < 3; step++) {
            size_t n = params_of(g, 0, w, MAX);
            steps(t, 1);
            params_of(g, 1, got, MAX);
            ag_real *now = malloc(n * sizeof(ag_real));
            ck_assert_ptr_nonnull(now);
            params_of(g, 0, now, MAX);
            params_set(g, w); /* the step's weights back, for the whole batch's gradient */
            ck_assert_uint_eq(gpt_grads(g, t->x, t->y, B, cfg.seq, 0, want, MAX), n + 1);
            double top = 0;
            for (size_t i = 0; i < n; i++)
                top = fmax(top, fabs(want[i]));
            ck_assert(top > 0);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(fabs(got[i] - want[i]) <= 1e-4 * fabs(want[i]) + 1e-5 * top,
                              "batch %d, step %d, value %zu: %g, the whole batch's %g", B, step + 1,
                              i, (double)got[i], (double)want[i]);
            params_set(g, now);
            free(now);
        }
        ag_gpt_trainer_free(t);
        ag_gpt_free(g);
    }
    ag_text_free(text);
    free(w);
}
END_TEST

/* The trainer's steps give the same bits on any number of threads: one
 * and four run the halves in turn, two and three at once. */
START_TEST(test_trainer_threads_same_bits)
{
    enum { MAX = 4096 };
    ag_real *first = malloc(2 * MAX * sizeof(ag_real)), *other = first + MAX;
    ck_assert_ptr_nonnull(first);
    ag_text *text = letters(2000, 7);
    for (int B = 3; B <= 4; B++)
        for (int threads = 1; threads <= 4; threads++) {
            ag_set_threads(threads);
            ag_gpt_config cfg = small_config();
            cfg.dropout = 0.2;
            ag_gpt *g = small_gpt(&cfg, 84);
            ag_gpt_train_config tc = ag_gpt_train_defaults();
            tc.batch = B, tc.lr = 1e-2, tc.seed = 85;
            char err[256];
            ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
            ck_assert_msg(t != NULL, "%s", err);
            steps(t, 4);
            size_t n = params_of(g, 0, threads == 1 ? first : other, MAX);
            ck_assert_msg(threads == 1 || memcmp(first, other, n * sizeof(ag_real)) == 0,
                          "batch %d: %d threads differ from one", B, threads);
            ag_gpt_trainer_free(t);
            ag_gpt_free(g);
        }
    ag_set_threads(1);
    ag_text_free(text);
    free(first);
}
END_TEST

/* A step that overflows names the op that went NaN or Inf, the same one on
 * any number of threads, whether its halves shared a tape (one thread:
 * they run again on tapes of their own for the search) or not; and it
 * leaves the run where it was. */
START_TEST(test_trainer_names_the_op)
{
#ifdef AG_REAL_DOUBLE
    const ag_real huge = (ag_real)1e200;
#else
    const ag_real huge = (ag_real)1e30;
#endif
    ag_text *text = letters(2000, 7);
    for (int B = 1; B <= 4; B += 3) {
        char first[256] = "";
        for (int threads = 1; threads <= 4; threads++) {
            ag_set_threads(threads);
            ag_gpt_config cfg = small_config();
            ag_gpt *g = small_gpt(&cfg, 86);
            ag_tensor *p[128];
            size_t n = ag_gpt_params(g, p, NULL, 128);
            for (size_t i = 0; i < n; i++) /* every weight, so that both halves overflow */
                for (size_t k = 0; k < p[i]->size; k += 3)
                    p[i]->data[k] = k % 2 ? huge : -huge;
            ag_gpt_train_config tc = ag_gpt_train_defaults();
            tc.batch = B, tc.seed = 87;
            char err[256];
            ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
            ck_assert_msg(t != NULL, "%s", err);
            ck_assert_int_eq(ag_gpt_trainer_step(t, NULL, err, sizeof(err)), AG_ERR_NUMERIC);
            ck_assert_msg(strncmp(err, "step 1: anomaly: ", 17) == 0 && strstr(err, " of op "),
                          "no op named: %s", err);
            if (threads == 1)
                snprintf(first, sizeof(first), "%s", err);
            ck_assert_str_eq(err, first);
            ck_assert_int_eq(ag_gpt_trainer_steps(t), 0);
            ag_gpt_trainer_free(t);
            ag_gpt_free(g);
        }
    }
    ag_set_threads(1);
    ag_text_free(text);
}
END_TEST

Suite *suite_gpt(void)
{
    Suite *s = suite_create("gpt");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_gpt_params);
    tcase_add_test(tc, test_gpt_config_errors);
    tcase_add_test(tc, test_gpt_init);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_gradcheck_block);
    tcase_add_test(tc, test_gradcheck_gpt);
    tcase_add_test(tc, test_gradcheck_gpt_variants);
    tcase_add_test(tc, test_reused_grads_same_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("sampling");
    tcase_set_timeout(tc, 120); /* the reference kernels take seconds here; nothing is timed */
    tcase_add_test(tc, test_cache_equals_tape);
    tcase_add_test(tc, test_sampling);
    tcase_add_test(tc, test_val_loss);
    tcase_add_test(tc, test_val_loss_chunks);
    suite_add_tcase(s, tc);
    tc = tcase_create("training");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_lr_schedule);
    tcase_add_test(tc, test_trainer_learns);
    tcase_add_test(tc, test_trainer_step_allocates_nothing);
    tcase_add_test(tc, test_trainer_halves_make_the_batch);
    tcase_add_test(tc, test_trainer_threads_same_bits);
    tcase_add_test(tc, test_trainer_names_the_op);
    suite_add_tcase(s, tc);
    tc = tcase_create("checkpoints");
    tcase_add_test(tc, test_checkpoint_layout);
    tcase_add_test(tc, test_resume_bitwise);
    tcase_add_test(tc, test_save_in_little_memory);
    tcase_add_test(tc, test_checkpoint_hostile);
    tcase_add_test(tc, test_checkpoint_disagrees);
    suite_add_tcase(s, tc);
    return s;
}
