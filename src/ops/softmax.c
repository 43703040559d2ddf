/*
 * softmax.c - softmax over the last axis: s_i = exp(z_i - max) / sum_j exp(z_j - max).
 * Subtracting the row max keeps exp from overflowing; -inf entries (masked
 * keys) get weight exactly 0; a row with no finite entry gives all zeros;
 * +inf entries share all the weight (the limit), never NaN.
 */
#include "../core/internal.h"
#include "../kernels/threads.h"

#include <math.h>

static void softmax_backward(ag_tape *tape, const ag_entry *e);
static const ag_op softmax_op = {"softmax", softmax_backward, 0, 0};

/* Rows [r0, r1) of a softmax, forward or backward: each row is computed
 * the same way wherever it falls, so splitting rows over threads changes no
 * bit of the result. */
typedef struct softmax_job {
    const ag_tensor *a, *out;
    size_t n, rows, per_task;
    int wrong; /* AG_BUG_SOFTMAX */
    int simd;  /* ag_softmax_simd(): which vector kernel rows may use */
} softmax_job;

/* ---- vector kernels for the usual row (float build, x86 with AVX2+FMA or AVX-512F) ----
 * exp is src/kernels/vexp.h's, within 2 ulp of expf: masked keys (-inf, and
 * anything below expf's underflow) give exactly 0; a NaN stays NaN. Rows
 * whose max is +-inf or NaN take the scalar path below. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) &&     \
    !defined(AG_NO_SIMD) && !defined(AG_REAL_DOUBLE)
#define AG_SOFTMAX_AVX2 1
#include "../kernels/vexp.h"

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

/* 2: AVX-512F, 1: AVX2 and FMA, 0: neither. */
static int simd_level(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 2;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

int ag_softmax_simd(void)
{
#ifdef AG_SOFTMAX_AVX2
    return simd_level();
#else
    return 0;
#endif
}

void ag_softmax_row(const ag_real *z, ag_real *s, size_t n, int simd)
{
#ifdef AG_SOFTMAX_AVX2
    if (simd == 2 ? row_avx512(z, s, n) : simd == 1 && row_avx2(z, s, n))
        return;
#else
    (void)simd;
#endif
    ag_real max = -INFINITY;
    for (size_t j = 0; j < n; j++)
        if (z[j] > max)
            max = z[j];
    if (max == -INFINITY) {
        /* fully masked row: attends to nothing */
        for (size_t j = 0; j < n; j++)
            s[j] = 0;
        return;
    }
    if (max == INFINITY) {
        /* the limit as those logits grow: all weight on the +inf entries
         * (exp(inf - inf) would be NaN) */
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            count += z[j] == INFINITY;
        for (size_t j = 0; j < n; j++)
            s[j] = z[j] == INFINITY ? (ag_real)1 / (ag_real)count : 0;
        return;
    }
    ag_real sum = 0;
    for (size_t j = 0; j < n; j++) {
        s[j] = AG_EXP(z[j] - max);
        sum += s[j];
    }
    ag_real inv = 1 / sum;
    for (size_t j = 0; j < n; j++)
        s[j] *= inv;
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
    const ag_tensor *a = job->a, *out = job->out;
    size_t n = job->n, r0 = t * job->per_task;
    size_t r1 = r0 + job->per_task < job->rows ? r0 + job->per_task : job->rows;
    for (size_t r = r0; r < r1; r++)
        ag_softmax_row(a->data + r * n, out->data + r * n, n, job->simd);
}

ag_tensor *ag_softmax(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "softmax", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &softmax_op, out, 1, in))
        return NULL;
    softmax_job job = {a, out, (size_t)a->shape[a->ndim - 1], ag_rows(a), 0, 0, 0};
    job.simd = ag_softmax_simd();
    run_rows(&job, forward_task);
    return out;
}

static void backward_task(void *ctx, size_t t)
{
    const softmax_job *job = ctx;
    const ag_tensor *a = job->a, *out = job->out;
    int wrong = job->wrong;
    size_t n = job->n, r0 = t * job->per_task;
    size_t r1 = r0 + job->per_task < job->rows ? r0 + job->per_task : job->rows;
    for (size_t r = r0; r < r1; r++) {
        const ag_real *s = out->data + r * n, *ds = out->grad + r * n;
        ag_real *dz = a->grad + r * n;
        ag_real dot = 0;
        for (size_t j = 0; j < n; j++)
            dot += ds[j] * s[j];
        if (wrong)
            dot = 0; /* the deliberate bug: the - s s^T term dropped */
        for (size_t j = 0; j < n; j++)
            dz[j] += s[j] * (ds[j] - dot);
    }
}

static void softmax_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: s = softmax(z). The Jacobian is ds_i/dz_j = s_i (delta_ij - s_j),
     * so dz_j = sum_i ds_i s_i (delta_ij - s_j) = s_j (ds_j - <ds, s>).
     * Masked entries have s_j = 0 and so get no gradient.
     */
    ag_tensor *a = e->in[0], *out = e->out;
    if (!a->grad)
        return;
    softmax_job job = {
        a, out, (size_t)a->shape[a->ndim - 1], ag_rows(a), 0, tape->bug == AG_BUG_SOFTMAX, 0};
    run_rows(&job, backward_task);
}
