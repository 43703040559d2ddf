/*
 * matmul_bt.c - C = A B^T without materialising B^T. Attention's scores
 * Q K^T are this op: (B,H,T,dh) x (B,H,T,dh) -> (B,H,T,T).
 */
#include "../core/gemm.h"
#include "../core/internal.h"

ag_tensor *ag_matmul_bt(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    const ag_tensor *in[2] = {a, b};
    if (!ag_op_begin(tape, "matmul_bt", 2, in))
        return NULL;
    ag_matmul_plan p;
    int shape[AG_MAX_DIMS];
    if (!ag_matmul_check(tape, "matmul_bt", a, b, 1, &p, shape))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, shape, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, AG_OP_MATMUL_BT, out, 2, in))
        return NULL;
    ag_gemm_batched(0, 1, p.batch, p.m, p.n, p.k, 1, a->data, p.k, p.m * p.k, b->data, p.k,
                    p.n * p.k, 0, out->data, p.n, p.m * p.n);
    return out;
}

void ag_matmul_bt_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: C = A B^T (B is n x k), so dA += dC B and dB += dC^T A */
    ag_tensor *a = e->in[0], *b = e->in[1], *c = e->out;
    ag_matmul_plan p = {0};
    int shape[AG_MAX_DIMS];
    if (!ag_matmul_check(tape, "matmul_bt", a, b, 1, &p, shape))
        return;   /* cannot happen: forward checked these shapes */
    if (a->grad)
        ag_gemm_batched(0, 0, p.batch, p.m, p.k, p.n, 1, c->grad, p.n, p.m * p.n, b->data, p.k,
                        p.n * p.k, 1, a->grad, p.k, p.m * p.k);
    if (b->grad)
        ag_gemm_batched(1, 0, p.batch, p.n, p.k, p.m, 1, c->grad, p.n, p.m * p.n, a->data, p.k,
                        p.m * p.k, 1, b->grad, p.k, p.n * p.k);
}
