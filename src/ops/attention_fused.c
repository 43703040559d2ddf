/*
 * attention_fused.c - the whole attention layer as one op, for speed and
 * memory. The math is the layer's (docs/attention-layer.md), as the op by
 * op form records it:
 *
 *   Q = x wq, K = x wk, V = x wv                         (B,T,d)
 *   P_h = softmax(Q_h K_h^T / sqrt(dh)) over keys        (B,H,T,T), masked if causal
 *   O = [P_1 V_1 | ... | P_H V_H],  out = O wo           (B,T,d)
 *
 * What fusing changes is the bookkeeping, not the math. The heads are
 * computed tile by tile (src/kernels/attn_tile.h): a block of queries against
 * a block of keys with an online softmax, so no (T,T) matrix is ever made,
 * and a causal layer never computes the tiles the mask hides. Forward keeps
 * Q, K, V and O and, per query, L = the log-sum-exp of its scores; backward
 * recomputes each tile's weights as exp(S - L). Memory grows with T, not
 * T^2. The weights P are made only when the caller asks for them (p_out),
 * for showing. Q, K and V are kept head by head, (B,H,T,dh), so that a
 * tile reads contiguous rows; O stays (B,T,d) for out = O wo.
 *
 * Threads: forward shares out (batch, head, query block) items, backward
 * (batch, head, group of key blocks) items, and each block is computed the
 * same way whichever thread takes it. Backward's dQ gets one partial sum
 * per group of key blocks, added in a fixed order; how many groups depends
 * on the shapes, never on the thread count. So results are bit-identical
 * for any number of threads.
 */
#include "../kernels/attn_tile.h"
#include "../kernels/gemm.h"
#include "../core/internal.h"
#include "../kernels/threads.h"

#include <math.h>
#include <string.h>

static void attention_backward(ag_tape *tape, const ag_entry *e);
/* x's gradient is stored by its first product; the weights' are added into */
static const ag_op attention_op = {"attention", attention_backward, 0, AG_INPUT(0)};

/* Backward works through the batch in chunks of about this many rows (B T
 * positions): enough for the weight-gradient products to run at full speed,
 * few enough that a chunk's gradients stay small. */
#define CHUNK_ROWS 512
/* Backward shares out (head, group of key blocks) items: enough groups per
 * head that a chunk has about this many items... */
#define BWD_ITEMS 32
/* ...but at most this many, each group costing a (rows, d) partial dQ. */
#define MAX_GROUPS 4

typedef struct fused_saved {
    const ag_attn_kernel *kern; /* the tiles forward ran; backward runs the same */
    ag_real *q, *k, *v;         /* (B,H,T,dh) each */
    ag_real *o;                 /* (B,T,d) */
    ag_real *lse;               /* (B,H,tpad): L per query, +inf past T */
    size_t tpad;                /* T rounded up to kern->br */
    int causal;
} fused_saved;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- the layouts ---- */

/* Head rows (T, dh) from a (T, ld) buffer's columns at row; nothing when
 * they are the same storage (one head). */
static void relayout_head(const ag_real *row, size_t ld, ag_real *head, size_t T, size_t dh)
{
    for (size_t r = 0; row != head && r < T; r++, row += ld, head += dh)
        for (size_t p = 0; p < dh; p++) /* a loop: a head is often only 8 or 16 wide */
            head[p] = row[p];
}

/* The heads of a (B,T,d) buffer one after the other, (B,H,T,dh). */
typedef struct layout_job {
    size_t H, T, d, dh;
    const ag_real *rows; /* (B,T,d) */
    ag_real *heads;      /* (B,H,T,dh) */
} layout_job;

static void layout_head(void *ctx, size_t t)
{
    const layout_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh;
    relayout_head(j->rows + t / j->H * T * d + t % j->H * dh, d, j->heads + t * T * dh, T, dh);
}

/* Rows (B,T,d) to heads (B,H,T,dh). With one head they are the same
 * layout: heads is then rows itself and nothing moves. */
static void relayout(size_t B, size_t H, size_t T, size_t d, const ag_real *rows, ag_real *heads)
{
    layout_job j = {H, T, d, d / H, rows, heads};
    if (rows != heads)
        ag_parallel_for(B * H, layout_head, &j);
}

