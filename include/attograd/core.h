/*
 * attograd/core.h - the core: tensors, the tape, every op with its formula,
 * the backward pass, reading a step, the kernels and threads that run it,
 * and the finite-difference gradient check. Included by attograd.h; needs
 * nothing else.
 */
#ifndef ATTOGRAD_CORE_H
#define ATTOGRAD_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef AG_REAL_DOUBLE
typedef double ag_real;
#define AG_REAL_NAME "double"
#else
typedef float ag_real;
#define AG_REAL_NAME "float"
#endif

#define AG_MAX_DIMS 4

/* Status codes. AG_OK is zero; every failure is non-zero. */
typedef enum ag_status {
    AG_OK = 0,
    AG_ERR_SHAPE,   /* shapes do not fit the op */
    AG_ERR_ARG,     /* a bad argument: NULL, out of range, a shape whose size overflows */
    AG_ERR_NOMEM,   /* allocation failed */
    AG_ERR_IO,      /* a file could not be read or written */
    AG_ERR_FORMAT,  /* a file's contents are malformed */
    AG_ERR_NUMERIC, /* a value went NaN or infinite */
    AG_ERR_STOPPED  /* ag_interrupt asked the work to stop */
} ag_status;

/* A short name for a status ("shape", "nomem", ...). */
const char *ag_status_name(ag_status status);

/* ------------------------------------------------------------------------
 * Stopping and progress (process-wide). ag_interrupt() may be called from a
 * signal handler: every op about to run, every backward pass (between two
 * entries) and every long loop of the library then fails with
 * AG_ERR_STOPPED, until ag_interrupt_clear(). A step stopped this way
 * changes no weight. The long loops (reading a text, a validation pass,
 * sampling, writing a file) call the progress hook now and then with what
 * they do ("validation"), how much is done and the whole, in their own
 * units; NULL removes the hook.
 * ------------------------------------------------------------------------ */
void ag_interrupt(void); /* async-signal-safe */
int ag_interrupted(void);
void ag_interrupt_clear(void);
typedef void (*ag_progress_fn)(void *ctx, const char *what, double done, double total);
/* Not synchronised: set it before other threads use the library. */
void ag_progress_set(ag_progress_fn fn, void *ctx);
/* For long loops: tell the hook, and return AG_ERR_STOPPED when
 * interrupted (AG_OK otherwise). */
ag_status ag_progress_report(const char *what, double done, double total);

/* ------------------------------------------------------------------------
 * Tensors: row-major, 1..4 dimensions.
 * ------------------------------------------------------------------------ */
typedef struct ag_tensor {
    int ndim;               /* 1..AG_MAX_DIMS */
    int shape[AG_MAX_DIMS]; /* entries past ndim are 1 */
    size_t size;            /* number of elements: product of shape */
    ag_real *data;          /* (size) values, row-major */
    ag_real *grad;          /* (size) dL/d(data), or NULL when no gradient flows here */
} ag_tensor;

/* The tape: a Wengert list of the ops of one step, and the arena they use. */
typedef struct ag_tape ag_tape;

ag_tape *ag_tape_new(void);       /* NULL when out of memory */
void ag_tape_free(ag_tape *tape); /* ag_tape_free(NULL) does nothing */
/* Forget every entry and release every tensor of the step (O(1), memory is
 * kept for the next step); clears the error. Invalidates all tape tensors. */
void ag_tape_reset(ag_tape *tape);
ag_status ag_tape_status(const ag_tape *tape);
const char *ag_tape_error(const ag_tape *tape); /* "" when there is none */
size_t ag_tape_size(const ag_tape *tape);       /* number of entries */
/* The most arena bytes (tensors, gradients, saved data) one step has used
 * since the tape was made: the step's memory beyond parameters and
 * optimizer state. */
size_t ag_tape_peak_bytes(const ag_tape *tape);

/* Record an error on the tape from outside an op (kept only if it is the
 * first). Returns the tape's status afterwards. */
