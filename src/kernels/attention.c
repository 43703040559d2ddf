/*
 * attention.c - the fast kernel of the fused attention op
 * (src/ops/attention_fused.c): the same math as the reference kernel
 * (src/core/ref_attention.c), computed tile by tile (attn_tile.h): a block
 * of queries against a block of keys with an online softmax, so no (T,T)
 * matrix is ever made, and a causal layer never computes the tiles the
 * mask hides. Forward keeps Q, K, V and O and, per query, L = the
 * log-sum-exp of its scores; backward recomputes each tile's weights as
 * exp(S - L), or, for a sequence of one block whose tiles keep them (the
 * GPT's causal heads of 32 in the SIMD tiles' blocks of 64, a block of one
 * or two vectors, the portable tiles' block: see each kernel's kept),
 * reads them as forward kept them, one tile a head. Memory grows with T,
 * not T^2. Q, K and V are kept as the products make them, (B,T,d) rows,
 * and a tile reads its head's columns in place when the rows are short
 * (IN_PLACE_MAX); wider rows are laid out head by head, (B,H,T,dh), so
 * that a tile's rows are contiguous. O stays (B,T,d) for out = O wo.
 *
 * Threads: forward shares out (batch, head, query block) items, backward
 * (batch, head, group of key blocks) items, and each block is computed the
 * same way whichever thread takes it. Backward's dQ gets one partial sum
 * per group of key blocks, added in a fixed order; how many groups depends
 * on the shapes, never on the thread count. So results are bit-identical
 * for any number of threads.
 */
#include "attn_tile.h"
#include "cpu.h"
#include "gemm.h"
#include "kernels.h"
#include "threads.h"

#include <math.h>
#include <string.h>

/* Backward works through the batch in chunks of about this many rows (B T
 * positions): enough for the weight-gradient products to run at full speed,
 * few enough that a chunk's gradients stay small. */
#define CHUNK_ROWS 512
/* Backward shares out (head, group of key blocks) items: enough groups per
 * head that a chunk has about this many items... */
#define BWD_ITEMS 32
/* ...but at most this many, each group costing a (rows, d) partial dQ. */
#define MAX_GROUPS 4
/* Rows of at most this many values are read in place. A tile reads 64 of
 * them: 2 KB apart or more, they would crowd into a few L1 sets (64 sets of
 * 64 bytes), which copying the heads out first avoids; at 512 bytes they
 * spread over 8 or more sets, each with room for them. */
#define IN_PLACE_MAX 128

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- the layouts ---- */

/* dst[0, n) = src[0, n): restrict lets the compiler copy whole vectors (or
 * call memcpy); without it, a value at a time. */
static void copy_values(ag_real *restrict dst, const ag_real *restrict src, size_t n)
{
    for (size_t p = 0; p < n; p++)
        dst[p] = src[p];
}

/* Head rows (T, dh) from a (T, ld) buffer's columns at row; nothing when
 * they are the same storage (one head, or rows read in place). */
static void relayout_head(const ag_real *row, size_t ld, ag_real *head, size_t T, size_t dh)
{
    for (size_t r = 0; row != head && r < T; r++, row += ld, head += dh)
        copy_values(head, row, dh);
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
    size_t ldh; /* rows of q, k, v (and d_oh) ldh apart: d (in place) or dh (heads) */
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
    ag_real *pk;              /* (B,H,tpad,tpad): one block's kept weights, or NULL */
    /* backward, for a chunk of the batch, its heads = nb H heads and rows = nb T rows: */
    size_t heads;
    ag_real *d_o;       /* (rows, d): dO */
    ag_real *d_oh;      /* dO as the tiles read it: d_o itself (in place), or (heads, T, dh) */
    ag_real *dq_rows;   /* (rows, d): dQ (with one group the tiles', else sum_head's) */
    ag_real *qt, *d_ot; /* (heads, dh, tpad): Q^T (scaled; NULL with the weights kept), dO^T
                                     in blocks (attn_tile.h) */
    ag_real *dsum;      /* (heads, tpad): D */
    ag_real *dq;        /* (groups, heads, T, dh): partial sums of dS K; or with one
                                     group, the rows of dQ, (rows, d) (in d_o) */
    ag_real *dk, *dv;   /* (rows, d) */
} head_job;

