/*
 * gemm.c - C = alpha op(A) op(B) + beta C for every matmul forward and
 * backward (A B, A B^T, A^T B, A^T B^T). Three paths, chosen by shape alone:
 *
 * - packed (most products): the Goto/BLIS scheme. B is packed a (kc x nc)
 *   block at a time and A an (mc x kc) block at a time into contiguous
 *   panels, and a register-tiled micro-kernel multiplies one (mr x kc) panel
 *   of A by one (kc x nr) panel of B. Packing reads op(A) and op(B) through
 *   the transpose flags, so all four layouts run the same micro-kernel and no
 *   transpose is ever materialised. Edge tiles use the same micro-kernel with
 *   lane masks. The SIMD kernels read a row-major A in place instead (a
 *   pointer per row of the tile), and AVX-512's read a weight gradient's
 *   A^T and B in place, whose rows already are the panels' steps (see
 *   reads_in_place).
 * - direct (narrow N, e.g. attention's d_head or T columns): no packing; the
 *   SIMD kernel reads A in place and B's rows as vectors (B^T is copied once
 *   when trans_b). Packing would cost more than it saves here.
 * - a plain loop for products of a few dozen multiply-adds.
 *
 * Threads split C into stripes of rows (or columns) whose edges fall on tile
 * boundaries; every C element then sees the same kc blocks and the same
 * kernel whatever the split, so results do not depend on the number of
 * threads. Each thread packs into its own buffer, made once at the blocked
 * path's full size (the pool makes its workers' when it starts them), grown
 * only for a direct product with a very long K, freed when the thread
 * exits. An operand that every stripe would pack whole (op(B) for row
 * stripes, A^T for column stripes, a direct product's B^T) is packed there
 * by each thread once, at its first stripe, when it fits.
 */
#include "../core/alloc.h"
#include "cpu.h"
#include "gemm.h"
#include "threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the portable micro-kernel ---- */

#define GEN_MR 4
#define GEN_NR 8

static void micro_generic(size_t kc, const ag_real *restrict a, const ag_real *restrict b,
                          ag_real *restrict c, size_t ldc, ag_real alpha, ag_real beta, int rows,
                          int cols)
{
    ag_real acc[GEN_MR][GEN_NR] = {{0}};
    for (size_t p = 0; p < kc; p++, a += GEN_MR, b += GEN_NR)
        for (int i = 0; i < GEN_MR; i++)
            for (int j = 0; j < GEN_NR; j++)
                acc[i][j] += a[i] * b[j];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            ag_real *cp = c + i * ldc + j;
            *cp = beta == 0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *cp;
        }
}

/* c += alpha t, rounded as micro_generic adds a pass into C */
static void combine_generic(size_t n, ag_real alpha, const ag_real *t, ag_real *c)
{
    for (size_t j = 0; j < n; j++)
        c[j] = alpha * t[j] + c[j];
}

static const ag_gemm_kernel kernel_generic = {
    .name = "generic",
    .mr = GEN_MR,
    .nr = GEN_NR,
    .kc = 256,
    .mc = 128,
    .nc = 1024,
    .micro = micro_generic,
    .combine = combine_generic,
};

/* ---- choosing the kernel ---- */

static const ag_gemm_kernel *kernel_in_use;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

/* The kernel called name if it can run here, else NULL. */
static const ag_gemm_kernel *find_kernel(const char *name)
{
    if (strcmp(name, "generic") == 0)
        return &kernel_generic;
    if (strcmp(name, "avx2") == 0)
        return ag_cpu_get()->avx2 ? ag_gemm_kernel_avx2() : NULL;
    if (strcmp(name, "avx512") == 0)
        return find_kernel(ag_cpu_get()->avx512_halves ? "avx512-8" : "avx512-12");
    int rows = strcmp(name, "avx512-8") == 0 ? 8 : strcmp(name, "avx512-12") == 0 ? 12 : 0;
    if (rows)
        return ag_cpu_get()->avx512 ? ag_gemm_kernel_avx512(rows) : NULL;
    if (strcmp(name, "auto") == 0) {
        const ag_gemm_kernel *k = find_kernel("avx512");
        if (!k)
            k = find_kernel("avx2");
        return k ? k : &kernel_generic;
    }
    return NULL;
}

static void kernel_init(void)
{
    const char *env = getenv("AG_GEMM");
    const ag_gemm_kernel *k = env && *env ? find_kernel(env) : NULL;
    kernel_in_use = k ? k : find_kernel("auto");
}

static const ag_gemm_kernel *kernel(void)
{
    pthread_once(&kernel_once, kernel_init);
    return kernel_in_use;
}

int ag_gemm_use(const char *name)
{
    kernel();
    const ag_gemm_kernel *k = name ? find_kernel(name) : NULL;
    if (!k)
        return 0;
    kernel_in_use = k;
    return 1;
}

const char *ag_gemm_kernel_name(void)
{
    return kernel()->name;
}

/* ---- per-thread packing buffers ---- */

static _Thread_local ag_real *pack_buf; /* (pack_cap) */
static _Thread_local size_t pack_cap;
static pthread_key_t pack_key; /* frees a thread's buffer when it exits */
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;
static int pack_key_ok;

