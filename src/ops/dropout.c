/*
 * dropout.c - inverted dropout: during training each element is kept with
 * probability 1 - p and scaled by 1 / (1 - p), or zeroed, so the expected
 * output is the input and evaluation (p = 0) needs no rescaling.
 *
 * The mask is never stored. The call draws one 64-bit key from the caller's
 * generator, and element i is kept when a hash of (key, i) clears a
 * threshold (ag_dropout_bits): a pure function of its index, so backward
 * recomputes it, any split over threads gives the same mask, the caller's
 * generator moves by one draw whatever the size, and the fast kernel
 * (src/kernels/elementwise.c) vectorises the hash.
 */
#include "../kernels/kernels.h"

#include <math.h>

static void dropout_backward(ag_tape *tape, const ag_entry *e);
static const ag_op dropout_op = {"dropout", dropout_backward, AG_OP_SHOWS_ARG, 0};

/* What backward needs to redraw the mask, in the arena. */
typedef struct dropout_saved {
    uint64_t key;
    uint32_t threshold; /* keep when the element's 32 bits are >= this (p = 1: scale is 0) */
} dropout_saved;

/* out = in * m / (1 - p), or out += that (add), m the mask of sv: dropped
 * elements are x * 0 rather than 0, so a NaN stays visible, as in PyTorch. */
static void mask(const ag_real *in, ag_real *out, size_t n, double p, const dropout_saved *sv,
                 int add)
{
    ag_real scale = p < 1 ? (ag_real)(1 / (1 - p)) : 0;
    if (!ag_reference_kernels()) {
        ag_fast_dropout(in, out, n, scale, sv->key, sv->threshold, add);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        ag_real y = in[i] * (ag_dropout_bits(sv->key, i) >= sv->threshold ? scale : 0);
        out[i] = add ? out[i] + y : y;
    }
}

ag_tensor *ag_dropout(ag_tape *tape, const ag_tensor *x, double p, ag_rng *rng)
{
    const ag_tensor *in[1] = {x};
    if (!ag_op_begin(tape, "dropout", 1, in))
        return NULL;
    if (!(p >= 0 && p <= 1)) {
        ag_tape_fail(tape, AG_ERR_ARG, "dropout: p %g is not in [0, 1]", p);
        return NULL;
    }
    if (p == 0)
        return (ag_tensor *)x; /* evaluation: the identity, nothing recorded */
    if (!rng) {
        ag_tape_fail(tape, AG_ERR_ARG, "dropout: p is %g but rng is NULL (evaluation is p = 0)", p);
        return NULL;
    }
    ag_tensor *out = ag_tensor_make(tape, x->ndim, x->shape, 0, ag_any_grad(1, in));
    dropout_saved *sv = out ? ag_arena_alloc(tape, sizeof(*sv)) : NULL;
    ag_entry *e = sv ? ag_tape_push(tape, &dropout_op, out, 1, in) : NULL;
    if (!e)
        return NULL;
    /* p 2^32 rounded up: P(keep) = 1 - p to within 2^-32 */
    double thr = ceil(p * 4294967296.0);
    sv->threshold = thr < 4294967295.0 ? (uint32_t)thr : 0xffffffffu;
    sv->key = ag_rng_next(rng);
    e->arg = p;
    e->saved = sv;
    mask(x->data, out->data, x->size, p, sv, 0);
    return out;
}

static void dropout_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = x m / (1 - p) with m in {0, 1} fixed by the mask, so
     * dx += dy m / (1 - p) (the same mask, redrawn from the saved key) */
    (void)tape;
    ag_tensor *x = e->in[0];
    if (x->grad)
        mask(e->out->grad, x->grad, x->size, e->arg, e->saved, 1);
}
