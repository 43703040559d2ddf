/*
 * softmax.c - the fast softmax rows: AVX2 and AVX-512 kernels for the
 * usual row (the float build on x86), and rows shared out over the threads.
 * The plain row is ag_ref_softmax (src/core/ref_softmax.c), which the vector
 * kernels fall back to for rows they do not take and are tested against.
 */
#include "cpu.h"
#include "kernels.h"
#include "threads.h"

#include <math.h>

/* Rows [r0, r1) of a softmax, forward or backward: each row is computed
 * the same way wherever it falls, so splitting rows over threads changes no
 * bit of the result. */
typedef struct softmax_job {
    const ag_real *z; /* forward: (rows, n) in */
    ag_real *s;       /* forward: out; backward: the forward's output, read */
    const ag_real *ds;
    ag_real *dz;
    size_t n, rows, per_task;
    int wrong; /* AG_BUG_SOFTMAX */
    int simd;  /* ag_cpu_row_level(): which vector kernel rows may use */
} softmax_job;

/* ---- vector kernels for the usual row (float build, x86 with AVX2+FMA or AVX-512F) ----
 * exp is vexp.h's, within 2 ulp of expf: masked keys (-inf, and
 * anything below expf's underflow) give exactly 0; a NaN stays NaN. Rows
 * whose max is +-inf or NaN take the scalar path below. */
#if defined(AG_X86_KERNELS) && !defined(AG_REAL_DOUBLE)
#define AG_SOFTMAX_AVX2 1
#include "vexp.h"

#define AVX2 __attribute__((target("avx2,fma")))

/* The last n (< 16) values of a row, written exactly: a masked vector store
 * would reach past the row's end, and when rows are softmaxed in place the
 * next row's loads would then wait for that store to reach the cache (about
 * four times slower at T = 8). */
static inline void store_tail(float *dst, const float *lanes, size_t n)
{
    for (size_t k = 0; k < n; k++)
        dst[k] = lanes[k];
}

/* s = softmax(z) over one row of n; returns 0 (s untouched) when the row's
 * max is not finite, for the scalar path to handle. */
AVX2 static int row_avx2(const float *z, float *s, size_t n)
{
    size_t j = 0;
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (; j + 8 <= n; j += 8)
        vmax = _mm256_max_ps(_mm256_loadu_ps(z + j), vmax); /* NaNs skipped, as below */
    float lanes[8];
    _mm256_storeu_ps(lanes, vmax);
    float max = -INFINITY;
    for (int k = 0; k < 8; k++)
        if (lanes[k] > max)
            max = lanes[k];
    for (; j < n; j++)
        if (z[j] > max)
            max = z[j];
    if (!isfinite(max))
        return 0;
    __m256 vm = _mm256_set1_ps(max), vsum = _mm256_setzero_ps();
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(z + j), vm));
        _mm256_storeu_ps(s + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    __m256 e_tail = _mm256_setzero_ps();
    if (j < n) {
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - j)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        e_tail = exp_avx2(_mm256_sub_ps(_mm256_maskload_ps(z + j, mask), vm));
        e_tail = _mm256_and_ps(e_tail, _mm256_castsi256_ps(mask));
        vsum = _mm256_add_ps(vsum, e_tail);
    }
    _mm256_storeu_ps(lanes, vsum);
    float sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
                ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    __m256 inv = _mm256_set1_ps(1 / sum);
    for (size_t k = 0; k + 8 <= n; k += 8)
        _mm256_storeu_ps(s + k, _mm256_mul_ps(_mm256_loadu_ps(s + k), inv));
    if (j < n) {
        _mm256_storeu_ps(lanes, _mm256_mul_ps(e_tail, inv));
        store_tail(s + j, lanes, n - j);
    }
    return 1;
}

/* The same row with 16 lanes, on CPUs with AVX-512F: the polynomial and
 * the masking are the AVX2 kernel's, only wider (tails use masked loads). */
#define AVX512 __attribute__((target("avx512f")))

