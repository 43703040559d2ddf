/*
 * attograd.h - a small reverse-mode autograd in C, centered on attention.
 *
 * Attention is a soft lookup: compare a query with every key (dot products),
 * turn the scores into weights (softmax), return the weighted blend of the
 * values. Every step is differentiable, so the lookup can be learned. This
 * header is the whole public API.
 *
 * A worked example: f(W) = sum(x W) for x = [1 2], W = [[3] [4]].
 *
 *     ag_tape *tape = ag_tape_new();
 *     ag_tensor *w = ag_param_new(2, (int[]){2, 1});     // lives outside the tape
 *     w->data[0] = 3; w->data[1] = 4;
 *     ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
 *     ag_tensor *loss = ag_sum(tape, ag_matmul(tape, x, w));   // 1*3 + 2*4 = 11
 *     if (ag_backward(tape, loss) != AG_OK)
 *         fprintf(stderr, "%s\n", ag_tape_error(tape));
 *     // w->grad is now [1 2]: dL/dW = x^T
 *     ag_tape_reset(tape);   // releases x, the product and the loss at once
 *     ag_param_free(w);
 *     ag_tape_free(tape);
 *
 * Ownership: tensors made by ops or by ag_tensor_new/ag_tensor_from belong to
 * the tape and live until ag_tape_reset or ag_tape_free. Parameters
 * (ag_param_new) belong to the caller. Ops never take ownership of inputs.
 *
 * Errors: ops never abort. The first failure (bad shape, bad argument, out of
 * memory) is kept on the tape with a one-line message; every later op returns
 * NULL, so a caller may chain ops and check once, at ag_backward or with
 * ag_tape_status.
 *
 * Precision: ag_real is float unless the library was built with
 * AG_REAL_DOUBLE (make REAL=double); `pkg-config --cflags attograd` says which.
 */
#ifndef ATTOGRAD_H
#define ATTOGRAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AG_VERSION "0.1.0"

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
    AG_ERR_SHAPE,  /* shapes do not fit the op */
    AG_ERR_ARG,    /* a bad argument: NULL, out of range, a shape whose size overflows */
    AG_ERR_NOMEM,  /* allocation failed */
    AG_ERR_IO,     /* a file could not be read or written */
    AG_ERR_FORMAT, /* a file's contents are malformed */
    AG_ERR_NUMERIC /* a value went NaN or infinite */
} ag_status;

/* A short name for a status ("shape", "nomem", ...). */
const char *ag_status_name(ag_status status);

/* ------------------------------------------------------------------------
 * Tensors: row-major, 1..4 dimensions.
 * ------------------------------------------------------------------------ */
