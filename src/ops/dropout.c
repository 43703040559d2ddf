/*
 * dropout.c - inverted dropout: during training each element is kept with
 * probability 1 - p and scaled by 1 / (1 - p), or zeroed, so the expected
 * output is the input and evaluation (p = 0) needs no rescaling.
 *
 * The mask is never stored. The call draws one 64-bit key from the caller's
 * generator, and element i is kept when a hash of (key, i) clears a
 * threshold: a pure function of its index, so backward recomputes it, any
 * split over threads gives the same mask, the caller's generator moves by
 * one draw whatever the size, and the hash vectorises.
 */
#include "../kernels/clones.h"
#include "../core/internal.h"
#include "../kernels/threads.h"

#include <math.h>

static void dropout_backward(ag_tape *tape, const ag_entry *e);
static const ag_op dropout_op = {"dropout", dropout_backward, AG_OP_SHOWS_ARG, 0};

/* Elements per task when threads share the work; below PARALLEL_MIN
 * elements, the caller's thread does it all. */
#define CHUNK 4096
#define PARALLEL_MIN ((size_t)1 << 15)

/* What backward needs to redraw the mask, in the arena. */
typedef struct dropout_saved {
    uint64_t key;
    uint32_t threshold; /* keep when the element's 32 bits are >= this (p = 1: scale is 0) */
} dropout_saved;

typedef struct dropout_job {
    const ag_real *in; /* forward: x; backward: dy */
    ag_real *out;      /* forward: y (=); backward: dx (+=) */
    size_t n;
    ag_real scale; /* 1 / (1 - p) */
    int add;
    dropout_saved sv;
} dropout_job;

/* MurmurHash3's 32-bit finaliser: a bijection whose every output bit
 * depends on every input bit. */
static inline uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

/* Elements [i0, i0 + n) of one chunk: out = in * (kept ? scale : 0), or
 * out += that. Element i's 32 bits are fmix32(fmix32(i + k0) ^ k1), two
 * rounds keyed by the key's halves; past 2^32 elements the high half of i
 * changes k1. All in 32-bit lanes, so the AG_CLONES versions vectorise it.
 * x * 0 rather than 0 where dropped: a NaN stays visible, as in PyTorch. */
AG_CLONES static void mask_chunk(const dropout_job *j, size_t i0, size_t n)
{
    const ag_real *in = j->in + i0;
    ag_real *out = j->out + i0, scale = j->scale;
    uint32_t base = (uint32_t)i0, k0 = (uint32_t)j->sv.key;
    uint32_t k1 = (uint32_t)(j->sv.key >> 32) ^ fmix32((uint32_t)((uint64_t)i0 >> 32));
    uint32_t thr = j->sv.threshold;
    if (j->add) {
        for (size_t c = 0; c < n; c++)
            out[c] += in[c] * (fmix32(fmix32(base + (uint32_t)c + k0) ^ k1) >= thr ? scale : 0);
    } else {
        for (size_t c = 0; c < n; c++)
            out[c] = in[c] * (fmix32(fmix32(base + (uint32_t)c + k0) ^ k1) >= thr ? scale : 0);
    }
}

static void mask_task(void *ctx, size_t t)
{
    const dropout_job *j = ctx;
    size_t i0 = t * CHUNK;
    mask_chunk(j, i0, j->n - i0 < CHUNK ? j->n - i0 : CHUNK);
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
    dropout_job job = {
        e->out->grad, x->grad, x->size, e->arg < 1 ? (ag_real)(1 / (1 - e->arg)) : 0, 1, *sv};
    run_mask(&job);
}
