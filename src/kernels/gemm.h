/*
 * gemm.h - the one matrix-multiply kernel every matmul forward and backward
 * goes through, so that making it fast makes everything fast.
 */
#ifndef AG_GEMM_H
#define AG_GEMM_H

#include "attograd.h"

/* ag_gemm itself (C = alpha op(A) op(B) + beta C) is public: attograd.h. */

/*
 * batch independent products: for b in [0, batch),
 *   C + b*stride_c = alpha * op(A + b*stride_a) op(B + b*stride_b) + beta * C + b*stride_c
 * with the shapes and strides of ag_gemm. A stride of 0 shares that operand
 * across the batch. When stride_c is 0 every product adds into the same C
 * (beta applies once, before the first) in batch order. Otherwise the
 * threads share out whole products, a run of them per task, when the batch
 * holds enough work and its products are small or many; else each product
 * is one ag_gemm call, split over the threads as ag_gemm splits. Either way
 * each product is computed exactly as ag_gemm would: results are
 * bit-identical for every thread count.
 */
void ag_gemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                     ag_real alpha, const ag_real *A, size_t lda, size_t stride_a, const ag_real *B,
                     size_t ldb, size_t stride_b, ag_real beta, ag_real *C, size_t ldc,
                     size_t stride_c);

/*
 * Which micro-kernel runs: "generic" (portable C), "avx2" (AVX2+FMA) or
 * "avx512" (AVX-512F, with tiles of the height that suits this core: 8
 * rows where 512-bit vectors run as two halves, else 12; "avx512-8" and
 * "avx512-12" force one, for tests), or "auto" for the best one this CPU
 * supports. Every tile height computes the same bits. The
 * first call to ag_gemm reads the environment variable AG_GEMM the same way.
 * ag_gemm_use returns 1 when the kernel is now in use, 0 (nothing changed)
 * when the name is unknown or the CPU or the compiler cannot run it. Not
 * thread-safe against concurrent ag_gemm calls: for tests and benchmarks.
 */
int ag_gemm_use(const char *name);

/* The bytes of the packing buffer each thread that runs products allocates
 * once, at the size of the largest kernel this library has (whichever runs,
 * so that a memory estimate does not depend on the CPU). */
size_t ag_gemm_thread_bytes(void);

/* ---- between gemm.c and the SIMD kernels in gemm_simd.c ---- */

/*
 * A micro-kernel: the (mr x nr) tile c = alpha * a b + beta * c, where a is a
 * packed (mr x kc) panel stored column by column (a[p*mr + i]) and b a packed
 * (kc x nr) panel stored row by row (b[p*nr + j]). Only the first rows x
 * cols of the tile are read and written (an edge tile of C; a and b are
 * zero-padded past it). With beta == 0, c is not read. c has row stride ldc.
 */
typedef void (*ag_micro_fn)(size_t kc, const ag_real *a, const ag_real *b, ag_real *c, size_t ldc,
                            ag_real alpha, ag_real beta, int rows, int cols);

/*
 * A direct kernel for narrow products, no packing: C = alpha op(A) B + beta C
 * with op(A)(i, p) = A[i*rsa + p*csa] (so A and A^T alike) and B a (K x N)
 * row-major matrix with row stride ldb, N <= the kernel's direct_n.
 */
typedef void (*ag_direct_fn)(size_t M, size_t N, size_t K, ag_real alpha, const ag_real *A,
                             size_t rsa, size_t csa, const ag_real *B, size_t ldb, ag_real beta,
                             ag_real *C, size_t ldc);

/* The micro-kernel with A unpacked: row i of the tile's a is a + i*lda,
 * a[i*lda + p] for p < kc (A row-major, not transposed); rows past the
 * edge are not read. The same arithmetic as the packed micro-kernel. */
typedef void (*ag_micro_rows_fn)(size_t kc, const ag_real *a, size_t lda, const ag_real *b,
                                 ag_real *c, size_t ldc, ag_real alpha, ag_real beta, int rows,
                                 int cols);

/* The micro-kernel with its panels' steps as arguments: step p of a at
 * a + p*as, of b at b + p*bs. Packed panels have as = mr, bs = nr; A^T
 * (stored K x M) and B (stored K x N) read in place have their row strides
 * there, so neither needs packing. A panel read in place is whole: all mr
 * (nr) of each step are read. */
typedef void (*ag_micro_cols_fn)(size_t kc, const ag_real *a, size_t as, const ag_real *b,
                                 size_t bs, ag_real *c, size_t ldc, ag_real alpha, ag_real beta,
                                 int rows, int cols);

/* dst[c*ldd + r] = src[r*lds + c] for r < rows, c < cols. */
typedef void (*ag_transpose_fn)(size_t rows, size_t cols, const ag_real *src, size_t lds,
                                ag_real *dst, size_t ldd);

typedef struct ag_gemm_kernel {
    const char *name;
    int mr, nr;        /* the micro-tile */
    size_t kc, mc, nc; /* cache blocks: K per pass, rows of A and columns of B packed */
    ag_micro_fn micro;
    size_t direct_n;             /* widest N for direct (0: none) */
    ag_direct_fn direct;         /* NULL when there is none */
    ag_transpose_fn transpose;   /* a fast transpose for packing, or NULL */
    ag_micro_rows_fn micro_rows; /* micro with A in place (no packing of A), or NULL */
    ag_micro_cols_fn micro_cols; /* micro with A^T and B in place, or NULL */
    /* c[j] += alpha t[j] for j < n, rounded as micro adds a pass into C
     * (beta 1): t the raw sums of the pass */
    void (*combine)(size_t n, ag_real alpha, const ag_real *t, ag_real *c);
} ag_gemm_kernel;

/*
 * Memory to bring into cache while the packed micro-kernel runs: the block
 * of A^T the next packing will copy, or the next micro-kernels will read in
 * place (gemm.c sets it). A weight gradient's A^T (dW = X^T dY) was made
 * in forward, long before, and comes from memory; packing it was a pass
 * that waited on every line while the products before it left the memory
 * idle. The micro-kernel now asks for the next block a line at a time, one
 * every AG_AHEAD_EVERY steps of its loop, and the packing (or the kernel)
 * finds it in L2. Row r of the block starts at base + r * ld (bytes), its
 * first width bytes are asked for; row and col are the next line's place.
 * Per thread.
 */
typedef struct ag_gemm_ahead {
    const char *base;
    size_t ld, rows, width;
    size_t row, col;
} ag_gemm_ahead;
extern _Thread_local ag_gemm_ahead ag_ahead;
#define AG_AHEAD_EVERY 4

/* Ask for the next line of *ah, if any is left. */
static inline void ag_ahead_step(ag_gemm_ahead *ah)
{
    if (ah->row >= ah->rows)
        return;
    __builtin_prefetch(ah->base + ah->row * ah->ld + ah->col, 0, 2);
    ah->col += 64;
    if (ah->col >= ah->width) {
        ah->col = 0;
        ah->row++;
    }
}

/* The SIMD kernels, or NULL when this compiler or architecture has none.
 * They do not check the CPU: the caller does (avx512 also needs AVX2). */
const ag_gemm_kernel *ag_gemm_kernel_avx2(void);
const ag_gemm_kernel *ag_gemm_kernel_avx512(int rows); /* tiles of 12 rows or 8 (else NULL) */

#endif /* AG_GEMM_H */
