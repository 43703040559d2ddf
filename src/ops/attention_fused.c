/*
 * attention_fused.c - the whole attention layer as one op, for speed and
 * memory. The math is the layer's (docs/attention-layer.md), as the op by
 * op form records it:
 *
 *   Q = x wq, K = x wk, V = x wv                         (B,T,d)
 *   P_h = softmax(Q_h K_h^T / sqrt(dh)) over keys        (B,H,T,T), masked if causal
 *   O = [P_1 V_1 | ... | P_H V_H],  out = O wo           (B,T,d)
 *
 * What fusing changes is the bookkeeping, not the math: one tape entry,
 * and a backward written for the layer as a whole. Two kernels compute it.
 * The reference (src/core/ref_attention.c) is that math head by head,
 * every row of weights made; read it first. The fast one
 * (src/kernels/attention.c) works tile by tile with an online softmax, so
 * that no (T,T) matrix is ever made and memory grows with T, not T^2: it
 * keeps Q, K, V, O and each query's log-sum-exp L, and backward recomputes
 * the weights as exp(S - L) (but for a sequence of one tile block, the
 * GPT's, whose tiles forward keeps). The weights P are made only when the caller asks
 * for them (p_out), for showing.
 */
#include "../kernels/kernels.h"

static void attention_backward(ag_tape *tape, const ag_entry *e);
/* x's gradient is stored by its first product; the weights' are added into */
static const ag_op attention_op = {"attention", attention_backward, 0, AG_INPUT(0)};

static int check_shapes(ag_tape *tape, const ag_tensor *const *in, int heads)
{
    static const char *const names[5] = {"x", "wq", "wk", "wv", "wo"};
    char s[64];
    const ag_tensor *x = in[0];
    if (x->ndim != 3) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "attention: x is %s: needs 3 dims (B,T,d)",
                     ag_shape_str(x, s, sizeof(s)));
        return 0;
    }
    int d = x->shape[2];
    for (int i = 1; i < 5; i++) {
        if (in[i]->ndim != 2 || in[i]->shape[0] != d || in[i]->shape[1] != d) {
            ag_tape_fail(tape, AG_ERR_SHAPE, "attention: %s is %s: needs (%d,%d) for x of dim %d",
                         names[i], ag_shape_str(in[i], s, sizeof(s)), d, d, d);
            return 0;
        }
    }
    if (heads < 1 || d % heads != 0) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "attention: heads %d does not divide dim %d", heads, d);
        return 0;
    }
    return 1;
}

ag_tensor *ag_attention_fused(ag_tape *tape, const ag_tensor *x, const ag_tensor *wq,
                              const ag_tensor *wk, const ag_tensor *wv, const ag_tensor *wo,
                              int heads, int causal, ag_tensor **p_out)
{
    if (p_out)
        *p_out = NULL;
    const ag_tensor *in[5] = {x, wq, wk, wv, wo};
    if (!ag_op_begin(tape, "attention", 5, in) || !check_shapes(tape, in, heads))
        return NULL;
    int B = x->shape[0], T = x->shape[1];
    ag_tensor *out = ag_tensor_make(tape, 3, x->shape, 0, ag_any_grad(5, in));
    ag_tensor *p = out && p_out ? ag_tensor_make(tape, 4, (int[]){B, heads, T, T}, 0, 0) : NULL;
    ag_attn_op *a = out && (p || !p_out) ? ag_arena_alloc(tape, sizeof(*a)) : NULL;
    ag_entry *e = a ? ag_tape_push(tape, &attention_op, out, 5, in) : NULL;
    if (!e)
        return NULL;
    *a = (ag_attn_op){
        .B = (size_t)B,
        .T = (size_t)T,
        .d = (size_t)x->shape[2],
        .H = (size_t)heads,
        .causal = causal != 0,
        .x = x->data,
        .wq = wq->data,
        .wk = wk->data,
        .wv = wv->data,
        .wo = wo->data,
        .train = out->grad != NULL,
    };
    e->iarg = heads;
    e->saved = a;
    ag_real *pw = p ? p->data : NULL;
    ag_status st = ag_reference_kernels() ? ag_ref_attention_forward(tape, a, out->data, pw)
                                          : ag_fast_attention_forward(tape, a, out->data, pw);
    if (st != AG_OK)
        return NULL;
    if (p_out)
        *p_out = p;
    return out;
}

static void attention_backward(ag_tape *tape, const ag_entry *e)
{
    /*
     * Per head, with S = scale Q K^T, P = softmax(S), O = P V:
     *   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D),  D = rowsum(dP * P) = rowsum(dO * O)
     *   dQ = scale dS K,  dK = scale dS^T Q
     * (the softmax's backward, dS_j = P_j (dP_j - <dP, P>) row by row, with
     * <dP, P> = <dO V^T, P> = <dO, P V> = <dO, O>, which needs no P); then
     * through the projections: dx = dQ wq^T + dK wk^T + dV wv^T, dwq = x^T
     * dQ, ..., and from out = O wo: dO = dout wo^T, dwo = O^T dout.
     */
    const ag_attn_op *a = e->saved;
    ag_tensor *x = e->in[0];
    ag_attn_grads g = {
        .dx = x->grad,
        .dx_first = x->grad && ag_grad_first(tape, x),
        .dwq = e->in[1]->grad,
        .dwk = e->in[2]->grad,
        .dwv = e->in[3]->grad,
        .dwo = e->in[4]->grad,
        .wrong = tape->bug == AG_BUG_SOFTMAX,
    };
    if (a->reference)
        ag_ref_attention_backward(tape, a, e->out->grad, &g);
    else
        ag_fast_attention_backward(tape, a, e->out->grad, &g);
}
