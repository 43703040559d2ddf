/*
 * gelu_kernel.h - the vector kernels of gelu.c, written once for a vector
 * of W floats and included by gelu.c once per instruction set (AVX2+FMA,
 * AVX-512F), as gemm_simd.c includes gemm_micro.h. The includer defines:
 *
 *   NAME(f)       the function name f with the set's suffix
 *   TARGET        the target attribute
 *   V, W          the vector type and its lanes
 *   SET1 LOAD STORE ADD MUL DIV MIN MAX ABS    the usual
 *   FMA(a,b,c)    a b + c, one rounding; FNMA(a,b,c) c - a b; FMS(a,b,c) a b - c
 *   ROUND(x)      to the nearest integer
 *   SCALE2(p, n)  p 2^n for integral n in [-126, 0]
 *   LT(a,b,x,y)   per lane: a < b ? x : y;   UNORD(a,x,y): a is NaN ? x : y
 *   ALL_LT(a,b)   1 when a < b in every lane, else 0
 *
 * Every lane goes through the same operations whatever the set, so both
 * kernels give the same bits; the polynomials are documented in gelu.c.
 */

/* Vectors the maps below take through each stage together. */
#define GROUP_MAX 4

/* exp(x) for x in [-87.3, 0]: vexp.h's Cephes expf (its constants and
 * Horner macro), with 2^n applied by SCALE2, which needs no underflow clamp
 * in this range. Named exp_neg to stand apart from vexp.h's exp_avx2/512. */
TARGET static inline V NAME(exp_neg)(V x)
{
    V n = ROUND(MUL(x, SET1(EXP_LOG2E)));
    V r = FNMA(n, SET1(EXP_LN2_HI), x); /* ln 2 in two parts: n ln2_hi is exact */
    r = FNMA(n, SET1(EXP_LN2_LO), r);
    V p = AG_VEXP_HORNER5(FMA, SET1, r, EXP_P0, EXP_P1, EXP_P2, EXP_P3, EXP_P4, EXP_P5);
    p = FMA(p, MUL(r, r), ADD(r, SET1(1.0f)));
    return SCALE2(p, n);
}

/* The pieces of erf(z), given t + t_lo = z^2 (t_lo the rounding error of
 * t). erf_small: erf(z) for |z| < 1. erf_exp: exp(-z^2) (0 once below
 * float's normal range); exp takes -t and is corrected by (1 - t_lo):
 * otherwise t's rounding, relative 2^-24 times z^2, would cost erfc most
 * of its digits where z^2 is large. erf_tail: erfc(|z|) for |z| >= 1,
 * given e = exp(-z^2). Lanes outside a piece's range hold finite junk. */
TARGET static inline V NAME(erf_small)(V z, V t)
{
    V q = SET1(ERF_S6);
    q = FMA(q, t, SET1(ERF_S5));
    q = FMA(q, t, SET1(ERF_S4));
    q = FMA(q, t, SET1(ERF_S3));
    q = FMA(q, t, SET1(ERF_S2));
    q = FMA(q, t, SET1(ERF_S1));
    q = FMA(q, t, SET1(ERF_C0));
    return FMA(z, q, z);
}

TARGET static inline V NAME(erf_exp)(V t, V t_lo)
{
    V ex = NAME(exp_neg)(MUL(MIN(t, SET1(EXP_MAX)), SET1(-1.0f)));
    return LT(t, SET1(EXP_MAX), FNMA(ex, t_lo, ex), SET1(0.0f));
}

TARGET static inline V NAME(erf_tail)(V z, V e)
{
    V a = MIN(MAX(ABS(z), SET1(1.0f)), SET1(ERF_A_MAX));
    V p = SET1(ERF_P3);
    p = FMA(p, a, SET1(ERF_P2));
    p = FMA(p, a, SET1(ERF_P1));
    p = FMA(p, a, SET1(ERF_P0));
    V d = SET1(ERF_Q4);
    d = FMA(d, a, SET1(ERF_Q3));
    d = FMA(d, a, SET1(ERF_Q2));
    d = FMA(d, a, SET1(ERF_Q1));
    d = FMA(d, a, SET1(1.0f));
    return MUL(e, DIV(p, d));
}

