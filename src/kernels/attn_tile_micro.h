/*
 * attn_tile_micro.h - the bodies of one instruction set's attention tiles
 * (see attn_tile.h), included by attn_tile_simd.c once per instruction set:
 * a template, not a header to include elsewhere. The includer defines:
 *   NAME(x)        x with the instruction set's suffix
 *   TARGET         its __attribute__((target(...)))
 *   KERNEL_NAME    the kernels' name, "avx512" or "avx2"
 *   VEC, W, MASK   the float vector type, its width, a lane mask type
 *   VLOAD VSTORE VSET1 VFMA(a, b, c) = a*b + c, VMUL, VSUB, VADD, VMAX, VZERO
 *   VLOAD_M(p, m), VSTORE_M(p, m, v)   masked load (zeros elsewhere) / store
 *   VMASK(n)       a mask of the first n lanes (0 < n <= W)
 *   VEXP2(x)       2^x, lane by lane (src/kernels/vexp.h)
 *   VFILL_BELOW(x, k, fill)   x with its lanes below k (k may be <= 0 or
 *                  >= W) replaced by fill
 *   VPOS_OR_ZERO(x)   x where x > -inf, 0 elsewhere
 *   VTRANSPOSE(src, lds, rows, cols, col)   col[j] (j < W) = column j of the
 *                  (rows x cols) block at src (rows lds apart), zeros past
 *                  rows and cols (rows, cols <= W)
 *   QK_ACC, PV_ACC    accumulators per micro-tile of each kind below
 *   PV_NV          vectors per row of a product's micro-tile, at most
 *   NV_MAX         vectors of queries in the widest block: 4, or 8 (a block
 *                  for sequences of 64 positions at W = 8)
 *   DH_SPECIAL     a head width whose widest blocks get code of their own,
 *                  with the width a constant (loops unrolled, the products
 *                  inlined), or 0 for none; blocks of one vector get such
 *                  code for heads one vector wide (dh = W) in any case
 * and the includer's enums MODE_* (what a keys x queries tile stores),
 * BETA_* (what a product does with C) and KEPT_* (where backward's weights
 * come from).
 *
 * Two kinds of micro-tile do all the products, both with a vector of C's
 * columns in registers and A's elements broadcast one at a time:
 *   qk_rows: a (keys x queries) tile t = A B over the head's dh features,
 *     A a block of K or V rows, B = scale log2(e) Q^T or dO^T (dh, br): S
 *     (in base 2), or at once the weights P = 2^(S - L), or dS = P (dP - D).
 *   pv_rows: rows of a (rows x dh) product over keys or queries, A read
 *     through any strides (a tile, or its transpose), B rows of V, dO, Q or
 *     K: O += P V, dV += P^T dO, dK += dS^T Q, dQ += dS K.
 * A block is NV vectors of queries wide (br = NV W) and as many keys long.
 */
/* The UNROLL pragmas stand before unbraced loops, which clang-format 14
 * would indent as if the pragma were a statement: */
/* clang-format off */

/* Micro-tile loops have constant bounds once inlined and must unroll fully,
 * so the accumulators stay in registers. Clang 14 does that only when the
 * pragma's count is the trip count, up to 4 (see gemm_micro.h): with it,
 * a micro-tile is at most 4 rows tall (MAX_ROWS). */
#if defined(__clang__)
#define UNROLL _Pragma("GCC unroll 4")
#define MAX_ROWS 4
#else
#define UNROLL _Pragma("GCC unroll 16")
#define MAX_ROWS 16
#endif
/* rows per micro-tile with acc accumulators of nv vectors a row */
#define TILE_ROWS(acc, nv) ((acc) / (nv) < MAX_ROWS ? (acc) / (nv) : MAX_ROWS)
#define INLINE static inline __attribute__((always_inline))

/* ---- keys x queries tiles ---- */

/*
 * Rows i < R of a tile t (row stride br), NV vectors each:
 *   acc[i][r] = sum_{p < dh} a[i*lda + p] b[p*ldb + r]
 * stored as (mode) S = acc, -inf where masked, and mx[r] = max(mx[r], S
 * over the rows); P = 2^(acc - vec[r]), 0 where masked; dS = pt[i][r] (acc -
 * vec[r]) (vec NULL: acc alone). Masked: lanes below k0 + i - v W of vector
 * v, the queries before key i (k0 = the first key minus the first query,
 * when causal). vec is subtracted after the sum, not summed from -vec: D
 * = <dO, O> and dP = dO V^T are then equal to the last bit when a query sees
 * one key (P = 1, O = V), and dS is exactly 0.
 */
