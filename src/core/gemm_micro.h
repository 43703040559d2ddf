/*
 * gemm_micro.h - the body of one SIMD micro-kernel, included by gemm_simd.c
 * once per instruction set (it is a template, not a header to include
 * elsewhere). The includer defines:
 *   MICRO_NAME     the function's name
 *   MICRO_TARGET   its __attribute__((target(...)))
 *   VEC, W         the vector type and its width in ag_reals
 *   MR, NV         the tile: MR rows by NV vectors (NR = NV * W columns)
 *   VLOAD VSTORE VSET1 VFMA(a, b, c) = a*b + c, VMUL, VZERO
 * The accumulators (MR * NV vectors) stay in registers: the loops over rows
 * and vectors have constant bounds and are fully unrolled.
 *
 * c[i][j] = alpha * sum_p a[p*MR + i] * b[p*NR + j]  (+ beta * c[i][j])
 */
MICRO_TARGET static void MICRO_NAME(size_t kc, const ag_real *restrict a,
                                    const ag_real *restrict b, ag_real *restrict c, size_t ldc,
                                    ag_real alpha, ag_real beta)
{
    VEC acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = VZERO();
    for (size_t p = 0; p < kc; p++) {
        VEC bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = VLOAD(b + v * W);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            VEC ai = VSET1(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = VFMA(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NV * W;
    }
    VEC va = VSET1(alpha);
    if (beta == 0) {
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                VSTORE(c + i * ldc + v * W, VMUL(va, acc[i][v]));
    } else {
        VEC vb = VSET1(beta);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                ag_real *cp = c + i * ldc + v * W;
                VSTORE(cp, VFMA(va, acc[i][v], VMUL(vb, VLOAD(cp))));
            }
    }
}
