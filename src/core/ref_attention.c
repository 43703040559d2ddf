/*
 * ref_attention.c - the reference kernel of the fused attention op: the
 * layer's math written out head by head, every (T, T) row of weights made
 * and used at once, one thread. The fast kernel (src/kernels/attention.c)
 * computes the same tile by tile without any (T, T) matrix; the tests hold
 * it to this. The projections around the heads (Q, K, V as rows, and their
 * backward) are written once, here, for every kernel, with the product
 * passed in.
 *
 *   Q = x wq, K = x wk, V = x wv                 (B,T,d)
 *   head h: columns h*dh .. h*dh+dh-1 of each
 *   S = Q_h K_h^T / sqrt(dh), masked above the diagonal when causal
 *   P = softmax(S) row by row, O_h = P V_h        (the heads side by side: O)
 *   out = O wo
 */
#include "internal.h"

#include <math.h>
#include <string.h>

/* The scores of query row i against every key: s_j = <q_i, k_j> scale,
 * -inf where a causal mask hides key j > i. */
static void scores(const ag_real *qi, const ag_real *k, size_t ld, size_t T, size_t dh, size_t i,
                   int causal, ag_real scale, ag_real *s)
{
    for (size_t j = 0; j < T; j++) {
        ag_real dot = 0;
        for (size_t p = 0; p < dh; p++)
            dot += qi[p] * k[j * ld + p];
        s[j] = causal && j > i ? -INFINITY : dot * scale;
    }
}

void ag_ref_attention_head(const ag_real *q, const ag_real *k, const ag_real *v, size_t ld,
                           size_t T, size_t dh, int causal, ag_real *o, ag_real *p,
                           ag_real *scratch)
{
    ag_real scale = (ag_real)(1.0 / sqrt((double)dh));
    for (size_t i = 0; i < T; i++) {
        ag_real *w = p ? p + i * T : scratch; /* row i of P */
        scores(q + i * ld, k, ld, T, dh, i, causal, scale, w);
        ag_ref_softmax(w, w, T);
        for (size_t c = 0; c < dh; c++) {
            ag_real acc = 0;
            for (size_t j = 0; j < T; j++)
                acc += w[j] * v[j * ld + c];
            o[i * ld + c] = acc; /* o_i = sum_j P_ij v_j */
        }
    }
}

void ag_attention_head_backward(const ag_real *q, const ag_real *k, const ag_real *v,
                                const ag_real *d_o, size_t ld, size_t T, size_t dh, int causal,
                                ag_real *dq, ag_real *dk, ag_real *dv, ag_real *scratch, int wrong)
{
    ag_real scale = (ag_real)(1.0 / sqrt((double)dh));
    ag_real *w = scratch, *dw = scratch + T, *ds = scratch + 2 * T;
    for (size_t i = 0; i < T; i++) {
        /* forward again: P_i, the weights of query i */
        scores(q + i * ld, k, ld, T, dh, i, causal, scale, w);
        ag_ref_softmax(w, w, T);
        /* o_i = sum_j P_ij v_j: dP_ij = <do_i, v_j>, dv_j += P_ij do_i */
        const ag_real *doi = d_o + i * ld;
        for (size_t j = 0; j < T; j++) {
            ag_real dot = 0;
            for (size_t c = 0; c < dh; c++) {
                dot += doi[c] * v[j * ld + c];
                dv[j * ld + c] += w[j] * doi[c];
            }
            dw[j] = dot;
        }
        /* P_i = softmax(S_i): dS_i = P_i (dP_i - <dP_i, P_i>) */
        memset(ds, 0, T * sizeof(ag_real));
        ag_softmax_backward_row(w, dw, ds, T, wrong);
        /* S_ij = <q_i, k_j> scale: dq_i += scale dS_ij k_j, dk_j += scale dS_ij q_i */
        for (size_t j = 0; j < T; j++)
            for (size_t c = 0; c < dh; c++) {
                dq[i * ld + c] += scale * ds[j] * k[j * ld + c];
                dk[j * ld + c] += scale * ds[j] * q[i * ld + c];
            }
    }
}

void ag_ref_attention_head_backward(const ag_real *q, const ag_real *k, const ag_real *v,
                                    const ag_real *d_o, size_t ld, size_t T, size_t dh, int causal,
                                    ag_real *dq, ag_real *dk, ag_real *dv, ag_real *scratch)
{
    ag_attention_head_backward(q, k, v, d_o, ld, T, dh, causal, dq, dk, dv, scratch, 0);
}

/* ---- the projections, which the fast kernels share ---- */