TARGET INLINE void NAME(qk_rows)(size_t dh, const float *a, size_t lda, const float *b, size_t ldb,
                                 float *t, size_t br, int mode, const float *vec, const float *pt,
                                 float *mx, int masked, long k0, const int R, const int NV)
{
    VEC acc[QK_ACC];
UNROLL
    for (int i = 0; i < R; i++)
UNROLL
        for (int v = 0; v < NV; v++)
            acc[i * NV + v] = VZERO();
    for (size_t p = 0; p < dh; p++) {
        VEC bv[4];
UNROLL
        for (int v = 0; v < NV; v++)
            bv[v] = VLOAD(b + p * ldb + v * W);
UNROLL
        for (int i = 0; i < R; i++) {
            VEC ai = VSET1(a[i * lda + p]);
UNROLL
            for (int v = 0; v < NV; v++)
                acc[i * NV + v] = VFMA(ai, bv[v], acc[i * NV + v]);
        }
    }
UNROLL
    for (int v = 0; v < NV; v++) {
        VEC c = vec ? VLOAD(vec + v * W) : VZERO();
        VEC top = mode == MODE_S ? VLOAD(mx + v * W) : VZERO();
UNROLL
        for (int i = 0; i < R; i++) {
            VEC x = acc[i * NV + v];
            long k = k0 + i - (long)v * W;
            if (mode == MODE_S) {
                if (masked)
                    x = VFILL_BELOW(x, k, VSET1(-INFINITY));
                top = VMAX(top, x);
            } else if (mode == MODE_P) {
                x = VEXP2(VSUB(x, c));
                if (masked)
                    x = VFILL_BELOW(x, k, VZERO());
            } else {
                x = VMUL(VLOAD(pt + i * br + v * W), VSUB(x, c));
            }
            VSTORE(t + i * br + v * W, x);
        }
        if (mode == MODE_S)
            VSTORE(mx + v * W, top);
    }
}

/*
 * qk_rows for R rows whose first `skip` vectors of queries the causal mask
 * hides in every row (on a block's diagonal, the queries before the rows'
 * first key): those are stored as what masking makes of them, -inf scores
 * (0 weights in MODE_P), and only the other vectors are computed. The same
 * bits as computing them all. Forward's score tiles use it.
 */
TARGET INLINE void NAME(qk_skip)(size_t dh, const float *a, size_t lda, const float *b,
                                 size_t ldb, float *t, size_t br, int mode, const float *vec,
                                 const float *pt, float *mx, int masked, long k0, int skip,
                                 const int R, const int NV)
{
    VEC fill = mode == MODE_S ? VSET1(-INFINITY) : VZERO();
    /* unrolled to a few vector stores (as a loop it became a slow rep stos) */
UNROLL
    for (int i = 0; i < R; i++)
UNROLL
        for (int v = 0; v < NV - 1; v++)
            if (v < skip)
                VSTORE(t + i * br + v * W, fill);
    size_t o = (size_t)skip * W; /* the first vector computed */
#define QK_PART(S)                                                                              \
    NAME(qk_rows)(dh, a, lda, b + o, ldb, t + o, br, mode, vec ? vec + o : NULL,               \
                  pt ? pt + o : NULL, mx ? mx + o : NULL, masked, k0 - (long)o, R, NV - (S))
    switch (skip) {
    case 0: QK_PART(0); break;
    case 1: if (NV > 1) QK_PART(1); break;
    case 2: if (NV > 2) QK_PART(2); break;
    default: if (NV > 3) QK_PART(3); break;
    }
#undef QK_PART
}

/* Rows c < nc of a tile (row stride br) NV vectors of queries wide:
 * micro-tiles of TILE_ROWS rows, then 8, 4, 1. diag is the first key
 * minus the first query. SKIP (a constant): leave out the vectors of
 * queries a causal mask hides from a whole row group (qk_skip), which only
 * rows on a block's diagonal have. */
