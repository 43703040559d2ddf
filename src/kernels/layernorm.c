/*
 * layernorm.c - the fast layer norm: rows in blocks shared out over the
 * threads, each row's sums in 16 interleaved partial sums. The plain rows
 * below are written so the compiler vectorises them (compiled per
 * instruction set, clones.h); on x86 in float, layernorm_kernel.h computes
 * the same sums in the same order with the lanes in registers, four rows
 * at a time (the plain rows folded their lanes through memory, each row
 * waiting on its own chain of sums: 1.2% of a GPT step). The math, and the
 * plain row the tests compare with, is ag_ref_layernorm
 * (src/core/ref_rows.c). The normalised row xhat is recomputed in backward
 * rather than kept (one (rows, C) buffer less per layer norm).
 */
#include "clones.h"
#include "cpu.h"
#include "kernels.h"
#include "threads.h"

#include <math.h>
#include <string.h>

#if defined(AG_X86_KERNELS) && !defined(AG_REAL_DOUBLE)
#define AG_LN_SIMD 1
#include <immintrin.h>

/* 8 lanes folded pairwise to lane 0: k += k+4, k += k+2, k += k+1 */
__attribute__((target("avx2"))) static inline float fold8(__m256 v)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(a, _mm_shuffle_ps(a, a, 1)));
}

/* ---- AVX2: 16 lanes in two vectors ---- */
#define NAME(f) f##_avx2
#define TARGET __attribute__((target("avx2")))
#define V __m256
#define W 8
#define SET1 _mm256_set1_ps
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define ZERO _mm256_setzero_ps
#define FOLD(acc) fold8(_mm256_add_ps((acc)[0], (acc)[1]))
#include "layernorm_kernel.h"
#undef NAME
#undef TARGET
#undef V
#undef W
#undef SET1
#undef LOAD
#undef STORE
#undef ADD
#undef SUB
#undef MUL
#undef ZERO
#undef FOLD

/* ---- AVX-512F: 16 lanes in one vector ---- */
#define NAME(f) f##_avx512
#define TARGET __attribute__((target("avx512f")))
#define V __m512
#define W 16
#define SET1 _mm512_set1_ps
#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define ZERO _mm512_setzero_ps
#define FOLD(acc)                                                                                  \
    fold8(_mm256_add_ps(_mm512_castps512_ps256((acc)[0]),                                          \
                        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd((acc)[0]), 1))))
#include "layernorm_kernel.h"
#undef NAME
#undef TARGET
#undef V
#undef W
#undef SET1
#undef LOAD
#undef STORE
#undef ADD
#undef SUB
#undef MUL
#undef ZERO
#undef FOLD
#endif /* AG_LN_SIMD */

/* Rows are handled in blocks of this many: the unit of work for the
 * threads, and in backward the unit whose weight and bias gradients are
 * summed separately, then added block by block in order, so the result does
 * not depend on the thread count. */
#define BLOCK_ROWS 32
/* Below this many elements a layer norm runs on the caller's thread. */
#define PARALLEL_MIN ((size_t)1 << 14)
/* Interleaved partial sums along a row: enough to fill a vector register. */
#define LANES 16

typedef struct ln_job {
    const ag_real *x, *w, *b; /* x (rows, C); w and b (C), or NULL (in backward, w is
                                 * never NULL: ones stand for a missing weight) */
    ag_real *y;               /* forward: (rows, C) */
    ag_real *stats;           /* (rows, 2): mean, 1/std */
    const ag_real *dy;        /* backward: (rows, C) */
    ag_real *dx;              /* (rows, C), or NULL */
    ag_real *dw, *db;         /* (blocks, C) per-block sums, or NULL */
    size_t rows, C;
    int simd; /* ag_cpu_row_level(): the vector rows of layernorm_kernel.h, or 0 */
} ln_job;

/* The rows [r0, r1) of block t. */
static size_t block_end(const ln_job *j, size_t t)
{
    return (t + 1) * BLOCK_ROWS < j->rows ? (t + 1) * BLOCK_ROWS : j->rows;
}

/* sum = the sum of term over i = 0 .. C-1 of one row, in LANES interleaved
 * partial sums (lane k takes the i = k mod LANES of the whole blocks; the
 * loop the compiler vectorises), the lanes pairwise, then the last C mod
 * LANES terms in order. The order depends only on C, so a row's sums are
 * the same on every call and every thread. */
