/*
 * attn_small.c - the fused attention op's fast kernel for sequences too
 * short for tiles (ag_attn_small): a tile holds 16 or 32 queries and keys,
 * so at T = 3 nine tenths of its work is padding, and the tiles' layouts,
 * log-sum-exps and scratch cost more than the heads themselves. Here each
 * head is a few rows: Q, K, V stay rows of (B,T,d) (head h is columns
 * h dh .. h dh + dh - 1), the weights P are kept, (B,H,T,T), and backward
 * uses them instead of recomputing them. The math is the reference's
 * (src/core/ref_attention.c), row by row, but for one division a row (the
 * weights are the exps times 1 / sum); the projections go through
 * ag_gemm. One thread: the heads are too small to share out, so results do
 * not depend on the thread count.
 */
#include "gemm.h"
#include "kernels.h"

#include <math.h>
#include <string.h>

/* Tiles pay from this many positions on. */
#define SMALL_T 8

int ag_attn_small(size_t T)
{
    return T < SMALL_T;
}

/* One head: P = softmax(scale Q K^T) row by row (masked if causal), O = P V. */
static void head_forward(const ag_real *restrict q, const ag_real *restrict k,
                         const ag_real *restrict v, size_t ld, size_t T, size_t dh, int causal,
                         ag_real scale, ag_real *restrict o, ag_real *restrict p)
{
    for (size_t i = 0; i < T; i++, p += T) {
        size_t n = causal ? i + 1 : T; /* keys query i sees; the rest weigh 0 */
        const ag_real *qi = q + i * ld;
        ag_real s[SMALL_T], max = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            ag_real dot = 0;
            for (size_t c = 0; c < dh; c++)
                dot += qi[c] * k[j * ld + c];
            s[j] = dot * scale;
            max = s[j] > max ? s[j] : max;
        }
        if (!isfinite(max)) { /* an infinite or NaN score: the reference's cases */
            ag_ref_softmax(s, p, n);
        } else {
            ag_real sum = 0;
            for (size_t j = 0; j < n; j++) {
                s[j] = AG_EXP(s[j] - max);
                sum += s[j];
            }
            ag_real inv = 1 / sum; /* one division a row */
            for (size_t j = 0; j < n; j++)
                p[j] = s[j] * inv;
        }
        for (size_t j = n; j < T; j++)
            p[j] = 0;
        ag_real *oi = o + i * ld;
        for (size_t c = 0; c < dh; c++) { /* o_i = sum_j P_ij v_j, summed in a register */
            ag_real acc = 0;
            for (size_t j = 0; j < n; j++)
                acc += p[j] * v[j * ld + c];
            oi[c] = acc;
        }
    }
}

ag_status ag_attn_small_forward(ag_tape *tape, ag_attn_op *a, ag_real *out, ag_real *p)
{
    size_t B = a->B, T = a->T, d = a->d, H = a->H, dh = d / H, rows = B * T;
    /* B H T T < B T d * T / dh: fits, T being small */
    a->w = ag_attn_keep_rows(tape, a) == AG_OK
               ? ag_arena_alloc(tape, B * H * T * T * sizeof(ag_real))
               : NULL;
    if (!a->w)
        return tape->status;
    ag_attn_project(a, ag_gemm);
    ag_real scale = (ag_real)(1.0 / sqrt((double)dh));
    for (size_t t = 0; t < B * H; t++) {
        size_t off = t / H * T * d + t % H * dh; /* head h = t % H of sequence t / H */
        head_forward(a->q + off, a->k + off, a->v + off, d, T, dh, a->causal, scale, a->o + off,
                     a->w + t * T * T);
    }
    ag_gemm(0, 0, rows, d, d, 1, a->o, d, a->wo, d, 0, out, d);
    if (p)
        memcpy(p, a->w, B * H * T * T * sizeof(ag_real));
    return AG_OK;
}

/*
 * One head's backward from its weights P, with dO:
 *   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D),  D = rowsum(dP * P)
 *   dQ = scale dS K,  dK = scale dS^T Q
 * added into dq, dk, dv (zeroed by the caller); dp is a row of scratch.
 */
static void head_backward(const ag_real *restrict q, const ag_real *restrict k,
                          const ag_real *restrict v, const ag_real *restrict d_o,
                          const ag_real *restrict p, size_t ld, size_t T, size_t dh, int causal,
                          ag_real scale, int wrong, ag_real *restrict dq, ag_real *restrict dk,
                          ag_real *restrict dv, ag_real *restrict dp)
{
    for (size_t i = 0; i < T; i++, p += T) {
        size_t n = causal ? i + 1 : T;
        const ag_real *doi = d_o + i * ld, *qi = q + i * ld;
        ag_real dsum = 0;
        for (size_t j = 0; j < n; j++) {
            ag_real dot = 0;
            for (size_t c = 0; c < dh; c++) {
                dot += doi[c] * v[j * ld + c];
                dv[j * ld + c] += p[j] * doi[c];
            }
            dp[j] = dot;
            dsum += dot * p[j];
        }
        if (wrong)
            dsum = 0; /* the deliberate bug (AG_BUG_SOFTMAX): the - P P^T term dropped */
        ag_real *dqi = dq + i * ld;
        for (size_t j = 0; j < n; j++) {
            ag_real ds = scale * (p[j] * (dp[j] - dsum));
            for (size_t c = 0; c < dh; c++) {
                dqi[c] += ds * k[j * ld + c];
                dk[j * ld + c] += ds * qi[c];
            }
        }
    }
}

ag_status ag_attn_small_backward(ag_tape *tape, const ag_attn_op *a, const ag_real *dout,
                                 const ag_attn_grads *g)
{
    size_t B = a->B, T = a->T, d = a->d, H = a->H, dh = d / H, rows = B * T, n = rows * d;
    /* out = O wo: dwo += O^T dout, dO = dout wo^T */
    if (g->dwo)
        ag_gemm(1, 0, d, d, rows, 1, a->o, d, dout, d, 1, g->dwo, d);
    if (!g->dx && !g->dwq && !g->dwk && !g->dwv)
        return AG_OK;
    ag_real *d_o = ag_arena_alloc(tape, (4 * n + T) * sizeof(ag_real)); /* dO, dQ, dK, dV, dP */
    if (!d_o)
        return tape->status;
    ag_real *dq = d_o + n, *dk = dq + n, *dv = dk + n, *dp = dv + n;
    memset(dq, 0, 3 * n * sizeof(ag_real));
    ag_gemm(0, 1, rows, d, d, 1, dout, d, a->wo, d, 0, d_o, d);
    ag_real scale = (ag_real)(1.0 / sqrt((double)dh));
    for (size_t t = 0; t < B * H; t++) {
        size_t off = t / H * T * d + t % H * dh;
        head_backward(a->q + off, a->k + off, a->v + off, d_o + off, a->w + t * T * T, d, T, dh,
                      a->causal, scale, g->wrong, dq + off, dk + off, dv + off, dp);
    }
    /* Q = x wq: dwq += x^T dQ, dx += dQ wq^T; the same for K and V */
    const ag_real *dqkv[3] = {dq, dk, dv};
    ag_attn_project_backward(a, g, 0, B, dqkv, NULL, ag_gemm);
    return AG_OK;
}