static void pack_key_init(void)
{
    pack_key_ok = pthread_key_create(&pack_key, free) == 0;
}

/* The most the blocked path asks for with kernel k: an (mc x kc) block of
 * A and a (kc x nc) block of B. */
static size_t pack_full_for(const ag_gemm_kernel *k)
{
    return (k->mc + k->nc) * k->kc;
}

/* The same for the kernel in use. */
static size_t pack_full(void)
{
    return pack_full_for(kernel());
}

size_t ag_gemm_thread_bytes(void)
{
    const ag_gemm_kernel *k[] = {&kernel_generic, ag_gemm_kernel_avx2(), ag_gemm_kernel_avx512(8),
                                 ag_gemm_kernel_avx512(12)};
    size_t most = 0;
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
        if (k[i] && pack_full_for(k[i]) > most)
            most = pack_full_for(k[i]);
    return most * sizeof(ag_real);
}

/* Make this thread's buffer hold n reals (buf: one already allocated, or
 * NULL to allocate). Returns it, or NULL when out of memory. */
static ag_real *pack_install(size_t n, ag_real *buf)
{
    pthread_once(&pack_once, pack_key_init);
    if (!pack_key_ok) {
        free(buf);
        return NULL;
    }
    free(pack_buf);
    pack_buf = NULL;
    pack_cap = 0;
    void *p = buf                              ? (void *)buf
              : n > SIZE_MAX / sizeof(ag_real) ? NULL
                                               : ag_aligned_alloc(64, n * sizeof(ag_real));
    pthread_setspecific(pack_key, p);
    if (!p)
        return NULL;
    pack_buf = p;
    pack_cap = n;
    return pack_buf;
}

/* This thread's buffer of at least n reals, or NULL when out of memory. It
 * is made at once at the blocked path's full size (memory the thread does
 * not touch stays unmapped), and grows only for a direct product with a
 * very long K: so a thread allocates once, not again whenever it happens to
 * get a larger product than before. */
static ag_real *pack_buffer(size_t n)
{
    if (n <= pack_cap)
        return pack_buf;
    size_t full = pack_full();
    return pack_install(n > full ? n : full, NULL);
}

static void *pack_new(void)
{
    size_t n = pack_full();
    return n > SIZE_MAX / sizeof(ag_real) ? NULL : ag_aligned_alloc(64, n * sizeof(ag_real));
}

static void pack_adopt(void *buf)
{
    if (buf && pack_cap == 0)
        pack_install(pack_full(), buf);
    else
        free(buf);
}

/* Every worker of the pool gets its buffer as it starts (threads.h): set as
 * the program loads, before any thread can start. Without the attribute a
 * worker makes its buffer at its first product instead. */
#if defined(__GNUC__)
__attribute__((constructor)) static void pack_hook(void)
{
    ag_pool_set_worker_init((ag_worker_init){pack_new, pack_adopt});
}
#endif

/* ---- the blocked path ---- */

typedef struct gemm_args {
    int ta, tb;
    size_t M, N, K;
    size_t kc; /* K per pass: the kernel's kc, or half of K (split_k) */
    ag_real alpha, beta;
    const ag_real *A, *B;
    ag_real *C;
    size_t lda, ldb, ldc;
    const ag_gemm_kernel *k;
    /* op(B) packed by this thread for all its stripes (see gemm_task), or
     * NULL: each kc block of rows in panels as pack_b makes them, block pc
     * (its first row) at bpack + pc * npad; N fits one nc block */
    const ag_real *bpack;
    size_t npad; /* N rounded up to nr */
    /* the same for op(A): each kc block of columns, all M rows in panels as
     * pack_a makes them, block pc at apack + pc * mpad */
    const ag_real *apack;
    size_t mpad; /* M rounded up to mr */
} gemm_args;

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static size_t round_up(size_t a, size_t b)
{
    return (a + b - 1) / b * b;
}

/* Source rows packed per run of pack_transposed. */
#define PACK_RUN 16

#if defined(__GNUC__)
#define AG_INLINE static inline __attribute__((always_inline))
#else
#define AG_INLINE static inline
#endif

/* pack_panels for X stored transposed, X(i, p) = src[p*ld + i]: row p of
 * the source holds run p of every panel, so it is read once, along its
 * length, and dealt out to the panels. Going panel by panel instead reads
 * each source line once for every panel it overlaps, down a column whose
 * stride (a multiple of 512 bytes for the GPT's widths) sends every row to
 * the same few cache sets, so the line is gone before the next panel. */
AG_INLINE void pack_transposed(const ag_real *src, size_t ld, size_t i0, size_t mc, size_t p0,
                               size_t kc, ag_real *restrict dst, const size_t r)
{
    size_t full = mc / r * r;
    /* PACK_RUN source rows at a time, panel by panel: each panel gets one
     * contiguous run of writes, while the rows stay in L1. (Row by row, the
     * writes went to every panel in turn, panels kc r reals apart: a
     * multiple of 4 KB, so all of them in the same L1 set.) */
    for (size_t pb = 0; pb < kc; pb += PACK_RUN) {
        size_t np = min_size(PACK_RUN, kc - pb);
        const ag_real *x = src + (p0 + pb) * ld + i0;
        ag_real *d = dst + pb * r;
        /* a constant size: a few inline vector moves, not a call */
        for (size_t ir = 0; ir < full; ir += r, d += r * kc)
            for (size_t p = 0; p < np; p++)
                memcpy(d + p * r, x + p * ld + ir, r * sizeof(ag_real));
        for (size_t p = 0; full < mc && p < np; p++) /* the last panel, zero-padded */
            for (size_t i = 0; i < r; i++)
                d[p * r + i] = full + i < mc ? x[p * ld + full + i] : 0;
    }
}

