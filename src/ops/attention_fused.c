/*
 * attention_fused.c - the whole attention layer as one op, for speed and
 * memory. The math is the layer's (docs/attention-layer.md), as the op by
 * op form records it:
 *
 *   Q = x wq, K = x wk, V = x wv                         (B,T,d)
 *   P_h = softmax(Q_h K_h^T / sqrt(dh)) over keys        (B,H,T,T), masked if causal
 *   O = [P_1 V_1 | ... | P_H V_H],  out = O wo           (B,T,d)
 *
 * What fusing changes is the bookkeeping, not the arithmetic. Head h of Q is
 * columns h*dh .. h*dh+dh-1 of Q, read in place with row stride d, so no
 * copies split or merge heads; the scale is folded into the scores' product;
 * scores are written straight into P's tile and softmaxed there. Of the
 * (B,H,T,T) tensors only P is kept. Backward makes each head's (T,T)
 * gradient in a scratch tile, and works through the batch a chunk at a time,
 * so dO, dQ, dK and dV exist for one chunk only. Heads of a chunk are split
 * over the threads; every product is computed the same way whichever thread
 * runs it, so results do not depend on the thread count.
 */
#include "../core/gemm.h"
#include "../core/internal.h"
#include "../core/threads.h"

#include <math.h>

static void attention_backward(ag_tape *tape, const ag_entry *e);
static const ag_op attention_op = {"attention", attention_backward, 0};

/* Backward works through the batch in chunks of about this many rows (B T
 * positions): enough for the weight-gradient products to run at full speed,
 * few enough that a chunk's four (rows, d) gradients stay small. */
#define CHUNK_ROWS 512

typedef struct fused_saved {
    ag_real *q, *k, *v, *o;   /* (B,T,d) each */
    ag_tensor *p;             /* (B,H,T,T): the softmax weights */
    int causal;
} fused_saved;

/* The heads of one forward pass, or of one chunk of backward. */
typedef struct tile_job {
    size_t H, T, d, dh;
    ag_real scale;            /* 1 / sqrt(dh) */
    int causal, simd, wrong;
    const ag_real *q, *k, *v; /* (B,T,d) */
    ag_real *p;               /* (B,H,T,T) */
    ag_real *o;               /* forward: (B,T,d) */
    /* backward */
    size_t b0, tiles, groups; /* first batch of the chunk, its heads, tasks */
    const ag_real *d_o;       /* (chunk rows, d): the chunk's dO */
    ag_real *dq, *dk, *dv;    /* (chunk rows, d) */
    ag_real *scratch;         /* groups (T,T) tiles */
} tile_job;

/* Forward for head i = b H + h: scores into P's tile, softmax in place, P V_h into O. */
static void forward_tile(void *ctx, size_t i)
{
    const tile_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh;
    size_t off = i / j->H * T * d + i % j->H * dh;   /* row 0 of head h in batch b */
    ag_real *p = j->p + i * T * T;
    ag_gemm(0, 1, T, T, dh, j->scale, j->q + off, d, j->k + off, d, 0, p, T);
    for (size_t r = 0; r < T; r++) {
        /* causal: query r sees keys 0..r, the rest get weight exactly 0 (the
         * softmax of -inf), so only the first r + 1 scores are softmaxed */
        size_t n = j->causal ? r + 1 : T;
        ag_softmax_row(p + r * T, p + r * T, n, j->simd);
        for (size_t c = n; c < T; c++)
            p[r * T + c] = 0;
    }
    ag_gemm(0, 0, T, dh, T, 1, p, T, j->v + off, d, 0, j->o + off, d);
}

/* <a, b> over n, in 16 independent lanes so that the compiler can vectorise
 * it and the sum does not wait on one long chain of additions. */
static ag_real dot_lanes(const ag_real *a, const ag_real *b, size_t n)
{
    if (n < 16) {   /* a short row (T = 8): one chain is quicker than folding lanes */
        ag_real sum = 0;
        for (size_t c = 0; c < n; c++)
            sum += a[c] * b[c];
        return sum;
    }
    ag_real lane[16] = {0};
    size_t c = 0;
    for (; c + 16 <= n; c += 16)
        for (size_t k = 0; k < 16; k++)
            lane[k] += a[c + k] * b[c + k];
    for (size_t k = 0; c < n; c++, k++)
        lane[k] += a[c] * b[c];
    for (size_t w = 8; w > 0; w /= 2)
        for (size_t k = 0; k < w; k++)
            lane[k] += lane[k + w];
    return lane[0];
}

