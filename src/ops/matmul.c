/*
 * matmul.c - C = A B, plain and batched: (m,k)@(k,n), (B,T,d)@(d,e) with the
 * weight shared over the batch, and (B,H,T,dh)@(B,H,dh,T) batch by batch.
 */
#include "../core/gemm.h"
#include "../core/internal.h"

/* "op: a is [..], b is [..]: why". Shapes are formatted only here, on
 * failure: the check runs on every matmul, forward and backward, and two
 * snprintf calls would cost more than a tiny product. */
static void fail_shapes(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b,
                        const char *why)
{
    char sa[64], sb[64];
    ag_tape_fail(tape, AG_ERR_SHAPE, "%s: a is %s, b is %s: %s", op, ag_shape_str(a, sa, sizeof(sa)),
                 ag_shape_str(b, sb, sizeof(sb)), why);
}

int ag_matmul_check(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b,
                    int b_transposed, ag_matmul_plan *plan, int *out_shape)
{
    if (a->ndim < 2 || b->ndim < 2) {
        fail_shapes(tape, op, a, b, "both need at least 2 dims");
        return 0;
    }
    size_t m = (size_t)a->shape[a->ndim - 2], k = (size_t)a->shape[a->ndim - 1];
    size_t bk = (size_t)b->shape[b->ndim - (b_transposed ? 1 : 2)];
    size_t n = (size_t)b->shape[b->ndim - (b_transposed ? 2 : 1)];
    if (bk != k) {
        char why[64];
        snprintf(why, sizeof(why), "inner dims %zu != %zu", k, bk);
        fail_shapes(tape, op, a, b, why);
        return 0;
    }
    int shared = b->ndim == 2;
    if (!shared) {
        int same = b->ndim == a->ndim;
        for (int i = 0; same && i < a->ndim - 2; i++)
            same = a->shape[i] == b->shape[i];
        if (!same) {
            fail_shapes(tape, op, a, b, "b must be 2-D or have a's leading dims");
            return 0;
        }
    }
    plan->batch = shared ? 1 : ag_rows(a) / m;
    plan->m = shared ? ag_rows(a) : m;   /* a shared b: the batch folds into the rows of a */
    plan->k = k;
    plan->n = n;
    for (int i = 0; i < a->ndim - 2; i++)
        out_shape[i] = a->shape[i];
    out_shape[a->ndim - 2] = (int)m;
    out_shape[a->ndim - 1] = (int)n;
    return 1;
}

ag_tensor *ag_matmul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    const ag_tensor *in[2] = {a, b};
    if (!ag_op_begin(tape, "matmul", 2, in))
        return NULL;
    ag_matmul_plan p;
    int shape[AG_MAX_DIMS];
    if (!ag_matmul_check(tape, "matmul", a, b, 0, &p, shape))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, shape, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, AG_OP_MATMUL, out, 2, in))
        return NULL;
    ag_gemm_batched(0, 0, p.batch, p.m, p.n, p.k, 1, a->data, p.k, p.m * p.k, b->data, p.n,
                    p.k * p.n, 0, out->data, p.n, p.m * p.n);
    return out;
}

void ag_matmul_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: C = A B, so dA += dC B^T and dB += A^T dC */
    ag_tensor *a = e->in[0], *b = e->in[1], *c = e->out;
    ag_matmul_plan p = {0};
    int shape[AG_MAX_DIMS];
    if (!ag_matmul_check(tape, "matmul", a, b, 0, &p, shape))
        return;   /* cannot happen: forward checked these shapes */
    if (a->grad)
        ag_gemm_batched(0, 1, p.batch, p.m, p.k, p.n, 1, c->grad, p.n, p.m * p.n, b->data, p.n,
                        p.k * p.n, 1, a->grad, p.k, p.m * p.k);
    if (b->grad)
        ag_gemm_batched(1, 0, p.batch, p.k, p.n, p.m, 1, a->data, p.k, p.m * p.k, c->grad, p.n,
                        p.m * p.n, 1, b->grad, p.n, p.k * p.n);
}
