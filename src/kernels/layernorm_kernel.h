/*
 * layernorm_kernel.h - the vector rows of layernorm.c, written once and
 * included by it once per instruction set (AVX2, AVX-512F), as gelu.c
 * includes gelu_kernel.h. The includer defines:
 *
 *   NAME(f)       f with the set's suffix
 *   TARGET        the target attribute
 *   V, W          the vector type and its lanes (8 or 16)
 *   SET1 LOAD STORE ADD SUB MUL ZERO
 *   FOLD(acc)     the float sum of the 16 lanes acc[0 .. 16/W), folded
 *                 pairwise: lane k += lane k+8, then +4, +2, +1
 *
 * They compute what layernorm.c's plain rows compute, bit for bit: a row's
 * sums in 16 interleaved lanes (lane k takes the elements k mod 16 of the
 * whole blocks of 16, in order), folded pairwise, then the last C mod 16
 * elements in order; every product and sum rounded on its own (no FMA).
 * What they change is the code: the lanes stay in registers instead of
 * going through memory at each fold, and a row's passes are fused, so that
 * rows overlap in the CPU instead of each waiting for its own sums.
 */

#define NV (16 / W) /* vectors per 16 lanes */

/* The sum of term(c) over a row of C, in the lanes' order; term_v gives
 * the vector of terms at c, term_s the scalar. */
#define ROW_SUM_V(sum, C, c, term_v, term_s)                                                       \
    do {                                                                                           \
        V acc_[NV];                                                                                \
        for (int v_ = 0; v_ < NV; v_++)                                                            \
            acc_[v_] = ZERO();                                                                     \
        for (size_t c0_ = 0; c0_ + 16 <= (C); c0_ += 16)                                           \
            for (int v_ = 0; v_ < NV; v_++) {                                                      \
                size_t c = c0_ + (size_t)v_ * W;                                                   \
                acc_[v_] = ADD(acc_[v_], (term_v));                                                \
            }                                                                                      \
        (sum) = (C) >= 16 ? FOLD(acc_) : 0.0f;                                                     \
        for (size_t c = (C) / 16 * 16; c < (C); c++)                                               \
            (sum) += (term_s);                                                                     \
    } while (0)

/* R rows of forward (rows ld apart, R a constant once inlined): y, and
 * each row's mean and 1/std into stats[2r], stats[2r + 1]. The rows go
 * through each pass together, so that one row's chain of adds overlaps the
 * others'. */
TARGET static inline __attribute__((always_inline)) void
NAME(ln_rows)(const float *restrict x, const float *w, const float *b, float *restrict y,
              float *stats, size_t C, float inv_c, const int R)
{
    float sum[4], sq[4];
    V vm[4], vr[4];
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * C;
        ROW_SUM_V(sum[r], C, c, LOAD(xr + c), xr[c]);
    }
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * C;
        float mean = sum[r] * inv_c;
        stats[2 * r] = mean;
        vm[r] = SET1(mean);
        ROW_SUM_V(sq[r], C, c, MUL(SUB(LOAD(xr + c), vm[r]), SUB(LOAD(xr + c), vm[r])),
                  (xr[c] - mean) * (xr[c] - mean));
    }
    for (int r = 0; r < R; r++) {
        float rstd = 1 / sqrtf(sq[r] * inv_c + (float)AG_LAYERNORM_EPS);
        stats[2 * r + 1] = rstd;
        vr[r] = SET1(rstd);
    }
    V one = SET1(1.0f), zero = ZERO();
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * C;
        float *yr = y + r * C, mean = stats[2 * r], rstd = stats[2 * r + 1];
        size_t i = 0;
        for (; i + W <= C; i += W) {
            V t = MUL(MUL(SUB(LOAD(xr + i), vm[r]), vr[r]), w ? LOAD(w + i) : one);
            STORE(yr + i, ADD(t, b ? LOAD(b + i) : zero));
        }
        for (; i < C; i++)
            yr[i] = (xr[i] - mean) * rstd * (w ? w[i] : 1) + (b ? b[i] : 0);
    }
}

/* Rows [0, n) of forward, four at a time. */
TARGET static void NAME(ln_forward)(const float *x, const float *w, const float *b, float *y,
                                    float *stats, size_t n, size_t C)
{
    float inv_c = 1.0f / (float)C;
    size_t r = 0;
    for (; r + 4 <= n; r += 4)
        NAME(ln_rows)(x + r * C, w, b, y + r * C, stats + 2 * r, C, inv_c, 4);
    for (; r < n; r++)
        NAME(ln_rows)(x + r * C, w, b, y + r * C, stats + 2 * r, C, inv_c, 1);
}

