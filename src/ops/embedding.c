/*
 * embedding.c - a table lookup: row ids[i] of a (V, d) table for every id,
 * so ids of shape (B,T) give (B,T,d). Tokens become vectors this way, and
 * learned positions are the same lookup with ids 0..T-1. The backward is a
 * scatter-add: an id used twice gets both contributions.
 */
#include "../core/internal.h"

#include <string.h>

static void embedding_backward(ag_tape *tape, const ag_entry *e);
static const ag_op embedding_op = {"embedding", embedding_backward, 0, 0};

ag_tensor *ag_embedding(ag_tape *tape, const ag_tensor *table, const int *ids, int ndim,
                        const int *shape)
{
    const ag_tensor *in[1] = {table};
    if (!ag_op_begin(tape, "embedding", 1, in))
        return NULL;
    char s[64];
    if (table->ndim != 2) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "embedding: table is %s: needs 2 dims (V,d)",
                     ag_shape_str(table, s, sizeof(s)));
        return NULL;
    }
    if (!ids || !shape) {
        ag_tape_fail(tape, AG_ERR_ARG, "embedding: %s is NULL", ids ? "shape" : "ids");
        return NULL;
    }
    size_t n;
    if (ndim < 1 || ndim > AG_MAX_DIMS - 1 || !ag_shape_size(ndim, shape, &n)) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "embedding: ids need 1..%d dims, each >= 1 (got %d dims)",
                     AG_MAX_DIMS - 1, ndim);
        return NULL;
    }
    int V = table->shape[0], d = table->shape[1];
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= V) {
            ag_tape_fail(tape, AG_ERR_ARG,
                         "embedding: id %d at index %zu is out of range [0, %d) for table %s",
                         ids[i], i, V, ag_shape_str(table, s, sizeof(s)));
            return NULL;
        }
    }
    int oshape[AG_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        oshape[i] = shape[i];
    oshape[ndim] = d;
    ag_tensor *out = ag_tensor_make(tape, ndim + 1, oshape, 0, ag_any_grad(1, in));
    int *saved = out ? ag_arena_alloc(tape, n * sizeof(int)) : NULL;
    ag_entry *e = saved ? ag_tape_push(tape, &embedding_op, out, 1, in) : NULL;
    if (!e)
        return NULL;
    memcpy(saved, ids, n * sizeof(int));
    e->saved = saved;
    for (size_t i = 0; i < n; i++)
        memcpy(out->data + i * d, table->data + (size_t)ids[i] * d, (size_t)d * sizeof(ag_real));
    return out;
}

static void embedding_backward(ag_tape *tape, const ag_entry *e)
{
    /* forward: y[i,:] = W[ids[i],:], so dW[ids[i],:] += dy[i,:] (scatter-add) */
    (void)tape;
    ag_tensor *w = e->in[0];
    if (!w->grad)
        return;
    const int *ids = e->saved;
    size_t d = (size_t)w->shape[1], n = e->out->size / d;
    for (size_t i = 0; i < n; i++) {
        ag_real *dw = w->grad + (size_t)ids[i] * d;
        const ag_real *dy = e->out->grad + i * d;
        for (size_t j = 0; j < d; j++)
            dw[j] += dy[j];
    }
}
