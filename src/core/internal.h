/*
 * internal.h - the library's private structures: the arena, the tape and its
 * entries, the op descriptor, and helpers shared by the op files. Not installed.
 */
#ifndef AG_INTERNAL_H
#define AG_INTERNAL_H

#include "alloc.h"
#include "attograd.h"

#include <stdarg.h>

#define AG_MAX_INPUTS 5

/* libm in the build's precision */
#ifdef AG_REAL_DOUBLE
#define AG_EXP exp
#define AG_LOG log
#define AG_SQRT sqrt
#else
#define AG_EXP expf
#define AG_LOG logf
#define AG_SQRT sqrtf
#endif
#define AG_ALIGN 64 /* arena allocations start on a cache line */

/* ---- ops ---- */
typedef struct ag_entry ag_entry;
typedef void (*ag_backward_fn)(ag_tape *tape, const ag_entry *e);

/* What an op is, for the tape: each op file defines its own descriptor
 * (static const, beside its forward and backward) and its entries point at
 * it, so adding an op touches no central list. */
enum {
    AG_OP_MASKS = 1 << 0, /* its output may hold -inf on purpose (the anomaly check allows it) */
    AG_OP_SHOWS_ARG = 1 << 1, /* its entry's arg is worth showing (ag_tape_entry) */
};
/* Input i in an ag_op's first_write. */
#define AG_INPUT(i) (1u << (i))
typedef struct ag_op {
    const char *name;
    ag_backward_fn backward; /* NULL for entries without inputs */
    unsigned flags;          /* AG_OP_* */
    unsigned first_write;    /* AG_INPUT(i): backward asks ag_grad_first before writing
                                input i's gradient; the tape zeroes the others' when unset */
} ag_op;

/* Tensors made from data (ag_tensor_from and friends): no backward. */
extern const ag_op ag_op_leaf;

/* One tape entry: an op with its inputs, output and saved arguments. */
struct ag_entry {
    const ag_op *op; /* what made the output */
    int n_in;
    ag_tensor *in[AG_MAX_INPUTS]; /* borrowed; may be tape tensors or parameters */
    ag_tensor *out;               /* a tape tensor */
    double arg;                   /* the op's scalar argument (scale's c, ...) */
    int iarg;                     /* the op's integer argument (heads, ...) */
    void *saved;                  /* op-specific data in the arena, or NULL */
};

/* One block of the arena. */
typedef struct ag_block {
    struct ag_block *next;
    size_t cap, used;   /* bytes */
    unsigned char *mem; /* (cap) bytes, AG_ALIGN-aligned */
} ag_block;

/* The memory of a step (arena.c): a chain of blocks handed out by bumping
 * a pointer, rewound at once by a reset. */
typedef struct ag_arena {
    ag_block *first, *cur; /* cur is where allocation happens */
    size_t n_blocks;
    size_t used; /* bytes handed out since the last rewind */
    size_t peak; /* the most bytes one step has used */
} ag_arena;

struct ag_tape {
    ag_entry *entries; /* (cap_entries) */
    size_t n_entries, cap_entries;
    ag_arena arena;   /* every tape tensor and saved buffer of the step */
    int backward_ran; /* ag_backward has run since the last reset */
    ag_status status;
    char error[256];
    ag_bug bug;         /* AG_BUG_NONE but on ag_gradcheck's tape (opts.bug) */
    int detect_anomaly; /* check every op's output for NaN/Inf */
};

/* A tensor the tape made (ag_tensor_make: op outputs, ag_tensor_new,
 * ag_tensor_from): the public struct, then what only the tape keeps about
 * it. Nodes live in the tape's arena; parameters are not nodes. */
typedef struct ag_node {
    ag_tensor t;    /* first: a node's address is its tensor's */
    int grad_unset; /* t.grad not written yet in this backward, so it means 0 */
} ag_node;

/* t's node when this tape made t (t lies in its arena), else NULL. */
ag_node *ag_tape_node(const ag_tape *tape, const ag_tensor *t);

/* ---- errors (error.c) ---- */
/* Format a one-line message into err (when err is not NULL and errlen > 0)
 * and return status, so that a function reports a failure with
 * `return ag_err(AG_ERR_ARG, err, errlen, "...", ...)`. The library's one
 * formatter of messages into a caller's buffer. */
