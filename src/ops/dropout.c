/*
 * dropout.c - inverted dropout: during training each element is kept with
 * probability 1 - p and scaled by 1 / (1 - p), or zeroed, so the expected
 * output is the input and evaluation (p = 0) needs no rescaling.
 *
 * The mask is never stored. The call draws one 64-bit key from the caller's
 * generator, and element i is kept when a hash of (key, i) clears a
 * threshold: a pure function of its index, so backward recomputes it, any
 * split over threads gives the same mask, and the caller's generator moves
 * by one draw whatever the size.
 */
#include "../core/internal.h"
#include "../core/threads.h"

#include <math.h>

static void dropout_backward(ag_tape *tape, const ag_entry *e);
static const ag_op dropout_op = {"dropout", dropout_backward, AG_OP_SHOWS_ARG};

/* Elements per task when threads share the work; below PARALLEL_MIN
 * elements, the caller's thread does it all. */
#define CHUNK 4096
#define PARALLEL_MIN ((size_t)1 << 15)

/* What backward needs to redraw the mask, in the arena. */
typedef struct dropout_saved {
    uint64_t key;
    uint64_t threshold;   /* keep when the element's 32 bits are >= this; 2^32 drops all */
} dropout_saved;

typedef struct dropout_job {
    const ag_real *in;    /* forward: x; backward: dy */
    ag_real *out;         /* forward: y (=); backward: dx (+=) */
    size_t n;
    ag_real scale;        /* 1 / (1 - p) */
    int add;
    dropout_saved sv;
} dropout_job;

/* Whether element i survives: 32 bits from splitmix64's mix of the pair
 * i / 2 (both halves of one 64-bit hash are used). */
static inline int kept(const dropout_saved *sv, size_t i)
{
    uint64_t z = sv->key + ((uint64_t)(i / 2) + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (i & 1 ? z >> 32 : z & 0xffffffffu) >= sv->threshold;
}

static void mask_task(void *ctx, size_t t)
{
    const dropout_job *j = ctx;
    size_t i1 = (t + 1) * CHUNK < j->n ? (t + 1) * CHUNK : j->n;
    for (size_t i = t * CHUNK; i < i1; i++) {
        /* x * 0 rather than 0 where dropped: a NaN stays visible, as in PyTorch */
        ag_real v = j->in[i] * (kept(&j->sv, i) ? j->scale : 0);
        j->out[i] = j->add ? j->out[i] + v : v;
    }
}

static void run_mask(const dropout_job *j)
{
    size_t chunks = (j->n + CHUNK - 1) / CHUNK;
    if (j->n < PARALLEL_MIN) {
        for (size_t t = 0; t < chunks; t++)
            mask_task((void *)j, t);
        return;
    }
    ag_parallel_for(chunks, mask_task, (void *)j);
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
        return (ag_tensor *)x;   /* evaluation: the identity, nothing recorded */
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
    sv->threshold = (uint64_t)ceil(p * 4294967296.0);
    sv->key = ag_rng_next(rng);
    e->arg = p;
    e->saved = sv;
    dropout_job job = {x->data, out->data, x->size, p < 1 ? (ag_real)(1 / (1 - p)) : 0, 0, *sv};
    run_mask(&job);
    return out;
}

static void dropout_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y = x m / (1 - p) with m in {0, 1} fixed by the mask, so
     * dx += dy m / (1 - p) (the same mask, redrawn from the saved key) */
    (void)tape;
    ag_tensor *x = e->in[0];
    if (!x->grad)
        return;
    const dropout_saved *sv = e->saved;
    dropout_job job = {e->out->grad, x->grad, x->size,
                       e->arg < 1 ? (ag_real)(1 / (1 - e->arg)) : 0, 1, *sv};
    run_mask(&job);
}
