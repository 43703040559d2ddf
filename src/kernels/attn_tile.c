/*
 * attn_tile.c - the portable tiles of memory-efficient attention (see
 * attn_tile.h), and the choice between them and the SIMD ones. The portable
 * tiles are the algorithm written plainly: each product one ag_gemm call
 * (which brings its own SIMD kernels, in either precision), the softmax
 * arithmetic in loops. They serve double builds, CPUs without AVX2, and
 * AG_GEMM=generic; the tests hold them and the SIMD tiles to the same
 * results.
 */
#include "attn_tile.h"
#include "gemm.h"
#include "../core/internal.h"

#include <math.h>
#include <string.h>

#define REF_BR 64 /* queries per tile */
#define REF_BC 64 /* keys per tile */

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* dst (dh, br) = scale src^T for n rows src (n, dh, rows ld apart), zeros past n */
static void ref_pack(const ag_real *src, size_t ld, size_t n, size_t dh, ag_real scale,
                     ag_real *dst)
{
    for (size_t p = 0; p < dh; p++)
        for (size_t r = 0; r < REF_BR; r++)
            dst[p * REF_BR + r] = r < n ? scale * src[r * ld + p] : 0;
}

static void ref_prep(const ag_real *q, const ag_real *d_o, size_t ldh, const ag_real *o, size_t ldo,
                     size_t n, size_t dh, ag_real qscale, ag_real *qt, ag_real *d_ot, ag_real *dsum)
{
    if (qt)
        ref_pack(q, ldh, n, dh, qscale, qt);
    ref_pack(d_o, ldh, n, dh, 1, d_ot);
    for (size_t r = 0; r < REF_BR; r++) {
        ag_real sum = 0;
        for (size_t p = 0; r < n && p < dh; p++)
            sum += d_o[r * ldh + p] * o[r * ldo + p];
        dsum[r] = sum;
    }
}

/* How many keys c0 .. c0+nc-1 query t sees: all of them, or when causal
 * those up to t. */
static size_t keys_seen(int causal, size_t c0, size_t nc, size_t t)
{
    if (!causal)
        return nc;
    return t < c0 ? 0 : min_size(nc, t - c0 + 1);
}

static size_t ref_fwd_scratch(size_t dh)
{
    /* qt (dh, br), the tile (bc, br), O's sums (br, dh), m and l (br) */
    return REF_BR * dh + REF_BC * REF_BR + REF_BR * dh + 2 * REF_BR;
}

static void ref_fwd_block(const ag_attn_fwd *f, size_t r0, ag_real *scratch)
{
    size_t dh = f->dh, ldo = f->ldo, ldh = f->ldh, br = REF_BR, nr = min_size(br, f->T - r0);
    ag_real *qt = scratch;          /* (dh, br): scale Q_i^T */
    ag_real *s = qt + dh * br;      /* (bc, br): scores, then weights */
    ag_real *acc = s + REF_BC * br; /* (br, dh): O_i before dividing by l */
    ag_real *m = acc + br * dh, *l = m + br;
    ref_pack(f->q + r0 * ldh, ldh, nr, dh, f->scale, qt);
    for (size_t r = 0; r < nr; r++) {
        m[r] = -INFINITY;
        l[r] = 0;
    }
    size_t keys = f->causal ? r0 + nr : f->T; /* keys past the block's last query: never seen */
    for (size_t c0 = 0; c0 < keys; c0 += REF_BC) {
        size_t nc = min_size(REF_BC, keys - c0);
        /* S_ij^T = K_j (scale Q_i)^T */
        ag_gemm(0, 0, nc, nr, dh, 1, f->k + c0 * ldh, ldh, qt, br, 0, s, br);
        for (size_t r = 0; r < nr; r++) {
            size_t n = keys_seen(f->causal, c0, nc, r0 + r);
            ag_real mx = m[r];
            for (size_t c = 0; c < n; c++)
                mx = s[c * br + r] > mx ? s[c * br + r] : mx;
            /* the online softmax: weights relative to the new max, the sums
             * so far rescaled to it; while nothing is seen, all stay 0 */
            ag_real mu = mx == -INFINITY ? 0 : mx, a = AG_EXP(m[r] - mu), sum = 0;
            for (size_t c = 0; c < n; c++) {
                ag_real e = AG_EXP(s[c * br + r] - mu);
                s[c * br + r] = e;
                sum += e;
            }
            for (size_t c = n; c < nc; c++)
                s[c * br + r] = 0;
            l[r] = a * l[r] + sum;
            m[r] = mx;
            for (size_t p = 0; c0 && p < dh; p++) /* (c0 = 0: acc is not set yet) */
                acc[r * dh + p] *= a;
        }
        /* O_i += P_ij V_j, P_ij being the tile read transposed */
        ag_gemm(1, 0, nr, dh, nc, 1, s, br, f->v + c0 * ldh, ldh, c0 ? 1 : 0, acc, dh);
    }
    for (size_t r = 0; r < nr; r++) {
        ag_real inv = l[r] > 0 ? 1 / l[r] : 0; /* l = 0: no key seen, O = 0 */
        for (size_t p = 0; p < dh; p++)
            f->o[(r0 + r) * ldo + p] = acc[r * dh + p] * inv;
        f->lse[r0 + r] = l[r] > 0 ? m[r] + AG_LOG(l[r]) : INFINITY;
    }
    /* one block: its weights, the tile's exps over l, for backward */
    for (size_t c = 0; f->p && c < REF_BC; c++)
        for (size_t r = 0; r < REF_BR; r++)
            f->p[c * REF_BR + r] = c < keys && r < nr && l[r] > 0 ? s[c * br + r] * (1 / l[r]) : 0;
}

