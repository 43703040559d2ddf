/*
 * cross_entropy.c - the fast rows of softmax cross-entropy, each row's loss
 * logsumexp(z) - z[target] and its probabilities, rows shared out over the
 * threads. The plain row is ag_cross_entropy_row (src/core/ref_softmax.c):
 * in double, one libm exp per class. The float build on x86 does the same
 * in double vectors instead (a GPT's head is 768 rows of 65 classes a step,
 * and libm's exps were 1% of it): exp is fdlibm's (the reduction by ln 2
 * in two parts, its rational for exp(r), within 1 ulp), the sum in 8
 * interleaved lanes folded pairwise. AVX2 and AVX-512 go through the same
 * operations, so they give the same bits; against the plain row the sum's
 * order differs, within a few ulp of a double.
 */
#include "cpu.h"
#include "kernels.h"
#include "threads.h"

#include <math.h>

/* Rows per chunk shared out over the threads. */
#define CE_GRAIN 64

#if defined(AG_X86_KERNELS) && !defined(AG_REAL_DOUBLE)
#define AG_CE_SIMD 1
#include <immintrin.h>

/* fdlibm's exp (e_exp.c): x = k ln2 + r, ln 2 in two parts (k ln2_hi is
 * exact), exp(r) = 1 + r + r c / (2 - c) with c = r - r^2 P(r^2). */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00
#define EXP_P1 1.66666666666666019037e-01
#define EXP_P2 -2.77777777770155933842e-03
#define EXP_P3 6.61375632143793436117e-05
#define EXP_P4 -1.65339022054652515390e-06
#define EXP_P5 4.13813679705723846039e-08
/* Below this exp(x) leaves the normal doubles: it counts as 0 (against a
 * sum of at least 1 it is nothing, and its probability rounds to 0 in
 * float anyway). */
#define EXP_MIN -708.39

/* 8 lanes of double folded pairwise to lane 0: k += k+4, k += k+2, k += k+1 */
__attribute__((target("avx2"))) static inline double fold_lanes(__m256d lo, __m256d hi)
{
    __m256d a = _mm256_add_pd(lo, hi);
    __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
}

/* ---- AVX2: 8 lanes in two vectors of 4 ---- */
#define NAME(f) f##_avx2
#define TARGET __attribute__((target("avx2,fma")))
#define VD __m256d
#define WD 4
#define MASK __m128i
#define ADD _mm256_add_pd
#define SUB _mm256_sub_pd
#define MUL _mm256_mul_pd
#define DIV _mm256_div_pd
#define MAX _mm256_max_pd
#define STORE_D _mm256_storeu_pd
#define SET1 _mm256_set1_pd
#define ZERO _mm256_setzero_pd
#define ROUND(x) _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* 2^k for integral k in [-1022, 0], from its exponent bits */
#define POW2(k)                                                                                    \
    _mm256_castsi256_pd(_mm256_slli_epi64(                                                         \
        _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)),  \
        52))
#define BELOW(x, y, v) _mm256_blendv_pd(v, ZERO(), _mm256_cmp_pd(x, SET1(y), _CMP_LT_OQ))
#define TAIL_MASK(n) _mm_cmpgt_epi32(_mm_set1_epi32(n), _mm_setr_epi32(0, 1, 2, 3))
#define LOAD_F(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define LOAD_F_M(p, m, fill)                                                                       \
    _mm256_cvtps_pd(_mm_blendv_ps(_mm_set1_ps(fill), _mm_maskload_ps(p, m), _mm_castsi128_ps(m)))
#define STORE_F(p, v) _mm_storeu_ps(p, _mm256_cvtpd_ps(v))
#define STORE_F_M(p, m, v) _mm_maskstore_ps(p, m, _mm256_cvtpd_ps(v))
#define FOLD(acc) fold_lanes((acc)[0], (acc)[1])
#include "ce_kernel.h"
#undef NAME
#undef TARGET
#undef VD
#undef WD
#undef MASK
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef MAX
#undef STORE_D
#undef SET1
#undef ZERO
#undef ROUND
#undef POW2
#undef BELOW
#undef TAIL_MASK
#undef LOAD_F
#undef LOAD_F_M
#undef STORE_F
#undef STORE_F_M
#undef FOLD

/* ---- AVX-512F: 8 lanes in one vector ---- */
#define NAME(f) f##_avx512
#define TARGET __attribute__((target("avx512f")))
#define VD __m512d
#define WD 8
#define MASK __mmask8
#define ADD _mm512_add_pd
#define SUB _mm512_sub_pd
#define MUL _mm512_mul_pd
#define DIV _mm512_div_pd
#define MAX _mm512_max_pd
#define STORE_D _mm512_storeu_pd
#define SET1 _mm512_set1_pd
#define ZERO _mm512_setzero_pd
#define ROUND(x) _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define POW2(k)                                                                                    \
    _mm512_castsi512_pd(_mm512_slli_epi64(                                                         \
        _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(k)), _mm512_set1_epi64(1023)),   \
        52))
#define BELOW(x, y, v) _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, SET1(y), _CMP_LT_OQ), v, ZERO())
#define TAIL_MASK(n) ((__mmask8)((1u << (n)) - 1))
#define LOAD_F(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
/* (masked: the 16-lane forms, on the low 8 lanes, for AVX-512F without VL) */
#define LOAD_F_M(p, m, fill)                                                                       \
    _mm512_cvtps_pd(                                                                               \
        _mm512_castps512_ps256(_mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)(m), p)))
#define STORE_F(p, v) _mm256_storeu_ps(p, _mm512_cvtpd_ps(v))
#define STORE_F_M(p, m, v)                                                                         \
    _mm512_mask_storeu_ps(p, (__mmask16)(m), _mm512_castps256_ps512(_mm512_cvtpd_ps(v)))
#define FOLD(acc) fold_lanes(_mm512_castpd512_pd256((acc)[0]), _mm512_extractf64x4_pd((acc)[0], 1))
#include "ce_kernel.h"
#endif /* AG_CE_SIMD */

double ag_fast_cross_entropy_row(const ag_real *z, size_t C, int target, ag_real *probs, int level)
{
#ifdef AG_CE_SIMD
    if (level == 2)
        return ce_row_avx512(z, C, target, probs);
    if (level == 1)
        return ce_row_avx2(z, C, target, probs);
#else
    (void)level;
#endif
    return ag_cross_entropy_row(z, C, target, probs);
}

typedef struct ce_job {
    const ag_real *z;
    const int *tg;
    ag_real *probs; /* or NULL */
    double *loss;   /* (rows) */
    size_t C;
    int level; /* ag_cpu_row_level() */
} ce_job;

static void ce_rows(void *ctx, size_t lo, size_t hi)
{
    const ce_job *j = ctx;
    for (size_t r = lo; r < hi; r++)
        if (j->tg[r] != AG_IGNORE_INDEX)
            j->loss[r] = ag_fast_cross_entropy_row(j->z + r * j->C, j->C, j->tg[r],
                                                   j->probs ? j->probs + r * j->C : NULL, j->level);
}

void ag_fast_cross_entropy(const ag_real *z, const int *targets, ag_real *probs, double *loss,
                           size_t rows, size_t C)
{
    ce_job j = {z, targets, probs, loss, C, ag_cpu_row_level()};
    ag_parallel_range(rows, CE_GRAIN, ce_rows, &j);
}