/* Backward for heads g, g + groups, ... of the chunk, in scratch tile g. */
static void backward_group(void *ctx, size_t g)
{
    const tile_job *j = ctx;
    size_t H = j->H, T = j->T, d = j->d, dh = j->dh;
    ag_real *ds = j->scratch + g * T * T;
    for (size_t t = g; t < j->tiles; t += j->groups) {
        size_t b = j->b0 + t / H, h = t % H;
        size_t off = b * T * d + h * dh;              /* in Q, K, V */
        size_t loff = t / H * T * d + h * dh;         /* in the chunk's gradients */
        const ag_real *p = j->p + (b * H + h) * T * T, *d_o = j->d_o + loff;
        /* O_h = P V_h: dP = dO_h V_h^T, dV_h = P^T dO_h */
        ag_gemm(0, 1, T, T, dh, 1, d_o, d, j->v + off, d, 0, ds, T);
        /* P = softmax(S): dS = P * (dP - <dP, P>) row by row (see softmax.c);
         * masked keys have P = 0 and get no gradient. This first pass over P
         * reads it row by row, as the prefetcher likes, and leaves it in
         * cache for P^T dO_h, which reads it down its columns. */
        for (size_t r = 0; r < T; r++) {
            const ag_real *pr = p + r * T;
            ag_real *dr = ds + r * T;
            ag_real dot = j->wrong ? 0 : dot_lanes(dr, pr, T);   /* wrong: the injected bug */
            for (size_t c = 0; c < T; c++)
                dr[c] = pr[c] * (dr[c] - dot);
        }
        ag_gemm(1, 0, T, dh, T, 1, p, T, d_o, d, 0, j->dv + loff, d);
        /* S = scale Q_h K_h^T: dQ_h = scale dS K_h, dK_h = scale dS^T Q_h */
        ag_gemm(0, 0, T, dh, T, j->scale, ds, T, j->k + off, d, 0, j->dq + loff, d);
        ag_gemm(1, 0, T, dh, T, j->scale, ds, T, j->q + off, d, 0, j->dk + loff, d);
    }
}

static int check_shapes(ag_tape *tape, const ag_tensor *const *in, int heads)
{
    static const char *const names[5] = {"x", "wq", "wk", "wv", "wo"};
    char s[64];
    const ag_tensor *x = in[0];
    if (x->ndim != 3) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "attention: x is %s: needs 3 dims (B,T,d)",
                     ag_shape_str(x, s, sizeof(s)));
        return 0;
    }
    int d = x->shape[2];
    for (int i = 1; i < 5; i++) {
        if (in[i]->ndim != 2 || in[i]->shape[0] != d || in[i]->shape[1] != d) {
            ag_tape_fail(tape, AG_ERR_SHAPE, "attention: %s is %s: needs (%d,%d) for x of dim %d",
                         names[i], ag_shape_str(in[i], s, sizeof(s)), d, d, d);
            return 0;
        }
    }
    if (heads < 1 || d % heads != 0) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "attention: heads %d does not divide dim %d", heads, d);
        return 0;
    }
    return 1;
}