/* R rows of backward (w not NULL; R a constant once inlined): dw += dy
 * xhat and db += dy when not NULL, row after row, and dx += rstd (g -
 * mean(g) - xhat mean(g xhat)) with g = dy w when dx is not NULL. Each
 * vector of dw and db takes the R rows' terms in order in a register. */
TARGET static inline __attribute__((always_inline)) void
NAME(ln_rows_backward)(const float *restrict x, const float *restrict w, const float *stats,
                       const float *restrict dy, float *restrict dx, float *restrict dw,
                       float *restrict db, size_t C, float inv_c, const int R)
{
    V vm[4], vr[4];
    for (int r = 0; r < R; r++) {
        vm[r] = SET1(stats[2 * r]);
        vr[r] = SET1(stats[2 * r + 1]);
    }
    size_t i = 0;
    for (; (dw || db) && i + W <= C; i += W) {
        V sw = dw ? LOAD(dw + i) : ZERO(), sb = db ? LOAD(db + i) : ZERO();
        for (int r = 0; r < R; r++) {
            V d = LOAD(dy + r * C + i);
            sw = ADD(sw, MUL(d, MUL(SUB(LOAD(x + r * C + i), vm[r]), vr[r])));
            sb = ADD(sb, d);
        }
        if (dw)
            STORE(dw + i, sw);
        if (db)
            STORE(db + i, sb);
    }
    for (int r = 0; (dw || db) && r < R; r++)
        for (size_t k = i; k < C; k++) {
            if (dw)
                dw[k] += dy[r * C + k] * ((x[r * C + k] - stats[2 * r]) * stats[2 * r + 1]);
            if (db)
                db[k] += dy[r * C + k];
        }
    if (!dx)
        return;
    float g_sum[4], gx_sum[4];
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * C, *dyr = dy + r * C;
        float mean = stats[2 * r], rstd = stats[2 * r + 1];
        ROW_SUM_V(g_sum[r], C, c, MUL(LOAD(dyr + c), LOAD(w + c)), dyr[c] * w[c]);
        ROW_SUM_V(gx_sum[r], C, c,
                  MUL(MUL(LOAD(dyr + c), LOAD(w + c)), MUL(SUB(LOAD(xr + c), vm[r]), vr[r])),
                  dyr[c] * w[c] * ((xr[c] - mean) * rstd));
    }
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * C, *dyr = dy + r * C;
        float *dxr = dx + r * C, mean = stats[2 * r], rstd = stats[2 * r + 1];
        float g_mean = g_sum[r] * inv_c, gx_mean = gx_sum[r] * inv_c;
        V vg = SET1(g_mean), vgx = SET1(gx_mean);
        for (i = 0; i + W <= C; i += W) {
            V xhat = MUL(SUB(LOAD(xr + i), vm[r]), vr[r]), g = MUL(LOAD(dyr + i), LOAD(w + i));
            STORE(dxr + i, ADD(LOAD(dxr + i), MUL(vr[r], SUB(SUB(g, vg), MUL(xhat, vgx)))));
        }
        for (; i < C; i++) {
            float xhat = (xr[i] - mean) * rstd, g = dyr[i] * w[i];
            dxr[i] += rstd * (g - g_mean - xhat * gx_mean);
        }
    }
}

/* Rows [0, n) of backward, four at a time. */
TARGET static void NAME(ln_backward)(const float *x, const float *w, const float *stats,
                                     const float *dy, float *dx, float *dw, float *db, size_t n,
                                     size_t C)
{
    float inv_c = 1.0f / (float)C;
    for (size_t r = 0; r < n;) {
        float *dxr = dx ? dx + r * C : NULL;
        const float *xr = x + r * C, *dyr = dy + r * C, *st = stats + 2 * r;
        if (r + 4 <= n) {
            NAME(ln_rows_backward)(xr, w, st, dyr, dxr, dw, db, C, inv_c, 4);
            r += 4;
        } else {
            NAME(ln_rows_backward)(xr, w, st, dyr, dxr, dw, db, C, inv_c, 1);
            r++;
        }
    }
}

#undef ROW_SUM_V
#undef NV