/* ---- work shared out over the threads ----
 * ag_parallel_for runs one lane per thread; each lane has its own scratch
 * and takes items from its own run first (consecutive heads: the rows its
 * thread had in the products and layouts before), then from the other
 * lanes' (ag_runs_take). */

typedef struct head_job {
    const ag_attn_kernel *kern;
    size_t H, T, d, dh, tpad;
    ag_real scale;
    int causal, wrong;
    /* forward: items are (head, query block); backward: (head, group) */
    size_t items, blocks, groups;
    ag_run *runs; /* (lanes): lane l's items first */
    size_t lanes;
    ag_real *scratch; /* (lanes, per_lane) */
    size_t per_lane;
    const ag_real *q, *k, *v; /* (B,H,T,dh); backward: from the chunk's first batch */
    ag_real *o, *lse;         /* (B,T,d), (B,H,tpad); backward: from the chunk's */
    /* backward, for a chunk of the batch, its heads = nb H heads and rows = nb T rows: */
    size_t heads;
    ag_real *d_o;       /* (rows, d): dO, then dQ (sum_head) */
    ag_real *d_oh;      /* (heads, T, dh): dO head by head */
    ag_real *qt, *d_ot; /* (heads, dh, tpad): Q^T (scaled), dO^T in blocks (attn_tile.h) */
    ag_real *dsum;      /* (heads, tpad): D */
    ag_real *dq;        /* (groups, heads, T, dh): partial sums of dS K; or with one
                                     group, the rows of dQ, (rows, d) (in d_o) */
    ag_real *dk, *dv;   /* (rows, d) */
} head_job;

