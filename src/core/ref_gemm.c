/*
 * ref_gemm.c - the reference matrix product: C = alpha op(A) op(B) + beta C,
 * each element summed in double in the order of k. What
 * every matmul is, forward and backward, before blocking, packing, vector
 * registers and threads (src/kernels/gemm.c) make it fast; the tests hold
 * the fast one to this.
 */
#include "internal.h"

/* A strip of up to STRIP columns of one row of C is summed side by side:
 * every C(i, j) is still its own sum, in the order of k, but the strip's
 * sums do not wait on each other's additions. */
enum { STRIP = 64 };

void ag_ref_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
                 const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta,
                 ag_real *C, size_t ldc)
{
    /* op(A)(i, p) = A[i * a_i + p * a_p], op(B)(p, j) = B[p * b_p + j * b_j] */
    size_t a_i = trans_a ? 1 : lda, a_p = trans_a ? lda : 1;
    size_t b_p = trans_b ? 1 : ldb, b_j = trans_b ? ldb : 1;
    for (size_t i = 0; i < M; i++)
        for (size_t j0 = 0; j0 < N; j0 += STRIP) {
            size_t n = N - j0 < STRIP ? N - j0 : STRIP;
            double acc[STRIP] = {0};
            for (size_t p = 0; p < K; p++) {
                double a = A[i * a_i + p * a_p];
                for (size_t j = 0; j < n; j++)
                    acc[j] += a * (double)B[p * b_p + (j0 + j) * b_j];
            }
            for (size_t j = 0; j < n; j++) {
                ag_real *c = &C[i * ldc + j0 + j];
                /* beta 0: C is only written (it may hold anything, NaN included) */
                *c = (ag_real)(alpha * acc[j]) + (beta == 0 ? 0 : beta * *c);
            }
        }
}

void ag_ref_gemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                         ag_real alpha, const ag_real *A, size_t lda, size_t stride_a,
                         const ag_real *B, size_t ldb, size_t stride_b, ag_real beta, ag_real *C,
                         size_t ldc, size_t stride_c)
{
    for (size_t b = 0; b < batch; b++) {
        /* with stride_c 0 every product adds into one C: beta applies once */
        ag_real beta_b = stride_c == 0 && b > 0 ? 1 : beta;
        ag_ref_gemm(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb,
                    beta_b, C + b * stride_c, ldc);
    }
}