TARGET static inline V NAME(erf_vec)(V z)
{
    V t = MUL(z, z), small = NAME(erf_small)(z, t);
    V tail = NAME(erf_tail)(z, NAME(erf_exp)(t, FMS(z, z, t)));
    V big = LT(z, SET1(0.0f), ADD(tail, SET1(-1.0f)), FNMA(SET1(1.0f), tail, SET1(1.0f)));
    return UNORD(z, z, LT(ABS(z), SET1(1.0f), small, big));
}

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2 of G vectors x[0 .. G) into phi, and
 * with e, e[k] = exp(-x[k]^2 / 2). Below -sqrt 2 it is erfc / 2 directly,
 * so the far left tail keeps its digits instead of being 1 + erf(z) with
 * erf(z) near -1. z^2 = x^2 / 2 is taken from x itself (halving is exact),
 * not from the rounded z. When every lane has |z| < 1 (as a GPT's
 * pre-activations mostly do) erfc's rational and its division are
 * skipped, and without e exp too: the lanes take the same values either
 * way. The G vectors (a constant once inlined) go through each stage
 * together: one vector's chain of dependent steps is long, and four side
 * by side keep the FPU busy (the GPT's GELU backward ran 1.8 times as
 * fast). */
TARGET static inline __attribute__((always_inline)) void NAME(cdf)(const V *x, V *phi, V *e,
                                                                   const int G)
{
    V z[GROUP_MAX], t[GROUP_MAX], t_lo[GROUP_MAX], mid[GROUP_MAX], ex[GROUP_MAX];
    int all_mid = 1;
    for (int k = 0; k < G; k++) {
        V xx = MUL(x[k], x[k]);
        z[k] = MUL(x[k], SET1(0.707106781186547524f));
        t[k] = MUL(xx, SET1(0.5f));
        t_lo[k] = MUL(FMS(x[k], x[k], xx), SET1(0.5f));
        mid[k] = FMA(NAME(erf_small)(z[k], t[k]), SET1(0.5f), SET1(0.5f));
        all_mid &= ALL_LT(ABS(z[k]), SET1(1.0f));
    }
    if (all_mid && !e) {
        for (int k = 0; k < G; k++)
            phi[k] = mid[k];
        return;
    }
    for (int k = 0; k < G; k++) {
        ex[k] = NAME(erf_exp)(t[k], t_lo[k]);
        if (e)
            e[k] = ex[k];
    }
    for (int k = 0; k < G; k++) {
        if (all_mid) {
            phi[k] = mid[k];
            continue;
        }
        V tail = NAME(erf_tail)(z[k], ex[k]);
        V big = LT(z[k], SET1(0.0f), MUL(tail, SET1(0.5f)), FNMA(SET1(0.5f), tail, SET1(1.0f)));
        phi[k] = LT(ABS(z[k]), SET1(1.0f), mid[k], big);
    }
}

/* y = gelu(x) = x Phi(x) of G vectors */
TARGET static inline __attribute__((always_inline)) void NAME(gelu_vecs)(const V *x, V *y,
                                                                         const int G)
{
    V phi[GROUP_MAX];
    NAME(cdf)(x, phi, NULL, G);
    for (int k = 0; k < G; k++)
        y[k] = MUL(x[k], phi[k]);
}

/* dx + dy (Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi)) of G vectors, into dx */
TARGET static inline __attribute__((always_inline)) void NAME(grad_vecs)(const V *x, const V *dy,
                                                                         V *dx, const int G)
{
    V phi[GROUP_MAX], e[GROUP_MAX];
    NAME(cdf)(x, phi, e, G);
    for (int k = 0; k < G; k++)
        dx[k] = FMA(dy[k], FMA(MUL(x[k], e[k]), SET1(0.398942280401432678f), phi[k]), dx[k]);
}