/* Pack rows [i0, i0+mc) x columns [p0, p0+kc) of a matrix X into panels of
 * r rows: panel q holds dst[p*r + i] = X(i0 + q*r + i, p0 + p), zero rows
 * past the edge. X(i, p) is src[i*ld + p], or src[p*ld + i] when trans.
 * op(A) packs as itself, op(B) as its transpose (B's panels are r columns
 * of op(B), stored the same way), so one function serves both. Written for
 * a constant r (see pack_a) so the inner copies unroll and vectorise. */
AG_INLINE void pack_panels(const ag_real *src, size_t ld, int trans, ag_transpose_fn transpose,
                           size_t i0, size_t mc, size_t p0, size_t kc, ag_real *restrict dst,
                           const size_t r)
{
    if (trans) {
        pack_transposed(src, ld, i0, mc, p0, kc, dst, r);
        return;
    }
    for (size_t ir = 0; ir < mc; ir += r, dst += r * kc) {
        /* r rows of X side by side: a small transpose */
        size_t rows = min_size(r, mc - ir);
        const ag_real *x = src + (i0 + ir) * ld + p0;
        if (transpose) {
            transpose(rows, kc, x, ld, dst, r);
            for (size_t p = 0; rows < r && p < kc; p++)
                for (size_t i = rows; i < r; i++)
                    dst[p * r + i] = 0;
        } else if (rows == r) {
            for (size_t p = 0; p < kc; p++)
                for (size_t i = 0; i < r; i++)
                    dst[p * r + i] = x[i * ld + p];
        } else {
            for (size_t p = 0; p < kc; p++)
                for (size_t i = 0; i < r; i++)
                    dst[p * r + i] = i < rows ? x[i * ld + p] : 0;
        }
    }
}

/* Rows [i0, i0+mc) x columns [p0, p0+kc) of op(A), in panels of mr rows:
 * a[p*mr + i] = op(A)(i0 + i, p0 + p) in the first. */
static void pack_a(const gemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc, ag_real *dst)
{
    const ag_real *A = g->A;
    size_t lda = g->lda;
    int ta = g->ta;
    ag_transpose_fn tr = g->k->transpose;
    switch (g->k->mr) {
    case 4: pack_panels(A, lda, ta, tr, i0, mc, p0, kc, dst, 4); break;
    case 6: pack_panels(A, lda, ta, tr, i0, mc, p0, kc, dst, 6); break;
    case 8: pack_panels(A, lda, ta, tr, i0, mc, p0, kc, dst, 8); break;
    case 12: pack_panels(A, lda, ta, tr, i0, mc, p0, kc, dst, 12); break;
    default: pack_panels(A, lda, ta, tr, i0, mc, p0, kc, dst, (size_t)g->k->mr); break;
    }
}

/* Rows [p0, p0+kc) x columns [j0, j0+nc) of op(B), in panels of nr columns:
 * b[p*nr + j] = op(B)(p0 + p, j0 + j) in the first. That is op(B)^T packed
 * as pack_a packs op(A), and op(B)^T is B stored transposed unless tb. */
static void pack_b(const gemm_args *g, size_t p0, size_t kc, size_t j0, size_t nc, ag_real *dst)
{
    const ag_real *B = g->B;
    size_t ldb = g->ldb;
    int t = !g->tb;
    ag_transpose_fn tr = g->k->transpose;
    switch (g->k->nr) {
    case 8: pack_panels(B, ldb, t, tr, j0, nc, p0, kc, dst, 8); break;
    case 16: pack_panels(B, ldb, t, tr, j0, nc, p0, kc, dst, 16); break;
    case 32: pack_panels(B, ldb, t, tr, j0, nc, p0, kc, dst, 32); break;
    default: pack_panels(B, ldb, t, tr, j0, nc, p0, kc, dst, (size_t)g->k->nr); break;
    }
}

static void gemm_small(const gemm_args *g, size_t i0, size_t i1, size_t j0, size_t j1);

/* Point ag_ahead at the source of the block of A^T that gemm_blocked
 * packs (or reads in place) after block (ic, pc) of rows [i0, i1), or at
 * nothing. A^T is A stored (K x M): the block's K rows, each mc of them
 * wide. (Only A^T: a row-major A is read in place, or, when packed,
 * already in cache.) Read in place, the block still comes from memory:
 * without the hint the GPT step was 0.4% slower. */
