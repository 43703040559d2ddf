/*
 * gelu.c - the fast GELU, y = x Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2:
 * it runs over (B*T, 4C) values per layer of a GPT's MLP, so the float build
 * on x86 computes erf with its own vector kernels instead of calling libm once
 * per element, and long runs are shared out over the threads. Elsewhere it is
 * the reference, ag_ref_gelu (src/core/ref_rows.c).
 *
 * The float kernels (gelu_kernel.h, AVX2+FMA and AVX-512F) write erf(z) as
 *   |z| < 1:  z + z (c0 + t Q(t)), t = z^2   (minimax, relative error 1.2e-9)
 *   |z| >= 1: 1 - exp(-z^2) P(a) / D(a), a = |z|   (rational of degree
 *             3/4, relative error 1.1e-8 in erfc up to a = 9.4, where
 *             exp(-z^2) leaves float's normal range)
 * with exp as vexp.h's (Cephes). They are within 3 ulp of libm's erf over
 * every float (tests/test_gelu.c). Phi takes erfc / 2 directly left of
 * -sqrt 2, so it keeps its relative accuracy far into the left tail, where
 * 1 + erf(z) would round to 0. The double build, and other machines, use
 * libm's erfc (the reference).
 */
#include "cpu.h"
#include "kernels.h"
#include "threads.h"

#include <math.h>
#include <string.h>

/* Values per task when threads share the work: a multiple of every vector
 * width, so that which thread takes an element changes nothing. */
#define CHUNK 4096
/* Below this many elements GELU runs on the caller's thread. */
#define PARALLEL_MIN ((size_t)1 << 15)

#if defined(AG_X86_KERNELS) && !defined(AG_REAL_DOUBLE)
#define AG_GELU_SIMD 1
#include "vexp.h" /* exp's constants, shared with softmax and the attention tiles */

/* erf's polynomials (fitted in 40-digit arithmetic, minimax in relative
 * error): |z| < 1, c0 and Q; |z| >= 1, erfc(a) exp(a^2) = P(a) / D(a). */
#define ERF_C0 0.1283791657528046f
#define ERF_S1 (-0.37612625899075621f)
#define ERF_S2 0.1128358574931635f
#define ERF_S3 (-0.026853832486924871f)
#define ERF_S4 0.0051883618112717252f
#define ERF_S5 (-0.00080104655208522022f)
#define ERF_S6 7.8546946375220298e-5f
#define ERF_P0 0.99898416622064629f
#define ERF_P1 1.1616530597043236f
#define ERF_P2 0.60231017052324387f
#define ERF_P3 0.15339296263742451f
#define ERF_Q1 2.283827520078429f
#define ERF_Q2 2.1974026912168886f
#define ERF_Q3 1.067398433929685f
#define ERF_Q4 0.27188680998565648f
/* exp(-x) is taken for x up to this; beyond, float's normal range ends and
 * it counts as 0. P / D is fitted for a = |z| up to ERF_A_MAX, past
 * sqrt(EXP_MAX). */
#define EXP_MAX 87.3f
#define ERF_A_MAX 9.4f

/* ---- AVX2 + FMA: 8 lanes ---- */
#define NAME(f) f##_avx2
#define TARGET __attribute__((target("avx2,fma")))
#define V __m256
#define W 8
#define SET1 _mm256_set1_ps
#define LOAD _mm256_loadu_ps
#define STORE _mm256_storeu_ps
#define ADD _mm256_add_ps
#define MUL _mm256_mul_ps
#define DIV _mm256_div_ps
#define MIN _mm256_min_ps
#define MAX _mm256_max_ps
#define ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x)
#define FMA _mm256_fmadd_ps
#define FNMA _mm256_fnmadd_ps
#define FMS _mm256_fmsub_ps
#define ROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALE2(p, n)                                                                               \
    _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(                                        \
                         _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)))
#define LT(a, b, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ))
#define UNORD(a, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, a, _CMP_UNORD_Q))
#define ALL_LT(a, b) (_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ)) == 0xff)
#include "gelu_kernel.h"
#undef NAME
#undef TARGET
#undef V
#undef W
#undef SET1
#undef LOAD
#undef STORE
#undef ADD
#undef MUL
#undef DIV
#undef MIN
#undef MAX
#undef ABS
#undef FMA
#undef FNMA
#undef FMS
#undef ROUND
#undef SCALE2
#undef LT
#undef UNORD
#undef ALL_LT

