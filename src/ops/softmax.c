/*
 * softmax.c - softmax over the last axis: s_i = exp(z_i - max) / sum_j exp(z_j - max).
 * Subtracting the row max keeps exp from overflowing; -inf entries (masked
 * keys) get weight exactly 0; a row with no finite entry gives all zeros;
 * +inf entries share all the weight (the limit), never NaN.
 */
#include "../core/internal.h"
#include "../core/threads.h"

#include <math.h>

/* Rows [r0, r1) of a softmax, forward or backward: each row is computed
 * the same way wherever it falls, so splitting rows over threads changes no
 * bit of the result. */
typedef struct softmax_job {
    const ag_tensor *a, *out;
    size_t n, rows, per_task;
    int wrong;               /* AG_BUG_SOFTMAX */
} softmax_job;

/* Below this many elements a softmax runs on the caller's thread. */
#define SOFTMAX_PARALLEL_MIN ((size_t)1 << 15)

static void run_rows(const softmax_job *j, void (*task)(void *, size_t))
{
    size_t threads = j->rows * j->n < SOFTMAX_PARALLEL_MIN ? 1 : (size_t)ag_parallel_threads();
    softmax_job job = *j;
    if (threads <= 1) {
        job.per_task = job.rows;
        task(&job, 0);
        return;
    }
    size_t tasks = 4 * threads;
    job.per_task = (job.rows + tasks - 1) / tasks;
    ag_parallel_for((job.rows + job.per_task - 1) / job.per_task, task, &job);
}

static void forward_task(void *ctx, size_t t)
{
    const softmax_job *job = ctx;
    const ag_tensor *a = job->a, *out = job->out;
    size_t n = job->n, r0 = t * job->per_task;
    size_t r1 = r0 + job->per_task < job->rows ? r0 + job->per_task : job->rows;
    for (size_t r = r0; r < r1; r++) {
        const ag_real *z = a->data + r * n;
        ag_real *s = out->data + r * n;
        ag_real max = -INFINITY;
        for (size_t j = 0; j < n; j++)
            if (z[j] > max)
                max = z[j];
        if (max == -INFINITY) {
            /* fully masked row: attends to nothing */
            for (size_t j = 0; j < n; j++)
                s[j] = 0;
            continue;
        }
        if (max == INFINITY) {
            /* the limit as those logits grow: all weight on the +inf entries
             * (exp(inf - inf) would be NaN) */
            size_t count = 0;
            for (size_t j = 0; j < n; j++)
                count += z[j] == INFINITY;
            for (size_t j = 0; j < n; j++)
                s[j] = z[j] == INFINITY ? (ag_real)1 / (ag_real)count : 0;
            continue;
        }
        ag_real sum = 0;
        for (size_t j = 0; j < n; j++) {
            s[j] = AG_EXP(z[j] - max);
            sum += s[j];
        }
        ag_real inv = 1 / sum;
        for (size_t j = 0; j < n; j++)
            s[j] *= inv;
    }
}

ag_tensor *ag_softmax(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "softmax", 1, in))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, AG_OP_SOFTMAX, out, 1, in))
        return NULL;
    softmax_job job = {a, out, (size_t)a->shape[a->ndim - 1], ag_rows(a), 0, 0};
    run_rows(&job, forward_task);
    return out;
}

static void backward_task(void *ctx, size_t t)
{
    const softmax_job *job = ctx;
    const ag_tensor *a = job->a, *out = job->out;
    int wrong = job->wrong;
    size_t n = job->n, r0 = t * job->per_task;
    size_t r1 = r0 + job->per_task < job->rows ? r0 + job->per_task : job->rows;
    for (size_t r = r0; r < r1; r++) {
        const ag_real *s = out->data + r * n, *ds = out->grad + r * n;
        ag_real *dz = a->grad + r * n;
        ag_real dot = 0;
        for (size_t j = 0; j < n; j++)
            dot += ds[j] * s[j];
        if (wrong)
            dot = 0;   /* the deliberate bug: the - s s^T term dropped */
        for (size_t j = 0; j < n; j++)
            dz[j] += s[j] * (ds[j] - dot);
    }
}

void ag_softmax_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * forward: s = softmax(z). The Jacobian is ds_i/dz_j = s_i (delta_ij - s_j),
     * so dz_j = sum_i ds_i s_i (delta_ij - s_j) = s_j (ds_j - <ds, s>).
     * Masked entries have s_j = 0 and so get no gradient.
     */
    ag_tensor *a = e->in[0], *out = e->out;
    if (!a->grad)
        return;
    softmax_job job = {a, out, (size_t)a->shape[a->ndim - 1], ag_rows(a), 0,
                       tape->bug == AG_BUG_SOFTMAX};
    run_rows(&job, backward_task);
}