ag_tensor *ag_attention_fused(ag_tape *tape, const ag_tensor *x, const ag_tensor *wq,
                              const ag_tensor *wk, const ag_tensor *wv, const ag_tensor *wo,
                              int heads, int causal, ag_tensor **p_out)
{
    if (p_out)
        *p_out = NULL;
    const ag_tensor *in[5] = {x, wq, wk, wv, wo};
    if (!ag_op_begin(tape, "attention", 5, in) || !check_shapes(tape, in, heads))
        return NULL;
    int B = x->shape[0], T = x->shape[1], d = x->shape[2];
    ag_tensor *out = ag_tensor_make(tape, 3, x->shape, 0, ag_any_grad(5, in));
    ag_tensor *p = out ? ag_tensor_make(tape, 4, (int[]){B, heads, T, T}, 0, 0) : NULL;
    fused_saved *sv = p ? ag_arena_alloc(tape, sizeof(*sv)) : NULL;
    if (!sv)
        return NULL;
    size_t bytes = x->size * sizeof(ag_real);   /* fits: x exists */
    sv->q = ag_arena_alloc(tape, bytes);
    sv->k = sv->q ? ag_arena_alloc(tape, bytes) : NULL;
    sv->v = sv->k ? ag_arena_alloc(tape, bytes) : NULL;
    sv->o = sv->v ? ag_arena_alloc(tape, bytes) : NULL;
    sv->p = p;
    sv->causal = causal != 0;
    ag_entry *e = sv->o ? ag_tape_push(tape, &attention_op, out, 5, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = heads;
    e->saved = sv;

    size_t rows = (size_t)B * (size_t)T, dd = (size_t)d;
    ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, wq->data, dd, 0, sv->q, dd);
    ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, wk->data, dd, 0, sv->k, dd);
    ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, wv->data, dd, 0, sv->v, dd);
    tile_job job = {
        .H = (size_t)heads, .T = (size_t)T, .d = dd, .dh = dd / (size_t)heads,
        .scale = (ag_real)(1.0 / sqrt((double)(d / heads))), .causal = sv->causal,
        .simd = ag_softmax_simd(), .q = sv->q, .k = sv->k, .v = sv->v, .p = p->data, .o = sv->o,
    };
    ag_parallel_for((size_t)B * (size_t)heads, forward_tile, &job);
    ag_gemm(0, 0, rows, dd, dd, 1, sv->o, dd, wo->data, dd, 0, out->data, dd);
    if (p_out)
        *p_out = p;
    return out;
}

static void attention_backward(ag_tape *tape, const ag_entry *e)
{
    ag_tensor *x = e->in[0], *wo = e->in[4], *w[3] = {e->in[1], e->in[2], e->in[3]};
    const fused_saved *sv = e->saved;
    size_t B = (size_t)x->shape[0], T = (size_t)x->shape[1], d = (size_t)x->shape[2];
    size_t H = (size_t)e->iarg;
    const ag_real *dout = e->out->grad;
    /* out = O wo: dwo += O^T dout (dO is made chunk by chunk below) */
    if (wo->grad)
        ag_gemm(1, 0, d, d, B * T, 1, sv->o, d, dout, d, 1, wo->grad, d);
    if (!x->grad && !w[0]->grad && !w[1]->grad && !w[2]->grad)
        return;

    size_t chunk = T >= CHUNK_ROWS ? 1 : CHUNK_ROWS / T;
    if (chunk > B)
        chunk = B;
    size_t threads = (size_t)ag_parallel_threads();
    size_t max_groups = threads < chunk * H ? threads : chunk * H;
    size_t n = chunk * T * d;   /* <= x's size */
    ag_real *grads = ag_arena_alloc(tape, 4 * n * sizeof(ag_real));
    ag_real *scratch = grads ? ag_arena_alloc(tape, max_groups * T * T * sizeof(ag_real)) : NULL;
    if (!scratch)
        return;   /* the arena set the tape's error */
    ag_real *d_o = grads, *dqkv[3] = {grads + n, grads + 2 * n, grads + 3 * n};
    tile_job job = {
        .H = H, .T = T, .d = d, .dh = d / H,
        .scale = (ag_real)(1.0 / sqrt((double)(d / H))), .wrong = tape->bug == AG_BUG_SOFTMAX,
        .q = sv->q, .k = sv->k, .v = sv->v, .p = sv->p->data,
        .d_o = d_o, .dq = dqkv[0], .dk = dqkv[1], .dv = dqkv[2], .scratch = scratch,
    };
    for (size_t b0 = 0; b0 < B; b0 += chunk) {
        size_t nb = B - b0 < chunk ? B - b0 : chunk, rows = nb * T;
        ag_gemm(0, 1, rows, d, d, 1, dout + b0 * T * d, d, wo->data, d, 0, d_o, d);
        job.b0 = b0;
        job.tiles = nb * H;
        job.groups = max_groups < job.tiles ? max_groups : job.tiles;
        ag_parallel_for(job.groups, backward_group, &job);
        /* Q = x wq: dwq += x^T dQ and dx += dQ wq^T; the same for K and V */
        const ag_real *xc = x->data + b0 * T * d;
        for (int i = 0; i < 3; i++) {
            if (w[i]->grad)
                ag_gemm(1, 0, d, d, rows, 1, xc, d, dqkv[i], d, 1, w[i]->grad, d);
            if (x->grad)
                ag_gemm(0, 1, rows, d, d, 1, dqkv[i], d, w[i]->data, d, 1, x->grad + b0 * T * d, d);
        }
    }
}
