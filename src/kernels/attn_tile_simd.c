/*
 * attn_tile_simd.c - the attention tiles with AVX-512F and with AVX2+FMA,
 * float builds only (see attn_tile.h): attn_tile_micro.h compiled once per
 * instruction set. A tile's products run in registers as micro-tiles (a
 * vector of queries or of a head's features wide, a few rows tall), the
 * softmax's exps and the masking happen as each micro-tile is stored, and
 * nothing of a tile leaves L1/L2: with AVX-512 a block is 64 queries by 64
 * keys, whose two tiles (S or P, and dS) take 16 KB each and whose rows of
 * Q, K, V and dO 8 KB each at dh = 32. Shorter sequences get blocks of 16
 * or 32 queries, so few lanes are padding. AVX2 takes blocks of 32 queries
 * (four vectors), and for causal heads 32 wide (the GPT's) on 46 to 64
 * positions one block of 64, one tile a head, whose weights forward keeps
 * for backward, as AVX-512's blocks of 64 do (at T = 64 a quarter less time
 * in the attention tiles than two blocks of 32, and the GPT's training step
 * 1.5-2% faster, for 2.9% more memory). Other heads take two blocks: in
 * one they took more memory (the block's scratch, or kept weights), and
 * causal ones more time. ag_attn_kernel_for checks the CPU, through the
 * gemm kernel in use, before it hands these out (and the AVX-512 tiles,
 * which use AVX-512DQ too, check that themselves).
 */
#include "attn_tile.h"
#include "cpu.h"

#if defined(AG_X86_KERNELS) && !defined(AG_REAL_DOUBLE)
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

/* Scores are kept in base 2 (times log2 e), so that weights are 2^(S - L):
 * exp2 costs half of exp. */
#define LOG2E 1.44269504088896341f

/* What a keys x queries tile stores: the scores S, the weights P, or dS. */
enum { MODE_S, MODE_P, MODE_DS };
/* What a product does with C: overwrites it, adds to it, or scales each row first. */
enum { BETA_ZERO, BETA_ONE, BETA_ROWS };
/* Whether a backward block's weights come from forward (ag_attn_bwd's p):
 * never, always, or as p says. A constant of each kernel, so that the
 * tiles of long sequences (never) compile as they did before there was a
 * choice: asking at run time there made T = 4096's backward 3% slower. */
enum { KEPT_NO, KEPT_YES, KEPT_ASK };
/* Which of a product's A it reads: all, or on a causal diagonal half (attn_tile_micro.h's pv_any). */
enum { TRI_NONE, TRI_UPPER, TRI_LOWER };

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

/* col[j] = column j of the (rows x cols) block at src, rows lds apart,
 * zeros past rows and cols: sixteen rows, unpacked pairwise, then 4 x 4
 * blocks within 128-bit lanes, then the lanes gathered across rows. */