TARGET INLINE void NAME(qk_group)(size_t nc, size_t dh, const float *a, size_t lda,
                                  const float *b, size_t ldb, float *t, size_t br, int mode,
                                  const float *vec, const float *pt, float *mx, int causal,
                                  long diag, const int NV, const int SKIP)
{
    size_t c = 0;
#define QK_ROWS(R)                                                                              \
    for (; c + (R) <= nc; c += (R)) {                                                           \
        long k0 = diag + (long)c;                                                               \
        int masked = causal && diag + (long)(c + (R)-1) > 0;                                    \
        if (SKIP)                                                                               \
            NAME(qk_skip)(dh, a + c * lda, lda, b, ldb, t + c * br, br, mode, vec,              \
                          pt ? pt + c * br : NULL, mx, masked, k0,                              \
                          k0 >= W ? (int)min_of((size_t)k0 / W, (size_t)NV - 1) : 0, (R), NV);  \
        else                                                                                    \
            NAME(qk_rows)(dh, a + c * lda, lda, b, ldb, t + c * br, br, mode, vec,              \
                          pt ? pt + c * br : NULL, mx, masked, k0, (R), NV);                    \
    }
    QK_ROWS(TILE_ROWS(QK_ACC, NV))
    if (TILE_ROWS(QK_ACC, NV) > 8)
        QK_ROWS(8)
    if (TILE_ROWS(QK_ACC, NV) > 4)
        QK_ROWS(4)
    QK_ROWS(1)
#undef QK_ROWS
}

/* A micro-tile holds at most QK_GROUP vectors of queries (qk_rows' bv): a
 * wider block's tile is computed as column groups that wide, each the same
 * rows of t from its own first query on. */
#define QK_GROUP 4
TARGET INLINE void NAME(qk_rows_of)(size_t nc, size_t dh, const float *a, size_t lda,
                                    const float *b, size_t ldb, float *t, int mode,
                                    const float *vec, const float *pt, float *mx, int causal,
                                    long diag, const int NV, const int SKIP)
{
    const size_t br = (size_t)NV * W;
    if (NV <= QK_GROUP) {
        NAME(qk_group)(nc, dh, a, lda, b, ldb, t, br, mode, vec, pt, mx, causal, diag, NV, SKIP);
        return;
    }
    for (size_t o = 0; o < br; o += QK_GROUP * W)
        NAME(qk_group)(nc, dh, a, lda, b + o, ldb, t + o, br, mode, vec ? vec + o : NULL,
                       pt ? pt + o : NULL, mx ? mx + o : NULL, causal, diag - (long)o, QK_GROUP,
                       SKIP);
}

/* qk_rows_of, skipping hidden vectors only where some row can have them:
 * off the diagonal every row's code stays the plain micro-tile. */
TARGET INLINE void NAME(qk_tile)(size_t nc, size_t dh, const float *a, size_t lda, const float *b,
                                 size_t ldb, float *t, int mode, const float *vec, const float *pt,
                                 float *mx, int causal, long diag, const int NV)
{
    if (causal && diag + (long)nc > W)
        NAME(qk_rows_of)(nc, dh, a, lda, b, ldb, t, mode, vec, pt, mx, causal, diag, NV, 1);
    else
        NAME(qk_rows_of)(nc, dh, a, lda, b, ldb, t, mode, vec, pt, mx, causal, diag, NV, 0);
}

/* ---- rows x dh products ---- */

/*
 * Rows i < R, columns j < NVD vectors (the last one masked by last):
 *   c[i*ldc + j] = beta_i c[i*ldc + j] + sum_{p < K} a[i*rsa + p*csa] b[p*ldb + j]
 * with beta_i = 0, 1 or beta[i] (beta_mode).
 */
TARGET INLINE void NAME(pv_rows)(size_t K, const float *a, size_t rsa, size_t csa, const float *b,
                                 size_t ldb, float *c, size_t ldc, int beta_mode, const float *beta,
                                 MASK last, const int R, const int NVD)
{
    VEC acc[PV_ACC];
UNROLL
    for (int i = 0; i < R; i++)
UNROLL
        for (int v = 0; v < NVD; v++) {
            const float *cp = c + i * ldc + v * W;
            VEC x = beta_mode == BETA_ZERO ? VZERO() : v == NVD - 1 ? VLOAD_M(cp, last) : VLOAD(cp);
            acc[i * NVD + v] = beta_mode == BETA_ROWS ? VMUL(VSET1(beta[i]), x) : x;
        }
    for (size_t p = 0; p < K; p++, a += csa, b += ldb) {
        VEC bv[4];
UNROLL
        for (int v = 0; v < NVD; v++)
            bv[v] = v == NVD - 1 ? VLOAD_M(b + v * W, last) : VLOAD(b + v * W);
UNROLL
        for (int i = 0; i < R; i++) {
            VEC ai = VSET1(a[i * rsa]);
UNROLL
            for (int v = 0; v < NVD; v++)
                acc[i * NVD + v] = VFMA(ai, bv[v], acc[i * NVD + v]);
        }
    }
UNROLL
    for (int i = 0; i < R; i++)
UNROLL
        for (int v = 0; v < NVD; v++) {
            float *cp = c + i * ldc + v * W;
            if (v == NVD - 1)
                VSTORE_M(cp, last, acc[i * NVD + v]);
            else
                VSTORE(cp, acc[i * NVD + v]);
        }
}