/* The row stride of Q, K and V as forward keeps them: the rows' own, d,
 * when short enough to read in place, else a head's width. */
static size_t head_stride(size_t d, size_t H)
{
    return d <= IN_PLACE_MAX ? d : d / H;
}

/* Where head t = b H + h starts in a buffer laid out as the job's Q. */
static size_t head_at(const head_job *j, size_t t)
{
    return j->ldh == j->d ? t / j->H * j->T * j->d + t % j->H * j->dh : t * j->T * j->dh;
}

static void fwd_lane(void *ctx, size_t lane)
{
    head_job *j = ctx;
    ag_real *scratch = j->scratch + lane * j->per_lane;
    size_t T = j->T, dh = j->dh;
    for (size_t it, from = 0; (it = ag_runs_take(j->runs, j->lanes, lane, &from)) != SIZE_MAX;) {
        /* a head's longest blocks (the last, when causal) first */
        size_t t = it / j->blocks, qb = j->blocks - 1 - it % j->blocks; /* t = b H + h */
        size_t at = head_at(j, t);
        ag_attn_fwd f = {
            T,
            dh,
            j->d,
            j->ldh,
            j->causal,
            j->scale,
            j->q + at,
            j->k + at,
            j->v + at,
            j->o + t / j->H * T * j->d + t % j->H * dh,
            j->lse + t * j->tpad,
            j->pk ? j->pk + t * j->tpad * j->tpad : NULL,
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
static head_job head_job_of(const ag_attn_op *a)
{
    size_t dh = a->d / a->H;
    return (head_job){
        .kern = a->tiles,
        .H = a->H,
        .T = a->T,
        .d = a->d,
        .dh = dh,
        .tpad = a->tpad,
        .ldh = head_stride(a->d, a->H),
        .scale = (ag_real)(1.0 / sqrt((double)dh)),
        .causal = a->causal,
    };
}

/* ---- the weights, for showing ---- */

typedef struct weights_job {
    const head_job *heads; /* the sizes, and the layout of q and k */
    int simd;              /* ag_cpu_row_level() */
    ag_real *p;            /* (B,H,T,T) */
} weights_job;

/* P of head t = b H + h: the scores into its tile, softmaxed in place. */
static void weights_head(void *ctx, size_t t)
{
    const weights_job *w = ctx;
    const head_job *j = w->heads;
    size_t T = j->T, at = head_at(j, t);
    ag_real *p = w->p + t * T * T;
    ag_gemm(0, 1, T, T, j->dh, j->scale, j->q + at, j->ldh, j->k + at, j->ldh, 0, p, T);
    for (size_t r = 0; r < T; r++) {
        /* causal: query r sees keys 0..r, the rest get weight exactly 0 */
        size_t n = j->causal ? r + 1 : T;
        ag_fast_softmax_row(p + r * T, p + r * T, n, w->simd);
        for (size_t c = n; c < T; c++)
            p[r * T + c] = 0;
    }
}

size_t ag_attn_kept_tile(size_t T, size_t dh, int causal)
{
    return ag_attn_small(T) ? 0 : ag_attn_kernel_for(T, dh, causal)->kept(T, dh, causal);
}

/* a->pk, for a sequence of one block whose weights the tiles keep (the
 * GPT's 64 positions): backward then neither recomputes them (one product
 * of five and the exps) nor transposes Q. At most 64 values a query, as L
 * and the rows are kept already. AG_OK, or the tape's error. */
static ag_status keep_weights(ag_tape *tape, ag_attn_op *a)
{
    size_t bytes;
    if (!ag_mul_size(a->B * a->H, a->tpad * a->tpad * sizeof(ag_real), &bytes))
        return ag_tape_fail(tape, AG_ERR_NOMEM, "attention: x is [%zux%zux%zu]: too large", a->B,
                            a->T, a->d);
    a->pk = ag_arena_alloc(tape, bytes);
    return a->pk ? AG_OK : tape->status;
}

ag_status ag_fast_attention_forward(ag_tape *tape, ag_attn_op *a, ag_real *out, ag_real *p)
{
    if (ag_attn_small(a->T))
        return ag_attn_small_forward(tape, a, out, p);
    size_t B = a->B, H = a->H, Ts = a->T, dd = a->d;
    size_t rows = B * Ts, dh = dd / H;
    const ag_attn_kernel *kern = ag_attn_kernel_for(Ts, dh, a->causal);
    size_t tpad = (Ts + kern->br - 1) / kern->br * kern->br, n_lse;
    if (!ag_mul_size(B * H, tpad * sizeof(ag_real), &n_lse))
        return ag_tape_fail(tape, AG_ERR_NOMEM, "attention: x is [%zux%zux%zu]: too large", B, Ts,
                            dd);
    a->lse = ag_attn_keep_rows(tape, a) == AG_OK ? ag_arena_alloc(tape, n_lse) : NULL;
    if (!a->lse)
        return tape->status;
    a->tiles = kern;
    a->tpad = tpad;

    /* Q = x wq etc., kept as rows, or made in O's storage (not yet in use)
     * and laid out head by head */
    if (head_stride(dd, H) == dd) {
        ag_attn_project(a, ag_gemm);
    } else {
        const ag_real *w[3] = {a->wq, a->wk, a->wv};
        ag_real *qkv[3] = {a->q, a->k, a->v};
        for (int i = 0; i < 3; i++) {
            ag_gemm(0, 0, rows, dd, dd, 1, a->x, dd, w[i], dd, 0, a->o, dd);
            relayout(B, H, Ts, dd, a->o, qkv[i]);
        }
    }
    for (size_t i = 0; i < n_lse / sizeof(ag_real); i++)
        a->lse[i] = INFINITY; /* past T: no weight in backward's recomputed tiles */
    size_t blocks = (Ts + kern->br - 1) / kern->br;
    if (a->train && kern->kept(Ts, dh, a->causal) == tpad && keep_weights(tape, a) != AG_OK)
        return tape->status;
    head_job job = head_job_of(a);
    job.items = B * H * blocks;
    job.blocks = blocks;
    job.per_lane = kern->fwd_scratch(dh);
    job.q = a->q, job.k = a->k, job.v = a->v;
    job.o = a->o;
    job.lse = a->lse;
    job.pk = a->pk;
    size_t lanes = lanes_alloc(tape, &job, job.items);
    if (!lanes)
        return tape->status;
    run_lanes(&job, lanes, fwd_lane);
    ag_gemm(0, 0, rows, dd, dd, 1, a->o, dd, a->wo, dd, 0, out, dd);
    if (p) {
        weights_job wj = {&job, ag_cpu_row_level(), p};
        ag_parallel_for(B * H, weights_head, &wj);
    }
    return AG_OK;
}

/* ---- backward ---- */

/* Head t of the chunk: dO head by head, then per query block Q^T (scaled)
 * and dO^T as the tiles read them, and D = rowsum(dO * O) per query. */
static void prep_head(void *ctx, size_t t)
{
    const head_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh, ldh = j->ldh, tpad = j->tpad, br = j->kern->br;
    size_t off = t / j->H * T * d + t % j->H * dh; /* head h of batch b in (rows, d) */
    const ag_real *q = j->q + head_at(j, t);
    ag_real *d_oh = j->d_oh + head_at(j, t), *qt = j->qt ? j->qt + t * dh * tpad : NULL;
    ag_real *d_ot = j->d_ot + t * dh * tpad, *dsum = j->dsum + t * tpad;
    relayout_head(j->d_o + off, d, d_oh, T, dh); /* (read in place: the same rows, no copy) */
    for (size_t r0 = 0; r0 < T; r0 += br)
        j->kern->prep(q + r0 * ldh, d_oh + r0 * ldh, ldh, j->o + off + r0 * d, d,
                      min_size(br, T - r0), dh, j->scale * j->kern->score_unit,
                      qt ? qt + r0 * dh : NULL, d_ot + r0 * dh, dsum + r0);
}

static void bwd_lane(void *ctx, size_t lane)
{
    head_job *j = ctx;
    ag_real *scratch = j->scratch + lane * j->per_lane;
    size_t T = j->T, d = j->d, dh = j->dh, tpad = j->tpad;
    for (size_t it, from = 0; (it = ag_runs_take(j->runs, j->lanes, lane, &from)) != SIZE_MAX;) {
        size_t t = it / j->groups, g = it % j->groups; /* head t = b H + h of the chunk */
        if (j->groups == 1) /* then no other item reads this head's prep */
            prep_head(j, t);
        size_t off = t / j->H * T * d + t % j->H * dh, hoff = head_at(j, t);
        ag_attn_bwd b = {
            .T = T,
            .dh = dh,
            .ldo = d,
            .ldh = j->ldh,
            .tpad = tpad,
            .causal = j->causal,
            .wrong = j->wrong,
            .scale = j->scale,
            .q = j->q + hoff,
            .k = j->k + hoff,
            .v = j->v + hoff,
            .d_o = j->d_oh + hoff,
            .qt = j->qt ? j->qt + t * dh * tpad : NULL,
            .d_ot = j->d_ot + t * dh * tpad,
            .lse = j->lse + t * tpad,
            .p = j->pk ? j->pk + t * tpad * tpad : NULL,
            .dsum = j->dsum + t * tpad,
            .dk = j->dk + off,
            .dv = j->dv + off,
        };
        if (j->dq == j->dq_rows) { /* one group, straight into dQ's rows */
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

/* dQ of head t as rows, into dq_rows: its groups' partial sums, added in
 * order. When causal, group g's first key block, g, reaches only queries
 * from its own block on: its rows before that are not set, and count as 0. */
static void sum_head(void *ctx, size_t t)
{
    const head_job *j = ctx;
    size_t T = j->T, d = j->d, dh = j->dh, part = j->heads * T * dh; /* one group's size */
    size_t br = j->kern->br, bc = j->kern->bc;
    const ag_real *dq = j->dq + t * T * dh;
    ag_real *row = j->dq_rows + t / j->H * T * d + t % j->H * dh;
    for (size_t r = 0; r < T; r++, row += d, dq += dh) {
        copy_values(row, dq, dh);
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

ag_status ag_fast_attention_backward(ag_tape *tape, const ag_attn_op *a, const ag_real *dout,
                                     const ag_attn_grads *g)
{
    /*
     * Per head, with S = scale Q K^T, P = softmax(S), O = P V:
     *   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D),  D = rowsum(dP * P) = rowsum(dO * O)
     *   dQ = scale dS K,  dK = scale dS^T Q
     * (the softmax's backward, dS_j = P_j (dP_j - <dP, P>) row by row, with
     * <dP, P> = <dO V^T, P> = <dO, P V> = <dO, O>, which needs no P). The
     * tiles recompute P from L (or read the weights forward kept) and add
     * these products block by block.
     */
    if (a->w) /* forward took the short sequences' path */
        return ag_attn_small_backward(tape, a, dout, g);
    const ag_attn_kernel *kern = a->tiles;
    size_t B = a->B, T = a->T, d = a->d, H = a->H, dh = d / H, tpad = a->tpad;
    /* out = O wo: dwo += O^T dout (dO is made chunk by chunk below) */
    if (g->dwo)
        ag_gemm(1, 0, d, d, B * T, 1, a->o, d, dout, d, 1, g->dwo, d);
    if ((!g->dx && !g->dwq && !g->dwk && !g->dwv) || B == 0 || T == 0)
        return AG_OK;

    size_t chunk = min_size(B, T >= CHUNK_ROWS ? 1 : CHUNK_ROWS / T);
    size_t blocks = (T + kern->bc - 1) / kern->bc, last = B % chunk ? B % chunk : chunk;
    size_t n = chunk * T * d; /* <= x's size */
    size_t n_t = chunk * H * dh * tpad, n_bytes, t_bytes;
    /* the most dQ partials a chunk needs: the full ones' or the last one's */
    size_t n_parts = groups_for(chunk, H, blocks) * chunk,
           n_last = groups_for(last, H, blocks) * last;
    n_parts = (n_parts > n_last ? n_parts : n_last) * T * d;
    /* dO as rows, and with more than one head either as heads or (dO read in
     * place) dQ's rows; dK, dV; dQ's partials; Q^T, dO^T, D */
    size_t n_heads = H == 1 ? 0 : 1;
    if (!ag_mul_size(3 + n_heads, n * sizeof(ag_real), &n_bytes) ||
        n_parts > (SIZE_MAX - n_bytes) / sizeof(ag_real) ||
        !ag_mul_size((a->pk ? 1 : 2) * n_t + chunk * H * tpad, sizeof(ag_real), &t_bytes)) {
        return ag_tape_fail(tape, AG_ERR_NOMEM, "attention: backward of %zu positions is too large",
                            T);
    }
    n_bytes += n_parts * sizeof(ag_real);
    ag_real *grads = ag_arena_alloc(tape, n_bytes);
    ag_real *tiles = grads ? ag_arena_alloc(tape, t_bytes) : NULL;
    if (!tiles)
        return tape->status; /* the arena set the tape's error */
    ag_real *d_o = grads;    /* dO as rows */
    ag_real *rest = grads + (1 + n_heads) * n, *parts = rest + 2 * n;
    head_job job = head_job_of(a);
    int in_place = job.ldh == d;
    job.wrong = g->wrong;
    job.blocks = blocks;
    job.per_lane = kern->bwd_scratch(dh);
    job.d_o = d_o;
    /* dO head by head, unless read in place (or one head: the same layout) */
    job.d_oh = H > 1 && !in_place ? grads + n : d_o;
    /* dQ's rows: where the tiles read dO, only once they have run (sum_head) */
    job.dq_rows = H > 1 && in_place ? grads + n : d_o;
    job.dk = rest, job.dv = rest + n;
    /* Q^T only where the tiles recompute the weights */
    job.d_ot = tiles, job.dsum = tiles + n_t,
    job.qt = a->pk ? NULL : tiles + n_t + chunk * H * tpad;
    size_t lanes = lanes_alloc(tape, &job, chunk * H * MAX_GROUPS); /* at most that many items */
    if (!lanes)
        return tape->status;
    for (size_t b0 = 0; b0 < B; b0 += chunk) {
        size_t nb = min_size(B - b0, chunk), rows = nb * T, heads = nb * H;
        ag_gemm(0, 1, rows, d, d, 1, dout + b0 * T * d, d, a->wo, d, 0, d_o, d);
        job.q = a->q + b0 * T * d;
        job.k = a->k + b0 * T * d;
        job.v = a->v + b0 * T * d;
        job.o = a->o + b0 * T * d;
        job.lse = a->lse + b0 * H * tpad;
        job.pk = a->pk ? a->pk + b0 * H * tpad * tpad : NULL;
        job.heads = heads;
        job.groups = groups_for(nb, H, blocks);
        job.items = heads * job.groups;
        /* each head's Q^T, dO^T and D, before any of its groups runs: by
         * the lane that takes the head when it is one item */
        if (job.groups > 1)
            ag_parallel_for(heads, prep_head, &job);
        /* dQ as rows: with one group the tiles write them, into dq_rows
         * (with one head, the group's partial is already rows); with more,
         * the partials are added up afterwards */
        job.dq = job.groups == 1 && H > 1 ? job.dq_rows : parts;
        run_lanes(&job, lanes, bwd_lane);
        if (job.groups > 1)
            ag_parallel_for(heads, sum_head, &job);
        const ag_real *dq = job.groups == 1 ? job.dq : job.dq_rows;
        /* Q = x wq: dwq += x^T dQ and dx += dQ wq^T; the same for K and V.
         * dQ and dK still lack the scale: it goes in as alpha. */
        const ag_real *dqkv[3] = {dq, job.dk, job.dv}, alpha[3] = {job.scale, job.scale, 1};
        ag_attn_project_backward(a, g, b0, nb, dqkv, alpha, ag_gemm);
    }
    return AG_OK;
}
