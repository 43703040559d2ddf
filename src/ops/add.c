/*
 * add.c - elementwise a + b, with b either a's shape or a's trailing dims
 * (broadcast over the leading ones: positions (T,d) added to every batch).
 */
#include "../core/internal.h"
#include "../kernels/threads.h"

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

/* y[i] = x[i] + b[i mod n] for i in [lo, hi) */
static void add_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    size_t n = j->n;
    for (size_t i = lo; i < hi;) {
        size_t c = i % n, end = hi - i < n - c ? hi : i + (n - c);
        const ag_real *x = j->x + i, *b = j->b + c;
        ag_real *y = j->y + i;
        for (size_t k = 0; k < end - i; k++)
            y[k] = x[k] + b[k];
        i = end;
    }
}

static void add_backward(ag_tape *tape, const ag_entry *e);
/* b broadcast is summed into, not stored: backward settles it itself */
static const ag_op add_op = {"add", add_backward, 0, AG_INPUT(0) | AG_INPUT(1)};

int ag_broadcast_check(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b)
{
    int ok = b->ndim <= a->ndim;
    for (int i = 0; ok && i < b->ndim; i++)
        ok = b->shape[b->ndim - 1 - i] == a->shape[a->ndim - 1 - i];
    if (!ok) {
        char sa[64], sb[64];
        ag_tape_fail(tape, AG_ERR_SHAPE,
                     "%s: a is %s, b is %s: b must match a's shape or its trailing dims", op,
                     ag_shape_str(a, sa, sizeof(sa)), ag_shape_str(b, sb, sizeof(sb)));
    }
    return ok;
}

ag_tensor *ag_add(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    const ag_tensor *in[2] = {a, b};
    if (!ag_op_begin(tape, "add", 2, in) || !ag_broadcast_check(tape, "add", a, b))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, a->shape, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, &add_op, out, 2, in))
        return NULL;
    add_job j = {.x = a->data, .b = b->data, .y = out->data, .n = b->size};
    ag_parallel_range(a->size, ADD_GRAIN, add_range, &j);
    return out;
}

/* dx[i] += dy[i] for i in [lo, hi) */
static void add_dx_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    for (size_t i = lo; i < hi; i++)
        j->dx[i] += j->dy[i];
}

/* dx[i] = 0 + dy[i] (into an unset dx: the same bits as adding into zeros,
 * -0 becoming +0) for i in [lo, hi) */
static void set_dx_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    for (size_t i = lo; i < hi; i++)
        j->dx[i] = (ag_real)0 + j->dy[i];
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

static void add_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = a + b (b repeated), so da += dy and db += dy summed over repeats */
    (void)tape;
    ag_tensor *a = e->in[0], *b = e->in[1];
    add_job j = {.dy = e->out->grad,
                 .dx = a->grad,
                 .db = b->grad,
                 .n = b->size,
                 .repeats = a->size / b->size};
    if (a->grad)
        ag_parallel_range(a->size, ADD_GRAIN, ag_grad_first(tape, a) ? set_dx_range : add_dx_range,
                          &j);
    /* b the same shape as a: the same loops; else columns to a chunk,
     * ADD_GRAIN elements of dy in all */
    if (b->grad && j.repeats == 1) {
        j.dx = b->grad;
        ag_parallel_range(b->size, ADD_GRAIN, ag_grad_first(tape, b) ? set_dx_range : add_dx_range,
                          &j);
    } else if (b->grad) {
        ag_grad_settle(tape, b);
        ag_parallel_range(b->size, (ADD_GRAIN + j.repeats - 1) / j.repeats, add_db_range, &j);
    }
}