ag_status ag_attn_keep_rows(ag_tape *tape, ag_attn_op *a)
{
    size_t bytes = a->B * a->T * a->d * sizeof(ag_real); /* fits: x has as many values */
    a->q = ag_arena_alloc(tape, bytes);
    a->k = a->q ? ag_arena_alloc(tape, bytes) : NULL;
    a->v = a->k ? ag_arena_alloc(tape, bytes) : NULL;
    a->o = a->v ? ag_arena_alloc(tape, bytes) : NULL;
    if (!a->q || !a->k || !a->v || !a->o)
        return tape->status != AG_OK ? tape->status : AG_ERR_NOMEM; /* (the arena set it) */
    return AG_OK;
}

void ag_attn_project(const ag_attn_op *a, ag_gemm_fn gemm)
{
    size_t rows = a->B * a->T, d = a->d;
    gemm(0, 0, rows, d, d, 1, a->x, d, a->wq, d, 0, a->q, d);
    gemm(0, 0, rows, d, d, 1, a->x, d, a->wk, d, 0, a->k, d);
    gemm(0, 0, rows, d, d, 1, a->x, d, a->wv, d, 0, a->v, d);
}

void ag_attn_project_backward(const ag_attn_op *a, const ag_attn_grads *g, size_t b0, size_t nb,
                              const ag_real *const dqkv[3], const ag_real alpha[3], ag_gemm_fn gemm)
{
    size_t rows = nb * a->T, d = a->d, first = b0 * a->T * d;
    const ag_real *x = a->x + first, *w[3] = {a->wq, a->wk, a->wv};
    ag_real *dw[3] = {g->dwq, g->dwk, g->dwv};
    for (int i = 0; i < 3; i++) {
        ag_real s = alpha ? alpha[i] : 1;
        if (dw[i])
            gemm(1, 0, d, d, rows, s, x, d, dqkv[i], d, 1, dw[i], d);
        if (g->dx)
            gemm(0, 1, rows, d, d, s, dqkv[i], d, w[i], d, i == 0 && g->dx_first ? 0 : 1,
                 g->dx + first, d);
    }
}

/* ---- the whole op ---- */

ag_status ag_ref_attention_forward(ag_tape *tape, ag_attn_op *a, ag_real *out, ag_real *p)
{
    size_t B = a->B, T = a->T, d = a->d, H = a->H, dh = d / H, rows = B * T;
    ag_real *scratch =
        ag_attn_keep_rows(tape, a) == AG_OK ? ag_arena_alloc(tape, T * sizeof(ag_real)) : NULL;
    if (!scratch)
        return tape->status;
    a->reference = 1;
    /* Q = x wq, K = x wk, V = x wv, kept as rows: head h is columns h*dh .. */
    ag_attn_project(a, ag_ref_gemm);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            size_t off = b * T * d + h * dh; /* head h of sequence b */
            ag_ref_attention_head(a->q + off, a->k + off, a->v + off, d, T, dh, a->causal,
                                  a->o + off, p ? p + (b * H + h) * T * T : NULL, scratch);
        }
    ag_ref_gemm(0, 0, rows, d, d, 1, a->o, d, a->wo, d, 0, out, d); /* out = O wo */
    return AG_OK;
}

ag_status ag_ref_attention_backward(ag_tape *tape, const ag_attn_op *a, const ag_real *dout,
                                    const ag_attn_grads *g)
{
    size_t B = a->B, T = a->T, d = a->d, H = a->H, dh = d / H, rows = B * T;
    size_t n = rows * d;
    /* out = O wo: dwo += O^T dout, dO = dout wo^T */
    if (g->dwo)
        ag_ref_gemm(1, 0, d, d, rows, 1, a->o, d, dout, d, 1, g->dwo, d);
    if (!g->dx && !g->dwq && !g->dwk && !g->dwv)
        return AG_OK;
    ag_real *d_o = ag_arena_alloc(tape, 4 * n * sizeof(ag_real)); /* dO, dQ, dK, dV */
    ag_real *scratch = d_o ? ag_arena_alloc(tape, 3 * T * sizeof(ag_real)) : NULL;
    if (!scratch)
        return tape->status;
    ag_real *dq = d_o + n, *dk = dq + n, *dv = dk + n;
    memset(dq, 0, 3 * n * sizeof(ag_real));
    ag_ref_gemm(0, 1, rows, d, d, 1, dout, d, a->wo, d, 0, d_o, d);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++) {
            size_t off = b * T * d + h * dh;
            ag_attention_head_backward(a->q + off, a->k + off, a->v + off, d_o + off, d, T, dh,
                                       a->causal, dq + off, dk + off, dv + off, scratch, g->wrong);
        }
    /* Q = x wq: dwq += x^T dQ, dx += dQ wq^T; the same for K and V */
    const ag_real *dqkv[3] = {dq, dk, dv};
    ag_attn_project_backward(a, g, 0, B, dqkv, NULL, ag_ref_gemm);
    return AG_OK;
}