/* ---- AVX-512F: 16 lanes ---- */
#define NAME(f) f##_avx512
#define TARGET __attribute__((target("avx512f")))
#define V __m512
#define W 16
#define SET1 _mm512_set1_ps
#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
#define ADD _mm512_add_ps
#define MUL _mm512_mul_ps
#define DIV _mm512_div_ps
#define MIN _mm512_min_ps
#define MAX _mm512_max_ps
#define ABS _mm512_abs_ps
#define FMA _mm512_fmadd_ps
#define FNMA _mm512_fnmadd_ps
#define FMS _mm512_fmsub_ps
#define ROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALE2 _mm512_scalef_ps /* p 2^n in one instruction, the same bits */
#define LT(a, b, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x)
#define UNORD(a, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), y, x)
#define ALL_LT(a, b) (_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) == 0xffff)
#include "gelu_kernel.h"
#endif /* AG_GELU_SIMD */

#ifdef AG_REAL_DOUBLE
#define ERF erf
#else
#define ERF erff
#endif

void ag_erf_n(const ag_real *x, ag_real *y, size_t n, int simd)
{
#ifdef AG_GELU_SIMD
    if (simd == 2) {
        erf_n_avx512(x, y, n);
        return;
    }
    if (simd == 1) {
        erf_n_avx2(x, y, n);
        return;
    }
#else
    (void)simd;
#endif
    for (size_t i = 0; i < n; i++)
        y[i] = ERF(x[i]);
}

typedef struct gelu_job {
    const ag_real *x, *dy;
    ag_real *y, *dx; /* forward: y; backward: dx */
    size_t n;
    int set;  /* backward: dx is unset, store into it (ag_grad_first) */
    int simd; /* ag_cpu_row_level() */
} gelu_job;

static void forward_task(void *ctx, size_t t)
{
    const gelu_job *j = ctx;
    size_t i0 = t * CHUNK, n = j->n - i0 < CHUNK ? j->n - i0 : CHUNK;
#ifdef AG_GELU_SIMD
    if (j->simd == 2) {
        gelu_n_avx512(j->x + i0, j->y + i0, n);
        return;
    }
    if (j->simd == 1) {
        gelu_n_avx2(j->x + i0, j->y + i0, n);
        return;
    }
#endif
    ag_ref_gelu(j->x + i0, j->y + i0, n);
}

static void backward_task(void *ctx, size_t t)
{
    const gelu_job *j = ctx;
    size_t i0 = t * CHUNK, n = j->n - i0 < CHUNK ? j->n - i0 : CHUNK;
#ifdef AG_GELU_SIMD
    if (j->simd == 2) {
        grad_n_avx512(j->x + i0, j->dy + i0, j->dx + i0, n, j->set);
        return;
    }
    if (j->simd == 1) {
        grad_n_avx2(j->x + i0, j->dy + i0, j->dx + i0, n, j->set);
        return;
    }
#endif
    if (j->set) /* stored into: 0 + ..., as adding into zeros */
        memset(j->dx + i0, 0, n * sizeof(ag_real));
    ag_ref_gelu_backward(j->x + i0, j->dy + i0, j->dx + i0, n);
}

static void run_chunks(const gelu_job *j, void (*task)(void *, size_t))
{
    size_t chunks = (j->n + CHUNK - 1) / CHUNK;
    if (j->n < PARALLEL_MIN) {
        for (size_t t = 0; t < chunks; t++)
            task((void *)j, t);
        return;
    }
    ag_parallel_for(chunks, task, (void *)j);
}

void ag_fast_gelu(const ag_real *x, ag_real *y, size_t n)
{
    gelu_job job = {x, NULL, y, NULL, n, 0, ag_cpu_row_level()};
    run_chunks(&job, forward_task);
}

void ag_fast_gelu_backward(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n, int set)
{
    gelu_job job = {x, dy, NULL, dx, n, set, ag_cpu_row_level()};
    run_chunks(&job, backward_task);
}
