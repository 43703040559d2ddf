/*
 * kernels.h - the fast kernels, which the ops call by name when the fast
 * kernels are in use (ag_kernels_name, AG_KERNELS). Each computes what its
 * op's reference computes (the plain loop in the op file, or the
 * ag_ref_* kernel of src/core/ref_*.c) to rounding, and most of them bit
 * for bit; each gives the same bits on any number of threads. Not
 * installed.
 */
#ifndef AG_KERNELS_H
#define AG_KERNELS_H

#include "../core/internal.h"
#include "gemm.h" /* ag_gemm_batched */

#include <stdint.h>

/* ---- softmax.c: rows of n, vector kernels and threads ---- */
/* s = softmax(z), rows independent; s may be z. */
void ag_fast_softmax(const ag_real *z, ag_real *s, size_t rows, size_t n);
/* dz += s (ds - <ds, s>) row by row (wrong: the AG_BUG_SOFTMAX formula). */
void ag_fast_softmax_backward(const ag_real *s, const ag_real *ds, ag_real *dz, size_t rows,
                              size_t n, int wrong);
/* One row, at vector level `level` (ag_cpu_row_level(), or 0 for the
 * reference): for the attention weights and the tests. */
void ag_fast_softmax_row(const ag_real *z, ag_real *s, size_t n, int level);

/* ---- gelu.c ---- */
/* y = x Phi(x) */
void ag_fast_gelu(const ag_real *x, ag_real *y, size_t n);
/* dx (+= or, when set, =) dy (Phi(x) + x phi(x)) */
void ag_fast_gelu_backward(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n, int set);
/* y = erf(x) at vector level `level` (0: libm): exposed for the tests. */
void ag_erf_n(const ag_real *x, ag_real *y, size_t n, int level);

/* ---- layernorm.c: rows of C ---- */
/* y = (x - mean) rstd w + b per row (w, b may be NULL), stats (rows, 2) =
 * mean, rstd. */
void ag_fast_layernorm(const ag_real *x, const ag_real *w, const ag_real *b, ag_real *y,
                       ag_real *stats, size_t rows, size_t C);
/* dx += (may be NULL), dw += and db += (may be NULL), summed over the rows
 * in a fixed order; scratch from the tape's arena. The tape's status. */
ag_status ag_fast_layernorm_backward(ag_tape *tape, const ag_real *x, const ag_real *w,
                                     const ag_real *stats, const ag_real *dy, ag_real *dx,
                                     ag_real *dw, ag_real *db, size_t rows, size_t C);
/* The two at vector level `level` (ag_cpu_row_level(), or 0 for the plain
 * rows): every level gives the same bits. Exposed for the tests. */
void ag_fast_layernorm_level(const ag_real *x, const ag_real *w, const ag_real *b, ag_real *y,
                             ag_real *stats, size_t rows, size_t C, int level);
ag_status ag_fast_layernorm_backward_level(ag_tape *tape, const ag_real *x, const ag_real *w,
                                           const ag_real *stats, const ag_real *dy, ag_real *dx,
                                           ag_real *dw, ag_real *db, size_t rows, size_t C,
                                           int level);

/* ---- attention.c: the fused attention op, whole (ag_attn_op) ---- */
/* The side of the weights tile forward keeps per head for backward when it
 * trains on sequences of T positions, heads dh wide, causal or not (the
 * tiles' block, when T is one block of at most 2 T^2 values and the tiles
 * keep them for such heads), or 0 when it keeps none. */
size_t ag_attn_kept_tile(size_t T, size_t dh, int causal);
/* What ag_ref_attention_forward and _backward compute, tile by tile. */
ag_status ag_fast_attention_forward(ag_tape *tape, ag_attn_op *a, ag_real *out, ag_real *p);
ag_status ag_fast_attention_backward(ag_tape *tape, const ag_attn_op *a, const ag_real *dout,
                                     const ag_attn_grads *g);

