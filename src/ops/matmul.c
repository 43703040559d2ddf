/*
 * matmul.c - C = A B and C = A B^T, plain and batched: (m,k)@(k,n),
 * (B,T,d)@(d,e) with the weight shared over the batch, and
 * (B,H,T,dh)@(B,H,dh,T) batch by batch. A B^T reads B as stored, without
 * materialising the transpose: attention's scores Q K^T are this form.
 * One implementation; the two entry points differ only in a flag, kept in
 * the entry's iarg and in which descriptor the entry points at.
 */
#include "../kernels/kernels.h"

static void matmul_backward(ag_tape *tape, const ag_entry *e);
static const ag_op matmul_op = {"matmul", matmul_backward, 0, AG_INPUT(0) | AG_INPUT(1)};
static const ag_op matmul_bt_op = {"matmul_bt", matmul_backward, 0, AG_INPUT(0) | AG_INPUT(1)};

/* "op: a is [..], b is [..]: why". Shapes are formatted only here, on
 * failure: the check runs on every matmul, forward and backward, and two
 * snprintf calls would cost more than a tiny product. */
static void fail_shapes(ag_tape *tape, const char *op, const ag_tensor *a, const ag_tensor *b,
                        const char *why)
{
    char sa[64], sb[64];
    ag_tape_fail(tape, AG_ERR_SHAPE, "%s: a is %s, b is %s: %s", op,
                 ag_shape_str(a, sa, sizeof(sa)), ag_shape_str(b, sb, sizeof(sb)), why);
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
    plan->m = shared ? ag_rows(a) : m; /* a shared b: the batch folds into the rows of a */
    plan->k = k;
    plan->n = n;
    for (int i = 0; i < a->ndim - 2; i++)
        out_shape[i] = a->shape[i];
    out_shape[a->ndim - 2] = (int)m;
    out_shape[a->ndim - 1] = (int)n;
    return 1;
}

/* The products, forward and backward, by the kernels in use: the three
 * loops of ag_ref_gemm (src/core/ref_gemm.c) or the packed, threaded gemm
 * (src/kernels/gemm.c), which computes C = alpha op(A) op(B) + beta C over
 * a batch without ever making a transpose. */
static void product(int ta, int tb, const ag_matmul_plan *p, size_t M, size_t N, size_t K,
                    const ag_real *A, size_t lda, size_t sa, const ag_real *B, size_t ldb,
                    size_t sb, ag_real beta, ag_real *C, size_t ldc, size_t sc)
{
    if (ag_reference_kernels())
        ag_ref_gemm_batched(ta, tb, p->batch, M, N, K, 1, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
    else
        ag_gemm_batched(ta, tb, p->batch, M, N, K, 1, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
}

/* a @ b, or a @ b^T when bt. */
static ag_tensor *matmul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b, int bt)
{
    const ag_op *op = bt ? &matmul_bt_op : &matmul_op;
    const ag_tensor *in[2] = {a, b};
    if (!ag_op_begin(tape, op->name, 2, in))
        return NULL;
    ag_matmul_plan p;
    int shape[AG_MAX_DIMS];
    if (!ag_matmul_check(tape, op->name, a, b, bt, &p, shape))
        return NULL;
    ag_tensor *out = ag_tensor_make(tape, a->ndim, shape, 0, ag_any_grad(2, in));
    ag_entry *e = out ? ag_tape_push(tape, op, out, 2, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = bt;
    /* b is (k x n) with row stride n, or, transposed, (n x k) with stride k */
    size_t ldb = bt ? p.k : p.n;
    product(0, bt, &p, p.m, p.n, p.k, a->data, p.k, p.m * p.k, b->data, ldb, p.k * p.n, 0,
            out->data, p.n, p.m * p.n);
    return out;
}

ag_tensor *ag_matmul(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    return matmul(tape, a, b, 0);
}

ag_tensor *ag_matmul_bt(ag_tape *tape, const ag_tensor *a, const ag_tensor *b)
{
    return matmul(tape, a, b, 1);
}

static void matmul_backward(ag_tape *tape, const ag_entry *e)
{
    ag_tensor *a = e->in[0], *b = e->in[1], *c = e->out;
    int bt = e->iarg;
    ag_matmul_plan p = {0};
    int shape[AG_MAX_DIMS];
    if (!ag_matmul_check(tape, e->op->name, a, b, bt, &p, shape))
        return; /* cannot happen: forward checked these shapes */
    size_t ldb = bt ? p.k : p.n, mk = p.m * p.k, mn = p.m * p.n, kn = p.k * p.n;
    /* forward: C = A B, so dA += dC B^T;  C = A B^T (B is n x k), so dA += dC B
     * (beta 0, a store, when dA is unset: ag_grad_first) */
    if (a->grad)
        product(0, !bt, &p, p.m, p.k, p.n, c->grad, p.n, mn, b->data, ldb, kn,
                ag_grad_first(tape, a) ? 0 : 1, a->grad, p.k, mk);
    if (!b->grad)
        return;
    /* C = A B: dB += A^T dC (k x n);  C = A B^T: dB += dC^T A (n x k) */
    ag_real beta = ag_grad_first(tape, b) ? 0 : 1;
    if (bt)
        product(1, 0, &p, p.n, p.k, p.m, c->grad, p.n, mn, a->data, p.k, mk, beta, b->grad, p.k,
                kn);
    else
        product(1, 0, &p, p.k, p.n, p.m, a->data, p.k, mk, c->grad, p.n, mn, beta, b->grad, p.n,
                kn);
}
