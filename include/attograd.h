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
    AG_ERR_SHAPE,   /* shapes do not fit the op */
    AG_ERR_ARG,     /* a bad argument: NULL, out of range, wrong size */
    AG_ERR_NOMEM,   /* allocation failed or a size overflowed */
    AG_ERR_IO,      /* a file could not be read or written */
    AG_ERR_FORMAT,  /* a file's contents are malformed */
    AG_ERR_NUMERIC  /* a value went NaN or infinite */
} ag_status;

/* A short name for a status ("shape", "nomem", ...). */
const char *ag_status_name(ag_status status);

/* ------------------------------------------------------------------------
 * Tensors: row-major, 1..4 dimensions.
 * ------------------------------------------------------------------------ */
typedef struct ag_tensor {
    int ndim;                 /* 1..AG_MAX_DIMS */
    int shape[AG_MAX_DIMS];   /* entries past ndim are 1 */
    size_t size;              /* number of elements: product of shape */
    ag_real *data;            /* (size) values, row-major */
    ag_real *grad;            /* (size) dL/d(data), or NULL when no gradient flows here */
} ag_tensor;

/* The tape: a Wengert list of the ops of one step, and the arena they use. */
typedef struct ag_tape ag_tape;

ag_tape *ag_tape_new(void);                 /* NULL when out of memory */
void ag_tape_free(ag_tape *tape);           /* ag_tape_free(NULL) does nothing */
/* Forget every entry and release every tensor of the step (O(1), memory is
 * kept for the next step); clears the error. Invalidates all tape tensors. */
void ag_tape_reset(ag_tape *tape);
ag_status ag_tape_status(const ag_tape *tape);
const char *ag_tape_error(const ag_tape *tape);   /* "" when there is none */
size_t ag_tape_size(const ag_tape *tape);         /* number of entries */

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
 * (for example dL/dx of an input). Returns t, or NULL on error. */
ag_tensor *ag_requires_grad(ag_tape *tape, ag_tensor *t);

/* A parameter: a tensor with a gradient, owned by the caller (not the tape).
 * Data and gradient start at zero. NULL on a bad shape or out of memory. */
ag_tensor *ag_param_new(int ndim, const int *shape);
void ag_param_free(ag_tensor *param);       /* ag_param_free(NULL) does nothing */
void ag_zero_grad(ag_tensor *const *params, size_t n);

/* Shape helpers. ag_shape_str writes "[2x3]" into buf and returns buf. */
int ag_same_shape(const ag_tensor *a, const ag_tensor *b);
char *ag_shape_str(const ag_tensor *t, char *buf, size_t len);

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
uint64_t ag_rng_next(ag_rng *rng);                 /* 64 random bits */
double ag_rng_uniform(ag_rng *rng);                /* in [0, 1) */
double ag_rng_normal(ag_rng *rng);                 /* mean 0, standard deviation 1 */
uint32_t ag_rng_below(ag_rng *rng, uint32_t n);    /* in [0, n), unbiased; 0 when n == 0 */
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
 * contribution into its inputs' gradients (+=, so gradients accumulate across
 * calls until ag_zero_grad). loss must have one element. Entries whose
 * output carries no gradient are skipped. Returns the tape's status: an
 * earlier op's error is reported here. */
ag_status ag_backward(ag_tape *tape, ag_tensor *loss);

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

/* ------------------------------------------------------------------------
 * Finite-difference gradient check.
 * ------------------------------------------------------------------------ */

/* Builds a result on the tape from the inputs. When the result has more than
 * one element, the checker projects it onto fixed random weights (so a
 * wrong backward cannot hide behind, say, the constant sum of a softmax). */
typedef ag_tensor *(*ag_build_fn)(ag_tape *tape, ag_tensor *const *inputs, void *ctx);

typedef struct ag_gradcheck_opts {
    double eps;          /* central difference step; 0 picks one for ag_real */
    double rtol;         /* max relative error allowed; 0 picks one for ag_real */
    double atol;         /* absolute floor for the relative error's denominator; 0 picks */
    size_t max_samples;  /* per input, check at most this many random elements; 0 = all */
    uint64_t seed;       /* projection weights and sampling */
} ag_gradcheck_opts;

typedef struct ag_gradcheck_result {
    double max_abs;      /* max |analytic - numeric| */
    double max_rel;      /* max |analytic - numeric| / max(|analytic|, |numeric|, atol) */
    double tolerance;    /* the rtol used */
    int worst_input;     /* which input holds the worst element */
    size_t worst_index;  /* its flat index */
    size_t checked;      /* elements compared */
    size_t total;        /* elements in all inputs */
    int passed;          /* max_rel <= tolerance */
} ag_gradcheck_result;

/* Default options for this build's precision. */
ag_gradcheck_opts ag_gradcheck_defaults(void);
/* Compare the analytic gradient of every input (parameters: ag_param_new)
 * with central differences. Uses a private tape; inputs' data is restored and
 * their gradients are left holding the analytic gradient. Returns AG_OK when
 * the check ran (read result->passed), or the error that stopped it (the
 * build function's tape error is copied into err when err is not NULL). */
ag_status ag_gradcheck(ag_build_fn build, void *ctx, ag_tensor *const *inputs, int n_inputs,
                       const ag_gradcheck_opts *opts, ag_gradcheck_result *result,
                       char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* ATTOGRAD_H */