/* c (M x n) = beta c + op(a) b over K, op(a)(i, p) = a[i*rsa + p*csa]; n is
 * dh, taken PV_NV vectors at a time. On a causal block's diagonal (tri) half
 * of op(a) is zeros and left out: TRI_UPPER, op(a)(i, p) = 0 for p > i (rows
 * are queries, p keys); TRI_LOWER, for p < i (rows are keys, p queries). */
TARGET INLINE void NAME(pv_any)(size_t M, size_t n, size_t K, const float *a, size_t rsa,
                                size_t csa, const float *b, size_t ldb, float *c, size_t ldc,
                                const int beta_mode, const float *beta, int tri)
{
    for (size_t j = 0; j < n; j += PV_NV * W) {
        size_t nj = n - j < PV_NV * W ? n - j : PV_NV * W;
        int nvd = (int)((nj + W - 1) / W);
        MASK last = VMASK((int)nj - (nvd - 1) * W);
        size_t i = 0;
#define PV_ROWS(R, NVD)                                                                         \
    for (; i + (R) <= M; i += (R)) {                                                            \
        size_t lo = tri == TRI_LOWER ? min_of(i, K) : 0;                                        \
        size_t hi = tri == TRI_UPPER ? min_of(i + (R), K) : K;                                  \
        NAME(pv_rows)(hi - lo, a + i * rsa + lo * csa, rsa, csa, b + lo * ldb + j, ldb,         \
                      c + i * ldc + j, ldc, beta_mode, beta ? beta + i : NULL, last, (R), (NVD)); \
    }
#define PV_CASE(NVD)                                                                            \
    case NVD:                                                                                   \
        PV_ROWS(TILE_ROWS(PV_ACC, NVD), NVD)                                                    \
        if (TILE_ROWS(PV_ACC, NVD) > 8)                                                         \
            PV_ROWS(8, NVD)                                                                     \
        if (TILE_ROWS(PV_ACC, NVD) > 4)                                                         \
            PV_ROWS(4, NVD)                                                                     \
        PV_ROWS(1, NVD)                                                                         \
        break;
        switch (nvd) {
            PV_CASE(1)
            PV_CASE(2)
#if PV_NV >= 3
            PV_CASE(3)
#endif
#if PV_NV >= 4
            PV_CASE(4)
#endif
        default:
            break;
        }
#undef PV_CASE
#undef PV_ROWS
    }
}

/* c = op(a) b, or c += op(a) b when add */
TARGET static void NAME(pv)(size_t M, size_t n, size_t K, const float *a, size_t rsa, size_t csa,
                            const float *b, size_t ldb, float *c, size_t ldc, int add, int tri)
{
    if (add)
        NAME(pv_any)(M, n, K, a, rsa, csa, b, ldb, c, ldc, BETA_ONE, NULL, tri);
    else
        NAME(pv_any)(M, n, K, a, rsa, csa, b, ldb, c, ldc, BETA_ZERO, NULL, tri);
}

/* c_i = beta_i c_i + op(a) b, row by row */
TARGET static void NAME(pv_scaled)(size_t M, size_t n, size_t K, const float *a, size_t rsa,
                                   size_t csa, const float *b, size_t ldb, float *c, size_t ldc,
                                   const float *beta, int tri)
{
    NAME(pv_any)(M, n, K, a, rsa, csa, b, ldb, c, ldc, BETA_ROWS, beta, tri);
}

/* pv and pv_scaled (beta not NULL) for n = DH: inlined, with n a constant,
 * when DH is not 0 (a block specialised for one head width) */
