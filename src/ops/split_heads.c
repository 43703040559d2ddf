/*
 * split_heads.c - give each attention head its own slice of the features:
 * (B,T,d) -> (B,H,T,dh) with dh = d / H, head h taking columns
 * h*dh .. h*dh+dh-1. Moving the head axis in front of T lets one batched
 * matmul compute every head's scores at once. A copy, not a view.
 */
#include "../core/internal.h"

#include <string.h>

static void split_heads_backward(ag_tape *tape, const ag_entry *e);
static const ag_op split_heads_op = {"split_heads", split_heads_backward, 0, 0};

ag_tensor *ag_split_heads(ag_tape *tape, const ag_tensor *x, int n_heads)
{
    const ag_tensor *in[1] = {x};
    if (!ag_op_begin(tape, "split_heads", 1, in))
        return NULL;
    char s[64];
    if (x->ndim != 3) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "split_heads: x is %s: needs 3 dims (B,T,d)",
                     ag_shape_str(x, s, sizeof(s)));
        return NULL;
    }
    int d = x->shape[2];
    if (n_heads < 1 || d % n_heads != 0) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "split_heads: x is %s: heads %d does not divide dim %d",
                     ag_shape_str(x, s, sizeof(s)), n_heads, d);
        return NULL;
    }
    int B = x->shape[0], T = x->shape[1], dh = d / n_heads;
    ag_tensor *out = ag_tensor_make(tape, 4, (int[]){B, n_heads, T, dh}, 0, ag_any_grad(1, in));
    ag_entry *e = out ? ag_tape_push(tape, &split_heads_op, out, 1, in) : NULL;
    if (!e)
        return NULL;
    e->iarg = n_heads;
    for (size_t b = 0; b < (size_t)B; b++)
        for (size_t h = 0; h < (size_t)n_heads; h++)
            for (size_t t = 0; t < (size_t)T; t++) {
                const ag_real *src = x->data + (b * T + t) * d + h * dh;
                ag_real *dst = out->data + ((b * n_heads + h) * T + t) * dh;
                memcpy(dst, src, (size_t)dh * sizeof(ag_real));
            }
    return out;
}

static void split_heads_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y[b,h,t,k] = x[b,t,h*dh+k], a permutation of the elements,
     * so its Jacobian is a permutation matrix: dx[b,t,h*dh+k] += dy[b,h,t,k] */
    (void)tape;
    ag_tensor *x = e->in[0];
    if (!x->grad)
        return;
    size_t B = (size_t)x->shape[0], T = (size_t)x->shape[1], d = (size_t)x->shape[2];
    size_t H = (size_t)e->iarg, dh = d / H;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                ag_real *dx = x->grad + (b * T + t) * d + h * dh;
                const ag_real *dy = e->out->grad + ((b * H + h) * T + t) * dh;
                for (size_t k = 0; k < dh; k++)
                    dx[k] += dy[k];
            }
}
