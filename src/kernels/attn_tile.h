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

/* One head of the forward pass. Row t of its Q, K and V is at q + t * ldh
 * (and so on): contiguous (T, dh) blocks, ldh = dh, or a head's columns of
 * (T, d) rows read in place, ldh = d (attention.c takes that only for rows
 * short enough that a tile's rows do not crowd into a few cache sets). Row t
 * of O is at o + t * ldo (head h of a (B,T,d) buffer is its columns h*dh ..,
 * so ldo = d). */
typedef struct ag_attn_fwd {
    size_t T, dh, ldo, ldh;
    int causal;               /* key c is hidden from query r when c > r */
    ag_real scale;            /* 1 / sqrt(dh) */
    const ag_real *q, *k, *v; /* (T, dh) */
    ag_real *o;               /* (T, ldo): written */
    ag_real *lse;             /* (T): L in the kernel's score_unit, written; +inf for a
                                    query that sees no key */
    ag_real *p;               /* (bc, br): NULL, or for a sequence of one block (T <= br)
                                 its weights P, keys by queries (p[c * br + r]), written
                                 for backward to read instead of recomputing them; 0 for
                                 hidden keys and past T */
} ag_attn_fwd;

/* One head of the backward pass, laid out as forward's. tpad is T rounded
 * up to the kernel's br: the per-query vectors below are read a whole block
 * at a time. */
typedef struct ag_attn_bwd {
    size_t T, dh, ldo, ldh, tpad; /* ldh: the row stride of q, k, v and d_o, as forward's */
    int causal;
    int wrong; /* AG_BUG_SOFTMAX: D taken as 0 (the - P P^T term dropped) */
    ag_real scale;
    const ag_real *q, *k, *v, *d_o; /* (T, dh), rows ldh apart */
    const ag_real *qt, *d_ot;       /* (tpad / br, dh, br): scale score_unit Q^T (NULL when p
                                       is kept) and dO^T a
                                    query block at a time (block i at i dh br), zero past T */
    const ag_real *lse;             /* (tpad): L from forward (in score_unit), +inf past T */
    const ag_real *p;               /* NULL, or forward's P of a one-block sequence (see
                                       ag_attn_fwd): then L and qt are not read */
    const ag_real *dsum;            /* (tpad): D = rowsum(dO * O), 0 past T */
    ag_real *dq;                    /* (T, ldq): dS K added, or written when first */
    size_t ldq;
    int first;        /* this key block is the first to reach dq's rows */
    ag_real *dk, *dv; /* (T, ldo): dS^T Q and P^T dO, the key block's rows written */
} ag_attn_bwd;

typedef struct ag_attn_kernel {
    const char *name;
    size_t br, bc; /* queries and keys per tile */
    /* The tiles' scores are S times this, and L is in the same unit: 1, or
     * log2 e for tiles that work with 2^x instead of e^x. */
    ag_real score_unit;
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
    /* A block of n <= br queries as backward's tiles read it: qt (dh, br) =
     * qscale q^T (not made when qt is NULL: P kept) and d_ot (dh, br) =
     * d_o^T, from q and d_o (n, dh, rows ldh apart), and dsum[r] = <d_o row
     * r, o row r> (o's rows ldo apart); zeros past n. */
    void (*prep)(const ag_real *q, const ag_real *d_o, size_t ldh, const ag_real *o, size_t ldo,
                 size_t n, size_t dh, ag_real qscale, ag_real *qt, ag_real *d_ot, ag_real *dsum);
    /* The side of the weights tile forward keeps per head for backward on
     * sequences of T positions (causal or not, heads dh wide), or 0 when
     * the kernel recomputes them (ag_attn_fwd's p, ag_attn_bwd's p). */
    size_t (*kept)(size_t T, size_t dh, int causal);
} ag_attn_kernel;

/* The kernel for sequences of T positions, heads dh wide, causal or not:
 * the SIMD one of the gemm kernel in use (ag_gemm_use, AG_GEMM), in a float
 * build, else the portable one. */
const ag_attn_kernel *ag_attn_kernel_for(size_t T, size_t dh, int causal);

/* The SIMD kernels for T positions (float builds on x86), or NULL. They do
 * not check the CPU (but for AVX-512DQ, which the AVX-512 tiles use besides
 * what the gemm kernel needs): ag_attn_kernel_for does, through the gemm
 * kernel, and falls back to AVX2 without DQ. */
const ag_attn_kernel *ag_attn_kernel_avx512(size_t T, size_t dh, int causal);
const ag_attn_kernel *ag_attn_kernel_avx2(size_t T, size_t dh, int causal);

#endif /* AG_ATTN_TILE_H */