ag_status ag_tape_fail(ag_tape *tape, ag_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A tape tensor of zeros (shape copied), or NULL on error. Borrowed from the tape. */
ag_tensor *ag_tensor_new(ag_tape *tape, int ndim, const int *shape);
/* A tape tensor holding a copy of data (shape's product elements). */
ag_tensor *ag_tensor_from(ag_tape *tape, int ndim, const int *shape, const ag_real *data);
/* Give a tape tensor a zeroed gradient buffer so that backward fills it
 * (for example dL/dx of an input). Call it before using t in an op: an op
 * decides when it runs whether its output carries a gradient. Returns t, or
 * NULL on error. */
ag_tensor *ag_requires_grad(ag_tape *tape, ag_tensor *t);

/* A parameter: a tensor with a gradient, owned by the caller (not the tape).
 * Data and gradient start at zero. NULL on a bad shape or out of memory. */
ag_tensor *ag_param_new(int ndim, const int *shape);
void ag_param_free(ag_tensor *param); /* ag_param_free(NULL) does nothing */
void ag_zero_grad(ag_tensor *const *params, size_t n);

/* Shape helpers. ag_shape_str writes "[2x3]" into buf and returns buf. */
int ag_same_shape(const ag_tensor *a, const ag_tensor *b);
char *ag_shape_str(const ag_tensor *t, char *buf, size_t len);
/* Element i of t (row-major) as its indices, "[2][3]", into buf; returns
 * buf ("" when i is beyond t's size). */
char *ag_index_str(const ag_tensor *t, size_t i, char *buf, size_t len);

/* Print in the numpy style with the given decimals:
 * [[0.40 0.20 0.40]
 *  [0.20 0.40 0.40]] */
void ag_tensor_print(FILE *f, const ag_tensor *t, int decimals);
/* The same for the gradient (prints "None" when there is none). */
void ag_tensor_print_grad(FILE *f, const ag_tensor *t, int decimals);

/* ------------------------------------------------------------------------
 * Random numbers: a small seeded generator (splitmix64). The same seed gives
 * the same numbers on every machine.
 * ------------------------------------------------------------------------ */
typedef struct ag_rng {
    uint64_t state;
} ag_rng;

ag_rng ag_rng_new(uint64_t seed);
uint64_t ag_rng_next(ag_rng *rng);              /* 64 random bits */
double ag_rng_uniform(ag_rng *rng);             /* in [0, 1) */
double ag_rng_normal(ag_rng *rng);              /* mean 0, standard deviation 1 */
uint32_t ag_rng_below(ag_rng *rng, uint32_t n); /* in [0, n), unbiased; 0 when n == 0 */
void ag_fill_normal(ag_tensor *t, ag_rng *rng, double mean, double std);
void ag_fill_uniform(ag_tensor *t, ag_rng *rng, double lo, double hi);

/* ------------------------------------------------------------------------
 * Ops. Each records one tape entry and returns a new tape tensor, or NULL
 * (with the tape's error set) when an input is NULL or the shapes do not
 * fit. The output has a gradient buffer exactly when some input has one.
 * Integer inputs (ids, targets) are plain int arrays, copied into the
 * tape's arena: the caller's array may be reused as soon as the op returns.
 * Each line below gives the op's formula; the backward is in its file,
 * src/ops/NAME.c, right under the forward.
 * ------------------------------------------------------------------------ */

/* ---- products and shapes ---- */
/* C = A B. a (..., m, k); b (k, n), shared by every leading index, or
 * (..., k, n) with a's leading dims. Out (..., m, n). */
ag_tensor *ag_matmul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* C = A B^T without copying B^T: a (..., m, k); b (n, k) or (..., n, k).
 * Out (..., m, n). Q K^T is ag_matmul_bt(tape, q, k). */
ag_tensor *ag_matmul_bt(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* out[..., j, i] = a[..., i, j]: the last two axes swapped (ndim >= 2). */
ag_tensor *ag_transpose(ag_tape *tape, const ag_tensor *a);
/* The same elements in the same order under a new shape (ndim dims, the
 * same count): (B,T,2*C) -> (B,T,2,C). A copy; shape is borrowed. */
ag_tensor *ag_reshape(ag_tape *tape, const ag_tensor *a, int ndim, const int *shape);
/* (B,T,d) -> (B,H,T,dh), dh = d / H: head h holds columns h*dh .. h*dh+dh-1.
 * n_heads must divide d. A copy. */
ag_tensor *ag_split_heads(ag_tape *tape, const ag_tensor *x, int n_heads);
/* (B,H,T,dh) -> (B,T,H*dh): the heads concatenated back in order. */
ag_tensor *ag_merge_heads(ag_tape *tape, const ag_tensor *x);
/* out = table[ids]: rows of table (V,d) by id; ids has shape (1..3 dims,
 * e.g. (B,T)), each in [0, V); out is shape + (d). Backward adds each row's
 * gradient into the row it came from. ids and shape are copied. */
ag_tensor *ag_embedding(ag_tape *tape, const ag_tensor *table, const int *ids, int ndim,
                        const int *shape);

/* ---- elementwise ---- */
/* out = c a, for a constant c. */
ag_tensor *ag_scale(ag_tape *tape, const ag_tensor *a, double c);
/* out = a + b. b has a's shape, or that of a's trailing dims, broadcast
 * over the leading ones ((B,T,d) + (T,d), (B,T,d) + (d)). */
ag_tensor *ag_add(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* out = a * b elementwise, broadcast as ag_add. */
ag_tensor *ag_mul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* out = max(x, 0) (a NaN stays NaN); dout/dx is 1 where x > 0, else 0. */
ag_tensor *ag_relu(ag_tape *tape, const ag_tensor *x);
/* out = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, GELU exact (PyTorch's
 * default); dout/dx = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi). */
ag_tensor *ag_gelu(ag_tape *tape, const ag_tensor *x);
/* out = x * keep / (1 - p), keep ~ Bernoulli(1 - p): inverted dropout, so
 * the expected output is x; p in [0, 1] (1 drops everything). The mask
 * depends only on rng's state and x's size (one ag_rng_next per call,
 * whatever the thread count). p = 0 returns x itself (no entry, no copy;
 * rng may be NULL); rng NULL with p > 0 is an error. */
ag_tensor *ag_dropout(ag_tape *tape, const ag_tensor *x, double p, ag_rng *rng);

/* ---- over the last axis ---- */
/* out_i = exp(a_i - max) / sum_j exp(a_j - max), stable: -inf entries get
 * weight 0; a row that is all -inf gives zeros and zero gradient. */
ag_tensor *ag_softmax(ag_tape *tape, const ag_tensor *a);
/* out[..., i, j] = j > i ? -inf : a[..., i, j] over the last two axes
 * (..., T, T); the masked entries get no gradient. */
ag_tensor *ag_causal_mask(ag_tape *tape, const ag_tensor *a);
#define AG_LAYERNORM_EPS 1e-5
/* out = (x - mean) / sqrt(var + AG_LAYERNORM_EPS) * weight + bias, mean and
 * biased var over each row of x (..., C): PyTorch's LayerNorm(C). weight
 * and bias are (C) or NULL (scale 1, shift 0: a GPT's bias-free layer norm
 * is ag_layernorm(tape, x, weight, NULL)). Backward works from each row's
 * saved mean and 1/std. */
ag_tensor *ag_layernorm(ag_tape *tape, const ag_tensor *x, const ag_tensor *weight,
                        const ag_tensor *bias);

/* ---- reductions and losses: out has one element, shape (1) ---- */
/* out = sum_i a_i. */
ag_tensor *ag_sum(ag_tape *tape, const ag_tensor *a);
/* out = sum_i a_i / n. */
ag_tensor *ag_mean(ag_tape *tape, const ag_tensor *a);
/* out = mean over every element of (pred - target)^2. */
ag_tensor *ag_mse(ag_tape *tape, const ag_tensor *pred, const ag_tensor *target);
/* A target that ag_cross_entropy skips: the row adds nothing and is not
 * counted in the mean. */
#define AG_IGNORE_INDEX (-1)
/* out = mean over counted rows of logsumexp(z) - z[target]: softmax
 * cross-entropy, fused and stable. logits (..., C); one target per row
 * (n_targets = the rows, the product of the leading dims), each in [0, C)
 * or AG_IGNORE_INDEX; 0 when every row is ignored. dz = (softmax(z) -
 * onehot(target)) / rows * dout. targets is copied. */
ag_tensor *ag_cross_entropy(ag_tape *tape, const ag_tensor *logits, const int *targets,
                            size_t n_targets);

/* ------------------------------------------------------------------------
 * Backward.
 * ------------------------------------------------------------------------ */

/* Seed dL/dL = 1 and walk the tape in reverse; every op adds its
 * contribution into its inputs' gradients. Parameters and tape inputs with a
 * gradient accumulate (+=) across calls until ag_zero_grad; the step's
 * intermediate gradients start from zero on every call. loss must have one
 * element. Entries whose
 * output carries no gradient are skipped. Returns the tape's status: an
 * earlier op's error is reported here. */
ag_status ag_backward(ag_tape *tape, ag_tensor *loss);

/* Anomaly detection. When on, every op first checks that the op before it
 * produced no NaN or Inf (a causal mask's -inf is intended), so the tape
 * stops with AG_ERR_NUMERIC at the first bad value, naming the op; backward
 * then also checks every gradient. Off by default: it reads every output. */
void ag_tape_detect_anomaly(ag_tape *tape, int on);
/* Reusing gradient buffers. When on, backward hands the buffer of each
 * intermediate gradient it is done with (an op output's, once that op's
 * backward has run) to the next one of the same size it writes, and the memory
 * an op's backward takes for itself is free again for the next op's, so a step
 * writes into memory still in cache instead of fresh buffers: a GPT step runs
 * a few percent faster, and holds less. The parameters' and inputs' gradients
 * are the same bits, and the loss's stays 1; the op outputs' gradients are not
 * kept (their grad buffers hold leftovers: do not read them), so
 * ag_tape_find_anomaly finds nothing among them: to search, run backward again
 * with reuse off first. The GPT trainer turns it on. Off by default; while
 * anomaly detection is on (it reads every gradient), backward keeps them all. */
void ag_tape_reuse_grads(ag_tape *tape, int on);
/* After the fact: scan the step's values in forward order, then its
 * gradients in backward order; the first NaN or Inf is recorded as the
 * tape's error (naming the op) and its status returned. AG_OK if none. */
ag_status ag_tape_find_anomaly(ag_tape *tape);
/* The index of the first NaN or Inf among v[0..n), or n when every value is
 * finite (also when v is NULL): for checking weights or inputs before
 * trusting them, and saying where the bad one is. */
size_t ag_first_nonfinite(const ag_real *v, size_t n);
/* The same over parameters (each's data): the index of the first one that
 * holds a NaN or Inf, with *elem its element, or -1 when all are finite. For
 * checking the weights after an update. */
long ag_first_nonfinite_param(ag_tensor *const *params, size_t n, size_t *elem);

/* ------------------------------------------------------------------------
 * Reading the tape, to print or draw a step (read-only). Entry 0 is the
 * first op recorded; data made with ag_tensor_new/ag_tensor_from is an entry
 * of its own, named "leaf", with no inputs. Parameters are not entries: they
 * appear only as inputs.
 *
 *     ag_entry_info e;
 *     for (size_t k = 0; ag_tape_entry_info(tape, k, &e) == AG_OK; k++)
 *         printf("%s -> %s\n", e.op, ag_shape_str(e.out, buf, sizeof(buf)));
 * ------------------------------------------------------------------------ */
#define AG_ENTRY_MAX_INPUTS 5

typedef struct ag_entry_info {
    const char *op;                           /* "matmul", "softmax", ..., "leaf" */
    int n_in;                                 /* 0..AG_ENTRY_MAX_INPUTS */
    const ag_tensor *in[AG_ENTRY_MAX_INPUTS]; /* borrowed; unused slots NULL */
    const ag_tensor *out;                     /* borrowed, a tape tensor */
    double arg;                               /* scale's factor; 0 for other ops */
} ag_entry_info;

/* Fill *info with entry k of the tape. AG_ERR_ARG (info untouched) when tape
 * or info is NULL or k >= ag_tape_size(tape). The pointers stay valid until
 * the tape is reset or freed. */
ag_status ag_tape_entry_info(const ag_tape *tape, size_t k, ag_entry_info *info);
/* The entries that take t as an input, in tape order (an entry that takes
 * it twice counts once): the first max of their indices into entries (may
 * be NULL), and how many there are. Backward sends t a gradient from each
 * and sums them. 0 for a NULL tape or t. */
size_t ag_tape_consumers(const ag_tape *tape, const ag_tensor *t, size_t *entries, size_t max);

/* A name to draw for a tensor (borrowed pointers). */
typedef struct ag_tensor_name {
    const ag_tensor *t;
    const char *name;
} ag_tensor_name;

/* Write the step as a Graphviz digraph to f (borrowed; not closed), for
 * `dot -Tpng FILE -o tape.png`. Each tensor is a box with its name (from
 * names, else "tN"), its shape, its first values (up to 3 rows of 4) and its
 * gradient, so that after ag_backward the drawing shows the backward pass
 * too; tensors without a gradient say so and are grey, parameters (tensors
 * no entry made) are yellow. Each entry but a leaf is an oval naming its op
 * (with scale's factor), with edges from its inputs (labelled a, b, ... when
 * there are several) and to its output. title may be NULL. The tape is only
 * read. AG_ERR_ARG for a NULL tape or f (or names with n_names > 0),
 * AG_ERR_NOMEM, AG_ERR_IO when f reports a write error. */
ag_status ag_tape_dot(const ag_tape *tape, FILE *f, const ag_tensor_name *names, size_t n_names,
                      const char *title);

/* ------------------------------------------------------------------------
 * Threads. Large matrix products are split over a small pool of worker
 * threads (started by ag_set_threads, kept between calls; tiny products stay
 * on the caller's thread). Results are bit-identical for every thread count.
 * ------------------------------------------------------------------------ */

/* Use n threads in all, the caller included (default 1; n < 1 means 1, at
 * most 256). ag_set_threads(1) stops and frees the pool; it is also freed at
 * exit. ag_get_threads returns the number set. */
void ag_set_threads(int n);
int ag_get_threads(void);

/* The matrix-multiply kernel every matmul forward and backward goes through
 * (BLAS's sgemm/dgemm in the build's precision, row-major, without the
 * Fortran):
 *   C = alpha * op(A) op(B) + beta * C
 *   op(A) is (M x K): A itself with row stride lda when !trans_a, otherwise
 *   A is stored (K x M) and transposed on the fly.
 *   op(B) is (K x N): likewise with trans_b and ldb.
 *   C is (M x N) with row stride ldc. When beta == 0, C is only written
 *   (it may hold anything, NaN included, beforehand).
 * Borrows every pointer; C must not alias A or B. Large products are split
 * over the threads of ag_set_threads; the result is bit-identical for every
 * thread count. */
void ag_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
             const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta, ag_real *C,
             size_t ldc);
/* The micro-kernel in use: "generic" (portable C), "avx2" (AVX2+FMA) or
 * "avx512" (AVX-512F), the best this CPU runs unless the environment
 * variable AG_GEMM (read at the first ag_gemm) names another. */
const char *ag_gemm_kernel_name(void);

/* ------------------------------------------------------------------------
 * Kernels: which code computes the ops. "fast" (the default) is the fast
 * path of src/kernels: blocked, packed products, vector rows, attention
 * tiles, threads. "reference" is the plain loops of src/core/ref_*.c and
 * of the op files, on one thread: short, written to be read, and the oracle
 * the tests hold the fast path to; the two agree to rounding. The choice is
 * the whole process's: the environment variable AG_KERNELS (fast or
 * reference) sets it when first asked; ag_set_kernels changes it between
 * steps (an op's backward runs the kernels its forward ran).
 * ------------------------------------------------------------------------ */
/* "fast" or "reference"; AG_ERR_ARG (nothing changed) for another name. */
ag_status ag_set_kernels(const char *name);
const char *ag_kernels_name(void); /* "fast" or "reference" */

/* The reference kernels themselves, for reading and for checking others. */
/* ag_gemm's contract, three loops, each element summed in double. */
void ag_ref_gemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, ag_real alpha,
                 const ag_real *A, size_t lda, const ag_real *B, size_t ldb, ag_real beta,
                 ag_real *C, size_t ldc);
/* s = softmax(z) over one row of n, stable, as ag_softmax; s may be z. */
void ag_ref_softmax(const ag_real *z, ag_real *s, size_t n);
/* dz += s (ds - <ds, s>): softmax's backward for one row, s its output. */
void ag_ref_softmax_backward(const ag_real *s, const ag_real *ds, ag_real *dz, size_t n);
/* y = x Phi(x), and dx += dy (Phi(x) + x phi(x)), for n values. */
void ag_ref_gelu(const ag_real *x, ag_real *y, size_t n);
void ag_ref_gelu_backward(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n);
/* One row of C: y = (x - mean) rstd w + b (w, b may be NULL: 1, 0), and
 * stats[0] = mean, stats[1] = rstd = 1 / sqrt(var + AG_LAYERNORM_EPS). */
void ag_ref_layernorm(const ag_real *x, const ag_real *w, const ag_real *b, ag_real *y,
                      ag_real *stats, size_t C);
/* Its backward from the row's stats: dx += (may be NULL), dw += and db +=
 * (each may be NULL). */
void ag_ref_layernorm_backward(const ag_real *x, const ag_real *w, const ag_real *stats,
                               const ag_real *dy, ag_real *dx, ag_real *dw, ag_real *db, size_t C);
/* One head of attention: for each query i, s_j = <q_i, k_j> / sqrt(dh) (j >
 * i masked when causal), P_i = softmax(s), o_i = sum_j P_ij v_j. q, k, v
 * and o are (T, dh) with rows ld apart (a head's columns of (T, d) rows:
 * ld = d); p (T, T) receives the weights, or is NULL; scratch holds T
 * reals. */
void ag_ref_attention_head(const ag_real *q, const ag_real *k, const ag_real *v, size_t ld,
                           size_t T, size_t dh, int causal, ag_real *o, ag_real *p,
                           ag_real *scratch);
/* Its backward from d_o (laid out as o): dq, dk, dv += the gradients (P
 * recomputed); scratch holds 3 T reals. */
void ag_ref_attention_head_backward(const ag_real *q, const ag_real *k, const ag_real *v,
                                    const ag_real *d_o, size_t ld, size_t T, size_t dh, int causal,
                                    ag_real *dq, ag_real *dk, ag_real *dv, ag_real *scratch);

/* How many heap allocations the library has made since the program started
 * (tape and arena blocks, parameters, optimizer state, layers, positional
 * encodings, models, batches, the gradient checker's weights, the thread
 * pool and its matmul buffers; not the file readers and writers). Thread-safe.
 * The difference over a stretch of training steps is the steps'
 * allocations: once the first step has sized the arena, a step of the same
 * shape makes none. */
size_t ag_alloc_count(void);

/* Timing a step, as `attograd bench` does. step runs one step and returns
 * 1, or 0 when it failed (keeping its own message). ag_time_steps runs it
 * 3 times to warm up (the arena reaches its steady size, the thread pool
 * and caches start), then steps times, each timed (steps 0: as many as take
 * about a second at the warm-up's pace, 5 to 2000). The results are
 * medians, so one slow step on a busy machine does not move them.
 * AG_ERR_ARG when a step failed (or a bad argument), AG_ERR_NOMEM. */
typedef int (*ag_step_fn)(void *ctx);
typedef struct ag_step_timing {
    int steps;          /* steps timed */
    double seconds;     /* median wall-clock time of a step */
    double cpu_seconds; /* median CPU time of a step, all threads together */
    double allocs;      /* ag_alloc_count's growth per timed step */
} ag_step_timing;
ag_status ag_time_steps(ag_step_fn step, void *ctx, int steps, ag_step_timing *out);
/* The median of v[0..n) (sorts v); 0 when n is 0. */
double ag_median(double *v, size_t n);

/* ------------------------------------------------------------------------
 * Finite-difference gradient check.
 * ------------------------------------------------------------------------ */

/* Builds a result on the tape from the inputs. When the result has more than
 * one element, the checker projects it onto fixed random weights (so a
 * wrong backward cannot hide behind, say, the constant sum of a softmax). */
typedef ag_tensor *(*ag_build_fn)(ag_tape *tape, ag_tensor *const *inputs, void *ctx);

/* Deliberately wrong backward formulas, to see a check fail: for teaching
 * (`attograd gradcheck --inject-bug softmax`) and for tests that prove a
 * check can fail. Only ag_gradcheck's private tape ever uses one. */
typedef enum ag_bug {
    AG_BUG_NONE = 0,
    AG_BUG_SOFTMAX = 1, /* softmax's backward drops the - <g, s> term: dz = s * g */
    AG_BUG_SCALE = 2    /* the backward of op bug_op adds every gradient 1.25 times over */
} ag_bug;

typedef struct ag_gradcheck_opts {
    double eps;         /* step h of the central differences D(h), D(2h), combined as
                          * (4 D(h) - D(2h)) / 3 (Richardson); 0 picks one for ag_real */
    double rtol;        /* max relative error allowed; 0 picks one for ag_real */
    double atol;        /* absolute floor for the relative error's denominator; 0 picks */
    size_t max_samples; /* per input, check at most this many random elements; 0 = all */
    uint64_t seed;      /* projection weights and sampling */
    ag_bug bug;         /* AG_BUG_NONE, or a wrong backward to check instead of the right one */
    const char *bug_op; /* AG_BUG_SCALE: the op it breaks (its entries' name, "matmul") */
    ag_real *const *numeric; /* NULL, or per input a buffer of its size (or NULL) that
                                * receives the finite-difference gradient of each element
                                * checked, to show beside the analytic one */
} ag_gradcheck_opts;

typedef struct ag_gradcheck_result {
    double max_abs;     /* max |analytic - numeric| (infinite when x + eps == x) */
    double max_rel;     /* max |analytic - numeric| / max(|analytic|, |numeric|, atol) */
    double tolerance;   /* the rtol used */
    int worst_input;    /* which input holds the worst element */
    size_t worst_index; /* its flat index */
    size_t checked;     /* elements compared */
    size_t total;       /* elements in all inputs */
    int passed;         /* max_rel <= tolerance */
} ag_gradcheck_result;

/* Default options for this build's precision: the step and the tolerances
 * below, max_samples 256, seed 1, no bug. */
ag_gradcheck_opts ag_gradcheck_defaults(void);
#ifdef AG_REAL_DOUBLE
#define AG_GRADCHECK_EPS 1e-4
#define AG_GRADCHECK_RTOL 1e-6
#define AG_GRADCHECK_ATOL 1e-3
#else
#define AG_GRADCHECK_EPS 2e-2
#define AG_GRADCHECK_RTOL 1e-2
#define AG_GRADCHECK_ATOL 1e-2
#endif
/* Compare the analytic gradient of every input (parameters: ag_param_new)
 * with central differences. Uses a private tape; inputs' data is restored and
 * their gradients are left holding the analytic gradient. Returns AG_OK when
 * the check ran (read result->passed), or the error that stopped it (the
 * build function's tape error is copied into err when err is not NULL). */
ag_status ag_gradcheck(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n_inputs,
                       const ag_gradcheck_opts *opts, ag_gradcheck_result *result, char *err,
                       size_t errlen);

/* The vector-Jacobian product, what a backward pass computes: y =
 * build(tape, inputs, ctx) on a private tape, then backward of L = <g, y>
 * (g: size values, y's element count). Each input's gradient is zeroed
 * first and then holds dL/dinput = g^T J; y's values go to y (size values;
 * may be NULL). AG_OK, or the error with the tape's message in err (a
 * result of another size: AG_ERR_SHAPE). */
ag_status ag_vjp(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n_inputs,
                 const ag_real *g, ag_real *y, size_t size, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* ATTOGRAD_CORE_H */
