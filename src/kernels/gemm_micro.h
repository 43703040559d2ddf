/*
 * gemm_micro.h - the bodies of one instruction set's kernels (the packed
 * micro-kernel and the direct kernel for narrow products), included by
 * gemm_simd.c once per instruction set: a template, not a header to include
 * elsewhere. The includer defines:
 *   MICRO_NAME, MICRO_ROWS_NAME, MICRO_COLS_NAME, MICRO_BODY_NAME,
 *   MICRO_STORE_NAME, MICRO_COMBINE_NAME, DIRECT_NAME, DIRECT_TILE
 *                  the functions' names (without MICRO_COMBINE_NAME and
 *                  DIRECT_NAME, the micro-kernels alone: another tile
 *                  height of an instruction set already included; without
 *                  MICRO_COLS_NAME, no kernel reading A^T and B in place)
 *   MICRO_TARGET   its __attribute__((target(...)))
 *   VEC, W, MASK   the vector type, its width in ag_reals, a lane mask type
 *   MR, NV         the tile: MR rows by NV vectors (NR = NV * W columns)
 *   DIRECT_ROWS, DIRECT_NV   the direct kernel's tile (up to 4 by 4)
 *   DIRECT_ROWS1   its rows when C is one vector wide (4 or more)
 *   VLOAD VSTORE VSET1 VFMA(a, b, c) = a*b + c, VMUL, VZERO
 *   VMASK(n)       a mask of the first n lanes (0 < n <= W)
 *   VLOAD_M(p, m), VSTORE_M(p, m, v)   masked load (zeros elsewhere) / store
 * The accumulators (MR * NV vectors) stay in registers: the loops over rows
 * and vectors have constant bounds and are fully unrolled.
 *
 * c[i][j] = alpha * sum_p a[p*MR + i] * b[p*NR + j]  (+ beta * c[i][j])
 * for i < rows, j < cols; a tile at the edge of C has rows < MR or cols < NR
 * (a and b are zero-padded there) and only its valid part is read or written.
 */
/* The UNROLL pragmas stand before unbraced loops, which clang-format 14
 * would indent as if the pragma were a statement: */
/* clang-format off */
MICRO_TARGET static inline __attribute__((always_inline)) void
MICRO_STORE_NAME(VEC acc[MR][NV], ag_real *restrict c, size_t ldc, ag_real alpha, ag_real beta,
                 int rows, int cols);

/* Ask for the tile of C while the products run: in a training step C is
 * rarely in cache (a fresh output, or a gradient last touched long ago),
 * and with K = 128 its misses, waited for at the end, cost as much as a
 * fifth of the tile's time. Its first and last element of each row cover
 * the row's (at most three) lines. */
#ifndef MICRO_PREFETCH_C
#define MICRO_PREFETCH_C(c, ldc, rows)                                  \
    do {                                                                \
        for (int i_ = 0; i_ < (rows); i_++) {                           \
            __builtin_prefetch((c) + i_ * (ldc), 1, 3);                 \
            __builtin_prefetch((c) + i_ * (ldc) + NV * W / 2, 1, 3);    \
            __builtin_prefetch((c) + i_ * (ldc) + NV * W - 1, 1, 3);    \
        }                                                               \
    } while (0)
#endif

/* The tile's loop, with step p of a at a + p*as and of b at b + p*bs: MR
 * and NR for packed panels, the row strides of operands read in place
 * (MICRO_COLS_NAME). */
MICRO_TARGET static inline __attribute__((always_inline)) void
MICRO_BODY_NAME(size_t kc, const ag_real *restrict a, size_t as, const ag_real *restrict b,
                size_t bs, ag_real *restrict c, size_t ldc, ag_real alpha, ag_real beta, int rows, int cols)
{
    VEC acc[MR][NV];
    ag_gemm_ahead ah = ag_ahead; /* the next block to pack (gemm.h): a line now and then */
    MICRO_PREFETCH_C(c, ldc, rows);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = VZERO();
    for (size_t p = 0; p < kc; p++) {
        VEC bv[NV];
        if (p % AG_AHEAD_EVERY == 0)
            ag_ahead_step(&ah);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = VLOAD(b + v * W);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            VEC ai = VSET1(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = VFMA(ai, bv[v], acc[i][v]);
        }
        a += as;
        b += bs;
    }
    ag_ahead.row = ah.row, ag_ahead.col = ah.col;
    MICRO_STORE_NAME(acc, c, ldc, alpha, beta, rows, cols);
}

MICRO_TARGET static void MICRO_NAME(size_t kc, const ag_real *restrict a,
                                    const ag_real *restrict b, ag_real *restrict c, size_t ldc,
                                    ag_real alpha, ag_real beta, int rows, int cols)
{
    MICRO_BODY_NAME(kc, a, MR, b, NV * W, c, ldc, alpha, beta, rows, cols);
}