static void ahead_a(const gemm_args *g, size_t i0, size_t i1, size_t ic, size_t pc)
{
    const ag_gemm_kernel *k = g->k;
    size_t nic = ic + k->mc < i1 ? ic + k->mc : i0, npc = nic == i0 ? pc + g->kc : pc;
    ag_ahead.rows = 0;
    if (!g->ta || g->apack || npc >= g->K)
        return;
    ag_ahead = (ag_gemm_ahead){(const char *)(g->A + npc * g->lda + nic),
                               g->lda * sizeof(ag_real),
                               min_size(g->kc, g->K - npc),
                               min_size(k->mc, i1 - nic) * sizeof(ag_real),
                               0,
                               0};
}

/* Whether gemm_blocked reads A^T and B where they are (the micro_cols
 * kernel) instead of packing them: a weight gradient, dW = X^T dY, whose
 * two operands' rows are runs of the panels (step p of every A panel is
 * row p of X, of every B panel row p of dY), so packing copies what the
 * kernel can read as it is. Only while rows are at most 2 KB apart: the
 * panels read in place are columns down the rows, and at strides of 4 KB
 * and more those rows share so few cache sets that they fall out of L2
 * between reuses (1024^3 ran 8% slower in place, the GPT's dW 4-5% faster).
 * AVX-512's kernels only: AVX2's half-as-wide steps touch a line of each
 * operand for half as many FMAs, and its GPT step was 1% slower in place. */
static int reads_in_place(const gemm_args *g)
{
    const size_t most = 2048 / sizeof(ag_real);
    return g->ta && !g->tb && g->k->micro_cols && !g->apack && !g->bpack && g->lda <= most &&
           g->ldb <= most;
}

/* A tile's panel of A or B: where step 0 is and how far apart steps are */
typedef struct gemm_panel {
    const ag_real *at;
    size_t step;
} gemm_panel;

/* The block [i0, i1) x [j0, j1) of C, blocked and packed. */
static void gemm_blocked(const gemm_args *g, size_t i0, size_t i1, size_t j0, size_t j1)
{
    const ag_gemm_kernel *k = g->k;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    size_t kc_max = min_size(g->kc, g->K);
    size_t mc_max = min_size(k->mc, round_up(i1 - i0, mr));
    size_t nc_max = min_size(k->nc, round_up(j1 - j0, nr));
    ag_real *abuf = pack_buffer((mc_max + nc_max) * kc_max);
    if (!abuf) {
        gemm_small(g, i0, i1, j0, j1); /* out of memory: the unpacked loop needs none */
        return;
    }
    ag_real *bown = abuf + mc_max * kc_max;
    const ag_real *bbuf = bown;
    /* A row-major op(A) is read in place (packing it is a transpose per
     * block); A^T's columns are already runs of rows and pack by copying,
     * unless both operands are read in place (reads_in_place). Then only
     * the ragged last panels are packed: their steps would run past a row. */
    int in_place = !g->ta && k->micro_rows != NULL && !g->apack;
    int both_in_place = reads_in_place(g);

    for (size_t jc = j0; jc < j1; jc += k->nc) {
        size_t nc = min_size(k->nc, j1 - jc);
        size_t nwhole = both_in_place ? nc / nr * nr : 0; /* B panels read in place */
        for (size_t pc = 0; pc < g->K; pc += g->kc) {
            size_t kc = min_size(g->kc, g->K - pc);
            ag_real beta = pc == 0 ? g->beta : 1;
            if (g->bpack)
                bbuf = g->bpack + pc * g->npad + jc * kc;
            else if (nwhole < nc)
                pack_b(g, pc, kc, jc + nwhole, nc - nwhole, bown);
            for (size_t ic = i0; ic < i1; ic += k->mc) {
                size_t mc = min_size(k->mc, i1 - ic);
                size_t mwhole = both_in_place ? mc / mr * mr : 0; /* A panels read in place */
                const ag_real *ap = abuf;
                if (g->apack)
                    ap = g->apack + pc * g->mpad + ic * kc;
                else if (!in_place && mwhole < mc)
                    pack_a(g, ic + mwhole, mc - mwhole, pc, kc, abuf);
                ahead_a(g, i0, i1, ic, pc);
                for (size_t jr = 0; jr < nc; jr += nr) {
                    size_t cols = min_size(nr, nc - jr);
                    gemm_panel bq = jr < nwhole
                                        ? (gemm_panel){g->B + pc * g->ldb + jc + jr, g->ldb}
                                        : (gemm_panel){bbuf + (jr - nwhole) * kc, nr}; /* packed */
                    for (size_t ir = 0; ir < mc; ir += mr) {
                        size_t rows = min_size(mr, mc - ir);
                        ag_real *c = g->C + (ic + ir) * g->ldc + jc + jr;
                        gemm_panel aq = ir < mwhole
                                            ? (gemm_panel){g->A + pc * g->lda + ic + ir, g->lda}
                                            : (gemm_panel){ap + (ir - mwhole) * kc, mr};
                        if (in_place)
                            k->micro_rows(kc, g->A + (ic + ir) * g->lda + pc, g->lda, bq.at, c,
                                          g->ldc, g->alpha, beta, (int)rows, (int)cols);
                        else if (both_in_place)
                            k->micro_cols(kc, aq.at, aq.step, bq.at, bq.step, c, g->ldc, g->alpha,
                                          beta, (int)rows, (int)cols);
                        else
                            k->micro(kc, aq.at, bq.at, c, g->ldc, g->alpha, beta, (int)rows,
                                     (int)cols);
                    }
                }
            }
        }
    }
}