static void fwd_lane(void *ctx, size_t lane)
{
    head_job *j = ctx;
    ag_real *scratch = j->scratch + lane * j->per_lane;
    size_t T = j->T, dh = j->dh;
    for (size_t it, from = 0; (it = ag_runs_take(j->runs, j->lanes, lane, &from)) != SIZE_MAX;) {
        /* a head's longest blocks (the last, when causal) first */
        size_t t = it / j->blocks, qb = j->blocks - 1 - it % j->blocks; /* t = b H + h */
        ag_attn_fwd f = {
            T,
            dh,
            j->d,
            j->causal,
            j->scale,
            j->q + t * T * dh,
            j->k + t * T * dh,
            j->v + t * T * dh,
            j->o + t / j->H * T * j->d + t % j->H * dh,
            j->lse + t * j->tpad,
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
        bytes = SIZE_MAX; /* the arena reports it */
    job->scratch = ag_arena_alloc(tape, bytes);
    job->runs = job->scratch ? ag_arena_alloc(tape, lanes * sizeof(ag_run)) : NULL;
    return job->runs ? lanes : 0;
}

/* lane(job, i) on lanes lanes, sharing out job->items items. */
static void run_lanes(head_job *job, size_t lanes, ag_task_fn lane)
{
    job->lanes = min_size(lanes, job->items);
    if (job->lanes == 0)
        return;
    ag_runs_split(job->runs, job->lanes, job->items);
    ag_parallel_for(job->lanes, lane, job);
}

/* What forward's and backward's jobs share: the sizes, the tiles' kernel,
 * the scale 1/sqrt(dh) and the mask. */
static head_job head_job_of(const fused_saved *sv, size_t H, size_t T, size_t d)
{
    size_t dh = d / H;
    return (head_job){
        .kern = sv->kern,
        .H = H,
        .T = T,
        .d = d,
        .dh = dh,
        .tpad = sv->tpad,
        .scale = (ag_real)(1.0 / sqrt((double)dh)),
        .causal = sv->causal,
    };
}

/* ---- the weights, for showing ---- */

typedef struct weights_job {
    size_t T, dh;
    ag_real scale;
    int causal, simd;
    const ag_real *q, *k; /* (B,H,T,dh) */
    ag_real *p;           /* (B,H,T,T) */
} weights_job;

/* P of head t = b H + h: the scores into its tile, softmaxed in place. */
static void weights_head(void *ctx, size_t t)
{
    const weights_job *j = ctx;
    size_t T = j->T, dh = j->dh;
    ag_real *p = j->p + t * T * T;
    ag_gemm(0, 1, T, T, dh, j->scale, j->q + t * T * dh, dh, j->k + t * T * dh, dh, 0, p, T);
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
    int T = x->shape[1], d = x->shape[2];
    size_t B = (size_t)x->shape[0], H = (size_t)heads, Ts = (size_t)T, dd = (size_t)d;
    size_t rows = B * Ts, dh = dd / H;
    const ag_attn_kernel *kern = ag_attn_kernel_for(Ts);
    size_t tpad = (Ts + kern->br - 1) / kern->br * kern->br, n_lse;
    if (!ag_mul_size(B * H, tpad * sizeof(ag_real), &n_lse)) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "attention: x is [%zux%dx%d]: too large", B, T, d);
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, 3, x->shape, 0, ag_any_grad(5, in));
    fused_saved *sv = out ? ag_arena_alloc(tape, sizeof(*sv)) : NULL;
    if (!sv)
        return NULL;
    size_t bytes = x->size * sizeof(ag_real); /* fits: x exists */
    sv->q = ag_arena_alloc(tape, bytes);
    sv->k = sv->q ? ag_arena_alloc(tape, bytes) : NULL;
    sv->v = sv->k ? ag_arena_alloc(tape, bytes) : NULL;
    sv->o = sv->v ? ag_arena_alloc(tape, bytes) : NULL;
    sv->lse = sv->o ? ag_arena_alloc(tape, n_lse) : NULL;
    sv->kern = kern;
    sv->tpad = tpad;
    sv->causal = causal != 0;
    ag_entry *e = sv->lse ? ag_tape_push(tape, &attention_op, out, 5, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = heads;
    e->saved = sv;

    /* Q = x wq etc., each made in O's storage (not yet in use) and kept head by head */
    const ag_tensor *w[3] = {wq, wk, wv};
    ag_real *qkv[3] = {sv->q, sv->k, sv->v};
    for (int i = 0; i < 3; i++) {
        ag_real *rows_i = H == 1 ? qkv[i] : sv->o;
        ag_gemm(0, 0, rows, dd, dd, 1, x->data, dd, w[i]->data, dd, 0, rows_i, dd);
        relayout(B, H, Ts, dd, rows_i, qkv[i]);
    }
    for (size_t i = 0; i < n_lse / sizeof(ag_real); i++)
        sv->lse[i] = INFINITY; /* past T: no weight in backward's recomputed tiles */
    size_t blocks = (Ts + kern->br - 1) / kern->br;
    head_job job = head_job_of(sv, H, Ts, dd);
    job.items = B * H * blocks;
    job.blocks = blocks;
    job.per_lane = kern->fwd_scratch(dh);
    job.q = sv->q, job.k = sv->k, job.v = sv->v;
    job.o = sv->o;
    job.lse = sv->lse;
    size_t lanes = lanes_alloc(tape, &job, job.items);
    if (!lanes)
        return NULL;
    run_lanes(&job, lanes, fwd_lane);
    ag_gemm(0, 0, rows, dd, dd, 1, sv->o, dd, wo->data, dd, 0, out->data, dd);
    if (p_out) {
        ag_tensor *p = ag_tensor_make(tape, 4, (int[]){(int)B, heads, T, T}, 0, 0);
        if (!p)
            return NULL;
        weights_job wj = {Ts, dh, job.scale, sv->causal, ag_softmax_simd(), sv->q, sv->k, p->data};
        ag_parallel_for(B * H, weights_head, &wj);
        *p_out = p;
    }
    return out;
}

/* ---- backward ---- */

/* Head t of the chunk: dO head by head, then per query block Q^T (scaled)
 * and dO^T as the tiles read them, and D = rowsum(dO * O) per query. */
static void prep_head(void *ctx, size_t t)
{
    const head_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh, tpad = j->tpad, br = j->kern->br;
    size_t off = t / j->H * T * d + t % j->H * dh; /* head h of batch b in (rows, d) */
    const ag_real *q = j->q + t * T * dh;
    ag_real *d_oh = j->d_oh + t * T * dh, *qt = j->qt + t * dh * tpad;
    ag_real *d_ot = j->d_ot + t * dh * tpad, *dsum = j->dsum + t * tpad;
    relayout_head(j->d_o + off, d, d_oh, T, dh);
    for (size_t r0 = 0; r0 < T; r0 += br)
        j->kern->prep(q + r0 * dh, d_oh + r0 * dh, j->o + off + r0 * d, d, min_size(br, T - r0), dh,
                      j->scale * j->kern->score_unit, qt + r0 * dh, d_ot + r0 * dh, dsum + r0);
}

static void bwd_lane(void *ctx, size_t lane)
{
    head_job *j = ctx;
    ag_real *scratch = j->scratch + lane * j->per_lane;
    size_t T = j->T, d = j->d, dh = j->dh, tpad = j->tpad;
    for (size_t it, from = 0; (it = ag_runs_take(j->runs, j->lanes, lane, &from)) != SIZE_MAX;) {
        size_t t = it / j->groups, g = it % j->groups; /* head t = b H + h of the chunk */
        size_t off = t / j->H * T * d + t % j->H * dh, hoff = t * T * dh;
        ag_attn_bwd b = {
            .T = T,
            .dh = dh,
            .ldo = d,
            .tpad = tpad,
            .causal = j->causal,
            .wrong = j->wrong,
            .scale = j->scale,
            .q = j->q + hoff,
            .k = j->k + hoff,
            .v = j->v + hoff,
            .d_o = j->d_oh + hoff,
            .qt = j->qt + t * dh * tpad,
            .d_ot = j->d_ot + t * dh * tpad,
            .lse = j->lse + t * tpad,
            .dsum = j->dsum + t * tpad,
            .dk = j->dk + off,
            .dv = j->dv + off,
        };
        if (j->dq == j->d_o) { /* one group, straight into dQ's rows */
            b.dq = j->dq + off;
            b.ldq = d;
        } else {
            b.dq = j->dq + (g * j->heads + t) * T * dh;
            b.ldq = dh;
        }
        /* group g: key blocks g, g + groups, ... (with a causal mask, early
         * key blocks cost the most; interleaving evens the groups out); the
         * first writes the group's dQ rows, the others add to them */
        for (size_t kb = g; kb < j->blocks; kb += j->groups) {
            b.first = kb == g;
            j->kern->bwd_block(&b, kb * j->kern->bc, scratch);
        }
    }
}

/* dQ of head t as rows, into d_o (dO is no longer needed): its groups'
 * partial sums, added in order. When causal, group g's first key block,
 * g, reaches only queries from its own block on: its rows before that are
 * not set, and count as 0. */
static void sum_head(void *ctx, size_t t)
{
    const head_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh, part = j->heads * T * dh; /* one group's size */
    size_t br = j->kern->br, bc = j->kern->bc;
    const ag_real *dq = j->dq + t * T * dh;
    ag_real *row = j->d_o + t / j->H * T * d + t % j->H * dh;
    for (size_t r = 0; r < T; r++, row += d, dq += dh) {
        for (size_t p = 0; p < dh; p++)
            row[p] = dq[p];
        /* group g's rows start at its first key block's first query */
        for (size_t g = 1; g < j->groups && (!j->causal || r >= g * bc / br * br); g++) {
            const ag_real *part_g = dq + g * part;
            for (size_t p = 0; p < dh; p++)
                row[p] += part_g[p];
        }
    }
}

/* Groups of key blocks for a chunk of nb sequences: enough (head, group)
 * items to share out, the same for any thread count. */
static size_t groups_for(size_t nb, size_t H, size_t blocks)
{
    size_t want = (BWD_ITEMS + nb * H - 1) / (nb * H);
    return min_size(min_size(MAX_GROUPS, blocks), want);
}

static void attention_backward(ag_tape *tape, const ag_entry *e)
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
    const ag_real *dout = e->out->grad;
    /* The weights' gradients are added into (the tape zeroed them if unset);
     * x's first product stores (first_write). */
    /* out = O wo: dwo += O^T dout (dO is made chunk by chunk below) */
    if (wo->grad)
        ag_gemm(1, 0, d, d, B * T, 1, sv->o, d, dout, d, 1, wo->grad, d);
    if (!x->grad && !w[0]->grad && !w[1]->grad && !w[2]->grad)
        return;

    size_t chunk = min_size(B, T >= CHUNK_ROWS ? 1 : CHUNK_ROWS / T);
    size_t blocks = (T + kern->bc - 1) / kern->bc, last = B % chunk ? B % chunk : chunk;
    size_t n = chunk * T * d; /* <= x's size */
    size_t n_t = chunk * H * dh * tpad, n_bytes, t_bytes;
    /* the most dQ partials a chunk needs: the full ones' or the last one's */
    size_t n_parts = groups_for(chunk, H, blocks) * chunk,
           n_last = groups_for(last, H, blocks) * last;
    n_parts = (n_parts > n_last ? n_parts : n_last) * T * d;
    /* dO as rows and as heads (with one head, the same), dK, dV; dQ's partials; Q^T, dO^T, D */
    size_t n_heads = H == 1 ? 0 : 1;
    if (!ag_mul_size(3 + n_heads, n * sizeof(ag_real), &n_bytes) ||
        n_parts > (SIZE_MAX - n_bytes) / sizeof(ag_real) ||
        !ag_mul_size(2 * n_t + chunk * H * tpad, sizeof(ag_real), &t_bytes)) {
        ag_tape_fail(tape, AG_ERR_NOMEM, "attention: backward of %zu positions is too large", T);
        return;
    }
    n_bytes += n_parts * sizeof(ag_real);
    ag_real *grads = ag_arena_alloc(tape, n_bytes);
    ag_real *tiles = grads ? ag_arena_alloc(tape, t_bytes) : NULL;
    if (!tiles)
        return;           /* the arena set the tape's error */
    ag_real *d_o = grads; /* dO as rows; once the tiles have run, dQ as rows */
    ag_real *rest = grads + (1 + n_heads) * n, *parts = rest + 2 * n;
    head_job job = head_job_of(sv, H, T, d);
    job.wrong = tape->bug == AG_BUG_SOFTMAX;
    job.blocks = blocks;
    job.per_lane = kern->bwd_scratch(dh);
    job.d_o = d_o;
    job.d_oh = grads + n_heads * n;
    job.dk = rest, job.dv = rest + n;
    job.qt = tiles, job.d_ot = tiles + n_t, job.dsum = tiles + 2 * n_t;
    size_t lanes = lanes_alloc(tape, &job, chunk * H * MAX_GROUPS); /* at most that many items */
    if (!lanes)
        return;
    /* dx's first product of each chunk stores (beta 0) when dx is unset */
    ag_real x_beta = x->grad && ag_grad_first(tape, x) ? 0 : 1;
    for (size_t b0 = 0; b0 < B; b0 += chunk) {
        size_t nb = min_size(B - b0, chunk), rows = nb * T, heads = nb * H;
        ag_gemm(0, 1, rows, d, d, 1, dout + b0 * T * d, d, wo->data, d, 0, d_o, d);
        job.q = sv->q + b0 * T * d;
        job.k = sv->k + b0 * T * d;
        job.v = sv->v + b0 * T * d;
        job.o = sv->o + b0 * T * d;
        job.lse = sv->lse + b0 * H * tpad;
        job.heads = heads;
        ag_parallel_for(heads, prep_head, &job);
        job.groups = groups_for(nb, H, blocks);
        job.items = heads * job.groups;
        /* dQ as rows: with one group the tiles write them, into d_o (which
         * they no longer read: they read dO head by head, unless there is
         * one head, whose dQ partial is already rows); with more, the
         * partials are added up afterwards */
        job.dq = job.groups == 1 && H > 1 ? d_o : parts;
        run_lanes(&job, lanes, bwd_lane);
        if (job.groups > 1)
            ag_parallel_for(heads, sum_head, &job);
        const ag_real *dq = job.groups == 1 ? job.dq : d_o;
        /* Q = x wq: dwq += x^T dQ and dx += dQ wq^T; the same for K and V.
         * dQ and dK still lack the scale: it goes in as alpha. */
        const ag_real *xc = x->data + b0 * T * d, *dqkv[3] = {dq, job.dk, job.dv};
        ag_real alpha[3] = {job.scale, job.scale, 1};
        for (int i = 0; i < 3; i++) {
            if (w[i]->grad)
                ag_gemm(1, 0, d, d, rows, alpha[i], xc, d, dqkv[i], d, 1, w[i]->grad, d);
            if (x->grad)
                ag_gemm(0, 1, rows, d, d, alpha[i], dqkv[i], d, w[i]->data, d, i ? 1 : x_beta,
                        x->grad + b0 * T * d, d);
        }
    }
}
