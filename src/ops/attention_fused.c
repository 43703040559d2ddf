/*
 * attention_fused.c - the whole attention layer as one op, for speed and
 * memory. The math is DESIGN.md's, as the op-by-op layer records it:
 *
 *   Q = x wq, K = x wk, V = x wv                         (B,T,d)
 *   P_h = softmax(Q_h K_h^T / sqrt(dh)) over keys        (B,H,T,T), masked if causal
 *   O = [P_1 V_1 | ... | P_H V_H],  out = O wo           (B,T,d)
 *
 * What fusing changes is the bookkeeping, not the arithmetic. Head h of Q is
 * columns h*dh .. h*dh+dh-1 of Q, read in place with row stride d, so no
 * copies split or merge heads. The heads are computed tile by tile
 * (src/core/attn_tile.h): a block of queries against a block of keys with
 * an online softmax, so no (T,T) matrix is ever made, and a causal layer
 * never computes the tiles the mask hides. Forward keeps Q, K, V, O and,
 * per query, L = the log-sum-exp of its scores; backward recomputes each
 * tile's weights as exp(S - L). Memory grows with T, not T^2. The weights
 * P are made only when the caller asks for them (p_out), for showing.
 *
 * Threads: forward shares out (batch, head, query block) work, backward
 * (batch, head, group of key blocks) work, and each block is computed the
 * same way whichever thread takes it. Backward's dQ gets one partial sum
 * per group of key blocks, added in a fixed order; how many groups depends
 * on the shapes, never on the thread count. So results are bit-identical
 * for any number of threads.
 */
#include "../core/attn_tile.h"
#include "../core/gemm.h"
#include "../core/internal.h"
#include "../core/threads.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Backward works through the batch in chunks of about this many rows (B T
 * positions): enough for the weight-gradient products to run at full speed,
 * few enough that a chunk's gradients stay small. */
#define CHUNK_ROWS 512
/* Backward shares out (head, group of key blocks) items: enough groups per
 * head that a chunk has about this many items... */
#define BWD_ITEMS 16
/* ...but at most this many, each group costing a (rows, d) partial dQ. */
#define MAX_GROUPS 4

typedef struct fused_saved {
    const ag_attn_kernel *kern;   /* the tiles forward ran; backward runs the same */
    ag_real *q, *k, *v, *o;       /* (B,T,d) each */
    ag_real *lse;                 /* (B,H,tpad): L per query, +inf past T */
    size_t tpad;                  /* T rounded up to kern->br */
    int causal;
} fused_saved;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- work shared out over the threads ----
 * ag_parallel_for runs one lane per thread; each lane has its own scratch
 * and takes the next item from a shared counter until none are left, so a
 * thread slowed by other work on the machine simply takes fewer items. */

typedef struct head_job {
    const ag_attn_kernel *kern;
    size_t H, T, d, dh, tpad;
    ag_real scale;
    int causal, wrong;
    /* forward: items are (head, query block); backward: (head, group) */
    size_t items, blocks, groups;
    atomic_size_t next;
    ag_real *scratch;             /* (lanes, per_lane) */
    size_t per_lane;
    const ag_real *q, *k, *v;     /* (B,T,d); backward: the chunk's first batch */
    ag_real *o, *lse;             /* forward: (B,T,d), (B,H,tpad) */
    /* backward, for the chunk: */
    const ag_real *d_o, *lse_c;
    ag_real *qt, *d_ot;           /* (heads, dh, tpad): scale Q^T, dO^T */
    ag_real *dsum;                /* (heads, tpad): D */
    ag_real *dq, *dk, *dv;        /* (rows, d); dq: groups partials, n apart */
    size_t n;
} head_job;

/* The next item, or SIZE_MAX when all are taken. */
static size_t take_item(head_job *j)
{
    size_t it = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    return it < j->items ? it : SIZE_MAX;
}

static void fwd_lane(void *ctx, size_t lane)
{
    head_job *j = ctx;
    ag_real *scratch = j->scratch + lane * j->per_lane;
    for (size_t it; (it = take_item(j)) != SIZE_MAX;) {
        /* a head's longest blocks (the last, when causal) first */
        size_t head = it / j->blocks, qb = j->blocks - 1 - it % j->blocks;
        size_t off = head / j->H * j->T * j->d + head % j->H * j->dh;   /* batch b, head h */
        ag_attn_fwd f = {
            j->T, j->dh, j->d, j->causal, j->scale, j->q + off, j->k + off, j->v + off,
            j->o + off, j->lse + head * j->tpad,
        };
        j->kern->fwd_block(&f, qb * j->kern->br, scratch);
    }
}