#ifdef MICRO_COLS_NAME
/* The same tile with A^T and B read in place (gemm.c's reads_in_place):
 * a's step p at a + p*as (A stored K x M: as = lda; or a packed panel, as
 * = MR), b's at b + p*bs (B stored K x N: bs = ldb; or packed, bs = NR).
 * All MR and NR of a step are read, so a panel read in place must be
 * whole. The same products in the same order as the packed tile, so the
 * same numbers. */
MICRO_TARGET static void MICRO_COLS_NAME(size_t kc, const ag_real *restrict a, size_t as,
                                         const ag_real *restrict b, size_t bs,
                                         ag_real *restrict c, size_t ldc, ag_real alpha,
                                         ag_real beta, int rows, int cols)
{
    MICRO_BODY_NAME(kc, a, as, b, bs, c, ldc, alpha, beta, rows, cols);
}
#endif

/* The same tile with A read in place, row i of the tile at a + i*lda (A
 * row-major, not transposed), so A needs no packing: the same products in
 * the same order, so the same numbers. Rows past the edge read the last
 * valid row again (their results are never stored). */
MICRO_TARGET static void MICRO_ROWS_NAME(size_t kc, const ag_real *restrict a, size_t lda,
                                         const ag_real *restrict b, ag_real *restrict c,
                                         size_t ldc, ag_real alpha, ag_real beta, int rows,
                                         int cols)
{
    VEC acc[MR][NV];
    const ag_real *ar[MR];
    MICRO_PREFETCH_C(c, ldc, rows);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        ar[i] = a + (size_t)(i < rows ? i : rows - 1) * lda;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = VZERO();
    }
    for (size_t p = 0; p < kc; p++) {
        VEC bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = VLOAD(b + v * W);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            VEC ai = VSET1(ar[i][p]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = VFMA(ai, bv[v], acc[i][v]);
        }
        b += NV * W;
    }
    MICRO_STORE_NAME(acc, c, ldc, alpha, beta, rows, cols);
}

#ifdef MICRO_COMBINE_NAME
/* c[j] += alpha t[j], j < n: the micro-kernels' pass with beta 1, with the
 * pass's sums made elsewhere (t) */
MICRO_TARGET static void MICRO_COMBINE_NAME(size_t n, ag_real alpha, const ag_real *t, ag_real *c)
{
    VEC va = VSET1(alpha);
    size_t j = 0;
    for (; j + W <= n; j += W)
        VSTORE(c + j, VFMA(va, VLOAD(t + j), VMUL(VSET1(1), VLOAD(c + j))));
    if (j < n) {
        MASK m = VMASK((int)(n - j));
        VSTORE_M(c + j, m, VFMA(va, VLOAD_M(t + j, m), VLOAD_M(c + j, m)));
    }
}
#endif

/* c = alpha acc + beta c on the tile's first rows x cols (c not read when
 * beta == 0). */
MICRO_TARGET static inline __attribute__((always_inline)) void
MICRO_STORE_NAME(VEC acc[MR][NV], ag_real *restrict c, size_t ldc, ag_real alpha, ag_real beta,
                 int rows, int cols)
{
    VEC va = VSET1(alpha), vb = VSET1(beta);
    if (rows == MR && cols == NV * W) {
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                ag_real *cp = c + i * ldc + v * W;
                if (beta == 0)
                    VSTORE(cp, VMUL(va, acc[i][v]));
                else
                    VSTORE(cp, VFMA(va, acc[i][v], VMUL(vb, VLOAD(cp))));
            }
        return;
    }
    /* an edge tile: the same arithmetic, through lane masks */
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        int n = cols - v * W;
        if (n <= 0)
            break;
        MASK m = VMASK(n < W ? n : W);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            if (i >= rows)
                break;
            ag_real *cp = c + i * ldc + v * W;
            if (beta == 0)
                VSTORE_M(cp, m, VMUL(va, acc[i][v]));
            else
                VSTORE_M(cp, m, VFMA(va, acc[i][v], VMUL(vb, VLOAD_M(cp, m))));
        }
    }
}

#ifdef DIRECT_NAME
/*
 * The direct kernel for narrow products (N <= DIRECT_NV * W), no packing:
 *   C = alpha op(A) B + beta C
 * op(A)(i, p) = a[i*rsa + p*csa] covers A and A^T alike; B is (K x N)
 * row-major with row stride ldb. A tile of R rows of C shares each row of B;
 * its columns are NVD vectors at most, the last one masked. The R * NVD
 * accumulators are independent chains of FMAs, and there must be enough of
 * them to cover the FMA's latency: DIRECT_ROWS rows per tile, but
 * DIRECT_ROWS1 when C is one vector wide. The rows left over go through
 * tiles of 8, 4, 2 and 1 rows when C is one vector wide, of 1 row otherwise
 * (a 2-row tile there made GCC 12 spill a vector of B in the AVX2 kernel's
 * main loop). Each row of C is computed the same way in any tile.
 * DIRECT_TILE is written for constant R and NVD, which DIRECT_NAME fixes.
 */