/* ---- the direct path for small products ---- */

/* The block [i0, i1) x [j0, j1) of C with plain loops, no packing: one dot
 * product per element, accumulated in a register and written once (a loop
 * that adds into C row by row waits on C through memory at every step). */
static void gemm_small(const gemm_args *g, size_t i0, size_t i1, size_t j0, size_t j1)
{
    size_t rsa = g->ta ? 1 : g->lda, csa = g->ta ? g->lda : 1; /* op(A)(i,p) */
    size_t rsb = g->tb ? 1 : g->ldb, csb = g->tb ? g->ldb : 1; /* op(B)(p,j) */
    size_t K = g->K, ldc = g->ldc;
    ag_real alpha = g->alpha, beta = g->beta;
    for (size_t i = i0; i < i1; i++) {
        const ag_real *a = g->A + i * rsa;
        ag_real *c = g->C + i * ldc;
        for (size_t j = j0; j < j1; j++) {
            const ag_real *b = g->B + j * csb;
            ag_real acc = 0;
            for (size_t p = 0; p < K; p++)
                acc += a[p * csa] * b[p * rsb];
            c[j] = beta == 0 ? alpha * acc : alpha * acc + beta * c[j];
        }
    }
}

/* ---- splitting over threads ---- */

/* Below this many multiply-adds a product runs on one thread: waking the
 * pool and packing twice would cost more than it saves. */
#ifndef AG_GEMM_PARALLEL_MIN
#define AG_GEMM_PARALLEL_MIN ((size_t)1 << 21)
#endif
/* Up to this many multiply-adds the plain loop wins: nothing to amortise. */
#ifndef AG_GEMM_SMALL_MAX
#define AG_GEMM_SMALL_MAX ((size_t)64)
#endif
/* Narrow products (N within the kernel's direct_n) run the direct kernel
 * while op(B) (K x N) has at most this many elements, about 256 KB of L2... */
#ifndef AG_GEMM_DIRECT_B_MAX
#define AG_GEMM_DIRECT_B_MAX ((size_t)1 << 16)
#endif
/* ...and, for A^T, while K is at most this. */
#ifndef AG_GEMM_DIRECT_TA_K
#define AG_GEMM_DIRECT_TA_K ((size_t)512)
#endif
/* Stripes of a product split over threads that each pack the whole of the
 * other operand are at least this many rows (or columns) when that leaves
 * each thread one... */
#define GEMM_STRIPE_MIN ((size_t)128)
/* ...and stripes that need not (a thread packs it once, or A is read in
 * place) are up to this many per thread, at least this many micro-tiles
 * wide. On the GPT's step with two threads, 8 per thread measured 4-7%
 * faster than 2, 16 no faster than 8; one tile rather than two 1% faster. */
#define GEMM_STRIPES_SHARED ((size_t)8)
#define GEMM_STRIPE_TILES_SHARED ((size_t)1)
/* A batch of small products is shared out above this many multiply-adds. */
#define AG_GEMM_BATCH_PARALLEL_MIN ((size_t)1 << 18)

/* M N K multiply-adds, or SIZE_MAX when that overflows. */
static size_t work_of(size_t M, size_t N, size_t K)
{
    if (((M | N | K) >> 20) == 0) /* the usual case, without dividing */
        return M * N * K;
    if (N > SIZE_MAX / M || K > SIZE_MAX / (M * N))
        return SIZE_MAX;
    return M * N * K;
}

/* Row stripes would each pack all of op(B): a thread packs it once, at its
 * first stripe, into the B part of its buffer (its stripes then pack only
 * A there, if anything). Whether op(B) fits that part: */
static int b_shareable(const gemm_args *g, size_t N, size_t K)
{
    const ag_gemm_kernel *k = g->k;
    size_t npad = round_up(N, (size_t)k->nr);
    return npad <= k->nc && K <= k->nc * k->kc / npad; /* K npad <= the B part */
}

/* Point g at op(B) packed in buf, packing it there first if pack. */
static void pack_shared_b(gemm_args *g, ag_real *buf, int pack)
{
    const ag_gemm_kernel *k = g->k;
    size_t npad = round_up(g->N, (size_t)k->nr), kc = min_size(g->kc, g->K);
    ag_real *bp = buf + k->mc * k->kc;
    for (size_t pc = 0; pack && pc < g->K; pc += kc)
        pack_b(g, pc, min_size(kc, g->K - pc), 0, g->N, bp + pc * npad);
    g->bpack = bp;
    g->npad = npad;
}

/* The same for op(A) when column stripes of cols columns would each pack
 * all of it (A^T, or any A for a kernel without micro_rows): at the far
 * end of the buffer, past what a stripe uses. */
static int a_shareable(const gemm_args *g, size_t M, size_t K, size_t cols)
{
    const ag_gemm_kernel *k = g->k;
    size_t mpad = round_up(M, (size_t)k->mr), full = pack_full_for(k);
    size_t used = (k->mc + cols) * k->kc;
    return used < full && K <= (full - used) / mpad;
}

