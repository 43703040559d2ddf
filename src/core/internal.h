/*
 * internal.h - the library's private structures: the arena, the tape and its
 * entries, the op descriptor, and helpers shared by the op files. Not installed.
 */
#ifndef AG_INTERNAL_H
#define AG_INTERNAL_H

#include "alloc.h"
#include "attograd.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

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

/* A gradient buffer backward is done with (grad_reuse.c): size elements. */
typedef struct ag_spare {
    ag_real *buf;
    size_t size;
} ag_spare;

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

/* A point of the arena to come back to: what was handed out after it is
 * free again (blocks after cur are empty until cur moves on to them). */
typedef struct ag_arena_mark {
    ag_block *cur;
    size_t cur_used, used;
} ag_arena_mark;

struct ag_tape {
    ag_entry *entries; /* (cap_entries) */
    size_t n_entries, cap_entries;
    ag_arena arena;   /* every tape tensor and saved buffer of the step */
    int backward_ran; /* ag_backward has run since the last reset */
    ag_status status;
    char error[256];
    ag_bug bug;            /* AG_BUG_NONE but on ag_gradcheck's tape (opts.bug) */
    const char *bug_op;    /* AG_BUG_SCALE: the op whose backward is made wrong */
    int detect_anomaly;    /* check every op's output for NaN/Inf */
    int reuse_grads;       /* backward hands done-with gradient buffers on (grad_reuse.c) */
    ag_spare *spare;       /* (cap_spare) those buffers, free to take again */
    ag_arena_mark scratch; /* where the arena stood before an entry's backward */
    ag_real **own;         /* (cap_spare) entry k's output's own gradient buffer... */
    size_t n_own;          /* ...for the first n_own entries, when a backward reused them */
    size_t n_spare, cap_spare;
};

/* A tensor the tape made (ag_tensor_make: op outputs, ag_tensor_new,
 * ag_tensor_from): the public struct, then what only the tape keeps about
 * it. Nodes live in the tape's arena; parameters are not nodes. */
typedef struct ag_node {
    ag_tensor t;    /* first: a node's address is its tensor's */
    int grad_unset; /* t.grad not written yet in this backward, so it means 0 */
} ag_node;

/* Whether p points into one of a's blocks. Inline, as the mark's functions
 * that use it: backward asks them of every entry's tensors, and for a small
 * layer's step the calls cost more than the test. */
static inline int ag_arena_owns(const ag_arena *a, const void *p)
{
    uintptr_t x = (uintptr_t)p;
    for (const ag_block *b = a->first; b; b = b->next)
        if (x >= (uintptr_t)b->mem && x < (uintptr_t)b->mem + b->used)
            return 1;
    return 0;
}

/* t's node when this tape made t (t lies in its arena), else NULL. */
static inline ag_node *ag_tape_node(const ag_tape *tape, const ag_tensor *t)
{
    return ag_arena_owns(&tape->arena, t) ? (ag_node *)(void *)t : NULL;
}

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
static inline ag_arena_mark ag_arena_here(const ag_arena *a)
{
    return (ag_arena_mark){a->cur, a->cur ? a->cur->used : 0, a->used};
}
void ag_arena_back(ag_arena *a, ag_arena_mark m);

/* ---- optimizers ---- */
/* A twin of a parameter (ag_param_new): the same shape and the same data
 * (borrowed), with a zeroed gradient of its own, freed with ag_param_free.
 * Two halves of a batch can then run backward at once, each adding into
 * its own gradient (the GPT trainer's twin model). NULL when out of memory. */
ag_tensor *ag_param_twin(const ag_tensor *param);

/* ag_clip_grad_norm given the norm, measured elsewhere (the GPT trainer
 * measures it while it weighs its halves' gradients): the gradients scaled
 * by max_norm / norm when norm > max_norm > 0. Returns norm. */
double ag_clip_to(ag_tensor *const *params, size_t n, double max_norm, double norm);

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
static inline int ag_grad_first(ag_tape *tape, ag_tensor *t)
{
    ag_node *n = ag_tape_node(tape, t);
    if (!n)
        return 0;
    int first = n->grad_unset;
    n->grad_unset = 0;
    return first;
}

/* Whether t's gradient is still unset (nothing wrote it yet): it means 0. */
static inline int ag_grad_is_unset(const ag_tape *tape, const ag_tensor *t)
{
    const ag_node *n = ag_tape_node(tape, t);
    return n && n->grad_unset;
}