TARGET INLINE void NAME(pv_dh)(size_t M, size_t n, size_t K, const float *a, size_t rsa,
                               size_t csa, const float *b, size_t ldb, float *c, size_t ldc,
                               int add, const float *beta, int tri, const size_t DH)
{
    if (!DH && beta)
        NAME(pv_scaled)(M, n, K, a, rsa, csa, b, ldb, c, ldc, beta, tri);
    else if (!DH)
        NAME(pv)(M, n, K, a, rsa, csa, b, ldb, c, ldc, add, tri);
    else if (beta)
        NAME(pv_any)(M, DH, K, a, rsa, csa, b, ldb, c, ldc, BETA_ROWS, beta, tri);
    else if (add)
        NAME(pv_any)(M, DH, K, a, rsa, csa, b, ldb, c, ldc, BETA_ONE, NULL, tri);
    else
        NAME(pv_any)(M, DH, K, a, rsa, csa, b, ldb, c, ldc, BETA_ZERO, NULL, tri);
}

/* ---- the blocks ---- */

/* dst (dh, br) = scale src^T, src a block of n rows (n, dh) ld apart, zeros past n */
TARGET INLINE void NAME(pack)(const float *src, size_t ld, size_t n, size_t dh, float scale,
                              float *dst, const int NV)
{
    const size_t br = (size_t)NV * W;
    VEC vs = VSET1(scale), col[W];
    for (size_t r0 = 0; r0 < br; r0 += W) {
        int rows = n <= r0 ? 0 : n - r0 >= W ? W : (int)(n - r0);
        for (size_t p0 = 0; p0 < dh; p0 += W) {
            int cols = dh - p0 >= W ? W : (int)(dh - p0);
            VTRANSPOSE(src + r0 * ld + p0, ld, rows, cols, col);
            for (int j = 0; j < cols; j++)
                VSTORE(dst + (p0 + j) * br + r0, VMUL(vs, col[j]));
        }
    }
}

/* attn_tile.h's prep: Q, dO and O transposed a W x W block at a time in
 * registers (one block at a time, so as not to run out of them), D summed
 * from the columns of O and of dO^T as just stored. */
TARGET INLINE void NAME(prep)(const float *q, const float *d_o, size_t ldh, const float *o,
                              size_t ldo, size_t n, size_t dh, float qscale, float *qt,
                              float *d_ot, float *dsum, const int NV)
{
    const size_t br = (size_t)NV * W;
    VEC vs = VSET1(qscale), col[W];
    for (size_t r0 = 0; r0 < br; r0 += W) {
        int rows = n <= r0 ? 0 : n - r0 >= W ? W : (int)(n - r0);
        VEC sum = VZERO();
        for (size_t p0 = 0; p0 < dh; p0 += W) {
            int cols = dh - p0 >= W ? W : (int)(dh - p0);
            if (qt) {
                VTRANSPOSE(q + r0 * ldh + p0, ldh, rows, cols, col);
                for (int j = 0; j < cols; j++)
                    VSTORE(qt + (p0 + j) * br + r0, VMUL(vs, col[j]));
            }
            VTRANSPOSE(d_o + r0 * ldh + p0, ldh, rows, cols, col);
            for (int j = 0; j < cols; j++)
                VSTORE(d_ot + (p0 + j) * br + r0, col[j]);
            VTRANSPOSE(o + r0 * ldo + p0, ldo, rows, cols, col);
            for (int j = 0; j < cols; j++)
                sum = VFMA(VLOAD(d_ot + (p0 + j) * br + r0), col[j], sum);
        }
        VSTORE(dsum + r0, sum);
    }
}

/* dst row r (n rows, ldd apart) = s_r src row r (rows dh apart), s_r =
 * scale[r] or 1 (scale NULL): a block's rows out of scratch, a vector at a
 * time */
TARGET INLINE void NAME(rows_out)(const float *src, size_t n, size_t dh, const float *scale,
                                  float *dst, size_t ldd)
{
    for (size_t r = 0; r < n; r++, src += dh, dst += ldd) {
        VEC s = VSET1(scale ? scale[r] : 1.0f);
        size_t j = 0;
        for (; j + W <= dh; j += W)
            VSTORE(dst + j, VMUL(s, VLOAD(src + j)));
        if (j < dh) {
            MASK m = VMASK((int)(dh - j));
            VSTORE_M(dst + j, m, VMUL(s, VLOAD_M(src + j, m)));
        }
    }
}

/* Forward of one query block, br = bc = NV W (attn_tile.h); DH = dh, or 0
 * when dh is only known at run time. */