static void pack_shared_a(gemm_args *g, ag_real *buf, int pack)
{
    const ag_gemm_kernel *k = g->k;
    size_t mpad = round_up(g->M, (size_t)k->mr), kc = min_size(g->kc, g->K);
    ag_real *ap = buf + pack_full_for(k) - g->K * mpad;
    for (size_t pc = 0; pack && pc < g->K; pc += kc)
        pack_a(g, 0, g->M, pc, min_size(kc, g->K - pc), ap + pc * mpad);
    g->apack = ap;
    g->mpad = mpad;
}

/* Which operand the stripes of a split product share, each thread packing
 * it once into its own buffer (see gemm_run). */
typedef enum { SHARE_NONE, SHARE_B, SHARE_A } gemm_share;

/* A product split into n stripes of whole micro-tiles, across its rows
 * (by_rows) or its columns: stripe t has tiles [t tiles / n, (t+1) tiles /
 * n) of the tiles there are across, so stripes differ by one tile at most. */
typedef struct gemm_split {
    const gemm_args *g;
    int by_rows;
    size_t tile, tiles, n; /* mr or nr; tiles across; stripes */
    gemm_share share;
    uint64_t id; /* this product's number, for packed_for below */
} gemm_split;

/* The product whose shared operand this thread's buffer holds (0: none).
 * While a thread runs a product's stripes it runs nothing else that uses
 * its buffer (the pool runs one job at a time, and a nested call runs on
 * the calling thread), so the operand is still there at its next stripe. */
static _Thread_local uint64_t packed_for;
static _Atomic uint64_t products; /* the products numbered so far */

/* A new product's number, from 1. */
static uint64_t product_number(void)
{
    return atomic_fetch_add_explicit(&products, 1, memory_order_relaxed) + 1;
}

static void gemm_task(void *ctx, size_t t)
{
    const gemm_split *s = ctx;
    gemm_args g = *s->g;
    ag_real *buf = s->share != SHARE_NONE ? pack_buffer(pack_full_for(g.k)) : NULL;
    if (buf) { /* else out of memory: gemm_blocked falls back as it can */
        int pack = packed_for != s->id;
        if (s->share == SHARE_B)
            pack_shared_b(&g, buf, pack);
        else
            pack_shared_a(&g, buf, pack);
        packed_for = s->id;
    }
    size_t lo = t * s->tiles / s->n * s->tile, hi = (t + 1) * s->tiles / s->n * s->tile;
    if (s->by_rows)
        gemm_blocked(&g, lo, min_size(hi, g.M), 0, g.N);
    else
        gemm_blocked(&g, 0, g.M, lo, min_size(hi, g.N));
}

typedef struct direct_split {
    const gemm_args *g;
    size_t rsa, csa; /* op(A)(i, p) = A[i*rsa + p*csa] */
    size_t rows;     /* per task */
    uint64_t id;     /* this product's number, for packed_for */
} direct_split;

/* op(B) of a direct product as a (K x N) matrix with row stride *ldb: B
 * itself, or B stored (N x K) transposed into this thread's buffer, once
 * per product on each thread that runs a part of it. NULL when out of
 * memory. */
static const ag_real *direct_b(const gemm_args *g, uint64_t id, size_t *ldb)
{
    size_t N = g->N, K = g->K;
    *ldb = g->tb ? N : g->ldb;
    if (!g->tb)
        return g->B;
    ag_real *bt = pack_buffer(K * N);
    if (bt && packed_for != id) {
        if (g->k->transpose) {
            g->k->transpose(N, K, g->B, g->ldb, bt, N);
        } else {
            for (size_t j = 0; j < N; j++)
                for (size_t p = 0; p < K; p++)
                    bt[p * N + j] = g->B[j * g->ldb + p];
        }
        packed_for = id;
    }
    return bt;
}

static void direct_task(void *ctx, size_t t)
{
    const direct_split *d = ctx;
    const gemm_args *g = d->g;
    size_t i0 = t * d->rows, i1 = min_size(i0 + d->rows, g->M), ldb;
    const ag_real *B = direct_b(g, d->id, &ldb);
    if (!B) { /* out of memory on this thread: the unpacked loop needs none */
        gemm_small(g, i0, i1, 0, g->N);
        return;
    }
    g->k->direct(i1 - i0, g->N, g->K, g->alpha, g->A + i0 * d->rsa, d->rsa, d->csa, B, ldb, g->beta,
                 g->C + i0 * g->ldc, g->ldc);
}

/* The direct kernel for a narrow product. Rows of C are independent and
 * each is computed the same way wherever it falls, so a large one is split
 * into row stripes over the threads. Returns 0 when it could not run (no
 * memory for B^T). */
static int gemm_direct(const gemm_args *g, size_t work)
{
    size_t M = g->M;
    direct_split d = {g, g->ta ? 1 : g->lda, g->ta ? g->lda : 1, M, product_number()};
    if (g->tb && !pack_buffer(g->K * g->N))
        return 0;
    size_t threads = work < AG_GEMM_PARALLEL_MIN ? 1 : (size_t)ag_parallel_threads();
    if (threads <= 1) { /* the usual case for a narrow product: no task to go through */
        direct_task(&d, 0);
        return 1;
    }
    size_t tasks = 2 * threads;
    d.rows = round_up((M + tasks - 1) / tasks, 4);
    ag_parallel_for((M + d.rows - 1) / d.rows, direct_task, &d);
    return 1;
}

