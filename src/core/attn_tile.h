/*
 * attn_tile.h - the tiles of memory-efficient attention, for the fused
 * attention op (src/ops/attention_fused.c). One head at a time, a block of
 * queries against a block of keys, so that no (T, T) matrix ever exists:
 *
 *   forward, one query block i: for each key block j (none above the
 *     diagonal when causal), S = scale Q_i K_j^T, the online softmax
 *     (running row max m and sum l, earlier sums rescaled by exp(m_old -
 *     m_new)), O_i += P V_j; at the end O_i /= l and L_i = m + log l, the
 *     log-sum-exp of each query's scores: all backward keeps of the softmax.
 *   backward, one key block j: for each query block i that sees it,
 *     P = exp(S - L) recomputed, dV_j += P^T dO_i, dP = dO_i V_j^T,
 *     dS = P * (dP - D_i) with D_i = rowsum(dO_i * O_i), dK_j += dS^T Q_i,
 *     dQ_i += dS K_j.
 *
 * Tiles are stored keys by queries, t[c * br + r] for key c and query r of
 * the block, so a vector of queries runs along a tile's rows (see
 * attn_tile_simd.c). Two implementations: a portable one whose products go
 * through ag_gemm, and SIMD micro-kernels that keep a tile's products and
 * its exps in registers; both are exact functions of their inputs, so a
 * block's result does not depend on which thread computes it.
 */
#ifndef AG_ATTN_TILE_H
#define AG_ATTN_TILE_H

#include "attograd.h"

#include <stddef.h>

/* One head of the forward pass. Row t of Q, K, V, O is at q + t * ld (head
 * h of a (B,T,d) buffer is its columns h*dh .., so ld = d). */
typedef struct ag_attn_fwd {
    size_t T, dh, ld;
    int causal;                  /* key c is hidden from query r when c > r */
    ag_real scale;               /* 1 / sqrt(dh) */
    const ag_real *q, *k, *v;    /* (T, ld) */
    ag_real *o;                  /* (T, ld): written */
    ag_real *lse;                /* (T): L, written; +inf for a query that sees no key */
} ag_attn_fwd;

/* One head of the backward pass. tpad is T rounded up to the kernel's br:
 * the per-query vectors below are read a whole block at a time. */
typedef struct ag_attn_bwd {
    size_t T, dh, ld, tpad;
    int causal;
    int wrong;                   /* AG_BUG_SOFTMAX: D taken as 0 (the - P P^T term dropped) */
    ag_real scale;
    const ag_real *q, *k, *v, *d_o;   /* (T, ld) */
    const ag_real *qt, *d_ot;    /* (dh, tpad): scale Q^T and dO^T, zero past T */
    const ag_real *lse;          /* (tpad): L from forward, +inf past T */
    const ag_real *dsum;         /* (tpad): D = rowsum(dO * O), 0 past T */
    ag_real *dq;                 /* (T, ld): dS K added */
    ag_real *dk, *dv;            /* (T, ld): dS^T Q and P^T dO, the key block's rows written */
} ag_attn_bwd;

typedef struct ag_attn_kernel {
    const char *name;
    size_t br, bc;               /* queries and keys per tile */
    /* Forward of queries r0 .. r0+br-1 (fewer at the end): their rows of O
     * and entries of L. scratch holds fwd_scratch(dh) reals. */
    void (*fwd_block)(const ag_attn_fwd *f, size_t r0, ag_real *scratch);
    /* Backward of keys c0 .. c0+bc-1 against every query that sees them:
     * their rows of dK and dV written, dS K added to dq's rows. dK and dQ
     * come without the scale (the caller applies it once). scratch holds
     * bwd_scratch(dh) reals. */
    void (*bwd_block)(const ag_attn_bwd *b, size_t c0, ag_real *scratch);
    size_t (*fwd_scratch)(size_t dh);
    size_t (*bwd_scratch)(size_t dh);
} ag_attn_kernel;

/* The kernel for sequences of T positions: the SIMD one of the gemm kernel
 * in use (ag_gemm_use, AG_GEMM), in a float build, else the portable one. */
const ag_attn_kernel *ag_attn_kernel_for(size_t T);

/* dst[p * ldd + r] = scale * src[r * lds + p] for r < n, p < dh, and zeros
 * for r in [n, npad): a head's Q or dO as the (dh, npad) tile rows the
 * kernels read. */
void ag_attn_pack_t(const ag_real *src, size_t lds, size_t n, size_t npad, size_t dh,
                    ag_real scale, ag_real *dst, size_t ldd);

/* The SIMD kernels for T positions (float builds on x86), or NULL. They do
 * not check the CPU: ag_attn_kernel_for does, through the gemm kernel. */
const ag_attn_kernel *ag_attn_kernel_avx512(size_t T);
const ag_attn_kernel *ag_attn_kernel_avx2(size_t T);

#endif /* AG_ATTN_TILE_H */