ag_status ag_err(ag_status status, char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- arena (arena.c) ---- */
/* Uninitialised memory from the tape's arena, AG_ALIGN-aligned, valid until
 * the next reset. NULL (and AG_ERR_NOMEM on the tape) on failure. */
void *ag_arena_alloc(ag_tape *tape, size_t bytes);
/* Rewind: every block is free again. A step that needed several blocks
 * gets one the size of the peak, so that the next step of the same shape
 * calls malloc zero times. */
void ag_arena_rewind(ag_arena *a);
void ag_arena_free(ag_arena *a);
/* Whether p points into one of a's blocks. */
int ag_arena_owns(const ag_arena *a, const void *p);

/* ---- optimizers ---- */
/* Whether opt's last step is known to have left every parameter finite
 * (AdamW checks as it writes them), so that a trainer can skip scanning
 * them with ag_first_nonfinite_param; 0 when not known. */
int ag_optim_left_finite(const ag_optim *opt);

/* ---- anomaly detection ---- */
/* Check entry k's output for NaN/Inf; returns 0 with AG_ERR_NUMERIC set. */
int ag_anomaly_check_entry(ag_tape *tape, size_t k);

/* ---- size arithmetic ---- */
/* a * b into *out; returns 0 on overflow. */
int ag_mul_size(size_t a, size_t b, size_t *out);
/* Product of shape; returns 0 for a bad shape (ndim out of range, a dim < 1)
 * or overflow of bytes as ag_real. */
int ag_shape_size(int ndim, const int *shape, size_t *size);

/* ag_shape_str for a shape not (yet) in a tensor, e.g. one a caller asked
 * for: "[2x3]", or "ndim 7" / "NULL" for a bad one. Returns buf. */
char *ag_dims_str(int ndim, const int *shape, char *buf, size_t len);

/* ---- the first write into an op output's gradient ----
 * An op output's gradient is not zeroed when the output is made: the first
 * op to write it in backward stores its contribution instead of adding it
 * (saving a pass over memory per buffer, megabytes per GPT step). The tape
 * marks such a buffer unset (its node's grad_unset); before running a
 * backward it zeroes the unset gradients of the entry's inputs, except
 * those in the op's first_write, for which backward asks ag_grad_first
 * right before writing the gradient: 1 means "this buffer holds garbage:
 * store", 0 "add as usual". Either way the mark is gone afterwards. */
int ag_grad_first(ag_tape *tape, ag_tensor *t);
/* Whether t's gradient is still unset (nothing wrote it yet): it means 0. */
int ag_grad_is_unset(const ag_tape *tape, const ag_tensor *t);
/* Zero t's gradient if it is still unset (nothing wrote it). */
void ag_grad_settle(ag_tape *tape, ag_tensor *t);

/* ---- making op outputs ---- */
/* A tape tensor of the given shape; zeroed data when zero_data. Gets a
 * gradient buffer when needs_grad, marked grad_unset (not zeroed: see
 * ag_grad_first). NULL (with the error set) on failure. */
ag_tensor *ag_tensor_make(ag_tape *tape, int ndim, const int *shape, int zero_data, int needs_grad);
/* Append an entry; returns it, or NULL (error set) when out of memory. */
ag_entry *ag_tape_push(ag_tape *tape, const ag_op *op, ag_tensor *out, int n_in,
                       const ag_tensor *const *in);
/* Shared argument checks for an op: the tape is usable, no input is NULL
 * and, with anomaly detection on, the previous entry's output is finite.
 * Returns 0 (the error set, or already there) when the op must return NULL. */
int ag_op_begin(ag_tape *tape, const char *op, int n_in, const ag_tensor *const *in);
/* Whether any input carries a gradient. */
int ag_any_grad(int n_in, const ag_tensor *const *in);
/* Rows of a tensor when its last axis is taken as columns. */
size_t ag_rows(const ag_tensor *t);

/* How a matmul's operands line up, as ag_gemm_batched takes them: batch
 * products of (m x k) (k x n), a's, b's and the output's blocks each
 * following the last. When b is 2-D it is shared by every batch index, so
 * a's leading dims fold into m: one product, batch 1. */
typedef struct ag_matmul_plan {
    size_t batch;   /* products */
    size_t m, k, n; /* m: rows of a per product */
} ag_matmul_plan;

/* Check shapes for a @ b (b_transposed: a @ b^T), fill plan and the output
 * shape (a's, with the last dim n). Returns 0 with the tape error set. */
int ag_matmul_check(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b,
                    int b_transposed, ag_matmul_plan *plan, int *out_shape);
/* Check that b broadcasts against a (b's shape is a's trailing dims). */
int ag_broadcast_check(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b);

/* ---- shared by ops ---- */
/* Which vector kernel ag_softmax_row may use on this CPU, 0 for none (ask
 * once per op and pass it on). */
int ag_softmax_simd(void);
/* s = softmax(z) over one row of n, stable and NaN-free as ag_softmax
 * documents; s may be z (in place). */
void ag_softmax_row(const ag_real *z, ag_real *s, size_t n, int simd);
/* y = erf(x) for n values (gelu.c): simd 1 or 2 (at most ag_softmax_simd(),
 * the same CPU check) picks the float build's AVX2 or AVX-512 kernel, 0
 * libm. Exposed for the tests. */
void ag_erf_n(const ag_real *x, ag_real *y, size_t n, int simd);

/*
 * The attention layer as one op (src/ops/attention_fused.c): out = O wo with
 * O the heads' softmax(Q K^T / sqrt(dh)) V merged, Q = x wq, K = x wk,
 * V = x wv. The same math as the op-by-op layer, computed tile by tile
 * without (B,H,T,T) intermediates. When p_out is not NULL it receives the
 * weights P (B,H,T,T), made for the caller (backward does not use them), a
 * tensor without gradient. x is (B,T,d), the weights (d,d); heads divides d.
 */
ag_tensor *ag_attention_fused(ag_tape *tape, const ag_tensor *x, const ag_tensor *wq,
                              const ag_tensor *wk, const ag_tensor *wv, const ag_tensor *wo,
                              int heads, int causal, ag_tensor **p_out);

#endif /* AG_INTERNAL_H */