/* y[i] = erf(x[i]) for i in [0, n): whole vectors, then the last n mod W
 * through a zero-padded buffer, by the same instructions. */
TARGET static void NAME(erf_n)(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        STORE(y + i, NAME(erf_vec)(LOAD(x + i)));
    if (i < n) {
        float buf[W] = {0};
        memcpy(buf, x + i, (n - i) * sizeof(float));
        STORE(buf, NAME(erf_vec)(LOAD(buf)));
        memcpy(y + i, buf, (n - i) * sizeof(float));
    }
}

/* y[i] = gelu(x[i]) for i in [0, n): GROUP_MAX vectors at a time, then
 * one, then the last n mod W through a zero-padded buffer, by the same
 * instructions lane for lane. */
TARGET static void NAME(gelu_n)(const float *x, float *y, size_t n)
{
    size_t i = 0;
    V v[GROUP_MAX];
    for (; i + GROUP_MAX * W <= n; i += GROUP_MAX * W) {
        for (int k = 0; k < GROUP_MAX; k++)
            v[k] = LOAD(x + i + k * W);
        NAME(gelu_vecs)(v, v, GROUP_MAX);
        for (int k = 0; k < GROUP_MAX; k++)
            STORE(y + i + k * W, v[k]);
    }
    for (; i + W <= n; i += W) {
        v[0] = LOAD(x + i);
        NAME(gelu_vecs)(v, v, 1);
        STORE(y + i, v[0]);
    }
    if (i < n) {
        float buf[W] = {0};
        memcpy(buf, x + i, (n - i) * sizeof(float));
        v[0] = LOAD(buf);
        NAME(gelu_vecs)(v, v, 1);
        STORE(buf, v[0]);
        memcpy(y + i, buf, (n - i) * sizeof(float));
    }
}

/* dx[i] += dy[i] gelu'(x[i]) for i in [0, n), as gelu_n goes; with set,
 * dx[i] = 0 + dy[i] gelu'(x[i]) without reading dx (the same bits as
 * adding into a zeroed dx). */
TARGET static void NAME(grad_n)(const float *x, const float *dy, float *dx, size_t n, int set)
{
    size_t i = 0;
    V vx[GROUP_MAX], vdy[GROUP_MAX], vdx[GROUP_MAX];
    for (; i + GROUP_MAX * W <= n; i += GROUP_MAX * W) {
        for (int k = 0; k < GROUP_MAX; k++) {
            vx[k] = LOAD(x + i + k * W);
            vdy[k] = LOAD(dy + i + k * W);
            vdx[k] = set ? SET1(0.0f) : LOAD(dx + i + k * W);
        }
        NAME(grad_vecs)(vx, vdy, vdx, GROUP_MAX);
        for (int k = 0; k < GROUP_MAX; k++)
            STORE(dx + i + k * W, vdx[k]);
    }
    for (; i + W <= n; i += W) {
        vx[0] = LOAD(x + i), vdy[0] = LOAD(dy + i), vdx[0] = set ? SET1(0.0f) : LOAD(dx + i);
        NAME(grad_vecs)(vx, vdy, vdx, 1);
        STORE(dx + i, vdx[0]);
    }
    if (i < n) {
        float b[3][W] = {{0}};
        memcpy(b[0], x + i, (n - i) * sizeof(float));
        memcpy(b[1], dy + i, (n - i) * sizeof(float));
        if (!set)
            memcpy(b[2], dx + i, (n - i) * sizeof(float));
        vx[0] = LOAD(b[0]), vdy[0] = LOAD(b[1]), vdx[0] = LOAD(b[2]);
        NAME(grad_vecs)(vx, vdy, vdx, 1);
        STORE(b[2], vdx[0]);
        memcpy(dx + i, b[2], (n - i) * sizeof(float));
    }
}

#undef GROUP_MAX