/* Fully unroll a loop whose bound is constant once DIRECT_TILE is inlined.
 * Clang 14 does that only when the count is the trip count (with a larger
 * count, or its own full-unroll pragma, it kept the accumulators in memory):
 * its tiles are at most 4 by 4 (see DIRECT_ROWS1 in gemm_simd.c). */
#ifndef DIRECT_UNROLL
#ifdef __clang__
#define DIRECT_UNROLL _Pragma("GCC unroll 4")
#else
#define DIRECT_UNROLL _Pragma("GCC unroll 16")
#endif
#endif
/* the most accumulators a direct tile holds */
#if DIRECT_ROWS1 > DIRECT_ROWS * DIRECT_NV
#define DIRECT_ACC DIRECT_ROWS1
#else
#define DIRECT_ACC (DIRECT_ROWS * DIRECT_NV)
#endif
MICRO_TARGET static inline __attribute__((always_inline)) void
DIRECT_TILE(size_t K, const ag_real *a, size_t rsa, size_t csa, const ag_real *b, size_t ldb,
            ag_real *c, size_t ldc, ag_real alpha, ag_real beta, MASK last, const int R,
            const int NVD)
{
    VEC acc[DIRECT_ACC];   /* acc[r * NVD + v], in registers once unrolled */
DIRECT_UNROLL
    for (int r = 0; r < R; r++)
DIRECT_UNROLL
        for (int v = 0; v < NVD; v++)
            acc[r * NVD + v] = VZERO();
    for (size_t p = 0; p < K; p++, a += csa, b += ldb) {
        VEC bv[DIRECT_NV];
DIRECT_UNROLL
        for (int v = 0; v < NVD; v++)
            bv[v] = v == NVD - 1 ? VLOAD_M(b + v * W, last) : VLOAD(b + v * W);
DIRECT_UNROLL
        for (int r = 0; r < R; r++) {
            VEC ar = VSET1(a[r * rsa]);
DIRECT_UNROLL
            for (int v = 0; v < NVD; v++)
                acc[r * NVD + v] = VFMA(ar, bv[v], acc[r * NVD + v]);
        }
    }
    VEC va = VSET1(alpha), vb = VSET1(beta);
DIRECT_UNROLL
    for (int r = 0; r < R; r++)
DIRECT_UNROLL
        for (int v = 0; v < NVD; v++) {
            ag_real *cp = c + r * ldc + v * W;
            VEC x = acc[r * NVD + v];
            if (v < NVD - 1)
                VSTORE(cp, beta == 0 ? VMUL(va, x) : VFMA(va, x, VMUL(vb, VLOAD(cp))));
            else if (beta == 0)
                VSTORE_M(cp, last, VMUL(va, x));
            else
                VSTORE_M(cp, last, VFMA(va, x, VMUL(vb, VLOAD_M(cp, last))));
        }
}

MICRO_TARGET static void DIRECT_NAME(size_t M, size_t N, size_t K, ag_real alpha,
                                     const ag_real *A, size_t rsa, size_t csa, const ag_real *B,
                                     size_t ldb, ag_real beta, ag_real *C, size_t ldc)
{
    int nvd = (int)((N + W - 1) / W);
    MASK last = VMASK((int)N - (nvd - 1) * W);
    size_t i = 0;
#define DIRECT_ROWS_OF(R, NVD)                                                                  \
    for (; i + (R) <= M; i += (R))                                                              \
        DIRECT_TILE(K, A + i * rsa, rsa, csa, B, ldb, C + i * ldc, ldc, alpha, beta, last, (R), \
                    NVD);
#define DIRECT_CASE(NVD, R)                                                                     \
    case NVD:                                                                                   \
        DIRECT_ROWS_OF(R, NVD)                                                                  \
        if ((R) > 8)                                                                            \
            DIRECT_ROWS_OF(8, NVD)                                                              \
        if ((R) > 4) {                                                                          \
            DIRECT_ROWS_OF(4, NVD)                                                              \
            DIRECT_ROWS_OF(2, NVD)                                                              \
        }                                                                                       \
        DIRECT_ROWS_OF(1, NVD)                                                                  \
        break;
    switch (nvd) {
        DIRECT_CASE(1, DIRECT_ROWS1)
#if DIRECT_NV >= 2
        DIRECT_CASE(2, DIRECT_ROWS)
#endif
#if DIRECT_NV >= 3
        DIRECT_CASE(3, DIRECT_ROWS)
#endif
#if DIRECT_NV >= 4
        DIRECT_CASE(4, DIRECT_ROWS)
#endif
    default:
        break;
    }
#undef DIRECT_CASE
#undef DIRECT_ROWS_OF
}
#undef DIRECT_ACC
#endif /* DIRECT_NAME */
/* clang-format on */
