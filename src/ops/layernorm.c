/*
 * layernorm.c - layer normalisation over the last axis (PyTorch's LayerNorm):
 *   y = (x - mean) / sqrt(var + eps) * weight + bias
 * per row of C values, var biased (divided by C), eps = AG_LAYERNORM_EPS.
 * It keeps every position's vector at one scale whatever the layers before
 * it did, which is what lets a deep stack of residual blocks train.
 * Backward works from each row's mean and 1/std, saved by the forward; the
 * normalised row xhat is recomputed rather than kept (one (rows, C) buffer
 * less per layer norm).
 */
#include "../kernels/clones.h"
#include "../core/internal.h"
#include "../kernels/threads.h"

#include <math.h>
#include <string.h>

static void layernorm_backward(ag_tape *tape, const ag_entry *e);
static const ag_op layernorm_op = {"layernorm", layernorm_backward, 0, 0};

/* Which optional inputs an entry has (its iarg); in[] holds x, then the
 * weight when there is one, then the bias. */
enum { HAS_WEIGHT = 1, HAS_BIAS = 2 };

/* Rows are handled in blocks of this many: the unit of work for the
 * threads, and in backward the unit whose weight and bias gradients are
 * summed separately, then added block by block in order, so the result does
 * not depend on the thread count. */
#define BLOCK_ROWS 32
/* Below this many elements a layer norm runs on the caller's thread. */
#define PARALLEL_MIN ((size_t)1 << 14)
/* Interleaved partial sums along a row: enough to fill a vector register. */
#define LANES 16

typedef struct ln_job {
    const ag_real *x, *w, *b; /* x (rows, C); w and b (C), or NULL (in backward, w is
                                 * never NULL: ones stand for a missing weight) */
    ag_real *y;               /* forward: (rows, C) */
    ag_real *stats;           /* (rows, 2): mean, 1/std */
    const ag_real *dy;        /* backward: (rows, C) */
    ag_real *dx;              /* (rows, C), or NULL */
    ag_real *dw, *db;         /* (blocks, C) per-block sums, or NULL */
    size_t rows, C;
} ln_job;

/* sum = the sum of term over i = 0 .. C-1 of one row, in LANES interleaved
 * partial sums (lane k takes the i = k mod LANES of the whole blocks; the
 * loop the compiler vectorises), the lanes pairwise, then the last C mod
 * LANES terms in order. The order depends only on C, so a row's sums are
 * the same on every call and every thread. */
#define ROW_SUM(sum, C, i, term)                                                                   \
    do {                                                                                           \
        size_t i = 0;                                                                              \
        (sum) = 0;                                                                                 \
        if ((C) >= LANES) {                                                                        \
            ag_real lane_[LANES] = {0};                                                            \
            for (size_t c0_ = 0; c0_ + LANES <= (C); c0_ += LANES)                                 \
                for (int k_ = 0; k_ < LANES; k_++) {                                               \
                    i = c0_ + (size_t)k_;                                                          \
                    lane_[k_] += (term);                                                           \
                }                                                                                  \
            for (int w_ = LANES / 2; w_ > 0; w_ /= 2)                                              \
                for (int k_ = 0; k_ < w_; k_++)                                                    \
                    lane_[k_] += lane_[k_ + w_];                                                   \
            (sum) = lane_[0];                                                                      \
        }                                                                                          \
        for (i = (C) / LANES * LANES; i < (C); i++)                                                \
            (sum) += (term);                                                                       \
    } while (0)

/* Block t of rows: mean, 1/std and y. The mean first, then the variance
 * around it (two passes: a one-pass E[x^2] - mean^2 loses every digit when
 * the mean is large against the spread). */
AG_CLONES static void forward_block(const ln_job *j, size_t t)
{
    size_t C = j->C, r1 = (t + 1) * BLOCK_ROWS < j->rows ? (t + 1) * BLOCK_ROWS : j->rows;
    ag_real inv_c = (ag_real)1 / (ag_real)C;
    for (size_t r = t * BLOCK_ROWS; r < r1; r++) {
        const ag_real *x = j->x + r * C;
        ag_real *y = j->y + r * C;
        ag_real sum, sq;
        ROW_SUM(sum, C, i, x[i]);
        ag_real mean = sum * inv_c;
        ROW_SUM(sq, C, i, (x[i] - mean) * (x[i] - mean));
        ag_real rstd = 1 / AG_SQRT(sq * inv_c + (ag_real)AG_LAYERNORM_EPS);
        j->stats[2 * r] = mean;
        j->stats[2 * r + 1] = rstd;
        for (size_t c = 0; c < C; c++)
            y[c] = (x[c] - mean) * rstd * (j->w ? j->w[c] : 1) + (j->b ? j->b[c] : 0);
    }
}

static void forward_task(void *ctx, size_t t)
{
    forward_block(ctx, t);
}

