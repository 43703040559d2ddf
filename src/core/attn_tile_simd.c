/*
 * attn_tile_simd.c - the attention tiles with AVX-512F and with AVX2+FMA,
 * float builds only (see attn_tile.h): attn_tile_micro.h compiled once per
 * instruction set. A tile's products run in registers as micro-tiles (a
 * vector of queries or of a head's features wide, a few rows tall), the
 * softmax's exps and the masking happen as each micro-tile is stored, and
 * nothing of a tile leaves L1/L2. ag_attn_kernel_for checks the CPU, through
 * the gemm kernel in use, before it hands these out.
 */
#include "attn_tile.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(AG_NO_SIMD) && !defined(AG_REAL_DOUBLE)
#define AG_HAVE_ATTN_SIMD 1
#include "vexp.h"

#include <math.h>
#include <string.h>
#endif

#ifdef AG_HAVE_ATTN_SIMD

static size_t min_of(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* What a keys x queries tile stores: the scores S, the weights P, or dS. */
enum { MODE_S, MODE_P, MODE_DS };
/* What a product does with C: overwrites it, adds to it, or scales each row first. */
enum { BETA_ZERO, BETA_ONE, BETA_ROWS };

/* ---- AVX-512F: 32 registers of 16 floats ---- */

AG_VEXP_AVX512 static inline __m512 fill_below_avx512(__m512 x, long k, __m512 fill)
{
    __mmask16 below = k <= 0 ? 0 : k >= 16 ? 0xFFFF : (__mmask16)((1u << k) - 1);
    return _mm512_mask_blend_ps(below, x, fill);
}

AG_VEXP_AVX512 static inline __m512 pos_or_zero_avx512(__m512 x)
{
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_GT_OQ), x);
}

#define NAME(x) x##_avx512
#define TARGET AG_VEXP_AVX512
#define KERNEL_NAME "avx512"
#define VEC __m512
#define W 16
#define MASK __mmask16
#define VMASK(n) ((__mmask16)((1u << (n)) - 1))
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VLOAD_M(p, m) _mm512_maskz_loadu_ps(m, p)
#define VSTORE_M _mm512_mask_storeu_ps
#define VSET1 _mm512_set1_ps
#define VFMA _mm512_fmadd_ps
#define VMUL _mm512_mul_ps
#define VSUB _mm512_sub_ps
#define VADD _mm512_add_ps
#define VMAX _mm512_max_ps
#define VZERO _mm512_setzero_ps
#define VEXP exp_avx512
#define VFILL_BELOW fill_below_avx512
#define VPOS_OR_ZERO pos_or_zero_avx512
#define QK_ACC 16
#define PV_ACC 16
#define PV_NV 4
#include "attn_tile_micro.h"
#undef NAME
#undef TARGET
#undef KERNEL_NAME
#undef VEC
#undef W
#undef MASK
#undef VMASK
#undef VLOAD
#undef VSTORE
#undef VLOAD_M
#undef VSTORE_M
#undef VSET1
#undef VFMA
#undef VMUL
#undef VSUB
#undef VADD
#undef VMAX
#undef VZERO
#undef VEXP
#undef VFILL_BELOW
#undef VPOS_OR_ZERO
#undef QK_ACC
#undef PV_ACC
#undef PV_NV

/* ---- AVX2 + FMA: 16 registers of 8 floats ---- */

AG_VEXP_AVX2 static inline __m256 fill_below_avx2(__m256 x, long k, __m256 fill)
{
    int n = k <= 0 ? 0 : k >= 8 ? 8 : (int)k;
    __m256i below = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_blendv_ps(x, fill, _mm256_castsi256_ps(below));
}

AG_VEXP_AVX2 static inline __m256 pos_or_zero_avx2(__m256 x)
{
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_GT_OQ), x);
}

#define NAME(x) x##_avx2
#define TARGET AG_VEXP_AVX2
#define KERNEL_NAME "avx2"
#define VEC __m256
#define W 8
#define MASK __m256i
#define VMASK(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VLOAD_M _mm256_maskload_ps
#define VSTORE_M _mm256_maskstore_ps
#define VSET1 _mm256_set1_ps
#define VFMA _mm256_fmadd_ps
#define VMUL _mm256_mul_ps
#define VSUB _mm256_sub_ps
#define VADD _mm256_add_ps
#define VMAX _mm256_max_ps
#define VZERO _mm256_setzero_ps
#define VEXP exp_avx2
#define VFILL_BELOW fill_below_avx2
#define VPOS_OR_ZERO pos_or_zero_avx2
#define QK_ACC 8
#define PV_ACC 8
#define PV_NV 2
#include "attn_tile_micro.h"

const ag_attn_kernel *ag_attn_kernel_avx512(size_t T)
{
    return kernel_for_avx512(T);
}

const ag_attn_kernel *ag_attn_kernel_avx2(size_t T)
{
    return kernel_for_avx2(T);
}

#else /* no SIMD tiles with this compiler, architecture or precision */

const ag_attn_kernel *ag_attn_kernel_avx512(size_t T)
{
    (void)T;
    return NULL;
}

const ag_attn_kernel *ag_attn_kernel_avx2(size_t T)
{
    (void)T;
    return NULL;
}

#endif