static size_t ref_bwd_scratch(size_t dh)
{
    (void)dh;
    return 2 * REF_BC * REF_BR; /* the P and dS tiles (bc, br) */
}

static void ref_bwd_block(const ag_attn_bwd *b, size_t c0, ag_real *scratch)
{
    size_t dh = b->dh, ldo = b->ldo, ldh = b->ldh, br = REF_BR, nc = min_size(REF_BC, b->T - c0);
    ag_real *p = scratch, *ds = p + REF_BC * br;            /* (bc, br) */
    const ag_real *pk = b->p ? b->p : p;                    /* P: kept by forward, or made */
    ag_real *dk = b->dk + c0 * ldo, *dv = b->dv + c0 * ldo; /* the block's rows */
    const ag_real *kj = b->k + c0 * ldh, *vj = b->v + c0 * ldh;
    /* causal: query blocks ending before c0 see none of these keys */
    size_t r_first = b->causal ? c0 / br * br : 0;
    for (size_t r0 = r_first; r0 < b->T; r0 += br) {
        size_t nr = min_size(br, b->T - r0);
        ag_real beta = r0 == r_first ? 0 : 1;
        /* P_ij^T = exp(K_j (scale Q_i)^T - L_i), the forward's weights again
         * (unless forward kept them); dP_ij^T = V_j dO_i^T */
        if (!b->p)
            ag_gemm(0, 0, nc, nr, dh, 1, kj, ldh, b->qt + r0 * dh, br, 0, p, br);
        ag_gemm(0, 0, nc, nr, dh, 1, vj, ldh, b->d_ot + r0 * dh, br, 0, ds, br);
        for (size_t c = 0; c < nc; c++)
            for (size_t r = 0; r < nr; r++) {
                size_t i = c * br + r;
                if (b->causal && c0 + c > r0 + r) {
                    p[i] = ds[i] = 0;
                    continue;
                }
                /* the softmax's backward, dS = P (dP - D), D = rowsum(dP P) = rowsum(dO O) */
                if (!b->p)
                    p[i] = AG_EXP(p[i] - b->lse[r0 + r]);
                ds[i] = pk[i] * (ds[i] - (b->wrong ? 0 : b->dsum[r0 + r]));
            }
        /* dV_j += P_ij^T dO_i, dK_j += dS_ij^T Q_i, dQ_i += dS_ij K_j */
        ag_gemm(0, 0, nc, dh, nr, 1, pk, br, b->d_o + r0 * ldh, ldh, beta, dv, ldo);
        ag_gemm(0, 0, nc, dh, nr, 1, ds, br, b->q + r0 * ldh, ldh, beta, dk, ldo);
        ag_gemm(1, 0, nr, dh, nc, 1, ds, br, kj, ldh, b->first ? 0 : 1, b->dq + r0 * b->ldq,
                b->ldq);
    }
}

/* One block of queries and keys, not mostly padding (at most 2 T^2 values:
 * 64 rows are too many for T = 32) */
static size_t ref_kept(size_t T, size_t dh, int causal)
{
    (void)dh, (void)causal;
    return T <= REF_BR && REF_BR * REF_BR <= 2 * T * T ? REF_BR : 0;
}

static const ag_attn_kernel kernel_ref = {
    "portable",    REF_BR,          REF_BC,          1,        ref_fwd_block,
    ref_bwd_block, ref_fwd_scratch, ref_bwd_scratch, ref_prep, ref_kept,
};

const ag_attn_kernel *ag_attn_kernel_for(size_t T, size_t dh, int causal)
{
    const ag_attn_kernel *k = NULL;
#ifndef AG_REAL_DOUBLE
    const char *g = ag_gemm_kernel_name();
    if (strcmp(g, "avx512") == 0)
        k = ag_attn_kernel_avx512(T, dh, causal);
    if (!k && (strcmp(g, "avx512") == 0 || strcmp(g, "avx2") == 0))
        k = ag_attn_kernel_avx2(T, dh, causal);
#else
    (void)T, (void)dh, (void)causal;
#endif
    return k ? k : &kernel_ref;
}