TARGET INLINE void NAME(fwd)(const ag_attn_fwd *f, size_t r0, float *scratch, const int NV,
                             const size_t DH)
{
    const size_t br = (size_t)NV * W, bc = br;
    size_t dh = DH ? DH : f->dh, ldo = f->ldo, ldh = f->ldh, nr = min_of(br, f->T - r0);
    float *qt = scratch;            /* (dh, br): scale log2(e) Q_i^T */
    float *s = qt + dh * br;        /* (bc, br): scores, then weights */
    float *acc = s + bc * br;       /* (br, dh): O_i before dividing by l */
    float *m = acc + br * dh, *mt = m + br, *l = mt + br, *alpha = l + br;   /* (br) each */
    NAME(pack)(f->q + r0 * ldh, ldh, nr, dh, f->scale * LOG2E, qt, NV);
    for (size_t v = 0; v < br; v += W) {
        VSTORE(m + v, VSET1(-INFINITY));
        VSTORE(l + v, VZERO());
    }
    size_t keys = f->causal ? r0 + nr : f->T;
    for (size_t c0 = 0; c0 < keys; c0 += bc) {
        size_t nc = min_of(bc, keys - c0);
        /* S_ij^T = K_j (scale log2(e) Q_i)^T, -inf where the mask hides a key; the
         * new max mt, from the old one and the scores as they are stored */
        for (size_t v = 0; v < br; v += W)
            VSTORE(mt + v, VLOAD(m + v));
        NAME(qk_tile)(nc, dh, f->k + c0 * ldh, ldh, qt, br, s, MODE_S, NULL, NULL, mt, f->causal,
                      (long)c0 - (long)r0, NV);
        /* the online softmax, a vector of queries at a time: the weights
         * relative to the new max, the sums so far rescaled to it (while a
         * query has seen nothing, its max stands in as 0: weights 0). Keys
         * from `seen` on are hidden from the whole vector (causal, on the
         * diagonal): their weights are 0 without an exp, the same bits. */
        for (size_t v = 0; v < br; v += W) {
            VEC mold = VLOAD(m + v), mx = VLOAD(mt + v), sum = VZERO();
            VEC mu = VPOS_OR_ZERO(mx);
            size_t seen = f->causal ? min_of(nc, r0 + v + W - c0) : nc, c = 0;
            for (; c < seen; c++) {
                VEC e = VEXP2(VSUB(VLOAD(s + c * br + v), mu));
                VSTORE(s + c * br + v, e);
                sum = VADD(sum, e);
            }
            for (; c < nc; c++)
                VSTORE(s + c * br + v, VZERO());
            VEC a = VEXP2(VSUB(mold, mu));
            VSTORE(l + v, VFMA(a, VLOAD(l + v), sum));
            VSTORE(m + v, mx);
            VSTORE(alpha + v, a);
        }
        /* O_i = alpha O_i + P_ij V_j */
        int tri = f->causal && c0 == r0 ? TRI_UPPER : TRI_NONE;   /* the diagonal */
        if (c0)
            NAME(pv_dh)(nr, dh, nc, s, 1, br, f->v + c0 * ldh, ldh, acc, dh, 1, alpha, tri, DH);
        else
            NAME(pv_dh)(nr, dh, nc, s, 1, br, f->v, ldh, acc, dh, 0, NULL, tri, DH);
    }
    for (size_t r = 0; r < br; r++) {
        if (r < nr)
            f->lse[r0 + r] = l[r] > 0 ? m[r] + log2f(l[r]) : INFINITY;
        alpha[r] = r < nr && l[r] > 0 ? 1 / l[r] : 0;   /* l = 0: no key seen, O = 0 */
    }
    NAME(rows_out)(acc, nr, dh, alpha, f->o + r0 * ldo, ldo);
    /* one block: its weights, the tile's exps over l, for backward to read */
    for (size_t c = 0; f->p && c < bc; c++)
        for (size_t v = 0; v < br; v += W)
            VSTORE(f->p + c * br + v,
                   c < keys ? VMUL(VLOAD(s + c * br + v), VLOAD(alpha + v)) : VZERO());
}

/* Backward of one key block, br = bc = NV W (attn_tile.h); DH as for fwd.
 * SKIP (a constant): the P and dS tiles leave out the vectors of queries
 * the causal mask hides (qk_skip); only for causal sequences of one block,
 * whose every tile is on the diagonal. No product reads those entries
 * there, so the results are the same bits. KEPT (a constant, KEPT_*):
 * whether the weights P are forward's, b->p (then neither L nor qt is
 * read), or recomputed into scratch. */