/* Scratch for the lanes that will share out up to max_items items: one
 * lane per thread, at most one per item. Sets job->scratch and returns the
 * number of lanes, or 0 when the arena is out of memory. */
static size_t lanes_alloc(ag_tape *tape, head_job *job, size_t max_items)
{
    size_t lanes = min_size((size_t)ag_parallel_threads(), max_items), bytes;
    if (!ag_mul_size(lanes * job->per_lane, sizeof(ag_real), &bytes))
        bytes = SIZE_MAX;   /* the arena reports it */
    job->scratch = ag_arena_alloc(tape, bytes);
    return job->scratch ? lanes : 0;
}

/* lane(job, i) on lanes lanes, sharing out job->items items. */
static void run_lanes(head_job *job, size_t lanes, ag_task_fn lane)
{
    atomic_init(&job->next, 0);
    ag_parallel_for(min_size(lanes, job->items), lane, job);
}

/* ---- the weights, for showing ---- */

typedef struct weights_job {
    size_t H, T, d, dh;
    ag_real scale;
    int causal, simd;
    const ag_real *q, *k;         /* (B,T,d) */
    ag_real *p;                   /* (B,H,T,T) */
} weights_job;

/* P of head i = b H + h: the scores into its tile, softmaxed in place. */
static void weights_head(void *ctx, size_t i)
{
    const weights_job *j = ctx;
    size_t T = j->T, d = j->d;
    size_t off = i / j->H * T * d + i % j->H * j->dh;
    ag_real *p = j->p + i * T * T;
    ag_gemm(0, 1, T, T, j->dh, j->scale, j->q + off, d, j->k + off, d, 0, p, T);
    for (size_t r = 0; r < T; r++) {
        /* causal: query r sees keys 0..r, the rest get weight exactly 0 */
        size_t n = j->causal ? r + 1 : T;
        ag_softmax_row(p + r * T, p + r * T, n, j->simd);
        for (size_t c = n; c < T; c++)
            p[r * T + c] = 0;
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
    size_t H = (size_t)heads, Ts = (size_t)T, dd = (size_t)d, rows = (size_t)B * Ts;
    const ag_attn_kernel *kern = ag_attn_kernel_for(Ts);
    size_t tpad = (Ts + kern->br - 1) / kern->br * kern->br, n_lse;
    if (!ag_mul_size((size_t)B * H, tpad * sizeof(ag_real), &n_lse)) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "attention: x is [%dx%dx%d]: too large", B, T, d);
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, 3, x->shape, 0, ag_any_grad(5, in));
    fused_saved *sv = out ? ag_arena_alloc(tape, sizeof(*sv)) : NULL;
    if (!sv)
        return NULL;
    size_t bytes = x->size * sizeof(ag_real);   /* fits: x exists */
    sv->q = ag_arena_alloc(tape, bytes);
    sv->k = sv->q ? ag_arena_alloc(tape, bytes) : NULL;
    sv->v = sv->k ? ag_arena_alloc(tape, bytes) : NULL;
    sv->o = sv->v ? ag_arena_alloc(tape, bytes) : NULL;
    sv->lse = sv->o ? ag_arena_alloc(tape, n_lse) : NULL;
    sv->kern = kern;
    sv->tpad = tpad;
    sv->causal = causal != 0;
    ag_entry *e = sv->lse ? ag_tape_push(tape, AG_OP_ATTENTION, out, 5, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = heads;
    e->saved = sv;

    ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, wq->data, dd, 0, sv->q, dd);
    ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, wk->data, dd, 0, sv->k, dd);
    ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, wv->data, dd, 0, sv->v, dd);
    for (size_t i = 0; i < n_lse / sizeof(ag_real); i++)
        sv->lse[i] = INFINITY;   /* past T: no weight in backward's recomputed tiles */
    size_t blocks = (Ts + kern->br - 1) / kern->br;
    head_job job = {
        .kern = kern, .H = H, .T = Ts, .d = dd, .dh = dd / H, .tpad = tpad,
        .scale = (ag_real)(1.0 / sqrt((double)(d / heads))), .causal = sv->causal,
        .items = (size_t)B * H * blocks, .blocks = blocks, .per_lane = kern->fwd_scratch(dd / H),
        .q = sv->q, .k = sv->k, .v = sv->v, .o = sv->o, .lse = sv->lse,
    };
    size_t lanes = lanes_alloc(tape, &job, job.items);
    if (!lanes)
        return NULL;
    run_lanes(&job, lanes, fwd_lane);
    ag_gemm(0, 0, rows, dd, dd, 1, sv->o, dd, wo->data, dd, 0, out->data, dd);
    if (p_out) {
        ag_tensor *p = ag_tensor_make(tape, 4, (int[]){B, heads, T, T}, 0, 0);
        if (!p)
            return NULL;
        weights_job w = {H, Ts, dd, dd / H, job.scale, sv->causal, ag_softmax_simd(),
                         sv->q, sv->k, p->data};
        ag_parallel_for((size_t)B * H, weights_head, &w);
        *p_out = p;
    }
    return out;
}

