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

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, and with e, *e = exp(-x^2 / 2).
 * Below -sqrt 2 it is erfc / 2 directly, so the far left tail keeps its
 * digits instead of being 1 + erf(z) with erf(z) near -1. z^2 = x^2 / 2 is
 * taken from x itself (halving is exact), not from the rounded z. When
 * every lane has |z| < 1 (as a GPT's pre-activations mostly do) erfc's
 * rational and its division are skipped, and without e exp too: the lanes
 * take the same values either way. */
TARGET static inline V NAME(cdf)(V x, V *e)
{
    V xx = MUL(x, x);
    V z = MUL(x, SET1(0.707106781186547524f));
    V t = MUL(xx, SET1(0.5f)), t_lo = MUL(FMS(x, x, xx), SET1(0.5f));
    V mid = FMA(NAME(erf_small)(z, t), SET1(0.5f), SET1(0.5f));
    int all_mid = ALL_LT(ABS(z), SET1(1.0f));
    if (all_mid && !e)
        return mid;
    V ex = NAME(erf_exp)(t, t_lo);
    if (e)
        *e = ex;
    if (all_mid)
        return mid;
    V tail = NAME(erf_tail)(z, ex);
    V big = LT(z, SET1(0.0f), MUL(tail, SET1(0.5f)), FNMA(SET1(0.5f), tail, SET1(1.0f)));
    return LT(ABS(z), SET1(1.0f), mid, big);
}

TARGET static inline V NAME(gelu_vec)(V x)
{
    return MUL(x, NAME(cdf)(x, NULL));
}

/* dx + dy (Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi)) */
TARGET static inline V NAME(grad_vec)(V x, V dy, V dx)
{
    V e, cdf = NAME(cdf)(x, &e);
    return FMA(dy, FMA(MUL(x, e), SET1(0.398942280401432678f), cdf), dx);
}

/* y[i] = f(x[i]) for i in [0, n): whole vectors, then the last n mod W
 * through a zero-padded buffer, by the same instructions. */
#define NAME_MAP(f)                                                                                \
    TARGET static void NAME(f##_n)(const float *x, float *y, size_t n)                             \
    {                                                                                              \
        size_t i = 0;                                                                              \
        for (; i + W <= n; i += W)                                                                 \
            STORE(y + i, NAME(f##_vec)(LOAD(x + i)));                                              \
        if (i < n) {                                                                               \
            float buf[W] = {0};                                                                    \
            memcpy(buf, x + i, (n - i) * sizeof(float));                                           \
            STORE(buf, NAME(f##_vec)(LOAD(buf)));                                                  \
            memcpy(y + i, buf, (n - i) * sizeof(float));                                           \
        }                                                                                          \
    }
NAME_MAP(erf)
NAME_MAP(gelu)
#undef NAME_MAP

/* dx[i] += dy[i] gelu'(x[i]) for i in [0, n), as the maps above; with
 * set, dx[i] = 0 + dy[i] gelu'(x[i]) without reading dx (the same bits as
 * adding into a zeroed dx). */
TARGET static void NAME(grad_n)(const float *x, const float *dy, float *dx, size_t n, int set)
{
    size_t i = 0;
    for (; i + W <= n; i += W)
        STORE(dx + i, NAME(grad_vec)(LOAD(x + i), LOAD(dy + i), set ? SET1(0.0f) : LOAD(dx + i)));
    if (i < n) {
        float b[3][W] = {{0}};
        memcpy(b[0], x + i, (n - i) * sizeof(float));
        memcpy(b[1], dy + i, (n - i) * sizeof(float));
        if (!set)
            memcpy(b[2], dx + i, (n - i) * sizeof(float));
        STORE(b[2], NAME(grad_vec)(LOAD(b[0]), LOAD(b[1]), LOAD(b[2])));
        memcpy(dx + i, b[2], (n - i) * sizeof(float));
    }
}