/* Zero t's gradient if it is still unset (nothing wrote it). */
static inline void ag_grad_settle(ag_tape *tape, ag_tensor *t)
{
    if (t->grad && ag_grad_first(tape, t))
        memset(t->grad, 0, t->size * sizeof(ag_real));
}

/* ---- reusing gradient buffers (grad_reuse.c) ----
 * When ag_tape_reuse_grads is on and ag_reuse_start says yes, backward's
 * walk calls ag_reuse_take before each entry (its unset input gradients
 * take spare buffers) and ag_reuse_give after it (its output's gradient
 * becomes one). A later backward on the same tape first gives every op
 * output its own buffer back: ag_reuse_undo. */
int ag_reuse_start(ag_tape *tape);
void ag_reuse_take(ag_tape *tape, const ag_entry *e);
void ag_reuse_give(ag_tape *tape, const ag_entry *e, const ag_tensor *loss);
void ag_reuse_undo(ag_tape *tape);

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

/* ---- which kernels: fast (src/kernels) or reference (ref_*.c) ---- */
/* 1 when the reference kernels are in use (choice.c; AG_KERNELS). */
int ag_reference_kernels(void);

/* ---- reference kernels shared with the fast ones (ref_*.c) ---- */
/* ag_ref_gemm over a batch, with ag_gemm_batched's strides (a stride of 0
 * shares an operand; stride_c 0 adds every product into one C). */
void ag_ref_gemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                         ag_real alpha, const ag_real *A, size_t lda, size_t stride_a,
                         const ag_real *B, size_t ldb, size_t stride_b, ag_real beta, ag_real *C,
                         size_t ldc, size_t stride_c);
/* ag_ref_softmax_backward, or with wrong the AG_BUG_SOFTMAX formula. */
void ag_softmax_backward_row(const ag_real *s, const ag_real *ds, ag_real *dz, size_t n, int wrong);
/* One row of softmax cross-entropy: returns logsumexp(z) - z[target] (in
 * double), and, when probs is not NULL, writes softmax(z) into it. */
double ag_cross_entropy_row(const ag_real *z, size_t C, int target, ag_real *probs);

/* MurmurHash3's 32-bit finaliser: a bijection whose every output bit
 * depends on every input bit. */
static inline uint32_t ag_fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}
/* Dropout's 32 random bits of element i under a call's key: two rounds of
 * ag_fmix32 keyed by the key's halves, the high half of i mixed into the
 * second. A pure function of i, so backward redraws the mask and any split
 * over threads draws the same one. */
static inline uint32_t ag_dropout_bits(uint64_t key, uint64_t i)
{
    uint32_t k1 = (uint32_t)(key >> 32) ^ ag_fmix32((uint32_t)(i >> 32));
    return ag_fmix32(ag_fmix32((uint32_t)i + (uint32_t)key) ^ k1);
}

/* Adam's constants for one step (src/optim/adam.c computes them in double). */
typedef struct ag_adam_consts {
    ag_real b1, a1, b2, a2; /* beta1, 1 - beta1, beta2, 1 - beta2 */
    ag_real step, rc2;      /* lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t) */
    ag_real eps, decay;     /* eps, lr * weight_decay */
} ag_adam_consts;

/*
 * One parameter's Adam update, the formula of adam.c with its per-step
 * constants folded in: m_hat / (sqrt(v_hat) + eps) = (1/c1) m / (sqrt(v) /
 * sqrt(c2) + eps). Returns 1 when a new value is NaN or Inf (x - x is 0
 * only for a finite x), which saves a second pass to check. No branch and
 * no call in the loop, so the compiler turns it into vector code.
 */
static inline int ag_adam_update(size_t n, ag_real *restrict p, const ag_real *restrict g,
                                 ag_real *restrict m, ag_real *restrict v, ag_real b1, ag_real a1,
                                 ag_real b2, ag_real a2, ag_real step, ag_real rc2, ag_real eps,
                                 ag_real decay)
{
    int bad = 0;
    for (size_t j = 0; j < n; j++) {
        ag_real gj = g[j];
        ag_real mj = b1 * m[j] + a1 * gj;        /* m = beta1 m + (1 - beta1) g */
        ag_real vj = b2 * v[j] + a2 * (gj * gj); /* v = beta2 v + (1 - beta2) g^2 */
        m[j] = mj;
        v[j] = vj;
        ag_real pj = p[j];
        ag_real pn = pj - decay * pj - step * mj / (AG_SQRT(vj) * rc2 + eps);
        p[j] = pn;
        bad |= !(pn - pn == 0);
    }
    return bad;
}