/* ---- backward ---- */

/* Head t of the chunk: Q^T (scaled) and dO^T as the tiles read them, and
 * D = rowsum(dO * O) per query. */
static void prep_head(void *ctx, size_t t)
{
    const head_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh, tpad = j->tpad;
    size_t off = t / j->H * T * d + t % j->H * dh;
    ag_real *qt = j->qt + t * dh * tpad, *d_ot = j->d_ot + t * dh * tpad;
    ag_real *dsum = j->dsum + t * tpad;
    ag_attn_pack_t(j->q + off, d, T, tpad, dh, j->scale, qt, tpad);
    ag_attn_pack_t(j->d_o + off, d, T, tpad, dh, 1, d_ot, tpad);
    for (size_t r = 0; r < tpad; r++) {
        ag_real sum = 0;
        for (size_t p = 0; r < T && p < dh; p++)
            sum += j->d_o[off + r * d + p] * j->o[off + r * d + p];
        dsum[r] = sum;
    }
}

static void bwd_lane(void *ctx, size_t lane)
{
    head_job *j = ctx;
    ag_real *scratch = j->scratch + lane * j->per_lane;
    size_t T = j->T, d = j->d, dh = j->dh, tpad = j->tpad;
    for (size_t it; (it = take_item(j)) != SIZE_MAX;) {
        size_t t = it / j->groups, g = it % j->groups;
        size_t off = t / j->H * T * d + t % j->H * dh;
        ag_attn_bwd b = {
            T, dh, d, tpad, j->causal, j->wrong, j->scale,
            j->q + off, j->k + off, j->v + off, j->d_o + off,
            j->qt + t * dh * tpad, j->d_ot + t * dh * tpad, j->lse_c + t * tpad,
            j->dsum + t * tpad, j->dq + g * j->n + off, j->dk + off, j->dv + off,
        };
        /* group g: key blocks g, g + groups, ... (with a causal mask, early
         * key blocks cost the most; interleaving evens the groups out) */
        for (size_t kb = g; kb < j->blocks; kb += j->groups)
            j->kern->bwd_block(&b, kb * j->kern->bc, scratch);
    }
}

typedef struct sum_job {
    ag_real *dq;                  /* groups partials, n apart */
    size_t n, groups, per_task;
} sum_job;

/* dQ = the groups' partial sums, added in order. */
static void sum_task(void *ctx, size_t t)
{
    const sum_job *s = ctx;
    size_t i1 = min_size(s->n, (t + 1) * s->per_task);
    for (size_t i = t * s->per_task; i < i1; i++) {
        ag_real sum = s->dq[i];
        for (size_t g = 1; g < s->groups; g++)
            sum += s->dq[g * s->n + i];
        s->dq[i] = sum;
    }
}