#define ROW_SUM(sum, C, i, term)                                                                   \
    do {                                                                                           \
        size_t i = 0;                                                                              \
        (sum) = 0;                                                                                 \
        if ((C) >= LANES) {                                                                        \
            ag_real lane_[LANES] = {0};                                                            \
            for (size_t c0_ = 0; c0_ + LANES <= (C); c0_ += LANES)                                 \
                for (int k_ = 0; k_ < LANES; k_++) {                                               \
                    i = c0_ + (size_t)k_;                                                          \
                    lane_[k_] += (term);                                                           \
                }                                                                                  \
            for (int w_ = LANES / 2; w_ > 0; w_ /= 2)                                              \
                for (int k_ = 0; k_ < w_; k_++)                                                    \
                    lane_[k_] += lane_[k_ + w_];                                                   \
            (sum) = lane_[0];                                                                      \
        }                                                                                          \
        for (i = (C) / LANES * LANES; i < (C); i++)                                                \
            (sum) += (term);                                                                       \
    } while (0)

/* Block t of rows: mean, 1/std and y. The mean first, then the variance
 * around it (two passes: a one-pass E[x^2] - mean^2 loses every digit when
 * the mean is large against the spread). */
AG_CLONES static void forward_block(const ln_job *j, size_t t)
{
    size_t C = j->C, r1 = block_end(j, t);
    ag_real inv_c = (ag_real)1 / (ag_real)C;
    for (size_t r = t * BLOCK_ROWS; r < r1; r++) {
        const ag_real *x = j->x + r * C;
        ag_real *y = j->y + r * C;
        ag_real sum, sq;
        ROW_SUM(sum, C, i, x[i]);
        ag_real mean = sum * inv_c;
        ROW_SUM(sq, C, i, (x[i] - mean) * (x[i] - mean));
        ag_real rstd = 1 / AG_SQRT(sq * inv_c + (ag_real)AG_LAYERNORM_EPS);
        j->stats[2 * r] = mean;
        j->stats[2 * r + 1] = rstd;
        for (size_t c = 0; c < C; c++)
            y[c] = (x[c] - mean) * rstd * (j->w ? j->w[c] : 1) + (j->b ? j->b[c] : 0);
    }
}

static void forward_task(void *ctx, size_t t)
{
#ifdef AG_LN_SIMD
    const ln_job *j = ctx;
    if (j->simd) {
        size_t r = t * BLOCK_ROWS, n = block_end(j, t) - r, C = j->C;
        if (j->simd == 2)
            ln_forward_avx512(j->x + r * C, j->w, j->b, j->y + r * C, j->stats + 2 * r, n, C);
        else
            ln_forward_avx2(j->x + r * C, j->w, j->b, j->y + r * C, j->stats + 2 * r, n, C);
        return;
    }
#endif
    forward_block(ctx, t);
}