/*
 * The fused attention op (src/ops/attention_fused.c) as its kernels see
 * it: the inputs, and what forward keeps for backward. Two kernels compute
 * it, each whole: the reference (ref_attention.c: head by head, every row
 * of weights made) and the fast one (src/kernels/attention.c: tiles, no
 * (T,T) matrix, threads). Backward runs the kernel forward ran. Shapes: x
 * (B,T,d), the weights (d,d), H heads of dh = d / H.
 */
typedef struct ag_attn_op {
    size_t B, T, d, H;
    int causal;
    const ag_real *x, *wq, *wk, *wv, *wo; /* borrowed from the op's inputs */
    /* kept by forward, in its kernel's layout, in the arena: */
    ag_real *q, *k, *v; /* (B,T,d) rows, or in the fast kernel for d > 128 (B,H,T,dh) heads */
    ag_real *o;         /* (B,T,d): the heads' outputs side by side */
    ag_real *lse;       /* fast: (B,H,tpad) each query's log-sum-exp, in the tiles' unit */
    size_t tpad;        /* fast: T rounded up to the tiles' query block */
    const void *tiles;  /* fast: the tiles it ran (an ag_attn_kernel, attn_tile.h) */
    ag_real *w;         /* fast, short sequences (no tiles): the weights P, (B,H,T,T) */
    ag_real *pk;        /* fast, training on a sequence of one tile block whose tiles keep
                           the weights (ag_attn_kernel's kept): each head's weights P as its
                           tile, (B,H,tpad,tpad) (attn_tile.h); else NULL */
    int train;          /* backward will run: forward may keep more for it */
    int reference;      /* 1: the reference kernel ran forward */
} ag_attn_op;

/* Where attention's backward writes: a NULL buffer gets nothing. dx is
 * stored when dx_first (its first write, ag_grad_first), else added into;
 * the weights' gradients are added into. */
typedef struct ag_attn_grads {
    ag_real *dx;
    int dx_first;
    ag_real *dwq, *dwk, *dwv, *dwo;
    int wrong; /* AG_BUG_SOFTMAX: the softmax's - P P^T term dropped */
} ag_attn_grads;

/* ag_gemm's contract: ag_ref_gemm, or the fast ag_gemm a kernel passes in. */
typedef void (*ag_gemm_fn)(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
                           const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta,
                           ag_real *C, size_t ldc);

/* What every attention kernel's forward keeps, in the arena: a->q, k, v and
 * o, (B,T,d) each. AG_OK, or the arena's error (also the tape's). */
ag_status ag_attn_keep_rows(ag_tape *tape, ag_attn_op *a);
/* Q = x wq, K = x wk, V = x wv into a->q, k, v as rows, through gemm. */
void ag_attn_project(const ag_attn_op *a, ag_gemm_fn gemm);
/* The projections' backward for sequences b0 .. b0+nb-1, from the rows of
 * dQ, dK, dV there (dqkv, each (nb T, d)) times alpha[i] (alpha NULL: 1): dwq += alpha x^T dQ
 * and dx += alpha dQ wq^T, the same for K and V, through gemm. dx's rows
 * are stored by the first product when g->dx_first. */
void ag_attn_project_backward(const ag_attn_op *a, const ag_attn_grads *g, size_t b0, size_t nb,
                              const ag_real *const dqkv[3], const ag_real alpha[3],
                              ag_gemm_fn gemm);

ag_status ag_ref_attention_forward(ag_tape *tape, ag_attn_op *a, ag_real *out, ag_real *p);
ag_status ag_ref_attention_backward(ag_tape *tape, const ag_attn_op *a, const ag_real *dout,
                                    const ag_attn_grads *g);
/* ag_ref_attention_head_backward, or with wrong the AG_BUG_SOFTMAX formula. */
void ag_attention_head_backward(const ag_real *q, const ag_real *k, const ag_real *v,
                                const ag_real *d_o, size_t ld, size_t T, size_t dh, int causal,
                                ag_real *dq, ag_real *dk, ag_real *dv, ag_real *scratch, int wrong);

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