TARGET INLINE void NAME(bwd)(const ag_attn_bwd *b, size_t c0, float *scratch, const int NV,
                             const size_t DH, const int SKIP, const int KEPT)
{
    const size_t br = (size_t)NV * W, bc = br;
    size_t dh = DH ? DH : b->dh, ldo = b->ldo, ldh = b->ldh, nc = min_of(bc, b->T - c0);
    float *pm = scratch, *ds = pm + bc * br;                   /* (bc, br) */
    int kept = KEPT == KEPT_YES || (KEPT == KEPT_ASK && b->p);
    const float *p = kept ? b->p : pm;   /* P: forward's (one block), or made below */
    const float *kj = b->k + c0 * ldh, *vj = b->v + c0 * ldh;
    size_t r_first = b->causal ? c0 / br * br : 0;   /* causal: earlier queries see none */
    /* dK_j and dV_j: summed over several query blocks in scratch, rows dh
     * apart, and written to their rows once (summed in place, ldo apart,
     * the products ran 1-2% slower); from one query block, written directly */
    int direct = r_first + br >= b->T;
    size_t ldk = direct ? ldo : dh;
    float *dk = direct ? b->dk + c0 * ldo : ds + bc * br;      /* (bc, ldk) */
    float *dv = direct ? b->dv + c0 * ldo : dk + bc * dh;
    for (size_t r0 = r_first; r0 < b->T; r0 += br) {
        size_t nr = min_of(br, b->T - r0);
        int add = r0 != r_first;
        long diag = (long)c0 - (long)r0;
        /* P_ij^T = 2^(K_j (scale log2(e) Q_i)^T - L_i); dS_ij^T = P (V_j dO_i^T - D_i) */
        /* (skipping the hidden vectors in every diagonal tile gained 1-3% at
         * T = 64, but cost as much at T = 4096, where it only moved the code
         * of the other tiles: hence a kernel of its own for one block) */
        if (!kept)
            NAME(qk_rows_of)(nc, dh, kj, ldh, b->qt + r0 * dh, br, pm, MODE_P, b->lse + r0, NULL,
                             NULL, b->causal, diag, NV, SKIP);
        NAME(qk_rows_of)(nc, dh, vj, ldh, b->d_ot + r0 * dh, br, ds, MODE_DS,
                         b->wrong ? NULL : b->dsum + r0, p, NULL, 0, diag, NV, SKIP);
        /* dV_j += P_ij^T dO_i, dK_j += dS_ij^T Q_i, dQ_i += dS_ij K_j */
        int diagonal = b->causal && r0 == c0;   /* a key sees only the queries from its own on */
        int lower = diagonal ? TRI_LOWER : TRI_NONE, upper = diagonal ? TRI_UPPER : TRI_NONE;
        NAME(pv_dh)(nc, dh, nr, p, br, 1, b->d_o + r0 * ldh, ldh, dv, ldk, add, NULL, lower, DH);
        NAME(pv_dh)(nc, dh, nr, ds, br, 1, b->q + r0 * ldh, ldh, dk, ldk, add, NULL, lower, DH);
        NAME(pv_dh)(nr, dh, nc, ds, 1, br, kj, ldh, b->dq + r0 * b->ldq, b->ldq, !b->first, NULL,
                    upper, DH);
    }
    if (!direct) {
        NAME(rows_out)(dk, nc, dh, NULL, b->dk + c0 * ldo, ldo);
        NAME(rows_out)(dv, nc, dh, NULL, b->dv + c0 * ldo, ldo);
    }
}

/* The widest blocks (NV_MAX vectors) have code of their own for heads
 * DH_SPECIAL wide. */
#define SPECIAL(NVV, dh) ((NVV) == NV_MAX && DH_SPECIAL && (dh) == DH_SPECIAL)
/* Whether a block of NVV vectors runs that code for heads dh wide: blocks
 * wider than four vectors (AVX2's block of 64) always do, since kernel_for
 * hands them out for such heads alone, and so build no other. */
#define RUNS_SPECIAL(NVV, dh) ((NVV) > 4 || SPECIAL(NVV, dh))

/* The kernels for blocks of NVV vectors of queries. The widest (NV_MAX)
 * keep the weights of causal heads DH_SPECIAL wide on one-block sequences
 * (kept##NVV). */