AVX512 static int row_avx512(const float *z, float *s, size_t n)
{
    /* Reductions stay in registers (a fixed tree of shuffles, the same sum on
     * every run): at attention's short rows, T = 8 or 16, moving lanes through
     * memory cost more than the exps. */
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    size_t j = 0;
    __m512 vmax = neg_inf;
    for (; j + 16 <= n; j += 16)
        vmax = _mm512_max_ps(_mm512_loadu_ps(z + j), vmax); /* NaNs skipped */
    __mmask16 tail = (__mmask16)((1u << (n - j)) - 1);      /* n - j < 16 */
    vmax = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, tail, z + j), vmax);
    float max = _mm512_reduce_max_ps(vmax);
    if (!isfinite(max))
        return 0;
    __m512 vm = _mm512_set1_ps(max), vsum = _mm512_setzero_ps();
    for (j = 0; j + 16 <= n; j += 16) {
        __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(z + j), vm));
        _mm512_storeu_ps(s + j, e);
        vsum = _mm512_add_ps(vsum, e);
    }
    __m512 e_tail = _mm512_setzero_ps();
    if (tail) {
        e_tail = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, z + j), vm));
        e_tail = _mm512_maskz_mov_ps(tail, e_tail);
        vsum = _mm512_add_ps(vsum, e_tail);
    }
    __m512 inv = _mm512_set1_ps(1 / _mm512_reduce_add_ps(vsum));
    for (size_t k = 0; k + 16 <= n; k += 16)
        _mm512_storeu_ps(s + k, _mm512_mul_ps(_mm512_loadu_ps(s + k), inv));
    if (tail) {
        float lanes[16];
        _mm512_storeu_ps(lanes, _mm512_mul_ps(e_tail, inv));
        store_tail(s + j, lanes, n - j);
    }
    return 1;
}

#endif

void ag_fast_softmax_row(const ag_real *z, ag_real *s, size_t n, int simd)
{
#ifdef AG_SOFTMAX_AVX2
    if (simd == 2 ? row_avx512(z, s, n) : simd == 1 && row_avx2(z, s, n))
        return;
#else
    (void)simd;
#endif
    ag_ref_softmax(z, s, n);
}

/* Below this many elements a softmax runs on the caller's thread. */
#define SOFTMAX_PARALLEL_MIN ((size_t)1 << 15)

static void run_rows(const softmax_job *j, void (*task)(void *, size_t))
{
    size_t threads = j->rows * j->n < SOFTMAX_PARALLEL_MIN ? 1 : (size_t)ag_parallel_threads();
    softmax_job job = *j;
    if (threads <= 1) {
        job.per_task = job.rows;
        task(&job, 0);
        return;
    }
    size_t tasks = 4 * threads;
    job.per_task = (job.rows + tasks - 1) / tasks;
    ag_parallel_for((job.rows + job.per_task - 1) / job.per_task, task, &job);
}

static void forward_task(void *ctx, size_t t)
{
    const softmax_job *job = ctx;
    size_t n = job->n, r0 = t * job->per_task;
    size_t r1 = r0 + job->per_task < job->rows ? r0 + job->per_task : job->rows;
    for (size_t r = r0; r < r1; r++)
        ag_fast_softmax_row(job->z + r * n, job->s + r * n, n, job->simd);
}

static void backward_task(void *ctx, size_t t)
{
    const softmax_job *job = ctx;
    int wrong = job->wrong;
    size_t n = job->n, r0 = t * job->per_task;
    size_t r1 = r0 + job->per_task < job->rows ? r0 + job->per_task : job->rows;
    for (size_t r = r0; r < r1; r++) {
        const ag_real *s = job->s + r * n, *ds = job->ds + r * n;
        ag_real *dz = job->dz + r * n;
        ag_real dot = 0;
        for (size_t j = 0; j < n; j++)
            dot += ds[j] * s[j];
        if (wrong)
            dot = 0; /* the deliberate bug: the - s s^T term dropped */
        for (size_t j = 0; j < n; j++)
            dz[j] += s[j] * (ds[j] - dot);
    }
}

void ag_fast_softmax(const ag_real *z, ag_real *s, size_t rows, size_t n)
{
    softmax_job job = {.z = z, .s = s, .n = n, .rows = rows, .simd = ag_cpu_row_level()};
    run_rows(&job, forward_task);
}

void ag_fast_softmax_backward(const ag_real *s, const ag_real *ds, ag_real *dz, size_t rows,
                              size_t n, int wrong)
{
    softmax_job job = {.s = (ag_real *)s, .ds = ds, .dz = dz, .n = n, .rows = rows, .wrong = wrong};
    run_rows(&job, backward_task);
}
