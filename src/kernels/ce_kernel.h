/*
 * ce_kernel.h - the vector row of cross_entropy.c, written once and
 * included by it once per instruction set (AVX2, AVX-512F), as gelu.c
 * includes gelu_kernel.h. The includer defines:
 *
 *   NAME(f), TARGET   f with the set's suffix; its target attribute
 *   VD, WD            a vector of doubles and its lanes (4 or 8)
 *   MASK              the lane mask of TAIL_MASK(n): the first n lanes
 *   ADD SUB MUL DIV MAX SET1 ZERO ROUND(x)   (ROUND: to the nearest integer)
 *   STORE_D(p, v)     WD doubles stored
 *   POW2(k)           2^k for integral k in [-1022, 0]
 *   BELOW(x, y, v)    per lane: x < y ? 0 : v
 *   LOAD_F(p)         WD floats as doubles; LOAD_F_M(p, m, fill) the lanes
 *                     of m, fill elsewhere
 *   STORE_F(p, v), STORE_F_M(p, m, v)   doubles stored as floats
 *   FOLD(acc)         the sum of the 8 lanes of acc[0 .. 8/WD), pairwise
 * and the constants of fdlibm's exp.
 */

#define NVD (8 / WD) /* vectors per 8 lanes */

/* exp(x) for x <= 0 (or NaN): fdlibm's formula, each step rounded on its
 * own; 0 below EXP_MIN (-inf included), NaN for NaN. */
TARGET static inline VD NAME(exp_neg)(VD x)
{
    VD k = ROUND(MUL(x, SET1(INV_LN2)));
    VD hi = SUB(x, MUL(k, SET1(LN2_HI)));
    VD lo = MUL(k, SET1(LN2_LO));
    VD r = SUB(hi, lo), t = MUL(r, r);
    VD q = ADD(SET1(EXP_P4), MUL(t, SET1(EXP_P5)));
    q = ADD(SET1(EXP_P3), MUL(t, q));
    q = ADD(SET1(EXP_P2), MUL(t, q));
    q = ADD(SET1(EXP_P1), MUL(t, q));
    VD c = SUB(r, MUL(t, q));
    VD y = SUB(SET1(1.0), SUB(SUB(lo, DIV(MUL(r, c), SUB(SET1(2.0), c))), hi));
    return BELOW(x, EXP_MIN, MUL(y, POW2(k)));
}

/* The lanes past a row's end: the mask of vector v of the 8 at j */
TARGET static inline MASK NAME(tail)(size_t C, size_t j, int v)
{
    long n = (long)C - (long)j - (long)v * WD;
    return TAIL_MASK((int)(n < 0 ? 0 : n > WD ? WD : n));
}

/* Classes whose exps a row keeps for its probabilities (on the stack);
 * wider rows take each exp twice. */
#define CE_KEEP 512

/* -log softmax(z)[target] of a row of C, in double (to a few ulp of a
 * double of ag_cross_entropy_row: the exp and the order of the sum are its
 * own), and softmax(z) into probs when not NULL. */
TARGET static double NAME(ce_row)(const float *z, size_t C, int target, float *probs)
{
    /* the max (any NaN makes the sum NaN below, whichever max it leaves) */
    VD mx = SET1(-INFINITY);
    size_t j = 0;
    for (; j + WD <= C; j += WD)
        mx = MAX(mx, LOAD_F(z + j));
    double lanes[WD], max = z[0];
    STORE_D(lanes, mx);
    for (int k = 0; k < WD; k++)
        max = lanes[k] > max ? lanes[k] : max;
    for (; j < C; j++)
        max = z[j] > max ? z[j] : max;
    /* sum_j exp(z_j - max) in 8 lanes, the row's end padded with -inf (exp 0) */
    VD vm = SET1(max), acc[NVD], keep[CE_KEEP / WD];
    for (int v = 0; v < NVD; v++)
        acc[v] = ZERO();
    for (j = 0; j < C; j += 8)
        for (int v = 0; v < NVD; v++) {
            VD x = j + 8 <= C ? LOAD_F(z + j + v * WD)
                              : LOAD_F_M(z + j + v * WD, NAME(tail)(C, j, v), -INFINITY);
            VD e = NAME(exp_neg)(SUB(x, vm));
            if (j < CE_KEEP)
                keep[(j + (size_t)v * WD) / WD] = e;
            acc[v] = ADD(acc[v], e);
        }
    double sum = FOLD(acc);
    for (j = 0; probs && j < C; j += WD) {
        MASK m = NAME(tail)(C, j, 0);
        VD e = j < CE_KEEP ? keep[j / WD] : NAME(exp_neg)(SUB(LOAD_F_M(z + j, m, -INFINITY), vm));
        VD p = DIV(e, SET1(sum));
        if (j + WD <= C)
            STORE_F(probs + j, p);
        else
            STORE_F_M(probs + j, m, p);
    }
    /* z_t - max first: exact, where max + log(sum) would drop log(sum) beside a huge max */
    return log(sum) - ((double)z[target] - max);
}

#undef CE_KEEP
#undef NVD
