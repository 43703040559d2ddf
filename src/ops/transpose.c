/*
 * transpose.c - swap the last two axes: (..., m, n) -> (..., n, m).
 */
#include "../core/internal.h"

static void transpose_backward(ag_tape *tape, const ag_entry *e);
static const ag_op transpose_op = {"transpose", transpose_backward, 0, 0};

ag_tensor *ag_transpose(ag_tape *tape, const ag_tensor *a)
{
    const ag_tensor *in[1] = {a};
    if (!ag_op_begin(tape, "transpose", 1, in))
        return NULL;
    if (a->ndim < 2) {
        char s[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "transpose: a is %s: needs at least 2 dims",
                     ag_shape_str(a, s, sizeof(s)));
        return NULL;
    }
    int shape[AG_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++)
        shape[i] = a->shape[i];
    int m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
    shape[a->ndim - 2] = n;
    shape[a->ndim - 1] = m;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, shape, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &transpose_op, out, 1, in))
        return NULL;
    size_t mn = (size_t)m * (size_t)n, batch = a->size / mn;
    for (size_t b = 0; b < batch; b++) {
        const ag_real *x = a->data + b * mn;
        ag_real *y = out->data + b * mn;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                y[(size_t)j * m + i] = x[(size_t)i * n + j];
    }
    return out;
}

static void transpose_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y[j][i] = x[i][j], so dx[i][j] += dy[j][i] */
    (void)tape;
    ag_tensor *a = e->in[0], *out = e->out;
    if (!a->grad)
        return;
    size_t m = (size_t)a->shape[a->ndim - 2], n = (size_t)a->shape[a->ndim - 1];
    size_t mn = m * n, batch = a->size / mn;
    for (size_t b = 0; b < batch; b++) {
        ag_real *dx = a->grad + b * mn;
        const ag_real *dy = out->grad + b * mn;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                dx[i * n + j] += dy[j * m + i];
    }
}