void ag_attention_fused_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * Per head, with S = scale Q K^T, P = softmax(S), O = P V:
     *   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D),  D = rowsum(dP * P) = rowsum(dO * O)
     *   dQ = scale dS K,  dK = scale dS^T Q
     * (the softmax's backward, dS_j = P_j (dP_j - <dP, P>) row by row, with
     * <dP, P> = <dO V^T, P> = <dO, P V> = <dO, O>, which needs no P). The
     * tiles recompute P from L and add these products block by block.
     */
    ag_tensor *x = e->in[0], *wo = e->in[4], *w[3] = {e->in[1], e->in[2], e->in[3]};
    const fused_saved *sv = e->saved;
    const ag_attn_kernel *kern = sv->kern;
    size_t B = (size_t)x->shape[0], T = (size_t)x->shape[1], d = (size_t)x->shape[2];
    size_t H = (size_t)e->iarg, dh = d / H, tpad = sv->tpad;
    ag_real scale = (ag_real)(1.0 / sqrt((double)dh));
    const ag_real *dout = e->out->grad;
    /* out = O wo: dwo += O^T dout (dO is made chunk by chunk below) */
    if (wo->grad)
        ag_gemm(1, 0, d, d, B * T, 1, sv->o, d, dout, d, 1, wo->grad, d);
    if (!x->grad && !w[0]->grad && !w[1]->grad && !w[2]->grad)
        return;

    size_t chunk = min_size(B, T >= CHUNK_ROWS ? 1 : CHUNK_ROWS / T);
    size_t blocks = (T + kern->bc - 1) / kern->bc;
    size_t groups_max = min_size(MAX_GROUPS, blocks);
    size_t n = chunk * T * d;   /* <= x's size */
    size_t n_t = chunk * H * dh * tpad, n_bytes, t_bytes;
    /* d_o, dk, dv, dq's partials; Q^T, dO^T, D */
    if (!ag_mul_size(3 + groups_max, n * sizeof(ag_real), &n_bytes) ||
        !ag_mul_size(2 * n_t + chunk * H * tpad, sizeof(ag_real), &t_bytes)) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "attention: backward of %zu positions is too large", T);
        return;
    }
    ag_real *grads = ag_arena_alloc(tape, n_bytes);
    ag_real *tiles = grads ? ag_arena_alloc(tape, t_bytes) : NULL;
    if (!tiles)
        return;   /* the arena set the tape's error */
    ag_real *d_o = grads, *dk = grads + n, *dv = grads + 2 * n, *dq = grads + 3 * n;
    head_job job = {
        .kern = kern, .H = H, .T = T, .d = d, .dh = dh, .tpad = tpad, .scale = scale,
        .causal = sv->causal, .wrong = tape->bug == AG_BUG_SOFTMAX, .blocks = blocks,
        .per_lane = kern->bwd_scratch(dh), .d_o = d_o, .qt = tiles, .d_ot = tiles + n_t,
        .dsum = tiles + 2 * n_t, .dq = dq, .dk = dk, .dv = dv,
    };
    size_t lanes = lanes_alloc(tape, &job, chunk * H * groups_max);
    if (!lanes)
        return;
    for (size_t b0 = 0; b0 < B; b0 += chunk) {
        size_t nb = min_size(B - b0, chunk), rows = nb * T, heads = nb * H;
        ag_gemm(0, 1, rows, d, d, 1, dout + b0 * T * d, d, wo->data, d, 0, d_o, d);
        job.q = sv->q + b0 * T * d;
        job.k = sv->k + b0 * T * d;
        job.v = sv->v + b0 * T * d;
        job.o = sv->o + b0 * T * d;
        job.lse_c = sv->lse + b0 * H * tpad;
        ag_parallel_for(heads, prep_head, &job);
        /* enough (head, group) items to share out, the same for any thread count */
        job.groups = min_size(groups_max, (BWD_ITEMS + heads - 1) / heads);
        job.items = heads * job.groups;
        job.n = rows * d;
        memset(dq, 0, job.groups * job.n * sizeof(ag_real));
        run_lanes(&job, lanes, bwd_lane);
        if (job.groups > 1) {
            sum_job s = {dq, job.n, job.groups, (job.n + 63) / 64};
            ag_parallel_for((job.n + s.per_task - 1) / s.per_task, sum_task, &s);
        }
        /* Q = x wq: dwq += x^T dQ and dx += dQ wq^T; the same for K and V.
         * dQ and dK still lack the scale: it goes in as alpha. */
        const ag_real *xc = x->data + b0 * T * d, *dqkv[3] = {dq, dk, dv};
        ag_real alpha[3] = {scale, scale, 1};
        for (int i = 0; i < 3; i++) {
            if (w[i]->grad)
                ag_gemm(1, 0, d, d, rows, alpha[i], xc, d, dqkv[i], d, 1, w[i]->grad, d);
            if (x->grad)
                ag_gemm(0, 1, rows, d, d, alpha[i], dqkv[i], d, w[i]->data, d, 1,
                        x->grad + b0 * T * d, d);
        }
    }
}