/* ---- attn_small.c: the same for sequences too short for tiles ---- */
/* 1 when sequences of T positions take this path (the fast kernel's choice) */
int ag_attn_small(size_t T);
/* Q, K, V as rows, the weights P kept; what ag_fast_attention_* compute */
ag_status ag_attn_small_forward(ag_tape *tape, ag_attn_op *a, ag_real *out, ag_real *p);
ag_status ag_attn_small_backward(ag_tape *tape, const ag_attn_op *a, const ag_real *dout,
                                 const ag_attn_grads *g);

/* ---- elementwise.c ---- */
/* y = x + b, b (n) repeated over x (size) */
void ag_fast_add(const ag_real *x, const ag_real *b, ag_real *y, size_t size, size_t n);
/* dx += dy (or, when set, dx = 0 + dy) */
void ag_fast_add_grad(const ag_real *dy, ag_real *dx, size_t size, int set);
/* da = 0 + dy and db = 0 + dy into two unset gradients, in one pass */
void ag_fast_add_grad_both(const ag_real *dy, ag_real *da, ag_real *db, size_t size);
/* db += dy summed over its repeats: db[c] += dy[c] + dy[n + c] + ..., in that order */
void ag_fast_add_grad_repeated(const ag_real *dy, ag_real *db, size_t size, size_t n);
/* out (= or, with add, +=) in * (ag_dropout_bits(key, i) >= threshold ? scale : 0) */
void ag_fast_dropout(const ag_real *in, ag_real *out, size_t n, ag_real scale, uint64_t key,
                     uint32_t threshold, int add);
/* sum_i (p_i - t_i)^2 in double, in a fixed order of partial sums */
double ag_fast_sq_diff_sum(size_t n, const ag_real *restrict p, const ag_real *restrict t);
/* dx_i += s (p_i - t_i) */
void ag_fast_mse_grad(size_t n, ag_real *restrict dx, const ag_real *restrict p,
                      const ag_real *restrict t, ag_real s);
/* y = x < 0 ? 0 : x;  dx += x > 0 ? dy : 0 */
void ag_fast_relu(const ag_real *x, ag_real *y, size_t n);
void ag_fast_relu_grad(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n);

/* ---- cross_entropy.c ---- */
/* loss[r] = -log softmax(z_r)[target r] of every row not ignored, and the
 * rows' softmax into probs (may be NULL): ag_cross_entropy_row's math. */
void ag_fast_cross_entropy(const ag_real *z, const int *targets, ag_real *probs, double *loss,
                           size_t rows, size_t C);
/* One row at vector level `level` (ag_cpu_row_level(); 0: the plain row). */
double ag_fast_cross_entropy_row(const ag_real *z, size_t C, int target, ag_real *probs, int level);

/* ---- optim.c ---- */
/* ag_adam_update of every parameter (state: m and v of parameter i at 2 i
 * and 2 i + 1); returns 1 when every new value is finite. */
int ag_fast_adam(ag_tensor *const *params, size_t n, ag_real *const *state,
                 const ag_adam_consts *c);
/* The sum of every gradient element's square, in double: taken in chunks
 * of AG_CLIP_GRAIN elements (threads.h, ag_params_range), each piece's by
 * square_sums.h. */
#define AG_CLIP_GRAIN 16384
double ag_fast_grad_sq_sum(ag_tensor *const *params, size_t n);
/* Every gradient element times scale. */
void ag_fast_grad_scale(ag_tensor *const *params, size_t n, double scale);
/* ---- weigh.c ---- */
/* Two sets of gradients of the same parameters' shapes, made by two parts
 * of a batch, weighed into one: a[i]'s = wa a[i]'s + wb b[i]'s, b[i]'s
 * zeroed. Returns the new sum of squares, the same bits as
 * ag_fast_grad_sq_sum of a afterwards (taken in the same pass). */
double ag_fast_grad_weigh(ag_tensor *const *a, ag_tensor *const *b, size_t n, ag_real wa,
                          ag_real wb);

#endif /* AG_KERNELS_H */