AG_VEXP_AVX512 static inline void transpose_avx512(const float *src, size_t lds, int rows, int cols,
                                                   __m512 col[16])
{
    __mmask16 m = (__mmask16)((1u << cols) - 1);
    __m512 r[16], t[16], c[16];
    for (int i = 0; i < 16; i++)
        r[i] = i < rows ? _mm512_maskz_loadu_ps(m, src + i * lds) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* c[4g + k]: in 128-bit lane l, column 4l + k of rows 4g .. 4g+3 */
    for (int g = 0; g < 4; g++) {
        c[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        c[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        c[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        c[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int k = 0; k < 4; k++) {
        __m512 lo01 = _mm512_shuffle_f32x4(c[k], c[4 + k], 0x44); /* lanes 0, 1 */
        __m512 lo23 = _mm512_shuffle_f32x4(c[8 + k], c[12 + k], 0x44);
        __m512 hi01 = _mm512_shuffle_f32x4(c[k], c[4 + k], 0xEE); /* lanes 2, 3 */
        __m512 hi23 = _mm512_shuffle_f32x4(c[8 + k], c[12 + k], 0xEE);
        col[k] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
        col[4 + k] = _mm512_shuffle_f32x4(lo01, lo23, 0xDD);
        col[8 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
        col[12 + k] = _mm512_shuffle_f32x4(hi01, hi23, 0xDD);
    }
}

#define NAME(x) x##_avx512
#define TARGET AG_VEXP_AVX512DQ /* DQ for exp2_avx512 */
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
#define VEXP2 exp2_avx512
#define VFILL_BELOW fill_below_avx512
#define VPOS_OR_ZERO pos_or_zero_avx512
#define VTRANSPOSE transpose_avx512
/* Accumulators of 32 registers (the rest hold a row of B and a broadcast).
 * 24 for the score tiles ran T = 4096 5-8% faster than 16; 24 for the
 * dh-wide products too gained little more there and made the smallest
 * shapes (T = 8) slower by a few percent. */
#define QK_ACC 24
#define PV_ACC 16
#define PV_NV 4
/* heads 32 wide (d = 256 over 8 heads, as the long-sequence benchmark has
 * them) get blocks of their own: 5% faster in forward and in backward */
#define DH_SPECIAL 32
#define NV_MAX 4 /* blocks of at most 64 queries */
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
#undef VEXP2
#undef VFILL_BELOW
#undef VPOS_OR_ZERO
#undef VTRANSPOSE
#undef QK_ACC
#undef PV_ACC
#undef PV_NV
#undef DH_SPECIAL
#undef NV_MAX

/* ---- AVX2 + FMA: 16 registers of 8 floats ---- */

AG_VEXP_AVX2 static inline __m256 fill_below_avx2(__m256 x, long k, __m256 fill)
{
    int n = k <= 0 ? 0 : k >= 8 ? 8 : (int)k;
    __m256i below =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_blendv_ps(x, fill, _mm256_castsi256_ps(below));
}

AG_VEXP_AVX2 static inline __m256 pos_or_zero_avx2(__m256 x)
{
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_GT_OQ), x);
}

/* col[j] = column j of the (rows x cols) block at src, as transpose_avx512
 * does it with eight rows. */
AG_VEXP_AVX2 static inline void transpose_avx2(const float *src, size_t lds, int rows, int cols,
                                               __m256 col[8])
{
    __m256i m =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 r[8], t[8], c[8];
    for (int i = 0; i < 8; i++)
        r[i] = i < rows ? _mm256_maskload_ps(src + i * lds, m) : _mm256_setzero_ps();
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 2; g++) {
        c[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        c[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        c[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        c[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int k = 0; k < 4; k++) {
        col[k] = _mm256_permute2f128_ps(c[k], c[4 + k], 0x20);
        col[4 + k] = _mm256_permute2f128_ps(c[k], c[4 + k], 0x31);
    }
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
#define VEXP2 exp2_avx2
#define VFILL_BELOW fill_below_avx2
#define VPOS_OR_ZERO pos_or_zero_avx2
#define VTRANSPOSE transpose_avx2
#define QK_ACC 8
#define PV_ACC 8
#define PV_NV 2
/* blocks of 64 queries (one a sequence) and heads of 32 (the GPT's) get
 * code of their own */
#define DH_SPECIAL 32
#define NV_MAX 8
#include "attn_tile_micro.h"

const ag_attn_kernel *ag_attn_kernel_avx512(size_t T, size_t dh, int causal)
{
    /* the gemm kernel checked AVX-512F; DQ is every AVX-512 Xeon's but not all CPUs' */
    return ag_cpu_get()->avx512dq ? kernel_for_avx512(T, dh, causal) : NULL;
}

const ag_attn_kernel *ag_attn_kernel_avx2(size_t T, size_t dh, int causal)
{
    return kernel_for_avx2(T, dh, causal);
}

#else /* no SIMD tiles with this compiler, architecture or precision */

const ag_attn_kernel *ag_attn_kernel_avx512(size_t T, size_t dh, int causal)
{
    (void)T, (void)dh, (void)causal;
    return NULL;
}

const ag_attn_kernel *ag_attn_kernel_avx2(size_t T, size_t dh, int causal)
{
    (void)T, (void)dh, (void)causal;
    return NULL;
}

#endif
