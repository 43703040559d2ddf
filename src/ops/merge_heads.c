/*
 * merge_heads.c - the inverse of split_heads: (B,H,T,dh) -> (B,T,H*dh),
 * concatenating the heads' outputs in order along the last axis (head h
 * fills columns h*dh .. h*dh+dh-1). A copy, not a view.
 */
#include "../core/internal.h"

#include <string.h>

#include <limits.h>

static void merge_heads_backward(ag_tape *tape, const ag_entry *e);
static const ag_op merge_heads_op = {"merge_heads", merge_heads_backward, 0, 0};

ag_tensor *ag_merge_heads(ag_tape *tape, const ag_tensor *x)
{
    const ag_tensor *in[1] = {x};
    if (!ag_op_begin(tape, "merge_heads", 1, in))
        return NULL;
    if (x->ndim != 4) {
        char s[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "merge_heads: x is %s: needs 4 dims (B,H,T,dh)",
                     ag_shape_str(x, s, sizeof(s)));
        return NULL;
    }
    int B = x->shape[0], H = x->shape[1], T = x->shape[2], dh = x->shape[3];
    if ((size_t)H * (size_t)dh > INT_MAX) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "merge_heads: %d heads of %d do not fit in an int", H, dh);
        return NULL;
    }
    size_t d = (size_t)H * (size_t)dh;
    ag_tensor *out = ag_tensor_make(tape, 3, (int[]){B, T, H * dh}, 0, ag_any_grad(1, in));
    if (!out || !ag_tape_push(tape, &merge_heads_op, out, 1, in))
        return NULL;
    for (size_t b = 0; b < (size_t)B; b++)
        for (size_t h = 0; h < (size_t)H; h++)
            for (size_t t = 0; t < (size_t)T; t++) {
                const ag_real *src = x->data + ((b * H + h) * T + t) * dh;
                ag_real *dst = out->data + (b * T + t) * d + h * dh;
                memcpy(dst, src, (size_t)dh * sizeof(ag_real));
            }
    return out;
}

static void merge_heads_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y[b,t,h*dh+k] = x[b,h,t,k], a permutation, so
     * dx[b,h,t,k] += dy[b,t,h*dh+k] */
    (void)tape;
    ag_tensor *x = e->in[0];
    if (!x->grad)
        return;
    size_t B = (size_t)x->shape[0], H = (size_t)x->shape[1], T = (size_t)x->shape[2];
    size_t dh = (size_t)x->shape[3], d = H * dh;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                ag_real *dx = x->grad + ((b * H + h) * T + t) * dh;
                const ag_real *dy = e->out->grad + (b * T + t) * d + h * dh;
                for (size_t k = 0; k < dh; k++)
                    dx[k] += dy[k];
            }
}
