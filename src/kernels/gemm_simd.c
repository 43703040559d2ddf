/*
 * gemm_simd.c - the x86 micro-kernels for ag_gemm: AVX2+FMA (16 registers of
 * 8 floats / 4 doubles) and AVX-512F (32 registers of 16 floats / 8
 * doubles). Each function is compiled for its instruction set with a target
 * attribute, so the rest of the library stays portable; gemm.c checks the CPU
 * before it calls any of them. Building with -DAG_NO_SIMD leaves them out
 * (as on other architectures): only the portable kernel remains.
 */
#include "cpu.h"
#include "gemm.h"

#ifdef AG_X86_KERNELS
#include <immintrin.h>
#endif

/* The micro-kernels' cursor over what to ask for next (gemm.h): here, with
 * the kernels that read it, for gemm.c to set (calls go that way only). */
_Thread_local ag_gemm_ahead ag_ahead;

#ifdef AG_X86_KERNELS

/* The direct kernel's rows per tile when C is one vector wide: enough
 * accumulators to cover the FMA's latency (4 cycles, 2 per cycle). 16 rows
 * run 256x16x16 and 16x16x256 about 25% faster than 4 under GCC 12; Clang
 * 14 compiles such tiles badly (see DIRECT_UNROLL in gemm_micro.h) and its
 * 4-row tiles were as fast, so it keeps those. */
#ifdef __clang__
#define DIRECT_ROWS1_OF(n) 4
#else
#define DIRECT_ROWS1_OF(n) (n)
#endif

/* ---- AVX2 + FMA: 6 rows x 2 vectors, 12 accumulators of 16 registers ---- */
#define MICRO_NAME micro_avx2
#define MICRO_ROWS_NAME micro_rows_avx2
#define MICRO_BODY_NAME micro_body_avx2
#define MICRO_STORE_NAME micro_store_avx2
#define MICRO_COMBINE_NAME combine_avx2
#define DIRECT_NAME direct_avx2
#define DIRECT_TILE direct_tile_avx2
#define MICRO_TARGET __attribute__((target("avx2,fma")))
#define MR 6
#define NV 2
#define DIRECT_ROWS 4
#define DIRECT_ROWS1 DIRECT_ROWS1_OF(8)
#define DIRECT_NV 2
#ifdef AG_REAL_DOUBLE
#define VEC __m256d
#define W 4
#define MASK __m256i
#define VMASK(n) _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
#define VLOAD_M _mm256_maskload_pd
#define VSTORE_M _mm256_maskstore_pd
#define VLOAD _mm256_loadu_pd
#define VSTORE _mm256_storeu_pd
#define VSET1 _mm256_set1_pd
#define VFMA _mm256_fmadd_pd
#define VMUL _mm256_mul_pd
#define VZERO _mm256_setzero_pd
#else
#define VEC __m256
#define W 8
#define MASK __m256i
#define VMASK(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VLOAD_M _mm256_maskload_ps
#define VSTORE_M _mm256_maskstore_ps
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VFMA _mm256_fmadd_ps
#define VMUL _mm256_mul_ps
#define VZERO _mm256_setzero_ps
#endif
#include "gemm_micro.h"
/* the tile sizes the kernel struct below tells gemm.c's packing */
enum { AVX2_MR = MR, AVX2_NR = NV * W, AVX2_DIRECT_N = DIRECT_NV * W };
#undef MICRO_NAME
#undef MICRO_ROWS_NAME
#undef MICRO_COLS_NAME
#undef MICRO_BODY_NAME
#undef MICRO_STORE_NAME
#undef MICRO_COMBINE_NAME
#undef DIRECT_NAME
#undef DIRECT_TILE
#undef MICRO_TARGET
#undef MR
#undef NV
#undef DIRECT_ROWS
#undef DIRECT_ROWS1
#undef DIRECT_NV
#undef VEC
#undef W
#undef MASK
#undef VMASK
#undef VLOAD_M
#undef VSTORE_M
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VFMA
#undef VMUL
#undef VZERO

