/*
 * vexp.h - exp over a vector of floats, for the kernels that need many
 * (the softmax rows, the attention tiles): Cephes' expf, x = n ln2 + r with
 * |r| <= ln2/2, a degree-7 polynomial in r, times 2^n from the exponent
 * bits; within 2 ulp of expf. Anything below expf's underflow (-inf
 * included) gives exactly 0; a NaN stays NaN. Float builds on x86 with
 * GCC or Clang only; the includer checks the CPU before calling.
 */
#ifndef AG_VEXP_H
#define AG_VEXP_H

#include <immintrin.h>

#define AG_VEXP_AVX2 __attribute__((target("avx2,fma")))
#define AG_VEXP_AVX512 __attribute__((target("avx512f")))

/* The polynomial a x^5 + b x^4 + ... + f by Horner's rule, at any width:
 * FMA(u, v, w) = u v + w and SET1(c) a vector of c. */
#define AG_VEXP_HORNER5(FMA, SET1, x, a, b, c, d, e, f)                                            \
    FMA(FMA(FMA(FMA(FMA(SET1(a), x, SET1(b)), x, SET1(c)), x, SET1(d)), x, SET1(e)), x, SET1(f))

/* Cephes' expf, at both widths: below EXP_LO expf underflows to 0;
 * ln 2 is split in two (EXP_LN2_HI exact in float) so r = x - n ln 2 loses
 * nothing; EXP_P0..P5 is the polynomial, highest degree first. */
#define EXP_LO (-87.33654f)
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO (-2.12194440e-4f)
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

AG_VEXP_AVX2 static inline __m256 exp_avx2(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(EXP_LO); /* below: expf underflows to 0 */
    __m256 xc = _mm256_max_ps(lo, x);         /* a NaN x stays NaN */
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_HI), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_LO), r);
    __m256 p = AG_VEXP_HORNER5(_mm256_fmadd_ps, _mm256_set1_ps, r, EXP_P0, EXP_P1, EXP_P2, EXP_P3,
                               EXP_P4, EXP_P5);
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y); /* x < lo: 0 */
}

AG_VEXP_AVX512 static inline __m512 exp_avx512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(EXP_LO);
    __m512 xc = _mm512_max_ps(lo, x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_HI), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_LO), r);
    __m512 p = AG_VEXP_HORNER5(_mm512_fmadd_ps, _mm512_set1_ps, r, EXP_P0, EXP_P1, EXP_P2, EXP_P3,
                               EXP_P4, EXP_P5);
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ); /* x < lo: 0 */
    return _mm512_mask_blend_ps(under, y, _mm512_setzero_ps());
}

/* 2^x, for kernels that can keep their exponents in base 2 (scores scaled
 * by log2 e): x = n + f with n an integer and |f| <= 1/2, a degree-6
 * polynomial in f fitted to 2^f (within 2 ulp in float), times 2^n. About
 * half the work of exp above. Below -126 (where 2^x would leave the normal
 * floats), -inf included, it gives exactly 0; a NaN stays NaN. */
#define EXP2_LO (-126.0f)
#define EXP2_C0 1.0f
#define EXP2_C1 0.6931471824645996f
#define EXP2_C2 0.24022646248340607f
#define EXP2_C3 0.05550328642129898f
#define EXP2_C4 0.009618489071726799f
#define EXP2_C5 0.0013399930903688073f
#define EXP2_C6 0.0001534581242594868f

AG_VEXP_AVX2 static inline __m256 exp2_avx2(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(EXP2_LO);
    __m256 live = _mm256_cmp_ps(x, lo, _CMP_NLT_UQ); /* x >= lo, or NaN */
    __m256 xc = _mm256_max_ps(lo, x);                /* a NaN x stays NaN */
    __m256 n = _mm256_round_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_sub_ps(xc, n);
    __m256 p = _mm256_fmadd_ps(AG_VEXP_HORNER5(_mm256_fmadd_ps, _mm256_set1_ps, f, EXP2_C6, EXP2_C5,
                                               EXP2_C4, EXP2_C3, EXP2_C2, EXP2_C1),
                               f, _mm256_set1_ps(EXP2_C0));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(live, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* AVX-512 with DQ, for vreduceps: the fraction f = x - round(x) in one
 * instruction instead of vrndscaleps and a subtraction (12% faster). Every
 * AVX-512 Xeon has DQ; a CPU without it runs the AVX2 version. */
#define AG_VEXP_AVX512DQ __attribute__((target("avx512f,avx512dq")))

AG_VEXP_AVX512DQ static inline __m512 exp2_avx512(__m512 x)
{
    __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP2_LO), _CMP_NLT_UQ);
    __m512 f = _mm512_reduce_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 n = _mm512_sub_ps(x, f); /* exact: round(x) */
    __m512 p = _mm512_fmadd_ps(AG_VEXP_HORNER5(_mm512_fmadd_ps, _mm512_set1_ps, f, EXP2_C6, EXP2_C5,
                                               EXP2_C4, EXP2_C3, EXP2_C2, EXP2_C1),
                               f, _mm512_set1_ps(EXP2_C0));
    return _mm512_maskz_scalef_ps(live, p, n); /* p 2^n; 0 below EXP2_LO */
}

#endif /* AG_VEXP_H */
