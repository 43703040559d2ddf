/*
 * add.c - elementwise a + b, with b either a's shape or a's trailing dims
 * (broadcast over the leading ones: positions (T,d) added to every batch).
 * The loops are the reference; the fast kernel shares them out over the
 * threads (src/kernels/elementwise.c).
 */
#include "../kernels/kernels.h"

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
    size_t n = b->size; /* b repeats every n elements of a */
    if (ag_reference_kernels())
        for (size_t i = 0; i < a->size; i++)
            out->data[i] = a->data[i] + b->data[i % n];
    else
        ag_fast_add(a->data, b->data, out->data, a->size, n);
    return out;
}

/* dx += dy, or dx = 0 + dy into an unset dx (the same bits as adding into
 * zeros, -0 becoming +0) */
static void add_grad(const ag_real *dy, ag_real *dx, size_t size, int set)
{
    if (!ag_reference_kernels()) {
        ag_fast_add_grad(dy, dx, size, set);
        return;
    }
    for (size_t i = 0; i < size; i++)
        dx[i] = (set ? 0 : dx[i]) + dy[i];
}

static void add_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = a + b (b repeated), so da += dy and db += dy summed over repeats */
    ag_tensor *a = e->in[0], *b = e->in[1];
    const ag_real *dy = e->out->grad;
    /* both unset (a residual add's two branches): both stored from one read of dy */
    if (a != b && a->grad && b->grad && a->size == b->size && ag_grad_is_unset(tape, a) &&
        ag_grad_is_unset(tape, b) && !ag_reference_kernels()) {
        ag_grad_first(tape, a), ag_grad_first(tape, b);
        ag_fast_add_grad_both(dy, a->grad, b->grad, a->size);
        return;
    }
    if (a->grad)
        add_grad(dy, a->grad, a->size, ag_grad_first(tape, a));
    if (!b->grad)
        return;
    if (b->size == a->size) {
        add_grad(dy, b->grad, b->size, ag_grad_first(tape, b));
        return;
    }
    /* db[c] += dy[c] + dy[n + c] + ... in that order */
    ag_grad_settle(tape, b);
    size_t n = b->size;
    if (!ag_reference_kernels()) {
        ag_fast_add_grad_repeated(dy, b->grad, a->size, n);
        return;
    }
    for (size_t row = 0; row < a->size; row += n) /* each repeat of b, in order */
        for (size_t c = 0; c < n; c++)
            b->grad[c] += dy[row + c];
}