/* ---- AVX-512F: 12 rows x 2 vectors, 24 accumulators of 32 registers (or 8 rows, below) ---- */
#define MICRO_NAME micro_avx512
#define MICRO_ROWS_NAME micro_rows_avx512
#define MICRO_COLS_NAME micro_cols_avx512
#define MICRO_BODY_NAME micro_body_avx512
#define MICRO_STORE_NAME micro_store_avx512
#define MICRO_COMBINE_NAME combine_avx512
#define DIRECT_NAME direct_avx512
#define DIRECT_TILE direct_tile_avx512
#define MICRO_TARGET __attribute__((target("avx512f")))
#define MR 12
#define NV 2
#define DIRECT_ROWS 4
#define DIRECT_ROWS1 DIRECT_ROWS1_OF(16)
#define DIRECT_NV 4
#ifdef AG_REAL_DOUBLE
#define VEC __m512d
#define W 8
#define MASK __mmask8
#define VMASK(n) ((__mmask8)((1u << (n)) - 1))
#define VLOAD_M(p, m) _mm512_maskz_loadu_pd(m, p)
#define VSTORE_M _mm512_mask_storeu_pd
#define VLOAD _mm512_loadu_pd
#define VSTORE _mm512_storeu_pd
#define VSET1 _mm512_set1_pd
#define VFMA _mm512_fmadd_pd
#define VMUL _mm512_mul_pd
#define VZERO _mm512_setzero_pd
#else
#define VEC __m512
#define W 16
#define MASK __mmask16
#define VMASK(n) ((__mmask16)((1u << (n)) - 1))
#define VLOAD_M(p, m) _mm512_maskz_loadu_ps(m, p)
#define VSTORE_M _mm512_mask_storeu_ps
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VFMA _mm512_fmadd_ps
#define VMUL _mm512_mul_ps
#define VZERO _mm512_setzero_ps
#endif
#include "gemm_micro.h"
enum { AVX512_MR = MR, AVX512_NR = NV * W, AVX512_DIRECT_N = DIRECT_NV * W };

/* The same micro-kernels 8 rows high, for cores that run a 512-bit vector
 * as two 256-bit halves (AMD's Zen 4): one vector FMA a cycle there, which
 * 16 accumulators keep busy; micro_rows holds 8 row pointers, not 12; and
 * the GPT's 128-, 512- and 768-row products split into whole tiles. On a
 * Zen 4 the GPT step ran 2.7% faster on one thread and 2.5% on two, 1024^3
 * 8%. The direct kernel and combine are the 12-row build's. */
#undef MR
#undef MICRO_NAME
#undef MICRO_ROWS_NAME
#undef MICRO_COLS_NAME
#undef MICRO_BODY_NAME
#undef MICRO_STORE_NAME
#undef MICRO_COMBINE_NAME
#undef DIRECT_NAME
#define MR 8
#define MICRO_NAME micro_avx512_8
#define MICRO_ROWS_NAME micro_rows_avx512_8
#define MICRO_COLS_NAME micro_cols_avx512_8
#define MICRO_BODY_NAME micro_body_avx512_8
#define MICRO_STORE_NAME micro_store_avx512_8
#include "gemm_micro.h"
enum { AVX512_8_MR = MR };

/*
 * dst[c*ldd + r] = src[r*lds + c] for r < rows, c < cols: the transposes
 * inside packing (op(A) row-major, op(B) given as B^T), done in registers a
 * block at a time (8x8 and 4x8 floats, 4x4 doubles), the rest one by one.
 * Both kernels use it: every AVX-512 CPU has AVX2.
 */