/* How many stripes to cut width into: the largest multiple of threads, at
 * most each * threads, whose stripes are at least least wide; threads when
 * none is. */
static size_t stripes_for(size_t width, size_t threads, size_t each, size_t least)
{
    size_t tasks = each * threads;
    while (tasks > threads && width / tasks < least)
        tasks -= threads;
    return tasks;
}

/* ---- a weight gradient cut in two halves of K ----
 * dW = X^T dY has K (positions) long against M N (the weight), and split
 * by rows or columns every thread packs all of X^T or of dY for itself:
 * on two threads the GPT's (128, 128) weight gradients ran 1.1 to 1.3
 * times as fast as on one. A^T B with K from SPLIT_K_MIN to 2 kc is made
 * in two passes over K instead, one a half: on two threads each packs half
 * of each operand and makes one half of the sum, the second into a buffer
 * then added to C. The cut depends on the shapes alone, and one thread
 * (or three or more, in stripes) makes the same two passes into C (the
 * micro-kernel adding the second as `combine` adds the buffer), so the
 * results are the same bits on any number of threads. */
#define SPLIT_K_MIN ((size_t)256)

/* The first half's K for a product cut in two, or 0 when it is not: A^T
 * B, each half one pass of the kernel. */
static size_t split_k(const gemm_args *g)
{
    if (!g->ta || g->K < SPLIT_K_MIN || g->K > 2 * g->k->kc)
        return 0;
    return (g->K + 1) / 2;
}

typedef struct halves_job {
    const gemm_args *g;
    ag_real *second; /* (M, N): the second half's sums, made by the thread that took it */
    int no_room;     /* that thread's buffer had no room for them: they went into C */
} halves_job;

/* g with its K the second half's (g->kc is the first's) */
static gemm_args second_half(const gemm_args *g)
{
    gemm_args h = *g;
    h.A += g->kc * g->lda; /* A stored (K x M) */
    h.B += g->tb ? g->kc : g->kc * g->ldb;
    h.K -= g->kc;
    return h;
}

/* Half `half` of the product: the first into C, the second into the end of
 * the taking thread's packing buffer, past all that gemm_blocked packs
 * there (or, without room, nothing: gemm_halves adds it to C after). */
static void half_task(void *ctx, size_t half)
{
    halves_job *h = ctx;
    gemm_args g = *h->g;
    if (half == 0) {
        g.K = g.kc;
        gemm_blocked(&g, 0, g.M, 0, g.N);
        return;
    }
    const ag_gemm_kernel *k = g.k;
    size_t full = pack_full_for(k), sums = g.M * g.N;
    size_t used = (k->mc + min_size(k->nc, round_up(g.N, (size_t)k->nr))) * g.kc;
    ag_real *buf = pack_buffer(full);
    if (!buf || used > full || sums > full - used) {
        h->no_room = 1;
        return;
    }
    h->second = buf + full - sums;
    g = second_half(&g);
    g.alpha = 1, g.beta = 0;
    g.C = h->second, g.ldc = g.N;
    gemm_blocked(&g, 0, g.M, 0, g.N);
}

typedef struct combine_job {
    const gemm_args *g;
    const ag_real *second;
} combine_job;

static void combine_rows(void *ctx, size_t lo, size_t hi)
{
    const combine_job *c = ctx;
    const gemm_args *g = c->g;
    for (size_t i = lo; i < hi; i++)
        g->k->combine(g->N, g->alpha, c->second + i * g->N, g->C + i * g->ldc);
}

/* g's product in two halves of K on two threads (g->kc is the first's K). */
static void gemm_halves(const gemm_args *g)
{
    halves_job h = {g, NULL, 0};
    ag_parallel_for(2, half_task, &h);
    if (h.no_room) { /* the second half as one thread makes it: a pass more over C */
        gemm_args rest = second_half(g);
        rest.beta = 1;
        gemm_blocked(&rest, 0, g->M, 0, g->N);
        return;
    }
    combine_job c = {g, h.second};
    ag_parallel_range(g->M, 16, combine_rows, &c);
}

/* g's product, whose M N K multiply-adds are work. The sizes come in as
 * arguments too: reading them back from g, just stored field by field,
 * stalled on store forwarding when GCC loaded two at once. */