static void run_blocks(const ln_job *j, void (*task)(void *, size_t))
{
    size_t blocks = (j->rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
    if (j->rows * j->C < PARALLEL_MIN) {
        for (size_t t = 0; t < blocks; t++)
            task((void *)j, t);
        return;
    }
    ag_parallel_for(blocks, task, (void *)j);
}

static int check_param(ag_tape *tape, const ag_tensor *x, const ag_tensor *p, const char *name)
{
    int C = x->shape[x->ndim - 1];
    if (!p || (p->ndim == 1 && p->shape[0] == C))
        return 1;
    char sx[64], sp[64];
    ag_tape_fail(tape, AG_ERR_SHAPE, "layernorm: x is %s, %s is %s: %s must be [%d]",
                 ag_shape_str(x, sx, sizeof(sx)), name, ag_shape_str(p, sp, sizeof(sp)), name, C);
    return 0;
}

ag_tensor *ag_layernorm(ag_tape *tape, const ag_tensor *x, const ag_tensor *weight,
                        const ag_tensor *bias)
{
    const ag_tensor *in[3] = {x, weight, bias};
    int n_in = 1;
    if (!ag_op_begin(tape, "layernorm", 1, in) || !check_param(tape, x, weight, "weight") ||
        !check_param(tape, x, bias, "bias"))
        return NULL;
    if (weight)
        in[n_in++] = weight;
    if (bias)
        in[n_in++] = bias;
    size_t rows = ag_rows(x);
    ag_tensor *out = ag_tensor_make(tape, x->ndim, x->shape, 0, ag_any_grad(n_in, in));
    /* 2 * rows reals fit: x holds rows * C >= rows of them */
    ag_real *stats = out ? ag_arena_alloc(tape, 2 * rows * sizeof(ag_real)) : NULL;
    ag_entry *e = stats ? ag_tape_push(tape, &layernorm_op, out, n_in, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = (weight ? HAS_WEIGHT : 0) | (bias ? HAS_BIAS : 0);
    e->saved = stats;
    ln_job job = {x->data,
                  weight ? weight->data : NULL,
                  bias ? bias->data : NULL,
                  out->data,
                  stats,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  rows,
                  (size_t)x->shape[x->ndim - 1]};
    run_blocks(&job, forward_task);
    return out;
}

/* Block t of rows: dx for its rows, and into row t of dw and db the sums of
 * dy * xhat and of dy over its rows. */
AG_CLONES static void backward_block(const ln_job *j, size_t t)
{
    size_t C = j->C, r1 = (t + 1) * BLOCK_ROWS < j->rows ? (t + 1) * BLOCK_ROWS : j->rows;
    ag_real inv_c = (ag_real)1 / (ag_real)C;
    ag_real *dw = j->dw ? j->dw + t * C : NULL, *db = j->db ? j->db + t * C : NULL;
    if (dw)
        memset(dw, 0, C * sizeof(ag_real));
    if (db)
        memset(db, 0, C * sizeof(ag_real));
    for (size_t r = t * BLOCK_ROWS; r < r1; r++) {
        const ag_real *x = j->x + r * C, *dy = j->dy + r * C;
        ag_real mean = j->stats[2 * r], rstd = j->stats[2 * r + 1];
        if (dw)
            for (size_t c = 0; c < C; c++)
                dw[c] += dy[c] * ((x[c] - mean) * rstd);
        if (db)
            for (size_t c = 0; c < C; c++)
                db[c] += dy[c];
        if (!j->dx)
            continue;
        /* g = dL/dxhat = dy * w; the sums for the two means of the formula */
        ag_real g_sum, gx_sum;
        ROW_SUM(g_sum, C, i, dy[i] * j->w[i]);
        ROW_SUM(gx_sum, C, i, dy[i] * j->w[i] * ((x[i] - mean) * rstd));
        ag_real g_mean = g_sum * inv_c, gx_mean = gx_sum * inv_c;
        ag_real *dx = j->dx + r * C;
        for (size_t c = 0; c < C; c++) {
            ag_real xhat = (x[c] - mean) * rstd, g = dy[c] * j->w[c];
            dx[c] += rstd * (g - g_mean - xhat * gx_mean);
        }
    }
}

static void backward_task(void *ctx, size_t t)
{
    backward_block(ctx, t);
}

static void layernorm_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: y_i = xhat_i w_i + b_i, xhat_i = (x_i - mean) r, r = 1 / sqrt(var + eps),
     * mean and var over the row's C values. With g = dL/dxhat = dy * w, the
     * Jacobian dxhat_i/dx_j = r (delta_ij - 1/C - xhat_i xhat_j / C) gives
     *   dx_j += r (g_j - mean(g) - xhat_j mean(g * xhat)),
     * and dw += dy * xhat, db += dy, summed over the rows.
     */
    ag_tensor *x = e->in[0];
    ag_tensor *w = e->iarg & HAS_WEIGHT ? e->in[1] : NULL;
    ag_tensor *b = e->iarg & HAS_BIAS ? e->in[e->n_in - 1] : NULL;
    size_t rows = ag_rows(x), C = (size_t)x->shape[x->ndim - 1];
    size_t blocks = (rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
    int dw = w && w->grad, db = b && b->grad;
    if (!x->grad && !dw && !db)
        return;
    /* the per-block sums, and ones for a missing weight (so that the row
     * loops have no branch in them and vectorise) */
    size_t bytes;
    ag_real *part = NULL;
    if (ag_mul_size(((size_t)(dw + db) * blocks + 1) * C, sizeof(ag_real), &bytes))
        part = ag_arena_alloc(tape, bytes);
    else
        ag_tape_fail(tape, AG_ERR_NOMEM, "layernorm: backward's buffers do not fit in memory");
    if (!part)
        return; /* the tape's error is set */
    ag_real *ones = part + (size_t)(dw + db) * blocks * C;
    for (size_t c = 0; c < C; c++)
        ones[c] = 1;
    ln_job job = {x->data,
                  w ? w->data : ones,
                  NULL,
                  NULL,
                  e->saved,
                  e->out->grad,
                  x->grad,
                  dw ? part : NULL,
                  db ? part + (dw ? blocks * C : 0) : NULL,
                  rows,
                  C};
    run_blocks(&job, backward_task);
    for (size_t t = 0; t < blocks; t++)
        for (size_t c = 0; c < C; c++) {
            if (dw)
                w->grad[c] += job.dw[t * C + c];
            if (db)
                b->grad[c] += job.db[t * C + c];
        }
}