#define KERNELS(NVV)                                                                            \
    TARGET static void NAME(fwd##NVV)(const ag_attn_fwd *f, size_t r0, ag_real *scratch)        \
    {                                                                                           \
        if (RUNS_SPECIAL(NVV, f->dh))                                                           \
            NAME(fwd)(f, r0, scratch, NVV, DH_SPECIAL);                                         \
        else if ((NVV) == 1 && f->dh == W)                                                      \
            NAME(fwd)(f, r0, scratch, NVV, W);                                                  \
        else                                                                                    \
            NAME(fwd)(f, r0, scratch, NVV, 0);                                                  \
    }                                                                                           \
    TARGET static void NAME(bwd##NVV)(const ag_attn_bwd *b, size_t c0, ag_real *scratch)        \
    {                                                                                           \
        if ((NVV) == 1 && b->dh == W) /* blocks of 1 or 2 vectors are one block: */           \
            NAME(bwd)(b, c0, scratch, NVV, W, 0, KEPT_ASK); /* kept weights asked for */        \
        else if ((NVV) < 4)                                                                     \
            NAME(bwd)(b, c0, scratch, NVV, 0, 0, KEPT_ASK);                                     \
        else if (RUNS_SPECIAL(NVV, b->dh) && b->p && b->causal) /* one block: kept */           \
            NAME(bwd)(b, c0, scratch, NVV, DH_SPECIAL, 1, KEPT_YES);                            \
        else if (RUNS_SPECIAL(NVV, b->dh))                                                      \
            NAME(bwd)(b, c0, scratch, NVV, DH_SPECIAL, 0, KEPT_NO);                             \
        else /* kept##NVV keeps nothing here, so forward made qt */                           \
            NAME(bwd)(b, c0, scratch, NVV, 0, 0, KEPT_NO);                                      \
    }                                                                                           \
    /* blocks of four vectors or more keep the weights only where they have                    \
     * code of their own for it: causal heads DH_SPECIAL wide (the GPT's) */                   \
    static size_t NAME(kept##NVV)(size_t T, size_t dh, int causal)                              \
    {                                                                                           \
        const size_t br = (NVV) * W;                                                            \
        int fits = T <= br && br * br <= 2 * T * T; /* one block, not mostly padding */          \
        return fits && ((NVV) < 4 || (SPECIAL(NVV, dh) && causal)) ? br : 0;                   \
    }                                                                                           \
    static size_t NAME(fwd_scratch##NVV)(size_t dh)                                             \
    {                                                                                           \
        return 2 * (NVV) * W * dh + (NVV) * W * (NVV) * W + 4 * (NVV) * W;                      \
    }                                                                                           \
    static size_t NAME(bwd_scratch##NVV)(size_t dh)                                             \
    {                                                                                           \
        return 2 * (NVV) * W * (NVV) * W + 2 * (NVV) * W * dh;                                  \
    }                                                                                           \
    TARGET static void NAME(prep##NVV)(const ag_real *q, const ag_real *d_o, size_t ldh,         \
                                       const ag_real *o, size_t ldo, size_t n, size_t dh,       \
                                       ag_real qscale, ag_real *qt, ag_real *d_ot,              \
                                       ag_real *dsum)                                           \
    {                                                                                           \
        NAME(prep)(q, d_o, ldh, o, ldo, n, dh, qscale, qt, d_ot, dsum, NVV);                    \
    }                                                                                           \
    static const ag_attn_kernel NAME(kernel##NVV) = {                                           \
        KERNEL_NAME,        (NVV) * W,      (NVV) * W,        LOG2E, NAME(fwd##NVV),             \
        NAME(bwd##NVV),     NAME(fwd_scratch##NVV), NAME(bwd_scratch##NVV), NAME(prep##NVV),     \
        NAME(kept##NVV),                                                                        \
    };
KERNELS(1)
KERNELS(2)
KERNELS(4)
#if NV_MAX == 8
KERNELS(8)
#endif
#undef KERNELS
#undef RUNS_SPECIAL
#undef SPECIAL

/* Blocks as wide as the sequence needs, up to 4 vectors; NV_MAX = 8 only
 * where such a block keeps the weights (kept8: causal heads DH_SPECIAL
 * wide, one block not mostly padding). For other heads one block of 64
 * took more memory (its scratch, kept weights) or more time than two. */
static const ag_attn_kernel *NAME(kernel_for)(size_t T, size_t dh, int causal)
{
#if NV_MAX == 8
    if (NAME(kept8)(T, dh, causal))
        return &NAME(kernel8);
#else
    (void)dh, (void)causal;
#endif
    return T <= W ? &NAME(kernel1) : T <= 2 * W ? &NAME(kernel2) : &NAME(kernel4);
}

#undef UNROLL
#undef MAX_ROWS
#undef TILE_ROWS
#undef INLINE
/* clang-format on */
