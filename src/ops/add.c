/*
 * add.c - elementwise a + b, with b either a's shape or a's trailing dims
 * (broadcast over the leading ones: positions (T,d) added to every batch).
 */
#include "../core/internal.h"

static void add_backward(ag_tape *tape, const ag_entry *e);
static const ag_op add_op = {"add", add_backward, 0};

int ag_broadcast_check(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b)
{
    int ok = b->ndim <= a->ndim;
    for (int i = 0; ok && i < b->ndim; i++)
        ok = b->shape[b->ndim - 1 - i] == a->shape[a->ndim - 1 - i];
    if (!ok) {
        char sa[64], sb[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "%s: a is %s, b is %s: b must match a's shape or its trailing dims",
                     op, ag_shape_str(a, sa, sizeof(sa)), ag_shape_str(b, sb, sizeof(sb)));
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
    /* b repeats every n elements: a loop per repeat, no division per element */
    size_t n = b->size;
    for (size_t r = 0; r < a->size; r += n) {
        const ag_real *x = a->data + r;
        ag_real *y = out->data + r;
        for (size_t j = 0; j < n; j++)
            y[j] = x[j] + b->data[j];
    }
    return out;
}

static void add_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = a + b (b repeated), so da += dy and db += dy summed over repeats */
    (void)tape;
    ag_tensor *a = e->in[0], *b = e->in[1];
    const ag_real *dy = e->out->grad;
    if (a->grad)
        for (size_t i = 0; i < a->size; i++)
            a->grad[i] += dy[i];
    if (b->grad)
        for (size_t r = 0; r < a->size; r += b->size)
            for (size_t j = 0; j < b->size; j++)
                b->grad[j] += dy[r + j];
}