static void gemm_run(const gemm_args *g, size_t M, size_t N, size_t K, size_t work)
{
    /* Narrow products skip packing while B stays in cache (or is read only a
     * few times), and while A^T (read down its columns) stays in L1 across a
     * tile's rows. */
    if (g->k->direct && N <= g->k->direct_n && (K * N <= AG_GEMM_DIRECT_B_MAX || M <= 16) &&
        (!g->ta || K <= AG_GEMM_DIRECT_TA_K) && gemm_direct(g, work))
        return;
    size_t threads = work < AG_GEMM_PARALLEL_MIN ? 1 : (size_t)ag_parallel_threads();
    gemm_args halves = *g;
    if ((halves.kc = split_k(g)) != 0) {
        g = &halves; /* two passes over K, whoever makes them */
        if (threads == 2) {
            gemm_halves(g);
            return;
        }
    }
    if (threads <= 1) {
        gemm_blocked(g, 0, M, 0, N);
        return;
    }
    /* Split the longer side into stripes of whole micro-tiles. When a thread
     * packs the other operand once for all its stripes (or A is read in
     * place), a stripe costs little but its own products: many thin ones
     * let a thread the machine slowed hand its last ones over instead of
     * holding the other up at the end. Otherwise every stripe packs the
     * whole of the other operand, and two per thread, at least
     * GEMM_STRIPE_MIN wide, are what is worth paying for. */
    int by_rows = M >= N;
    size_t tile = (size_t)(by_rows ? g->k->mr : g->k->nr), width = by_rows ? M : N;
    gemm_split s = {g, by_rows, tile, (width + tile - 1) / tile, 0, SHARE_NONE, 0};
    size_t thin = stripes_for(s.tiles, threads, GEMM_STRIPES_SHARED, GEMM_STRIPE_TILES_SHARED);
    s.n = stripes_for(width, threads, 2, GEMM_STRIPE_MIN);
    if (by_rows && b_shareable(g, N, K))
        s.share = SHARE_B;
    int packs_a = g->ta || !g->k->micro_rows;
    if (!by_rows && packs_a && a_shareable(g, M, K, (s.tiles + thin - 1) / thin * tile))
        s.share = SHARE_A;
    if (s.share != SHARE_NONE || (!by_rows && !packs_a))
        s.n = thin;
    s.n = min_size(s.n, s.tiles);
    s.id = product_number();
    ag_parallel_for(s.n, gemm_task, &s);
}

/* ---- entry points ---- */

/* C = beta C, writing zeros when beta == 0 (C may hold NaN). */
static void scale_c(size_t M, size_t N, ag_real beta, ag_real *C, size_t ldc)
{
    if (beta == 1)
        return;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
}

void ag_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
             const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta, ag_real *C,
             size_t ldc)
{
    if (M == 0 || N == 0)
        return;
    if (K == 0 || alpha == 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    gemm_args g = {trans_a != 0, trans_b != 0, M,   N,    K,    0, alpha, beta, A, B, C,
                   lda,          ldb,          ldc, NULL, NULL, 0, NULL,  0};
    size_t work = work_of(M, N, K);
    if (work <= AG_GEMM_SMALL_MAX) { /* before any other cost */
        gemm_small(&g, 0, M, 0, N);
        return;
    }
    g.k = kernel();
    g.kc = g.k->kc;
    gemm_run(&g, M, N, K, work);
}

typedef struct batch_job {
    int ta, tb;
    size_t M, N, K;
    ag_real alpha, beta;
    const ag_real *A, *B;
    ag_real *C;
    size_t lda, ldb, ldc, sa, sb, sc;
    size_t batch, per_task; /* products in all, and per task */
} batch_job;

static void batch_task(void *ctx, size_t t)
{
    const batch_job *j = ctx;
    size_t end = min_size(j->batch, (t + 1) * j->per_task);
    for (size_t b = t * j->per_task; b < end; b++)
        ag_gemm(j->ta, j->tb, j->M, j->N, j->K, j->alpha, j->A + b * j->sa, j->lda,
                j->B + b * j->sb, j->ldb, j->beta, j->C + b * j->sc, j->ldc);
}

void ag_gemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                     ag_real alpha, const ag_real *A, size_t lda, size_t stride_a, const ag_real *B,
                     size_t ldb, size_t stride_b, ag_real beta, ag_real *C, size_t ldc,
                     size_t stride_c)
{
    if (batch == 0 || M == 0 || N == 0)
        return;
    if (stride_c == 0) {
        /* every product adds into the one C, in order */
        ag_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        for (size_t b = 1; b < batch; b++)
            ag_gemm(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb,
                    1, C, ldc);
        return;
    }
    batch_job j = {trans_a, trans_b, M,   N,   K,        alpha,    beta,     A,     B,
                   C,       lda,     ldb, ldc, stride_a, stride_b, stride_c, batch, 1};
    /* Products too small to split by themselves are shared out whole, a run
     * of them per task; each is computed exactly as ag_gemm would. */
    /* Large products too, when there are enough of them to keep every
     * thread busy (attention's per-head products at T = 256): whole products
     * per task pack less and wake the pool once instead of once each. */
    size_t work = work_of(M, N, K);
    size_t threads = batch > 1 ? (size_t)ag_parallel_threads() : 1;
    if (threads > 1 && work >= AG_GEMM_BATCH_PARALLEL_MIN / batch &&
        (work < AG_GEMM_PARALLEL_MIN || batch >= 4 * threads)) {
        size_t tasks = min_size(batch, 4 * threads);
        j.per_task = (batch + tasks - 1) / tasks;
        ag_parallel_for((batch + j.per_task - 1) / j.per_task, batch_task, &j);
    } else {
        j.per_task = batch;
        batch_task(&j, 0);
    }
}
