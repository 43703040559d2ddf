/*
 * gemm.c - matrix multiply for every layout matmul needs (A B, A B^T, A^T B).
 * This is the straightforward version: loops ordered so the innermost one
 * walks memory contiguously, which compilers vectorise.
 */
#include "gemm.h"

#include <string.h>

void ag_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
             const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta,
             ag_real *C, size_t ldc)
{
    for (size_t i = 0; i < M; i++) {
        ag_real *c = C + i * ldc;
        if (beta == 0)
            memset(c, 0, N * sizeof(*c));
        else if (beta != 1)
            for (size_t j = 0; j < N; j++)
                c[j] *= beta;
    }
    if (!trans_b) {
        /* c[i,:] += alpha * a(i,p) * B[p,:]: contiguous over j */
        for (size_t i = 0; i < M; i++) {
            ag_real *c = C + i * ldc;
            for (size_t p = 0; p < K; p++) {
                ag_real a = alpha * (trans_a ? A[p * lda + i] : A[i * lda + p]);
                const ag_real *b = B + p * ldb;
                for (size_t j = 0; j < N; j++)
                    c[j] += a * b[j];
            }
        }
    } else {
        /* c[i,j] += alpha * dot(a(i,:), B[j,:]): contiguous over p */
        for (size_t i = 0; i < M; i++) {
            ag_real *c = C + i * ldc;
            for (size_t j = 0; j < N; j++) {
                const ag_real *b = B + j * ldb;
                ag_real acc = 0;
                if (!trans_a) {
                    const ag_real *a = A + i * lda;
                    for (size_t p = 0; p < K; p++)
                        acc += a[p] * b[p];
                } else {
                    for (size_t p = 0; p < K; p++)
                        acc += A[p * lda + i] * b[p];
                }
                c[j] += alpha * acc;
            }
        }
    }
}
