/*
 * elementwise.c - the fast kernels of the elementwise ops and the losses:
 * long runs shared out over the threads in chunks fixed by their size (so
 * a sum over chunks is the same on any number of threads), loops compiled
 * per instruction set (clones.h). Each computes what its op's plain loop
 * computes (src/ops/), element for element.
 */
#include "clones.h"
#include "kernels.h"
#include "threads.h"

#include <math.h>
#include <string.h>

/* ---- add: y = x + b, b repeated every n elements ---- */

/* Elements per chunk shared out over the threads (64 KB of floats): the
 * residual stream's adds, 98304 elements at the GPT's defaults, are worth
 * splitting; small adds stay one chunk and run inline. */
#define ADD_GRAIN 16384

typedef struct add_job {
    const ag_real *x, *b, *dy;
    ag_real *y, *dx, *db;
    size_t n;       /* b's size: it repeats every n elements of x */
    size_t repeats; /* x's size / n */
} add_job;

/* The element loops, built per instruction set: the residual stream's
 * adds are three of the step's passes over (B,T,C), in and out of L2. */
AG_CLONES static void add_n(const ag_real *restrict x, const ag_real *restrict b,
                            ag_real *restrict y, size_t n)
{
    for (size_t k = 0; k < n; k++)
        y[k] = x[k] + b[k];
}

AG_CLONES static void acc_n(const ag_real *restrict dy, ag_real *restrict dx, size_t n)
{
    for (size_t k = 0; k < n; k++)
        dx[k] += dy[k];
}

/* dx = 0 + dy (into an unset dx: the same bits as adding into zeros, -0
 * becoming +0), and the same into dz when it is not NULL: one read of dy
 * for both of an add's inputs */
AG_CLONES static void set_n(const ag_real *restrict dy, ag_real *restrict dx, ag_real *restrict dz,
                            size_t n)
{
    if (dz) {
        for (size_t k = 0; k < n; k++) {
            ag_real v = (ag_real)0 + dy[k];
            dx[k] = v;
            dz[k] = v;
        }
        return;
    }
    for (size_t k = 0; k < n; k++)
        dx[k] = (ag_real)0 + dy[k];
}

/* y[i] = x[i] + b[i mod n] for i in [lo, hi) */
static void add_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    size_t n = j->n;
    for (size_t i = lo; i < hi;) {
        size_t c = i % n, end = hi - i < n - c ? hi : i + (n - c);
        add_n(j->x + i, j->b + c, j->y + i, end - i);
        i = end;
    }
}

/* dx[i] += dy[i] for i in [lo, hi) */
static void add_dx_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    acc_n(j->dy + lo, j->dx + lo, hi - lo);
}

/* dx[i] = 0 + dy[i], and db[i] too when db is set, for i in [lo, hi) */
static void set_dx_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    set_n(j->dy + lo, j->dx + lo, j->db ? j->db + lo : NULL, hi - lo);
}

/* db[c] += dy[c] + dy[n + c] + ... in that order, for columns c in [lo, hi) */
static void add_db_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    for (size_t r = 0; r < j->repeats; r++) {
        const ag_real *dy = j->dy + r * j->n;
        for (size_t c = lo; c < hi; c++)
            j->db[c] += dy[c];
    }
}

void ag_fast_add(const ag_real *x, const ag_real *b, ag_real *y, size_t size, size_t n)
{
    add_job j = {.x = x, .b = b, .y = y, .n = n};
    ag_parallel_range(size, ADD_GRAIN, add_range, &j);
}

void ag_fast_add_grad(const ag_real *dy, ag_real *dx, size_t size, int set)
{
    add_job j = {.dy = dy, .dx = dx};
    ag_parallel_range(size, ADD_GRAIN, set ? set_dx_range : add_dx_range, &j);
}

void ag_fast_add_grad_both(const ag_real *dy, ag_real *da, ag_real *db, size_t size)
{
    add_job j = {.dy = dy, .dx = da, .db = db};
    ag_parallel_range(size, ADD_GRAIN, set_dx_range, &j);
}

void ag_fast_add_grad_repeated(const ag_real *dy, ag_real *db, size_t size, size_t n)
{
    add_job j = {.dy = dy, .db = db, .n = n, .repeats = size / n};
    /* columns to a chunk, ADD_GRAIN elements of dy in all */
    ag_parallel_range(n, (ADD_GRAIN + j.repeats - 1) / j.repeats, add_db_range, &j);
}

/* ---- dropout: out (=, or += when add) in * (kept ? scale : 0) ---- */

/* Elements per task when threads share the work; below PARALLEL_MIN
 * elements, the caller's thread does it all. CHUNK divides 2^32, so the
 * high half of an element's index is the same across a chunk. */
#define CHUNK 4096
#define PARALLEL_MIN ((size_t)1 << 15)

typedef struct dropout_job {
    const ag_real *in;
    ag_real *out;
    size_t n;
    ag_real scale;
    uint64_t key;
    uint32_t threshold;
    int add;
} dropout_job;