typedef struct ag_tensor {
    int ndim;               /* 1..AG_MAX_DIMS */
    int shape[AG_MAX_DIMS]; /* entries past ndim are 1 */
    size_t size;            /* number of elements: product of shape */
    ag_real *data;          /* (size) values, row-major */
    ag_real *grad;          /* (size) dL/d(data), or NULL when no gradient flows here */
    int grad_unset;         /* the tape's own: an op output's grad not written yet in this
                                 backward, so its contents mean 0 (see ag_backward) */
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
 * ------------------------------------------------------------------------ */

/* C = A B. a is (..., m, k); b is (k, n), shared by every leading index, or
 * (..., k, n) with the same leading dims as a. Out is (..., m, n). */
ag_tensor *ag_matmul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* C = A B^T without copying B^T: a is (..., m, k); b is (n, k) or
 * (..., n, k). Out is (..., m, n). Q K^T is ag_matmul_bt(tape, q, k). */
ag_tensor *ag_matmul_bt(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* Swap the last two axes: (..., m, n) -> (..., n, m). Needs ndim >= 2. */
ag_tensor *ag_transpose(ag_tape *tape, const ag_tensor *a);
/* c * a for a constant c. */
ag_tensor *ag_scale(ag_tape *tape, const ag_tensor *a, double c);
/* Softmax over the last axis, computed stably (row max subtracted). -inf
 * entries get weight 0; a row that is all -inf gives zeros and zero gradient. */
ag_tensor *ag_softmax(ag_tape *tape, const ag_tensor *a);
/* Causal mask over the last two axes (..., T, T): entries with column j >
 * row i become -inf (their gradient is 0), the rest pass through. */
ag_tensor *ag_causal_mask(ag_tape *tape, const ag_tensor *a);
/* a + b. b has a's shape, or the shape of a's trailing dims (broadcast over
 * the leading ones, e.g. (B,T,d) + (T,d) or (B,T,d) + (d)). */
ag_tensor *ag_add(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* Elementwise a * b, same broadcasting as ag_add. */
ag_tensor *ag_mul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b);
/* Sum / mean of every element: a one-element tensor of shape (1). */
ag_tensor *ag_sum(ag_tape *tape, const ag_tensor *a);
ag_tensor *ag_mean(ag_tape *tape, const ag_tensor *a);
/* Mean squared error: mean over every element of (pred - target)^2; shape (1). */
ag_tensor *ag_mse(ag_tape *tape, const ag_tensor *pred, const ag_tensor *target);

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
/* ag_tape_dot into the file path, written atomically (a temporary file
 * beside it, fsync, rename): on failure the previous file is left as it
 * was, and err says why. */
ag_status ag_tape_dot_save(const ag_tape *tape, const char *path, const ag_tensor_name *names,
                           size_t n_names, const char *title, char *err, size_t errlen);

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
    AG_BUG_SOFTMAX = 1 /* softmax's backward drops the - <g, s> term: dz = s * g */
} ag_bug;

typedef struct ag_gradcheck_opts {
    double eps;         /* step h of the central differences D(h), D(2h), combined as
                          * (4 D(h) - D(2h)) / 3 (Richardson); 0 picks one for ag_real */
    double rtol;        /* max relative error allowed; 0 picks one for ag_real */
    double atol;        /* absolute floor for the relative error's denominator; 0 picks */
    size_t max_samples; /* per input, check at most this many random elements; 0 = all */
    uint64_t seed;      /* projection weights and sampling */
    ag_bug bug;         /* AG_BUG_NONE, or a wrong backward to check instead of the right one */
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

/* The library's own checks (src/check/cases.c): one row per check of an
 * op's backward, a loss or the attention layer, as `attograd gradcheck`
 * prints them. Rows are numbered 0 .. ag_gradcheck_case_count() - 1. */
size_t ag_gradcheck_case_count(void);
/* Row i's op (the name its tape entries carry, what `gradcheck --op`
 * selects) and its label; NULL when i is out of range. */
const char *ag_gradcheck_case_op(size_t i);
const char *ag_gradcheck_case_name(size_t i);

#define AG_CASE_MAX_INPUTS 6
/* A row made ready to check: call build(tape, inputs, ctx) and hand
 * inputs to ag_gradcheck. The setup owns its inputs (and, for layer rows,
 * the layer); ctx points at the setup itself, so do not copy or move it. */
typedef struct ag_case_setup {
    int n_inputs;
    ag_tensor *inputs[AG_CASE_MAX_INPUTS]; /* parameters, drawn from N(0, 1) */
    const char *names[AG_CASE_MAX_INPUTS]; /* "a", "b", "x", "wq", ... (static) */
    ag_build_fn build;
    void *ctx;
    /* owned, released by ag_gradcheck_case_free */
    struct ag_attention *att; /* layer rows, else NULL */
    struct ag_posenc *pe;     /* layer rows, else NULL */
    ag_tensor *own[3];        /* inputs made here (the rest are att's) */
} ag_case_setup;
/* Make row i's inputs from seed (the same seed gives the same inputs).
 * Returns AG_OK, or an error with a one-line message in err and s zeroed. */
ag_status ag_gradcheck_case_setup(size_t i, uint64_t seed, ag_case_setup *s, char *err,
                                  size_t errlen);
/* Release what the setup owns; s is zeroed. NULL does nothing. */
void ag_gradcheck_case_free(ag_case_setup *s);
/* The setup's inputs as a table row shows them, "a[3x4] b[4x5]"; inputs
 * of one shape share it: "a,b[2x3]", "wq..wo[4x4]". Writes buf (cut at len
 * bytes) and returns it. */
const char *ag_gradcheck_case_inputs(const ag_case_setup *s, char *buf, size_t len);
/* Set row i up from seed into *s and check it (ag_gradcheck with opts).
 * AG_OK: *result filled, *s kept (free it with ag_gradcheck_case_free) to
 * look at the inputs and their gradients. Otherwise *s is released and err
 * says "<row name>: <why>". */
ag_status ag_gradcheck_case_run(size_t i, uint64_t seed, const ag_gradcheck_opts *opts,
                                ag_gradcheck_result *result, ag_case_setup *s, char *err,
                                size_t errlen);
/* How row i's check depends on the step: for each of the n step sizes
 * eps[k] (the other options from opts, the inputs from seed each time),
 * the largest abs and rel error into abs_err[k] and rel_err[k] (inf where
 * x + eps rounds back to x). Errors as ag_gradcheck_case_run. */
ag_status ag_gradcheck_case_sweep(size_t i, uint64_t seed, const ag_gradcheck_opts *opts,
                                  const double *eps, int n, double *abs_err, double *rel_err,
                                  char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * Ops for models: attention heads, token lookup and classification loss.
 * Same rules as the ops above (one tape entry, NULL with the tape's error
 * set on a bad input). Integer inputs (ids, targets) are plain int arrays,
 * not tensors: the op copies them into the tape's arena, so the caller's
 * array may be reused as soon as the op returns.
 * ------------------------------------------------------------------------ */

/* Split the last axis into heads: x (B,T,d) -> (B,H,T,dh) with dh = d / H;
 * head h holds columns h*dh .. h*dh+dh-1. n_heads must divide d. A copy. */
ag_tensor *ag_split_heads(ag_tape *tape, const ag_tensor *x, int n_heads);
/* The inverse: x (B,H,T,dh) -> (B,T,H*dh), heads concatenated in order. */
ag_tensor *ag_merge_heads(ag_tape *tape, const ag_tensor *x);

/* A target that ag_cross_entropy skips (the row adds nothing to the loss
 * and is not counted in the mean). */
#define AG_IGNORE_INDEX (-1)

/* Softmax cross-entropy, fused and stable: logits (..., C), one target class
 * per row (n_targets must equal the number of rows, the product of the
 * leading dims; each target in [0, C) or AG_IGNORE_INDEX). Out is (1): the
 * mean over counted rows of logsumexp(z) - z[target]; 0 when every row is
 * ignored. Backward: dlogits = (softmax(z) - onehot(target)) / rows * dL.
 * targets is borrowed for the call only (copied). */
ag_tensor *ag_cross_entropy(ag_tape *tape, const ag_tensor *logits, const int *targets,
                            size_t n_targets);

/* Row lookup: table (V,d), ids an int array of the given shape (1..3 dims,
 * e.g. (B,T)), each id in [0, V). Out is shape + (d): (B,T,d). Backward
 * adds each output row's gradient into the table row it came from. ids and
 * shape are borrowed for the call only (copied). */
ag_tensor *ag_embedding(ag_tape *tape, const ag_tensor *table, const int *ids, int ndim,
                        const int *shape);

/* The same elements in the same order under a new shape (ndim dims, same
 * number of elements): e.g. (B,T,2*C) -> (B,T,2,C), giving cross-entropy one
 * row per answer. A copy; shape is borrowed for the call. */
ag_tensor *ag_reshape(ag_tape *tape, const ag_tensor *a, int ndim, const int *shape);

/* ------------------------------------------------------------------------
 * Ops for transformer blocks: normalisation, nonlinearities, dropout. Same
 * rules as the ops above.
 * ------------------------------------------------------------------------ */

#define AG_LAYERNORM_EPS 1e-5

/* Layer normalisation over the last axis, PyTorch's LayerNorm(C) (eps 1e-5):
 *   y = (x - mean) / sqrt(var + AG_LAYERNORM_EPS) * weight + bias
 * with mean and var taken over each row of x (..., C), var biased (divided
 * by C). weight and bias are (C); either may be NULL: no weight scales by 1
 * (PyTorch's elementwise_affine=False), no bias adds 0 (a GPT's bias-free
 * layer norm is ag_layernorm(tape, x, weight, NULL)). Out is x's shape.
 * Backward works from each row's saved mean and 1/std. */
ag_tensor *ag_layernorm(ag_tape *tape, const ag_tensor *x, const ag_tensor *weight,
                        const ag_tensor *bias);

/* GELU, exact (PyTorch's default): y = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))),
 * elementwise; out is x's shape. dy/dx = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi). */
ag_tensor *ag_gelu(ag_tape *tape, const ag_tensor *x);
/* ReLU: y = max(x, 0) elementwise (a NaN stays NaN); dy/dx is 1 where x > 0,
 * else 0. */
ag_tensor *ag_relu(ag_tape *tape, const ag_tensor *x);

/* Inverted dropout for training: each element of x is kept with probability
 * 1 - p and multiplied by 1 / (1 - p), or else set to 0, so the expected
 * output is x; the gradient passes through the kept elements with the same
 * factor. p in [0, 1] (p = 1 drops everything). The mask depends only on
 * rng's state and x's size: one ag_rng_next per call, whatever the size or
 * the thread count. Evaluation is p = 0: it returns x itself (no entry, no
 * copy) and rng may be NULL. rng NULL with p > 0 is an error. */
ag_tensor *ag_dropout(ag_tape *tape, const ag_tensor *x, double p, ag_rng *rng);

/* ------------------------------------------------------------------------
 * The attention layer (multi-head self-attention), as docs/attention-layer.md states it.
 * With d = d_model, H = n_heads, dh = d / H and x of shape (B,T,d):
 *
 *     Q = x wq,  K = x wk,  V = x wv        (B,T,d) @ (d,d) -> (B,T,d)
 *     Q_h, K_h, V_h = columns h*dh .. h*dh+dh-1 of Q, K, V   (B,H,T,dh)
 *     S_h = Q_h K_h^T / sqrt(dh)            (B,H,T,T); row i = query i
 *     causal: S_h[i][j] = -inf for j > i    (a token sees only the past)
 *     P_h = softmax(S_h) over j             (B,H,T,T); rows sum to 1
 *     O_h = P_h V_h                         (B,H,T,dh)
 *     O   = heads concatenated in order     (B,T,d)
 *     out = O wo                            (B,T,d)
 *
 * A typical step:
 *
 *     char err[128];
 *     ag_rng rng = ag_rng_new(seed);
 *     ag_attention *att = ag_attention_new(8, 2, 1, &rng, err, sizeof(err));
 *     if (!att) { fprintf(stderr, "%s\n", err); ... }   // "heads 3 does not divide dim 8"
 *     ag_tensor *p;
 *     ag_tensor *out = ag_attention_forward(tape, att, x, &p);
 *     ag_backward(tape, ag_mse(tape, out, y));   // fills wq..wo's ->grad (and x's)
 * ------------------------------------------------------------------------ */
typedef struct ag_attention ag_attention;

/* Make a layer with four (d_model, d_model) weights, Glorot-uniform
 * initialised from rng in the order wq, wk, wv, wo (rng NULL leaves them zero,
 * for weights that will be loaded). causal is a flag (0 or non-zero). On
 * failure returns NULL and writes a one-line message without a prefix into
 * err (when err is not NULL): "heads 3 does not divide dim 8", "dim 0 must be
 * at least 1", "heads 0 must be at least 1", "out of memory". The caller owns
 * the layer and its weights; free with ag_attention_free. */
ag_attention *ag_attention_new(int d_model, int n_heads, int causal, ag_rng *rng, char *err,
                               size_t errlen);
void ag_attention_free(ag_attention *layer); /* frees the weights too; NULL does nothing */

/* Record the layer's forward on the tape. x is (B,T,d_model), a tape tensor
 * or a parameter (borrowed; give it a gradient with ag_requires_grad to get
 * dL/dx). Returns out (B,T,d_model), a tape tensor, or NULL with the tape's
 * error set. When attn_out is not NULL it receives the softmax weights P
 * (B,H,T,T), also a tape tensor (NULL on error); P[b][h][i][j] is how much
 * query i of head h takes from key j. In the fused form (the default) P is
 * made only because it was asked for (backward recomputes what it needs)
 * and has no gradient. */
ag_tensor *ag_attention_forward(ag_tape *tape, ag_attention *layer, const ag_tensor *x,
                                ag_tensor **attn_out);

/* How the forward is recorded. Fused (the default): one tape entry, "attention",
 * computed tile by tile, that keeps no (B,H,T,T) tensor (memory grows with T,
 * not T^2) and skips the tiles a causal mask hides; the fast form, for training. Op by op (fused = 0): matmul,
 * split_heads, matmul_bt, scale, causal_mask, softmax, matmul, merge_heads,
 * matmul, each a tape tensor with its own gradient, for a learner or a
 * debugger who wants to see every step. Same math, same results to
 * rounding; set it before a forward. */
void ag_attention_set_fused(ag_attention *layer, int fused);
int ag_attention_is_fused(const ag_attention *layer); /* 1 or 0 */

int ag_attention_dim(const ag_attention *layer);    /* d_model */
int ag_attention_heads(const ag_attention *layer);  /* n_heads */
int ag_attention_causal(const ag_attention *layer); /* 1 or 0 */
/* A weight by name, "wq", "wk", "wv" or "wo" (NULL for any other name). The
 * layer keeps ownership; the caller may write its data (to load weights). */
ag_tensor *ag_attention_param(ag_attention *layer, const char *name);
/* The weights in the order wq, wk, wv, wo: fills params[i] and names[i] for
 * i < max (either array may be NULL) and returns how many there are (4).
 * Borrowed: they live as long as the layer. Hand them to an optimizer. */
size_t ag_attention_params(ag_attention *layer, ag_tensor **params, const char **names, size_t max);

/* Glorot/Xavier uniform: every element uniform in [-limit, limit] with
 * limit = sqrt(6 / (fan_in + fan_out)), fan_out = the last dim and fan_in the
 * rows (the product of the others): for a (d_in, d_out) weight of y = x W,
 * sqrt(6 / (d_in + d_out)). Does nothing when w or rng is NULL. */
void ag_fill_glorot(ag_tensor *w, ag_rng *rng);

/* ------------------------------------------------------------------------
 * Positional encoding: x + PE[0:T], added to the token vectors (not
 * concatenated), broadcast over the batch. Adding keeps the width d, so the
 * attention weights stay (d, d) whatever the choice, and one dot product in
 * Q K^T can then compare content and position together. Without positions
 * (and without the causal mask) attention is permutation-equivariant:
 * permuting the tokens only permutes the outputs.
 *
 *   AG_POSENC_NONE        x itself (nothing is recorded on the tape)
 *   AG_POSENC_SINUSOIDAL  fixed: PE[t,2i] = sin(t / 10000^(2i/d)),
 *                         PE[t,2i+1] = cos(t / 10000^(2i/d))
 *   AG_POSENC_LEARNED     a (max_len, d) parameter "pos", initialised
 *                         normal(0, AG_POSENC_LEARNED_STD) as in GPT-2
 * ------------------------------------------------------------------------ */
typedef enum ag_posenc_kind {
    AG_POSENC_NONE = 0,
    AG_POSENC_SINUSOIDAL,
    AG_POSENC_LEARNED
} ag_posenc_kind;

#define AG_POSENC_LEARNED_STD 0.02

typedef struct ag_posenc ag_posenc;

/* "none", "sinusoidal", "learned" ("unknown" for any other value). */
const char *ag_posenc_kind_name(ag_posenc_kind kind);
/* The kind named by name (exactly one of the three names above): returns 1
 * and sets *kind, or returns 0 and leaves it. */
int ag_posenc_parse(const char *name, ag_posenc_kind *kind);

/* Positions 0 .. max_len-1 for vectors of width d. rng initialises a learned
 * table (NULL leaves it zero, for loading); the other kinds ignore it. On
 * failure returns NULL with a one-line message in err, as ag_attention_new.
 * The caller owns the result; free with ag_posenc_free. */
ag_posenc *ag_posenc_new(ag_posenc_kind kind, int max_len, int d, ag_rng *rng, char *err,
                         size_t errlen);
void ag_posenc_free(ag_posenc *pe); /* NULL does nothing */

/* x (..., T, d) with T <= max_len -> x + PE[0:T], a tape tensor (for NONE, x
 * itself). NULL with the tape's error set on a bad shape. */
ag_tensor *ag_posenc_apply(ag_tape *tape, ag_posenc *pe, const ag_tensor *x);

ag_posenc_kind ag_posenc_get_kind(const ag_posenc *pe);
int ag_posenc_max_len(const ag_posenc *pe);
int ag_posenc_dim(const ag_posenc *pe);
/* The (max_len, d) table, row-major, for display; NULL for NONE. Borrowed. */
const ag_real *ag_posenc_values(const ag_posenc *pe);
/* The learned table as a parameter named "pos": as ag_attention_params;
 * returns 1 for LEARNED, 0 otherwise. */
size_t ag_posenc_params(ag_posenc *pe, ag_tensor **params, const char **names, size_t max);
/* The learned table "pos" of a safetensors file (a model saved with a
 * learned encoding) as a LEARNED encoding of its (T, d), T and d in
 * 1..max_size. NULL with a one-line message naming the file when it cannot
 * be read, has no "pos", has another shape or holds a NaN or Inf. */
ag_posenc *ag_posenc_load(const char *path, int max_size, char *err, size_t errlen);
/* sim (max_len, max_len): the cosine similarity of the table's rows,
 * sim[t][u] = <PE[t], PE[u]> / (|PE[t]| |PE[u]|), 0 where a row is zero;
 * computed in double. AG_ERR_ARG for NONE (no table) or a NULL argument. */
ag_status ag_posenc_similarity(const ag_posenc *pe, double *sim);

/* ------------------------------------------------------------------------
 * Optimizers. An ag_optim updates a fixed array of parameters from their
 * gradients. It borrows the parameters (they must outlive it) and owns its
 * state, allocated once at creation: ag_optim_step never allocates.
 *
 *     ag_tensor *params[4];
 *     ag_attention_params(att, params, NULL, 4);
 *     ag_optim *opt = ag_adam_new(params, 4, 1e-2, 0.9, 0.999, 1e-8, 0);
 *     for (step...) {
 *         ag_zero_grad(params, 4);
 *         ... forward, ag_backward ...
 *         ag_clip_grad_norm(params, 4, 1.0);
 *         ag_optim_step(opt);
 *         ag_tape_reset(tape);
 *     }
 *     ag_optim_free(opt);
 *
 * Constructors return NULL when out of memory or on a bad argument: params
 * NULL, n == 0, a NULL parameter or one without a gradient buffer, lr not
 * finite or < 0, momentum/beta1/beta2 outside [0, 1), eps not > 0,
 * weight_decay < 0. The params array is copied; the tensors are borrowed.
 * ------------------------------------------------------------------------ */
typedef struct ag_optim ag_optim;

/* SGD with momentum (PyTorch's form): v = momentum v + g; p -= lr v.
 * momentum 0 is plain p -= lr g and keeps no state (0 slots). */
ag_optim *ag_sgd_new(ag_tensor *const *params, size_t n, double lr, double momentum);
/* Adam with bias correction; weight_decay > 0 makes it AdamW (decoupled):
 *   t += 1; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *   p -= lr wd p + lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
 * Usual values: lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8. */
ag_optim *ag_adam_new(ag_tensor *const *params, size_t n, double lr, double beta1, double beta2,
                      double eps, double weight_decay);
void ag_optim_free(ag_optim *opt); /* NULL does nothing; the parameters are untouched */

/* One update of every parameter from its ->grad (which it does not clear). */
void ag_optim_step(ag_optim *opt);
/* Change the learning rate (for a schedule). AG_ERR_ARG (and no change) when
 * lr is not finite or < 0. */
ag_status ag_optim_set_lr(ag_optim *opt, double lr);
double ag_optim_lr(const ag_optim *opt);
const char *ag_optim_name(const ag_optim *opt); /* "sgd" or "adam" */
size_t ag_optim_n_params(const ag_optim *opt);

/* State, for checkpoints. Saving steps and every state buffer and restoring
 * them into an optimizer made with the same parameters and settings
 * continues training exactly as if it had not stopped. */
long ag_optim_steps(const ag_optim *opt);                /* steps taken */
ag_status ag_optim_set_steps(ag_optim *opt, long steps); /* AG_ERR_ARG when < 0 */
/* Buffers per parameter: 0 (plain SGD), 1 (SGD momentum: "velocity") or 2
 * (Adam: slot 0 "m", slot 1 "v"). */
int ag_optim_slots(const ag_optim *opt);
const char *ag_optim_slot_name(const ag_optim *opt, int slot); /* NULL when no such slot */
/* The slot's buffer for parameter param_index (in the order given at
 * creation): params[param_index]->size values, owned by the optimizer,
 * writable (to restore). NULL when the index or slot does not exist. */
ag_real *ag_optim_state(ag_optim *opt, size_t param_index, int slot);

/* Global gradient-norm clipping: norm = sqrt(sum of g^2 over every element
 * of every parameter's gradient); when norm > max_norm, every gradient is
 * multiplied by max_norm / norm. Returns the norm before clipping.
 * max_norm <= 0 only measures. NULL entries and parameters without a
 * gradient are skipped. A non-finite norm is returned and nothing scaled. */
double ag_clip_grad_norm(ag_tensor *const *params, size_t n, double max_norm);

/* ------------------------------------------------------------------------
 * Toy tasks, generated on the fly from a seeded generator. Every position
 * carries two token ids (slot 0 and slot 1, embedded separately and summed)
 * and up to `answers` class ids to predict there (-1: nothing to predict).
 * Token ids: keys 0..7, values 8..15 (value class v is token 8 + v), 16 marks
 * a query, 17 is padding; reverse uses tokens 0..7 as its symbols.
 * ------------------------------------------------------------------------ */
typedef enum ag_task_kind {
    AG_TASK_LOOKUP,  /* (key, value) pairs and a query key: answer the query's value */
    AG_TASK_LOOKUP2, /* the query names two keys: answer both values */
    AG_TASK_REVERSE, /* position i answers the token at position T-1-i */
    AG_TASK_COUNT
} ag_task_kind;

typedef struct ag_batch {
    ag_task_kind kind;
    int batch, seq; /* B examples of T positions */
    int answers;    /* answers per position (2 for lookup2, else 1) */
    int *tok0;      /* (B, T) slot-0 token ids, 0..vocab-1 */
    int *tok1;      /* (B, T) slot-1 token ids */
    int *targets;   /* (B, T, answers) class ids, -1 where there is no answer */
} ag_batch;

const char *ag_task_name(ag_task_kind kind);
const char *ag_task_help(ag_task_kind kind);             /* one line */
int ag_task_parse(const char *name, ag_task_kind *kind); /* 1 when known */
int ag_task_vocab(ag_task_kind kind);                    /* token ids per slot */
int ag_task_classes(ag_task_kind kind);                  /* classes per answer */
int ag_task_answers(ag_task_kind kind);
int ag_task_min_seq(ag_task_kind kind); /* valid T range */
int ag_task_max_seq(ag_task_kind kind);
/* A batch of B sequences of length T; NULL when kind is unknown, B < 1, T is
 * out of range or memory runs out. The caller owns it. */
ag_batch *ag_batch_new(ag_task_kind kind, int batch, int seq);
void ag_batch_free(ag_batch *b);
/* Fill b with fresh random examples drawn from rng. */
void ag_task_sample(ag_batch *b, ag_rng *rng);
/* Short labels for showing examples (`attograd train`'s heatmap): position
 * t of example ex as "k3:v5" (key 3 holding value 5), "?k3" (a query for
 * key 3), "?k3,k6" (lookup2's query for keys 3 and 6) or "s4" (reverse's
 * symbol 4); answer class c as "v5" (a value) or "s4" (a symbol). Each
 * writes buf (len bytes; 16 is plenty) and returns it. */
const char *ag_task_token_label(const ag_batch *b, int ex, int t, char *buf, size_t len);
const char *ag_task_class_label(ag_task_kind kind, int c, char *buf, size_t len);

/* ------------------------------------------------------------------------
 * The toy model the tasks train: one attention layer between token
 * embeddings and a linear readout, nothing else, so what it learns is the
 * attention itself.
 *
 *   x      = emb0[tok0] + emb1[tok1] (+ PE)   (B,T,d)
 *   h      = attention(x)                     (B,T,d)
 *   logits = h readout                        (B,T,answers,classes)
 *   loss   = cross_entropy(logits, targets)   over the answers present
 *
 * Parameters, in order: emb0, emb1 (vocab, d); pos (seq, d) with learned
 * positions; wq, wk, wv, wo (d, d); readout (d, answers * classes).
 * ------------------------------------------------------------------------ */
typedef struct ag_model_config {
    ag_task_kind task;
    int seq;    /* T: positions per example */
    int dim;    /* d: width of every vector */
    int heads;  /* attention heads; must divide dim */
    int causal; /* 1: a position sees only itself and earlier ones */
    ag_posenc_kind posenc;
} ag_model_config;

/* Which setting makes no model (ag_model_config_check). */
typedef enum ag_model_field {
    AG_MODEL_OK = 0,
    AG_MODEL_TASK,  /* not an ag_task_kind */
    AG_MODEL_SEQ,   /* outside the task's ag_task_min_seq .. ag_task_max_seq */
    AG_MODEL_DIM,   /* below 1 */
    AG_MODEL_HEADS, /* below 1, or not dividing dim */
    AG_MODEL_POSENC /* not an ag_posenc_kind */
} ag_model_field;

/* Whether cfg makes a model: AG_MODEL_OK, or the first setting at fault with
 * a one-line message in err (when not NULL), e.g. "seq 12 is out of range
 * for task lookup (2..9)" or "heads 3 does not divide dim 16". The one check
 * behind ag_model_new, the checkpoint reader and `attograd train`'s flags. */
ag_model_field ag_model_config_check(const ag_model_config *cfg, char *err, size_t errlen);

typedef struct ag_model ag_model;

/* A model for cfg, initialised from rng (NULL leaves the weights zero, for
 * loading). NULL with a one-line message in err on a bad configuration. The
 * caller owns it. */
ag_model *ag_model_new(const ag_model_config *cfg, ag_rng *rng, char *err, size_t errlen);
void ag_model_free(ag_model *m); /* NULL does nothing */
const ag_model_config *ag_model_get_config(const ag_model *m);
/* Parameters in the order above, as ag_attention_params (borrowed). */
size_t ag_model_params(ag_model *m, ag_tensor **params, const char **names, size_t max);
ag_tensor *ag_model_param(ag_model *m, const char *name); /* NULL when unknown */
ag_attention *ag_model_attention(ag_model *m);            /* borrowed */
/* Record the forward pass of batch b on the tape; returns the loss (1), or
 * NULL with the tape's error set. logits_out and attn_out (either may be
 * NULL) receive the logits (B,T,answers,classes) and the attention weights
 * (B,H,T,T), tape tensors. */
ag_tensor *ag_model_forward(ag_tape *tape, ag_model *m, const ag_batch *b, ag_tensor **logits_out,
                            ag_tensor **attn_out);
/* Add to *correct and *total: a position that asks something counts once,
 * and is correct when the argmax of every answer it asks is right. */
void ag_model_score(const ag_batch *b, const ag_tensor *logits, long *correct, long *total);
/* The class the model answers at position t of example ex, answer a: the
 * argmax of its logits (the first among equals). */
int ag_model_answer(const ag_batch *b, const ag_tensor *logits, int ex, int t, int a);
/* Example 0 of b as text on f: for each head (attn (1,H,T,T), as
 * ag_trainer_example gives it) a heatmap, a row per position with its
 * weights over the positions (each with a shade, " .:-=+*#%@"), columns
 * and rows named by ag_task_token_label, and after each asked position what
 * the model answered (logits of example 0), e.g. "-> v5 (want v5)". */
void ag_model_print_attention(FILE *f, const ag_batch *b, const ag_tensor *attn,
                              const ag_tensor *logits);

/* ------------------------------------------------------------------------
 * Training runs: their settings, and checkpoints to stop and resume them.
 * A checkpoint is one safetensors file: the model's parameters under their
 * own names, the optimizer's state as "optim.<param>.<slot>", and as
 * metadata the settings, the step and the training stream's position, so a
 * resumed run takes exactly the steps (bit for bit) of one that never
 * stopped, provided it draws its batches from an ag_rng restored to
 * data_rng. Saving is atomic (temporary file, fsync, rename); loading
 * treats the file as hostile (every value parsed strictly and checked
 * against the ranges below, every tensor's shape and values checked).
 *
 *     ag_train_state st = {.config = cfg, .data_rng = data.state, .step = step};
 *     ag_checkpoint_save("run.safetensors", model, opt, &st, err, sizeof(err));
 *     ...
 *     ag_checkpoint *ck;
 *     if (ag_checkpoint_load("run.safetensors", &ck, &st, err, sizeof(err)) != AG_OK) ...
 *     model = ag_model_new(&st.config.model, NULL, err, sizeof(err));
 *     n = ag_model_params(model, params, NULL, 8);
 *     opt = ag_train_optim_new(&st.config, params, n);
 *     if (ag_checkpoint_restore(ck, model, opt, err, sizeof(err)) != AG_OK) ...
 *     ag_checkpoint_free(ck);
 *     data.state = st.data_rng;   // and go on from step st.step
 * ------------------------------------------------------------------------ */
typedef struct ag_train_config {
    ag_model_config model;
    int optimizer_adam; /* 1: Adam (AdamW when weight_decay > 0); 0: SGD */
    double lr, momentum, weight_decay;
    double clip;   /* the global gradient norm's limit; 0: no clipping */
    int batch;     /* examples per step */
    uint64_t seed; /* the run's seed (weights, data and held-out set) */
} ag_train_config;

/* The range of each setting a checkpoint records. The reader refuses a
 * value outside it, so a program that keeps its settings within these
 * ranges can always load what it saved (`attograd train` takes its flags'
 * ranges from here). */
#define AG_TRAIN_MAX_STEP 2000000000L /* steps done, optimizer steps */
#define AG_TRAIN_MAX_SIZE 4096        /* seq, dim, heads */
#define AG_TRAIN_MAX_BATCH 65536
#define AG_TRAIN_LR_MIN 1e-12
#define AG_TRAIN_LR_MAX 1e3
#define AG_TRAIN_MOMENTUM_MAX 0.999999
#define AG_TRAIN_WEIGHT_DECAY_MAX 1e3
#define AG_TRAIN_CLIP_MAX 1e12

/* A run's state beyond its tensors: what a checkpoint's metadata holds. */
typedef struct ag_train_state {
    ag_train_config config;
    uint64_t data_rng; /* the training stream's ag_rng state, to continue it exactly */
    long step;         /* steps done */
    long optim_steps;  /* the optimizer's own count (Adam's bias correction); on save
                              * it is taken from the optimizer itself */
} ag_train_state;

/* The optimizer c names, for params (copied array, borrowed tensors): Adam
 * with betas 0.9, 0.999, eps 1e-8 and c->weight_decay, or SGD with
 * c->momentum, at c->lr. NULL as ag_adam_new / ag_sgd_new. */
ag_optim *ag_train_optim_new(const ag_train_config *c, ag_tensor *const *params, size_t n);

/* Write model, opt (made by ag_train_optim_new from st->config, or the same
 * settings) and st to path, atomically: on failure the previous file is
 * left as it was. Returns AG_OK or the error with a one-line message; a
 * step count beyond AG_TRAIN_MAX_STEP is refused (AG_ERR_ARG), so that
 * every file it writes loads. */
ag_status ag_checkpoint_save(const char *path, ag_model *model, ag_optim *opt,
                             const ag_train_state *st, char *err, size_t errlen);

/* A checkpoint read and checked, ready to restore. */
typedef struct ag_checkpoint ag_checkpoint;

/* Read path and check its metadata: *st gets the settings, the step and
 * the data stream's state, and *out the checkpoint (the caller frees it
 * with ag_checkpoint_free). Make the model and the optimizer from
 * st->config (a different lr, momentum, weight_decay, clip or batch may be
 * chosen on purpose), then ag_checkpoint_restore. On failure *out is NULL
 * and err names the file and what is wrong with it. */
ag_status ag_checkpoint_load(const char *path, ag_checkpoint **out, ag_train_state *st, char *err,
                             size_t errlen);
/* Copy the parameters and the optimizer's state and step count from ck
 * into model and opt, checking each tensor's shape and that every value is
 * finite (and Adam's v not negative). On failure the message names the file
 * and the tensor, and model and opt hold a partial copy: do not use them. */
ag_status ag_checkpoint_restore(const ag_checkpoint *ck, ag_model *model, ag_optim *opt, char *err,
                                size_t errlen);
void ag_checkpoint_free(ag_checkpoint *ck); /* NULL does nothing */

/* ------------------------------------------------------------------------
 * A training run of the toy model, whole: the model, its optimizer
 * (ag_train_optim_new), a tape, a fresh batch of cfg->batch examples per
 * step and a fixed held-out set of AG_TRAINER_HELD_OUT examples, each from
 * its own stream derived from cfg->seed (the weights from the seed itself),
 * so a seed fixes the run, bit for bit, on any thread count. `attograd
 * train` is this plus its progress, log and plots.
 *
 *     ag_trainer *t = ag_trainer_new(&cfg, NULL, NULL, err, sizeof(err));
 *     for (int s = 0; s < 600; s++)
 *         if (ag_trainer_step(t, &loss, err, sizeof(err)) != AG_OK) ...
 *     ag_trainer_evaluate(t, &eval_loss, &accuracy, err, sizeof(err));
 *     ag_trainer_save(t, "run.safetensors", err, sizeof(err));
 *     ag_trainer_free(t);
 *
 * Resuming: ag_checkpoint_load gives ck and st; ag_trainer_new(&st.config,
 * ck, &st, ...) (or a config that changes lr, momentum, weight_decay, clip
 * or batch on purpose) goes on with the steps the saved run would have
 * taken; ck may be freed once it returns.
 * ------------------------------------------------------------------------ */
typedef struct ag_trainer ag_trainer;
#define AG_TRAINER_HELD_OUT 512

/* A run for cfg, with fresh weights; or, with ck and st (from one
 * ag_checkpoint_load), the checkpoint's weights, optimizer state, step and
 * data stream. NULL with a one-line message on a bad setting (the model's,
 * as ag_model_config_check says; batch, lr, momentum, weight_decay and clip
 * within the AG_TRAIN_* ranges), a checkpoint that does not fit, or out of
 * memory. The caller owns it; ck and st are only read. */
ag_trainer *ag_trainer_new(const ag_train_config *cfg, const ag_checkpoint *ck,
                           const ag_train_state *st, char *err, size_t errlen);
void ag_trainer_free(ag_trainer *t); /* NULL does nothing */
/* One step: a fresh batch, forward, backward, the gradients' global norm
 * clipped at cfg->clip, the optimizer's update. *loss (may be NULL) gets
 * the batch's loss. A NaN or Inf stops it with AG_ERR_NUMERIC and a message
 * naming the step and the op that made it ("step 7: anomaly: ..."), or,
 * after the update, the parameter it broke; the weights are then not to be
 * trusted, and the step is not counted. Allocates nothing once the first
 * step has run. */
ag_status ag_trainer_step(ag_trainer *t, double *loss, char *err, size_t errlen);
/* The held-out set's mean loss and accuracy (the share of positions asked
 * something whose every answer is right, as ag_model_score counts). A NaN
 * or Inf: AG_ERR_NUMERIC, "step N (held-out evaluation): ...". */
ag_status ag_trainer_evaluate(ag_trainer *t, double *loss, double *accuracy, char *err,
                              size_t errlen);
/* Held-out example 0 run alone, to show: its logits (1,T,answers,classes)
 * and attention weights (1,H,T,T), tensors of the trainer's tape, valid
 * until the next call on t. */
ag_status ag_trainer_example(ag_trainer *t, const ag_tensor **logits, const ag_tensor **attn,
                             char *err, size_t errlen);
/* The run as a checkpoint (ag_checkpoint_save): settings, steps done, the
 * data stream's position, the model and the optimizer's state. */
ag_status ag_trainer_save(ag_trainer *t, const char *path, char *err, size_t errlen);
long ag_trainer_steps(const ag_trainer *t); /* steps done, a checkpoint's included */
const ag_train_config *ag_trainer_config(const ag_trainer *t);
ag_model *ag_trainer_model(ag_trainer *t); /* borrowed */
ag_tape *ag_trainer_tape(ag_trainer *t);   /* borrowed: e.g. ag_tape_detect_anomaly */
const ag_batch *ag_trainer_held_out(const ag_trainer *t); /* borrowed: labels for an example */

/* ------------------------------------------------------------------------
 * Text: characters as tokens. A vocabulary is a sorted list of distinct
 * Unicode code points; token id i is the i-th of them. Text is UTF-8.
 *
 *     ag_text *text;
 *     char err[256];
 *     if (ag_text_load("play.txt", NULL, &text, err, sizeof(err)) != AG_OK) ...
 *     // text->vocab: the file's distinct characters; text->ids: the file as ids;
 *     // ids[0 .. n_train) train, ids[n_train .. len) validate
 *     ag_text_free(text);
 * ------------------------------------------------------------------------ */
#define AG_VOCAB_MAX 65536           /* most distinct characters a vocabulary holds */
#define AG_TEXT_MAX_BYTES (1u << 30) /* longest text file read (1 GiB) */

typedef struct ag_vocab ag_vocab;

/* The sorted distinct code points of the len bytes of UTF-8 at s. NULL with
 * a one-line message in err when s is not UTF-8 (invalid, overlong or
 * surrogate sequences), holds a NUL character, is empty, or has more than
 * AG_VOCAB_MAX distinct characters. The caller owns the result. */
ag_vocab *ag_vocab_from_utf8(const char *s, size_t len, char *err, size_t errlen);
/* A vocabulary from its characters written out in order (what
 * ag_vocab_chars gives, and what a checkpoint stores): valid UTF-8, each
 * code point once, strictly increasing. NULL with a message otherwise. */
ag_vocab *ag_vocab_from_chars(const char *chars, char *err, size_t errlen);
void ag_vocab_free(ag_vocab *v);                   /* NULL does nothing */
int ag_vocab_size(const ag_vocab *v);              /* V */
uint32_t ag_vocab_char(const ag_vocab *v, int id); /* the code point; 0 when id is out of range */
int ag_vocab_id(const ag_vocab *v, uint32_t c);    /* the id of code point c, or -1 */
/* Every character in id order as one NUL-terminated UTF-8 string (borrowed from v). */
const char *ag_vocab_chars(const ag_vocab *v);
/* The UTF-8 bytes of token id into buf (room for 5: up to 4 bytes and a
 * NUL); returns the byte count, 0 when id is out of range. */
size_t ag_vocab_utf8(const ag_vocab *v, int id, char *buf);
/* The ids of the len bytes of UTF-8 at s into ids (room for len ids is
 * always enough); *n gets how many. AG_ERR_FORMAT on bytes that are not
 * UTF-8; AG_ERR_ARG on a character that is not in the vocabulary, named in
 * err with its line: "character 'z' (U+007A) on line 2 is not in the
 * vocabulary". */
ag_status ag_vocab_encode(const ag_vocab *v, const char *s, size_t len, int *ids, size_t *n,
                          char *err, size_t errlen);
/* A prompt to generate after: ag_vocab_encode of s into a new array *ids
 * (the caller frees it with free) of *n ids; an empty prompt (len 0) is
 * one id, where a text starts anew: a newline's (0 when the vocabulary has
 * none). On failure *ids is NULL, with ag_vocab_encode's errors or
 * AG_ERR_NOMEM. */
ag_status ag_vocab_prompt(const ag_vocab *v, const char *s, size_t len, int **ids, size_t *n,
                          char *err, size_t errlen);

/* A text as token ids, split for training and validation. */
typedef struct ag_text {
    ag_vocab *vocab; /* owned: the file's characters, or a copy of the one given */
    int *ids;        /* (len) token ids, one per character */
    size_t len;      /* characters */
    size_t n_train;  /* len * 9 / 10: ids[0 .. n_train) train, the rest validate */
} ag_text;

/* Read the UTF-8 text file at path (at most AG_TEXT_MAX_BYTES). With vocab
 * NULL the vocabulary is the file's own distinct characters; otherwise the
 * file is encoded with a copy of vocab, and a character outside it is an
 * error. On failure *out is NULL and err names the file: AG_ERR_IO (cannot
 * read), AG_ERR_FORMAT (empty, not UTF-8, a NUL byte, too many distinct
 * characters), AG_ERR_ARG (a character outside vocab), AG_ERR_NOMEM. */
ag_status ag_text_load(const char *path, const ag_vocab *vocab, ag_text **out, char *err,
                       size_t errlen);
/* The same for the len bytes at s (borrowed for the call); name is used in
 * messages. */
ag_status ag_text_parse(const char *s, size_t len, const char *name, const ag_vocab *vocab,
                        ag_text **out, char *err, size_t errlen);
void ag_text_free(ag_text *t); /* NULL does nothing */

enum { AG_SPLIT_TRAIN = 0, AG_SPLIT_VAL = 1 };
/* Whether windows of seq characters fit both parts: training draws
 * windows of seq + 1 characters, and validation needs at least one (so
 * each part needs seq + 1 characters). AG_ERR_ARG with a message naming the
 * part and the lengths otherwise. */
ag_status ag_text_check_seq(const ag_text *t, int seq, char *err, size_t errlen);
/* batch random windows of one part (AG_SPLIT_TRAIN or AG_SPLIT_VAL): for
 * each row, a start i uniform in [0, part length - seq) drawn from rng;
 * x = part[i .. i+seq), y = part[i+1 .. i+seq+1]. x and y are (batch, seq)
 * arrays. The windows must fit (ag_text_check_seq). */
void ag_text_batch(const ag_text *t, int split, int batch, int seq, ag_rng *rng, int *x, int *y);
/* The full validation loss's windows: floor((validation length - 1) / seq),
 * window i being x = val[i*seq .. (i+1)*seq), y = the same shifted by one. */
size_t ag_text_windows(const ag_text *t, int seq);

/* ------------------------------------------------------------------------
 * A GPT: a character language model built from the attention layer. With
 * C = dim, H = heads, V = vocab, T <= seq and ids (B,T):
 *
 *   x = wte[ids] + wpe[0:T]                          (B,T,C) tokens and positions
 *   for each block:                                  pre-norm residual blocks
 *       x = x + attention(ln_1(x))                   causal, H heads; out = O wo
 *       x = x + gelu(ln_2(x) w_fc) w_proj            w_fc (C,4C), w_proj (4C,C)
 *   logits = ln_f(x) wte^T                           (B,T,V) the head is wte (tied)
 *
 * Layer norms normalise over C with eps 1e-5; GELU is the exact (erf) one.
 * Without bias (the default) linears and layer norms have weights only.
 * Initialised as GPT-2: every weight normal(0, 0.02) except the two
 * projections into the residual stream (wo, w_proj) of each block, normal(0,
 * 0.02 / sqrt(2 layers)); layer-norm weights 1, biases 0. Dropout (training
 * forwards only) follows the embeddings and both residual branches.
 *
 * The ablation switches take one part out, to show what it is for: no_residual
 * (x = branch(x), no skip), no_layernorm (every layer norm is the
 * identity), no_mlp (attention-only blocks), no_posenc (no wpe: the model
 * cannot tell where a character is except through the causal mask).
 * ------------------------------------------------------------------------ */
typedef struct ag_gpt_config {
    int vocab;                                        /* V: token ids 0..V-1 */
    int seq;                                          /* T: the longest context (block size) */
    int layers;                                       /* blocks */
    int heads;                                        /* attention heads; divides dim */
    int dim;                                          /* C: the width of the residual stream */
    int bias;                                         /* 1: linears and layer norms have biases */
    double dropout;                                   /* in [0, 1) */
    int no_residual, no_layernorm, no_mlp, no_posenc; /* ablations, 0 normally */
} ag_gpt_config;

/* V = vocab, 4 layers, 4 heads, dim 128, seq 64, no bias, no dropout. */
ag_gpt_config ag_gpt_defaults(int vocab);
#define AG_GPT_LAYERS 4
#define AG_GPT_HEADS 4
#define AG_GPT_DIM 128
#define AG_GPT_SEQ 64

typedef struct ag_gpt ag_gpt;

/* A model for cfg, initialised from rng (NULL leaves every weight zero and
 * layer-norm weights one, for loading). NULL with a one-line message in err
 * on a bad configuration ("heads 3 does not divide dim 128") or out of
 * memory. The caller owns it. */
ag_gpt *ag_gpt_new(const ag_gpt_config *cfg, ag_rng *rng, char *err, size_t errlen);
void ag_gpt_free(ag_gpt *g); /* NULL does nothing */
const ag_gpt_config *ag_gpt_get_config(const ag_gpt *g);
/* Change the dropout probability (in [0, 1); AG_ERR_ARG otherwise). */
ag_status ag_gpt_set_dropout(ag_gpt *g, double p);
/* The parameters in a fixed order, in the library's y = x W layout, named
 * "wte", "wpe", "h.0.ln_1.weight", "h.0.attn.wq", ..., "h.0.mlp.w_proj",
 * ..., "ln_f.weight" (borrowed; hand them to an optimizer). Fills params[i]
 * and names[i] for i < max (either may be NULL); returns the count. */
size_t ag_gpt_params(ag_gpt *g, ag_tensor **params, const char **names, size_t max);
ag_tensor *ag_gpt_param(ag_gpt *g, const char *name); /* NULL when unknown */
size_t ag_gpt_n_weights(const ag_gpt *g);             /* numbers in all parameters */

/* Record the forward pass on the tape: ids is a (batch, seq) array of token
 * ids (seq <= the config's seq), copied. Returns the logits (B,T,V), a
 * tape tensor, or NULL with the tape's error set. dropout_rng NULL is
 * evaluation (no dropout); otherwise dropout draws from it. */
ag_tensor *ag_gpt_forward(ag_tape *tape, ag_gpt *g, const int *ids, int batch, int seq,
                          ag_rng *dropout_rng);
/* ag_gpt_forward and the mean cross-entropy against targets (batch, seq):
 * a (1) tensor. logits_out (may be NULL) receives the logits. */
ag_tensor *ag_gpt_loss(ag_tape *tape, ag_gpt *g, const int *ids, const int *targets, int batch,
                       int seq, ag_rng *dropout_rng, ag_tensor **logits_out);
/* One block, layer 0..layers-1, on x (B,T,C): a tape tensor (B,T,C). */
ag_tensor *ag_gpt_block(ag_tape *tape, ag_gpt *g, int layer, const ag_tensor *x,
                        ag_rng *dropout_rng);
/* The full validation loss of text: the mean cross-entropy over every
 * position of every window of ag_text_windows (seq = the config's seq),
 * without dropout. Deterministic, so any implementation can be compared
 * with it. text's vocabulary must have the model's size. Gradients are not
 * touched. *windows (may be NULL) gets the window count. */
ag_status ag_gpt_val_loss(ag_gpt *g, const ag_text *text, double *loss, size_t *windows, char *err,
                          size_t errlen);

/* Sampling with a key/value cache: each new token runs one position
 * through the model (no tape), reusing the keys and values of the earlier
 * ones. Logits equal the tape forward's to rounding. */
typedef struct ag_gpt_cache ag_gpt_cache;

/* A cache for g (borrowed: it must outlive the cache and not change shape). */
ag_gpt_cache *ag_gpt_cache_new(ag_gpt *g, char *err, size_t errlen);
void ag_gpt_cache_free(ag_gpt_cache *c);     /* NULL does nothing */
void ag_gpt_cache_reset(ag_gpt_cache *c);    /* forget every position */
int ag_gpt_cache_len(const ag_gpt_cache *c); /* positions held, 0..seq */
/* Run token id at the next position (ag_gpt_cache_len, which must be <
 * seq). *logits (may be NULL) gets the position's (V) logits, borrowed
 * until the next call. AG_ERR_ARG with a message when the cache is full or
 * id is out of range. */
ag_status ag_gpt_cache_push(ag_gpt_cache *c, int id, const ag_real **logits, char *err,
                            size_t errlen);
/* A token id drawn from logits (V): softmax(logits / temperature) over the
 * top_k largest (top_k <= 0 or >= V: all; ties with the k-th all stay);
 * temperature 0 takes the largest (the first among equals). One uniform
 * number from rng per draw (none at temperature 0), so a seed fixes the
 * text. */
int ag_gpt_cache_pick(ag_gpt_cache *c, const ag_real *logits, double temperature, int top_k,
                      ag_rng *rng);
/* Called with each generated token; return non-zero to stop early. */
typedef int (*ag_gpt_emit_fn)(int id, void *ctx);
/* Feed the prompt (n_prompt >= 1 ids), then generate n_new tokens, handing
 * each to emit as it is made. When the context reaches seq positions the
 * cache keeps its last seq / 2 tokens and runs them again (their positions
 * change), so a token costs about two positions however long the text. */
ag_status ag_gpt_generate(ag_gpt_cache *c, const int *prompt, size_t n_prompt, size_t n_new,
                          double temperature, int top_k, ag_rng *rng, ag_gpt_emit_fn emit,
                          void *ctx, char *err, size_t errlen);

/* Training: AdamW over random windows of a text, the learning rate warmed
 * up linearly and then decayed along a cosine.
 *
 *     ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &cfg, err, sizeof(err));
 *     for (long s = 0; s < 2000; s++)
 *         if (ag_gpt_trainer_step(t, &loss, err, sizeof(err)) != AG_OK) ...
 *     ag_gpt_val_loss(g, text, &val, NULL, err, sizeof(err));
 */
typedef struct ag_gpt_train_config {
    int batch;         /* windows per step */
    double lr, min_lr; /* peak and final learning rate */
    long warmup;       /* steps of linear warmup */
    long decay_steps;  /* the cosine reaches min_lr at step decay_steps (its last step) */
    double beta1, beta2, eps;
    double weight_decay; /* AdamW's, on the 2-D weights only (not layer norms or biases) */
    double clip;         /* global gradient-norm clip; 0: none */
    uint64_t seed;       /* the batches' and dropout's random streams */
} ag_gpt_train_config;

/* batch 12, lr 1e-3 to min_lr 1e-4, warmup 100, decay_steps 2000, betas
 * 0.9 and 0.99, eps 1e-8, weight decay 0.1, clip 1, seed 1. */
ag_gpt_train_config ag_gpt_train_defaults(void);
#define AG_GPT_BATCH 12
#define AG_GPT_LR 1e-3
#define AG_GPT_MIN_LR 1e-4
#define AG_GPT_WARMUP 100
#define AG_GPT_DECAY_STEPS 2000
#define AG_GPT_WEIGHT_DECAY 0.1
#define AG_GPT_CLIP 1.0
/* The learning rate of step s (0-based): lr (s+1) / (warmup+1) while s <
 * warmup; then min_lr + (lr - min_lr) (1 + cos(pi r)) / 2 with r = (s -
 * warmup) / (decay_steps - 1 - warmup); min_lr from step decay_steps - 1 on. */
double ag_gpt_lr_at(const ag_gpt_train_config *cfg, long step);

typedef struct ag_gpt_trainer ag_gpt_trainer;

/* A trainer for g on text (both borrowed; they must outlive it). text's
 * vocabulary must have g's size and its parts must hold windows of g's seq.
 * NULL with a message on a bad setting or out of memory. */
ag_gpt_trainer *ag_gpt_trainer_new(ag_gpt *g, const ag_text *text, const ag_gpt_train_config *cfg,
                                   char *err, size_t errlen);
/* NULL does nothing. g and text are left alone, unless the trainer came
 * from ag_gpt_trainer_open, which made them: then they are freed too. */
void ag_gpt_trainer_free(ag_gpt_trainer *t);
/* One step: a random training batch, forward, backward, clip, AdamW at
 * ag_gpt_lr_at(step). *loss (may be NULL) gets the batch's loss. A NaN or
 * Inf (in the loss, a gradient or, after the update, a weight) stops it
 * with AG_ERR_NUMERIC and a message naming the op or the parameter; the
 * weights are then not to be trusted. Allocates nothing once the first
 * step has run. */
ag_status ag_gpt_trainer_step(ag_gpt_trainer *t, double *loss, char *err, size_t errlen);
long ag_gpt_trainer_steps(const ag_gpt_trainer *t); /* steps done */
/* The most bytes one step's tape has held (ag_tape_peak_bytes of the
 * trainer's tape), for measuring a step's memory. */
size_t ag_gpt_trainer_peak_bytes(const ag_gpt_trainer *t);
const ag_gpt_train_config *ag_gpt_trainer_config(const ag_gpt_trainer *t);
/* The mean loss over iters random batches of a part (AG_SPLIT_TRAIN or
 * AG_SPLIT_VAL), without dropout. The batches come from a stream of their
 * own that starts afresh on every call: the same windows every time, and
 * the training stream is untouched. */
ag_status ag_gpt_trainer_estimate(ag_gpt_trainer *t, int split, int iters, double *loss, char *err,
                                  size_t errlen);

/* Checkpoints, in the layout of the common PyTorch GPT (nanoGPT's GPT with
 * bias=False), so that the weights load there with no renaming or
 * transposing: transformer.wte.weight (V,C), transformer.wpe.weight (T,C),
 * transformer.h.{i}.ln_1.weight (C), transformer.h.{i}.attn.c_attn.weight
 * (3C,C) (Q's rows, then K's, then V's), transformer.h.{i}.attn.c_proj.weight
 * (C,C), transformer.h.{i}.ln_2.weight, transformer.h.{i}.mlp.c_fc.weight
 * (4C,C), transformer.h.{i}.mlp.c_proj.weight (C,4C), transformer.ln_f.weight,
 * lm_head.weight (= wte), and the .bias of each with bias. Linear weights are
 * (out, in), PyTorch's layout: the transpose of the library's. The metadata
 * holds the vocabulary ("vocab": its characters in order) and the settings
 * under nanoGPT's names (vocab_size, block_size, n_layer, n_head, n_embd,
 * bias, dropout). A trainer's checkpoint adds its settings, its progress and
 * AdamW's state ("optim.<name>.m", "optim.<name>.v", in the same layout),
 * so a run resumes bit for bit. Files are written atomically. */
ag_status ag_gpt_save(ag_gpt *g, const ag_vocab *vocab, const char *path, char *err, size_t errlen);
ag_status ag_gpt_trainer_save(ag_gpt_trainer *t, const char *path, char *err, size_t errlen);

/* A GPT checkpoint, read and checked completely (as hostile input). */
typedef struct ag_gpt_file ag_gpt_file;

ag_status ag_gpt_file_load(const char *path, ag_gpt_file **out, char *err, size_t errlen);
void ag_gpt_file_free(ag_gpt_file *f); /* NULL does nothing */
const ag_gpt_config *ag_gpt_file_config(const ag_gpt_file *f);
const ag_vocab *ag_gpt_file_vocab(const ag_gpt_file *f); /* borrowed from f */
/* A trainer's checkpoint: its settings and steps done (returns 1); a
 * model's only: returns 0. */
int ag_gpt_file_train(const ag_gpt_file *f, ag_gpt_train_config *cfg, long *steps);
/* A new model with the file's configuration and weights (the caller owns
 * it). Every weight must be finite. */
ag_gpt *ag_gpt_file_model(const ag_gpt_file *f, char *err, size_t errlen);
/* Continue the file's run: copy its optimizer state, step count and random
 * streams into t, made for a model from ag_gpt_file_model(f). */
ag_status ag_gpt_trainer_restore(ag_gpt_trainer *t, const ag_gpt_file *f, char *err, size_t errlen);

/* The whole setup in one call: a trainer that owns its text (read from
 * text_path) and its model, and frees them with itself. Fresh (resume
 * NULL): a model of config model, its vocab set to the text's, its weights
 * drawn from train->seed. Continuing (resume from ag_gpt_file_load): the
 * file's model, vocabulary and run (as ag_gpt_trainer_restore), of model
 * (may then be NULL) only the dropout is taken. train is the run's
 * settings (ag_gpt_file_train gives the file's own). The text's parts must
 * hold windows of seq ("FILE: a text of N characters is too short ...").
 * NULL with a one-line message on any failure.
 *
 *     ag_gpt_trainer *t = ag_gpt_trainer_open("play.txt", &cfg, &tc, NULL, err, sizeof(err));
 *     ... ag_gpt_trainer_step, then ag_gpt_trainer_val_loss, ag_gpt_trainer_save ...
 *     ag_gpt_trainer_free(t);   // and the text and the model with it
 */
ag_gpt_trainer *ag_gpt_trainer_open(const char *text_path, const ag_gpt_config *model,
                                    const ag_gpt_train_config *train, const ag_gpt_file *resume,
                                    char *err, size_t errlen);
ag_gpt *ag_gpt_trainer_model(ag_gpt_trainer *t);             /* borrowed */
const ag_text *ag_gpt_trainer_text(const ag_gpt_trainer *t); /* borrowed */
/* ag_gpt_val_loss of the trainer's model on its text. */
ag_status ag_gpt_trainer_val_loss(ag_gpt_trainer *t, double *loss, size_t *windows, char *err,
                                  size_t errlen);

/* ------------------------------------------------------------------------
 * Files: safetensors. The format: an 8-byte little-endian header length N,
 * N bytes of JSON ({"name": {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value"}}),
 * then the raw little-endian data (offsets count from the data's start).
 *
 * Reading: every file is treated as hostile. ag_st_load reads the whole file
 * and checks it completely (header length, strict JSON, dtypes, shapes,
 * offsets, overlaps) before it returns; after that, queries cannot fail on
 * the file's account. Only F32 and F64 tensors are accepted; both convert to
 * ag_real. Messages name the file and, where there is one, the tensor:
 *   "model.safetensors: tensor 'wq' has shape [4x4], expected [8x8]"
 *
 *     ag_st_file *f;
 *     char err[256];
 *     int d[AG_MAX_DIMS], nd;
 *     if (ag_st_load("model.safetensors", &f, err, sizeof(err)) != AG_OK ||
 *         ag_st_shape(f, "wq", &nd, d, err, sizeof(err)) != AG_OK)
 *         ...report err...
 *     ag_tensor *wq = ag_param_new(nd, d);
 *     ag_st_get(f, "wq", wq->ndim, wq->shape, wq->data, err, sizeof(err));
 *     const char *heads = ag_st_meta(f, "n_heads");   // NULL when absent
 *     ag_st_free(f);
 *
 * Writing: collect tensors and metadata in a writer, then save. The file is
 * written to a temporary file beside the target, flushed, fsynced and renamed
 * over it: a failed or interrupted save leaves the previous file intact.
 * Errors are sticky, as on the tape: add everything, check ag_st_save once.
 *
 *     ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
 *     ag_st_add_tensor(w, "wq", wq);
 *     ag_st_add_meta(w, "n_heads", "2");
 *     if (ag_st_save(w, "model.safetensors", err, sizeof(err)) != AG_OK) ...
 *     ag_st_writer_free(w);
 * ------------------------------------------------------------------------ */

#define AG_ST_MAX_HEADER 100000000u /* longest JSON header accepted (bytes) */
#define AG_ST_MAX_DIMS 8            /* most dims a tensor in a file may have */

/* A loaded file: its tensors (in name order), metadata and data. */
typedef struct ag_st_file ag_st_file;

/* Read and check path; on success *out is a new file the caller owns (free
 * it with ag_st_free). On failure *out is NULL and err (when not NULL) holds
 * a one-line message. AG_ERR_IO: cannot open or read; AG_ERR_FORMAT: the
 * contents are malformed; AG_ERR_NOMEM: out of memory. */
ag_status ag_st_load(const char *path, ag_st_file **out, char *err, size_t errlen);
/* The same for the len bytes at buf (borrowed for the call only: the file
 * keeps its own copy). name is used in messages; NULL means "<buffer>". */
ag_status ag_st_parse(const void *buf, size_t len, const char *name, ag_st_file **out, char *err,
                      size_t errlen);
void ag_st_free(ag_st_file *f); /* ag_st_free(NULL) does nothing */

/* Tensors, in name order: the count and the i-th name (NULL when i is out
 * of range). Names are borrowed from f. */
size_t ag_st_count(const ag_st_file *f);
const char *ag_st_name(const ag_st_file *f, size_t i);
/* "F32" or "F64", or NULL when there is no such tensor. */
const char *ag_st_dtype(const ag_st_file *f, const char *name);
/* The shape of a tensor: *ndim (0 for a scalar, up to AG_MAX_DIMS) and its
 * dims in shape[0..*ndim) (shape has room for AG_MAX_DIMS). Fails with
 * AG_ERR_FORMAT when there is no such tensor, AG_ERR_SHAPE when its shape
 * does not fit an ag_tensor (more dims, or a dim beyond INT_MAX). */
ag_status ag_st_shape(const ag_st_file *f, const char *name, int *ndim, int *shape, char *err,
                      size_t errlen);
/* Copy tensor name, which must have exactly the shape (ndim, shape), into
 * dst (product of shape elements, caller-owned), converting to ag_real.
 * AG_ERR_FORMAT: no such tensor; AG_ERR_SHAPE: another shape; AG_ERR_NUMERIC:
 * an F64 value beyond float's range in a float build; AG_ERR_ARG: NULL
 * arguments or ndim outside 0..AG_MAX_DIMS. dst is untouched on failure. */
ag_status ag_st_get(const ag_st_file *f, const char *name, int ndim, const int *shape, ag_real *dst,
                    char *err, size_t errlen);
/* ag_st_get, then every value checked before it is trusted: finite, and
 * with nonneg none negative (Adam's v, a mean of squares). AG_ERR_NUMERIC
 * with "PATH: tensor 'NAME' holds NaN at element I" (Inf, a negative
 * value); dst then holds the values read. */
ag_status ag_st_get_finite(const ag_st_file *f, const char *name, int ndim, const int *shape,
                           ag_real *dst, int nonneg, char *err, size_t errlen);
/* How many values of tensor name are not 0 in the file but become 0 as
 * ag_real (an F64 file's 1e-50 in a float build), for a program to say so;
 * *first (may be NULL) gets the first one's index. 0 when there are none or
 * no such tensor. */
size_t ag_st_flushed(const ag_st_file *f, const char *name, size_t *first);

/* An attention layer from a file in `attograd grad`'s model format (the
 * common format for comparing with numpy or PyTorch): tensors wq, wk, wv,
 * wo, each (d, d), and metadata n_heads (a whole number dividing d) and
 * causal ("true" or "false"; absent: false). Every weight must be finite.
 * path is f's name for messages. NULL with a one-line message naming the
 * file and what is wrong ("m.st: metadata 'n_heads' is missing"). The
 * caller owns the layer. */
ag_attention *ag_attention_load(const ag_st_file *f, const char *path, char *err, size_t errlen);
/* Metadata: the value for key, or NULL when absent (borrowed from f); the
 * count and the i-th key, in key order. */
const char *ag_st_meta(const ag_st_file *f, const char *key);
size_t ag_st_meta_count(const ag_st_file *f);
const char *ag_st_meta_key(const ag_st_file *f, size_t i);

/* The element type a writer stores. AG_ST_REAL is the build's ag_real. */
typedef enum ag_st_type { AG_ST_F32 = 1, AG_ST_F64 = 2 } ag_st_type;
#ifdef AG_REAL_DOUBLE
#define AG_ST_REAL AG_ST_F64
#else
#define AG_ST_REAL AG_ST_F32
#endif

typedef struct ag_st_writer ag_st_writer;

/* A new, empty writer storing dtype; NULL when out of memory or dtype is
 * not an ag_st_type. */
ag_st_writer *ag_st_writer_new(ag_st_type dtype);
void ag_st_writer_free(ag_st_writer *w); /* NULL does nothing */
/* Add a tensor: name is copied; shape (ndim 0..AG_MAX_DIMS, dims >= 0) is
 * copied; data (the product of shape elements) is BORROWED until ag_st_save
 * and must stay valid and unchanged until then. A name used twice, the name
 * "__metadata__", a string that is not UTF-8, or a bad shape is an error;
 * the first error is kept and returned again by ag_st_save. */
ag_status ag_st_add(ag_st_writer *w, const char *name, int ndim, const int *shape,
                    const ag_real *data);
/* ag_st_add of t's shape and data (borrowed). */
ag_status ag_st_add_tensor(ag_st_writer *w, const char *name, const ag_tensor *t);
/* Add a metadata entry; key and value are copied UTF-8 strings. */
ag_status ag_st_add_meta(ag_st_writer *w, const char *key, const char *value);
/* The writer's first error, "" when there is none. */
const char *ag_st_writer_error(const ag_st_writer *w);
/* Write everything to path atomically (temporary file, fsync, rename):
 * header padded with spaces to a multiple of 8 bytes, tensors in name order,
 * contiguous. On failure the previous file at path is left as it was and no
 * temporary file remains. A symlink at path is replaced, not followed. The
 * writer can be saved again or freed. */
ag_status ag_st_save(ag_st_writer *w, const char *path, char *err, size_t errlen);
/* An attention layer into w in ag_attention_load's format: metadata
 * n_heads and causal, and the four weights wq, wk, wv, wo; with grads their
 * gradients instead, named grad.wq .. grad.wo (as `attograd grad` writes
 * them). Borrowed until the save; errors are sticky on w, as ag_st_add's. */
void ag_attention_add(ag_st_writer *w, ag_attention *att, int grads);

/* ------------------------------------------------------------------------
 * Files: CSV logs. A header row, then one row of numbers per call. The log
 * is written to a temporary file beside path and renamed over path by
 * ag_csv_close, so a reader never sees half a log; ag_csv_free without close
 * discards it.
 *
 *     ag_csv *log;
 *     if (ag_csv_open("train.csv", "step,loss", &log, err, sizeof(err)) != AG_OK) ...
 *     for (...) ag_csv_row(log, (double[]){step, loss}, 2);
 *     if (ag_csv_close(log, err, sizeof(err)) != AG_OK) ...
 * ------------------------------------------------------------------------ */
typedef struct ag_csv ag_csv;

/* Start a log at path with header (comma-separated column names, no
 * newline; it is written as given). *out is owned by the caller until
 * ag_csv_close or ag_csv_free. */
ag_status ag_csv_open(const char *path, const char *header, ag_csv **out, char *err, size_t errlen);
/* Append a row of n values (n must be the header's column count), written
 * with %.10g; a NaN is written as an empty field (a value the row lacks).
 * Errors are sticky: ag_csv_close reports the first. */
ag_status ag_csv_row(ag_csv *csv, const double *values, size_t n);
/* Finish: flush, fsync, rename over path, free csv (always, even on
 * failure; on failure the temporary file is removed). */
ag_status ag_csv_close(ag_csv *csv, char *err, size_t errlen);
/* Discard an unfinished log (the temporary file is removed) and free csv. */
void ag_csv_free(ag_csv *csv);

/* ------------------------------------------------------------------------
 * Curves: a training run's numbers kept for a plot. A curve holds at most
 * cap rows of (step, width values), allocated by ag_curve_init, so adding
 * never allocates. Thinning: ag_curve_add keeps step s only when (s - 1) %
 * stride == 0 (steps count from 1); a run of N steps keeps its whole shape
 * in cap points with stride ceil(N / cap). Stride 1 keeps every row added
 * until the curve is full.
 *
 *     ag_curve loss;
 *     if (ag_curve_init_thinned(&loss, 1, steps, 10000) != AG_OK) ...
 *     for (long s = 1; s <= steps; s++) ag_curve_add(&loss, s, &l);
 *     ag_curve_write(&loss, f);   // gnuplot's '-' data: "step value" per line
 *     ag_curve_free(&loss);
 * ------------------------------------------------------------------------ */
typedef struct ag_curve {
    double *rows; /* (cap, 1 + width): a step, then its values; n of them filled */
    size_t n, cap;
    int width;
    long stride;
} ag_curve;

/* AG_ERR_ARG for width, cap or stride below 1 (or a size that overflows),
 * AG_ERR_NOMEM; either way *c is then empty (adding keeps nothing). */
ag_status ag_curve_init(ag_curve *c, int width, size_t cap, long stride);
/* For a run of steps steps (from 1) in at most max_points rows: cap
 * min(steps, max_points) and stride ceil(steps / cap), the rule above.
 * AG_ERR_ARG when steps or max_points is below 1. */
ag_status ag_curve_init_thinned(ag_curve *c, int width, long steps, size_t max_points);
/* Keep (step, values[0..width)) when the stride takes step and there is
 * room: returns 1, else 0. */
int ag_curve_add(ag_curve *c, long step, const double *values);
/* The rows as text, one a line: the step (%.0f), then each value (%.9g). */
void ag_curve_write(const ag_curve *c, FILE *f);
void ag_curve_free(ag_curve *c); /* the rows; *c is then empty (NULL does nothing) */

/* ------------------------------------------------------------------------
 * Files a program names. Every output of the library follows one rule: a
 * regular file (or a symbolic link to one) or a new name is replaced whole
 * (a temporary file "NAME.tmp-PID-XXXXXXXX" beside it, fsync, rename), a
 * character device (/dev/null, a terminal) is written through, and a
 * directory, FIFO, socket, block device or a link to nothing is refused.
 * These give a program's own files the same rule, and the checks that
 * belong before any work.
 * ------------------------------------------------------------------------ */
/* Whether path can be written later by the rule (a temporary file is made
 * in its directory and removed). AG_OK, or the error with a message naming
 * path. Check every output before a long run, so it never ends in "cannot
 * create". */
ag_status ag_file_check_output(const char *path, char *err, size_t errlen);
/* Write len bytes of data to path by the rule; on failure path is as it
 * was. */
ag_status ag_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* For a file another program writes by name (Graphviz's `dot -o`):
 * ag_file_tmp_name makes an empty temporary file where the rule would
 * (beside the file a link leads to; in $TMPDIR or /tmp when path is a
 * device) and writes its name to tmp (tmplen bytes); once the program has
 * written it, ag_file_tmp_commit puts it in place (renamed over the file,
 * copied into a device) and removes it, also on failure. Both refuse what
 * the rule refuses. */
ag_status ag_file_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen);
ag_status ag_file_tmp_commit(const char *tmp, const char *path, char *err, size_t errlen);
/* Whether names a and b lead to one file: an existing file by device and
 * inode (./x, dir/../x, a symbolic or a second hard link all match), a new
 * name by its directory resolved and its last component. *device (may be
 * NULL) is set to 1 when they do and it is a character device, which two
 * writers share harmlessly. So a program can refuse an output that would
 * replace one of its inputs under another name. */
int ag_file_same(const char *a, const char *b, int *device);
/* Whether path is an existing regular file open on file descriptor fd
 * (`--out g.st > g.st`: the output would replace the messages' file). */
int ag_file_is_fd(const char *path, int fd);

/* ------------------------------------------------------------------------
 * Text from outside: strict numbers and safe quoting, for a file's metadata
 * (the checkpoint reader uses them) and a program's arguments (the attograd
 * command does). A number is the whole string or it is an error: no leading
 * white space, a sign only where it makes sense, no NaN or Inf, never a
 * silent 0 or a prefix.
 * ------------------------------------------------------------------------ */
enum {
    AG_PARSE_OK = 0,    /* *out is set */
    AG_PARSE_BAD = 1,   /* not a number at all */
    AG_PARSE_RANGE = 2, /* a number, but beyond the type (or infinite) */
    AG_PARSE_TINY = 3   /* a number so small that it underflowed to 0 (doubles only) */
};
/* Each returns AG_PARSE_*; *out is untouched unless AG_PARSE_OK. */
int ag_parse_long(const char *s, long *out);     /* decimal, optional sign */
int ag_parse_u64(const char *s, uint64_t *out);  /* decimal digits only */
int ag_parse_double(const char *s, double *out); /* finite */

/* s made fit to show in a one-line message: C0 controls, DEL, C1 controls
 * (U+0080..U+009F, e.g. CSI) and bytes that are not UTF-8 escaped (\n, \t,
 * \x1b, \xc2\x9b); when the result does not fit len bytes, the middle is
 * cut ("[...N bytes...]") so that both ends show. Writes buf and returns
 * it; AG_QUOTE_LEN is enough for any name a message shows. */
#define AG_QUOTE_LEN 512
const char *ag_quote(const char *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ATTOGRAD_H */