__attribute__((target("avx2"))) static void transpose_avx2(size_t rows, size_t cols,
                                                           const ag_real *restrict src, size_t lds,
                                                           ag_real *restrict dst, size_t ldd)
{
    size_t r = 0;
#ifdef AG_REAL_DOUBLE
    for (; r + 4 <= rows; r += 4) {
        size_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            const double *s0 = src + r * lds + c;
            __m256d r0 = _mm256_loadu_pd(s0), r1 = _mm256_loadu_pd(s0 + lds);
            __m256d r2 = _mm256_loadu_pd(s0 + 2 * lds), r3 = _mm256_loadu_pd(s0 + 3 * lds);
            __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
            __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
            double *d = dst + c * ldd + r;
            _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_storeu_pd(d + ldd, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_storeu_pd(d + 2 * ldd, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_storeu_pd(d + 3 * ldd, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
        for (; c < cols; c++)
            for (size_t i = r; i < r + 4; i++)
                dst[c * ldd + i] = src[i * lds + c];
    }
#else
    for (; r + 4 <= rows; r += rows - r >= 8 ? 8 : 4) {
        int eight = rows - r >= 8;
        size_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            const float *s0 = src + r * lds + c;
            __m256 r0 = _mm256_loadu_ps(s0), r1 = _mm256_loadu_ps(s0 + lds);
            __m256 r2 = _mm256_loadu_ps(s0 + 2 * lds), r3 = _mm256_loadu_ps(s0 + 3 * lds);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
            __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
            /* column k of rows r..r+3 is the low half of q[k] (k < 4), the high half of q[k-4] */
            __m256 q[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                           _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
            float *d = dst + c * ldd + r;
            if (!eight) {
                for (int k = 0; k < 4; k++) {
                    _mm_storeu_ps(d + k * ldd, _mm256_castps256_ps128(q[k]));
                    _mm_storeu_ps(d + (k + 4) * ldd, _mm256_extractf128_ps(q[k], 1));
                }
                continue;
            }
            __m256 r4 = _mm256_loadu_ps(s0 + 4 * lds), r5 = _mm256_loadu_ps(s0 + 5 * lds);
            __m256 r6 = _mm256_loadu_ps(s0 + 6 * lds), r7 = _mm256_loadu_ps(s0 + 7 * lds);
            __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
            __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            __m256 u[4] = {_mm256_shuffle_ps(t4, t6, 0x44), _mm256_shuffle_ps(t4, t6, 0xEE),
                           _mm256_shuffle_ps(t5, t7, 0x44), _mm256_shuffle_ps(t5, t7, 0xEE)};
            for (int k = 0; k < 4; k++) {
                _mm256_storeu_ps(d + k * ldd, _mm256_permute2f128_ps(q[k], u[k], 0x20));
                _mm256_storeu_ps(d + (k + 4) * ldd, _mm256_permute2f128_ps(q[k], u[k], 0x31));
            }
        }
        size_t n = eight ? 8 : 4;
        for (; c < cols; c++)
            for (size_t i = r; i < r + n; i++)
                dst[c * ldd + i] = src[i * lds + c];
    }
#endif
    for (; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * ldd + r] = src[r * lds + c];
}

/* Cache blocks: a (kc x nr) panel of B is reused from L1 while the (mc x kc)
 * block of A streams from L2; the (kc x nc) block of B sits in L2/L3.
 * AVX2 keeps blocks that suit the smaller caches of AVX2-only CPUs (32 KB
 * L1, 256 KB+ L2). For AVX-512, kc = 512 and mc = 96 measured 3-5% faster
 * than 256 and 144 at n = 512 and 1024, float and double, on Zen 5 (48 KB
 * L1, 1 MB L2): fewer passes over C outweigh a B panel larger than L1. */
static const ag_gemm_kernel kernel_avx2 = {
    .name = "avx2",
    .mr = AVX2_MR,
    .nr = AVX2_NR,
    .kc = 256,
    .mc = 144,
    .nc = 2048,
    .micro = micro_avx2,
    .direct_n = AVX2_DIRECT_N,
    .direct = direct_avx2,
    .transpose = transpose_avx2,
    .micro_rows = micro_rows_avx2,
    .micro_cols = NULL, /* reading A^T and B in place was 1% slower (gemm.c) */
    .combine = combine_avx2,
};
/* What AVX-512's two tile heights share: the panels' width, the blocks, the
 * direct kernel, the transposes and combine. Only the tile's height and the
 * micro-kernels built for it differ. */
#define AVX512_SHARED                                                                              \
    .nr = AVX512_NR, .kc = 512, .mc = 96, .nc = 2048, .direct_n = AVX512_DIRECT_N,                 \
    .direct = direct_avx512, .transpose = transpose_avx2, .combine = combine_avx512
static const ag_gemm_kernel kernel_avx512 = {
    .name = "avx512",
    .mr = AVX512_MR,
    .micro = micro_avx512,
    .micro_rows = micro_rows_avx512,
    .micro_cols = micro_cols_avx512,
    AVX512_SHARED,
};
static const ag_gemm_kernel kernel_avx512_8 = {
    .name = "avx512",
    .mr = AVX512_8_MR,
    .micro = micro_avx512_8,
    .micro_rows = micro_rows_avx512_8,
    .micro_cols = micro_cols_avx512_8,
    AVX512_SHARED,
};
#undef AVX512_SHARED

const ag_gemm_kernel *ag_gemm_kernel_avx2(void)
{
    return &kernel_avx2;
}

const ag_gemm_kernel *ag_gemm_kernel_avx512(int rows)
{
    return rows == 8 ? &kernel_avx512_8 : rows == 12 ? &kernel_avx512 : NULL;
}

#else /* no x86 kernels with this compiler or architecture */

const ag_gemm_kernel *ag_gemm_kernel_avx2(void)
{
    return NULL;
}

const ag_gemm_kernel *ag_gemm_kernel_avx512(int rows)
{
    (void)rows;
    return NULL;
}

#endif