/* Elements [i0, i0 + n) of one chunk: ag_dropout_bits with its per-chunk
 * part hoisted, all in 32-bit lanes, so the AG_CLONES versions vectorise
 * it. The same bits as ag_dropout_bits(key, i) for every i. */
AG_CLONES static void mask_chunk(const dropout_job *j, size_t i0, size_t n)
{
    const ag_real *in = j->in + i0;
    ag_real *out = j->out + i0, scale = j->scale;
    uint32_t base = (uint32_t)i0, k0 = (uint32_t)j->key;
    uint32_t k1 = (uint32_t)(j->key >> 32) ^ ag_fmix32((uint32_t)((uint64_t)i0 >> 32));
    uint32_t thr = j->threshold;
    if (j->add) {
        for (size_t c = 0; c < n; c++)
            out[c] +=
                in[c] * (ag_fmix32(ag_fmix32(base + (uint32_t)c + k0) ^ k1) >= thr ? scale : 0);
    } else {
        for (size_t c = 0; c < n; c++)
            out[c] =
                in[c] * (ag_fmix32(ag_fmix32(base + (uint32_t)c + k0) ^ k1) >= thr ? scale : 0);
    }
}

static void mask_task(void *ctx, size_t t)
{
    const dropout_job *j = ctx;
    size_t i0 = t * CHUNK;
    mask_chunk(j, i0, j->n - i0 < CHUNK ? j->n - i0 : CHUNK);
}

void ag_fast_dropout(const ag_real *in, ag_real *out, size_t n, ag_real scale, uint64_t key,
                     uint32_t threshold, int add)
{
    dropout_job j = {in, out, n, scale, key, threshold, add};
    size_t chunks = (n + CHUNK - 1) / CHUNK;
    if (n < PARALLEL_MIN) {
        for (size_t t = 0; t < chunks; t++)
            mask_task(&j, t);
        return;
    }
    ag_parallel_for(chunks, mask_task, &j);
}

/* ---- mse ---- */

/* Independent partial sums in the forward: enough to fill vector registers
 * and to hide the latency of their adds. */
#define MSE_LANES 16

/* sum_i (p_i - t_i)^2, each difference and square in double as a plain loop
 * would, summed in MSE_LANES interleaved partial sums (lane k takes the
 * elements i = k mod MSE_LANES of the whole blocks) that the compiler can
 * vectorise, the lanes pairwise, then the last n mod MSE_LANES elements in
 * order. The order depends only on n: the same inputs always give the same
 * sum. */
AG_CLONES static double sq_diff_sum(size_t n, const ag_real *restrict p, const ag_real *restrict t)
{
    size_t i = 0;
    double sum = 0;
    if (n >= MSE_LANES) {
        double lane[MSE_LANES] = {0};
        for (; i + MSE_LANES <= n; i += MSE_LANES)
            for (int k = 0; k < MSE_LANES; k++) {
                double d = (double)p[i + k] - (double)t[i + k];
                lane[k] += d * d;
            }
        for (int w = MSE_LANES / 2; w > 0; w /= 2)
            for (int k = 0; k < w; k++)
                lane[k] += lane[k + w];
        sum = lane[0];
    }
    for (; i < n; i++) {
        double d = (double)p[i] - (double)t[i];
        sum += d * d;
    }
    return sum;
}

/* dx_i += s (p_i - t_i) for i < n: one input's gradient, s = +-2 dL / n */
AG_CLONES static void mse_grad(size_t n, ag_real *restrict dx, const ag_real *restrict p,
                               const ag_real *restrict t, ag_real s)
{
    for (size_t i = 0; i < n; i++)
        dx[i] += s * (p[i] - t[i]);
}

/* ---- relu ---- */

/* x < 0 rather than max(x, 0): a NaN fails the comparison and stays NaN,
 * for anomaly detection to find. */
AG_CLONES static void relu_forward(const ag_real *x, ag_real *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] < 0 ? 0 : x[i];
}

AG_CLONES static void relu_grad(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dx[i] += x[i] > 0 ? dy[i] : 0;
}

/* The exported names call the clones from this file (Clang resolves a
 * target_clones function only within its own translation unit). */
double ag_fast_sq_diff_sum(size_t n, const ag_real *restrict p, const ag_real *restrict t)
{
    return sq_diff_sum(n, p, t);
}

void ag_fast_mse_grad(size_t n, ag_real *restrict dx, const ag_real *restrict p,
                      const ag_real *restrict t, ag_real s)
{
    mse_grad(n, dx, p, t, s);
}

void ag_fast_relu(const ag_real *x, ag_real *y, size_t n)
{
    relu_forward(x, y, n);
}

void ag_fast_relu_grad(const ag_real *x, const ag_real *dy, ag_real *dx, size_t n)
{
    relu_grad(x, dy, dx, n);
}
