/*
 * gemm.h - the one matrix-multiply kernel every matmul forward and backward
 * goes through, so that making it fast makes everything fast.
 */
#ifndef AG_GEMM_H
#define AG_GEMM_H

#include "attograd.h"

/*
 * C = alpha * op(A) op(B) + beta * C, all row-major.
 *   op(A) is (M x K): A itself with row stride lda when !trans_a, otherwise
 *   A is stored (K x M) and transposed on the fly.
 *   op(B) is (K x N): likewise with trans_b and ldb.
 *   C is (M x N) with row stride ldc. When beta == 0, C is only written.
 * Borrows every pointer; C must not alias A or B.
 */
void ag_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
             const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta,
             ag_real *C, size_t ldc);

#endif /* AG_GEMM_H */
