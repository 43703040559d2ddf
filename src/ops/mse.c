/*
 * mse.c - mean squared error: L = mean over every element of (pred - target)^2.
 */
#include "../kernels/clones.h"
#include "../core/internal.h"

static void mse_backward(ag_tape *tape, const ag_entry *e);
static const ag_op mse_op = {"mse", mse_backward, 0, 0};

/* Independent partial sums in the forward: enough to fill vector registers
 * and to hide the latency of their adds. */
#define MSE_LANES 16

/* sum_i (p_i - t_i)^2, each difference and square in double as a plain loop
 * would, summed in MSE_LANES interleaved partial sums (lane k takes the
 * elements i = k mod MSE_LANES of the whole blocks) that the compiler can
 * vectorise, the lanes pairwise, then the last n mod MSE_LANES elements in
 * order. The order depends only on n: the same inputs always give the same
 * sum. */
AG_CLONES static double sq_diff_sum(size_t n, const ag_real *restrict p, const ag_real *restrict t)
{
    size_t i = 0;
    double sum = 0;
    if (n >= MSE_LANES) {
        double lane[MSE_LANES] = {0};
        for (; i + MSE_LANES <= n; i += MSE_LANES)
            for (int k = 0; k < MSE_LANES; k++) {
                double d = (double)p[i + k] - (double)t[i + k];
                lane[k] += d * d;
            }
        for (int w = MSE_LANES / 2; w > 0; w /= 2)
            for (int k = 0; k < w; k++)
                lane[k] += lane[k + w];
        sum = lane[0];
    }
    for (; i < n; i++) {
        double d = (double)p[i] - (double)t[i];
        sum += d * d;
    }
    return sum;
}

ag_tensor *ag_mse(ag_tape *tape, const ag_tensor *pred, const ag_tensor *target)
{
    const ag_tensor *in[2] = {pred, target};
    if (!ag_op_begin(tape, "mse", 2, in))
        return NULL;
    if (!ag_same_shape(pred, target)) {
        char sa[64], sb[64];
        ag_tape_fail(tape, AG_ERR_SHAPE, "mse: pred is %s, target is %s: shapes differ",
                     ag_shape_str(pred, sa, sizeof(sa)), ag_shape_str(target, sb, sizeof(sb)));
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, 1, (int[]){1}, 0, ag_any_grad(2, in));
    if (!out || !ag_tape_push(tape, &mse_op, out, 2, in))
        return NULL;
    out->data[0] =
        (ag_real)(sq_diff_sum(pred->size, pred->data, target->data) / (double)pred->size);
    return out;
}

/* dx_i += s (p_i - t_i) for i < n: one input's gradient, s = +-2 dL / n */
AG_CLONES static void mse_grad(size_t n, ag_real *restrict dx, const ag_real *restrict p,
                               const ag_real *restrict t, ag_real s)
{
    for (size_t i = 0; i < n; i++)
        dx[i] += s * (p[i] - t[i]);
}

static void mse_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: L = sum_i (p_i - t_i)^2 / n, so dp_i += 2 (p_i - t_i) / n dL, dt_i -= the same */
    (void)tape;
    ag_tensor *p = e->in[0], *t = e->in[1];
    ag_real g = (ag_real)(2.0 * e->out->grad[0] / (double)p->size);
    if (p->grad)
        mse_grad(p->size, p->grad, p->data, t->data, g);
    if (t->grad)
        mse_grad(t->size, t->grad, p->data, t->data, -g);
}