static void run_blocks(const ln_job *j, void (*task)(void *, size_t))
{
    size_t blocks = (j->rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
    if (j->rows * j->C < PARALLEL_MIN) {
        for (size_t t = 0; t < blocks; t++)
            task((void *)j, t);
        return;
    }
    ag_parallel_for(blocks, task, (void *)j);
}

/* Block t's rows of the per-block sums of dw and db (NULL when not
 * wanted), zeroed. */
static void block_sums(const ln_job *j, size_t t, ag_real **dw, ag_real **db)
{
    *dw = j->dw ? j->dw + t * j->C : NULL;
    *db = j->db ? j->db + t * j->C : NULL;
    if (*dw)
        memset(*dw, 0, j->C * sizeof(ag_real));
    if (*db)
        memset(*db, 0, j->C * sizeof(ag_real));
}

/* Block t of rows: dx for its rows, and into row t of dw and db the sums of
 * dy * xhat and of dy over its rows. */
AG_CLONES static void backward_block(const ln_job *j, size_t t)
{
    size_t C = j->C, r1 = block_end(j, t);
    ag_real inv_c = (ag_real)1 / (ag_real)C;
    ag_real *dw, *db;
    block_sums(j, t, &dw, &db);
    for (size_t r = t * BLOCK_ROWS; r < r1; r++) {
        const ag_real *x = j->x + r * C, *dy = j->dy + r * C;
        ag_real mean = j->stats[2 * r], rstd = j->stats[2 * r + 1];
        if (dw)
            for (size_t c = 0; c < C; c++)
                dw[c] += dy[c] * ((x[c] - mean) * rstd);
        if (db)
            for (size_t c = 0; c < C; c++)
                db[c] += dy[c];
        if (!j->dx)
            continue;
        /* g = dL/dxhat = dy * w; the sums for the two means of the formula */
        ag_real g_sum, gx_sum;
        ROW_SUM(g_sum, C, i, dy[i] * j->w[i]);
        ROW_SUM(gx_sum, C, i, dy[i] * j->w[i] * ((x[i] - mean) * rstd));
        ag_real g_mean = g_sum * inv_c, gx_mean = gx_sum * inv_c;
        ag_real *dx = j->dx + r * C;
        for (size_t c = 0; c < C; c++) {
            ag_real xhat = (x[c] - mean) * rstd, g = dy[c] * j->w[c];
            dx[c] += rstd * (g - g_mean - xhat * gx_mean);
        }
    }
}

static void backward_task(void *ctx, size_t t)
{
#ifdef AG_LN_SIMD
    const ln_job *j = ctx;
    if (j->simd) {
        size_t C = j->C, r = t * BLOCK_ROWS, n = block_end(j, t) - r;
        float *dw, *db;
        block_sums(j, t, &dw, &db);
        float *dx = j->dx ? j->dx + r * C : NULL;
        if (j->simd == 2)
            ln_backward_avx512(j->x + r * C, j->w, j->stats + 2 * r, j->dy + r * C, dx, dw, db, n,
                               C);
        else
            ln_backward_avx2(j->x + r * C, j->w, j->stats + 2 * r, j->dy + r * C, dx, dw, db, n, C);
        return;
    }
#endif
    backward_block(ctx, t);
}

void ag_fast_layernorm_level(const ag_real *x, const ag_real *w, const ag_real *b, ag_real *y,
                             ag_real *stats, size_t rows, size_t C, int level)
{
    ln_job job = {x, w, b, y, stats, NULL, NULL, NULL, NULL, rows, C, level};
    run_blocks(&job, forward_task);
}

void ag_fast_layernorm(const ag_real *x, const ag_real *w, const ag_real *b, ag_real *y,
                       ag_real *stats, size_t rows, size_t C)
{
    ag_fast_layernorm_level(x, w, b, y, stats, rows, C, ag_cpu_row_level());
}

ag_status ag_fast_layernorm_backward(ag_tape *tape, const ag_real *x, const ag_real *w,
                                     const ag_real *stats, const ag_real *dy, ag_real *dx,
                                     ag_real *dw, ag_real *db, size_t rows, size_t C)
{
    return ag_fast_layernorm_backward_level(tape, x, w, stats, dy, dx, dw, db, rows, C,
                                            ag_cpu_row_level());
}

ag_status ag_fast_layernorm_backward_level(ag_tape *tape, const ag_real *x, const ag_real *w,
                                           const ag_real *stats, const ag_real *dy, ag_real *dx,
                                           ag_real *dw, ag_real *db, size_t rows, size_t C,
                                           int level)
{
    size_t blocks = (rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
    int has_dw = dw != NULL, has_db = db != NULL;
    /* the per-block sums, and ones for a missing weight (so that the row
     * loops have no branch in them and vectorise) */
    size_t bytes;
    ag_real *part = NULL;
    if (ag_mul_size(((size_t)(has_dw + has_db) * blocks + 1) * C, sizeof(ag_real), &bytes))
        part = ag_arena_alloc(tape, bytes);
    else
        ag_tape_fail(tape, AG_ERR_NOMEM, "layernorm: backward's buffers do not fit in memory");
    if (!part)
        return tape->status;
    ag_real *ones = part + (size_t)(has_dw + has_db) * blocks * C;
    for (size_t c = 0; c < C; c++)
        ones[c] = 1;
    ln_job job = {x,
                  w ? w : ones,
                  NULL,
                  NULL,
                  (ag_real *)stats,
                  dy,
                  dx,
                  has_dw ? part : NULL,
                  has_db ? part + (has_dw ? blocks * C : 0) : NULL,
                  rows,
                  C,
                  level};
    run_blocks(&job, backward_task);
    for (size_t t = 0; t < blocks; t++)
        for (size_t c = 0; c < C; c++) {
            if (has_dw)
                dw[c] += job.dw[t * C + c];
            if (has_db)
                db[c] += job.db[t * C + c];
        }
    return AG_OK;
}
