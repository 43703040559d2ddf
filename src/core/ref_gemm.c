/*
 * ref_gemm.c - the reference matrix product: C = alpha op(A) op(B) + beta C,
 * three loops, each element summed in double in the order of k. What
 * every matmul is, forward and backward, before blocking, packing, vector
 * registers and threads (src/kernels/gemm.c) make it fast; the tests hold
 * the fast one to this.
 */
#include "internal.h"

void ag_ref_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
                 const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta,
                 ag_real *C, size_t ldc)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double acc = 0;
            for (size_t p = 0; p < K; p++) {
                ag_real a = trans_a ? A[p * lda + i] : A[i * lda + p]; /* op(A)(i, p) */
                ag_real b = trans_b ? B[j * ldb + p] : B[p * ldb + j]; /* op(B)(p, j) */
                acc += (double)a * (double)b;
            }
            ag_real *c = &C[i * ldc + j];
            /* beta 0: C is only written (it may hold anything, NaN included) */
            *c = (ag_real)(alpha * acc) + (beta == 0 ? 0 : beta * *c);
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
