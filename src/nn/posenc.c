/*
 * posenc.c - positional encodings. Non-causal attention by itself is
 * permutation-equivariant: permuting the tokens permutes the outputs and
 * changes nothing else. Adding a vector that depends on the position t to
 * token t's vector breaks that symmetry, so "the token before me" becomes
 * something a query can match.
 *
 *   none         x unchanged (no order: useful to see why positions matter)
 *   sinusoidal   PE[t,2i] = sin(t / 10000^(2i/d)), PE[t,2i+1] = cos(same angle),
 *                fixed; the Transformer paper's choice
 *   learned      PE is a (max_len, d) parameter, looked up with ids 0..T-1
 *
 * Positions are added (x + PE[0:T], broadcast over the batch), not
 * concatenated: the width stays d, so the layer's (d, d) weights do not change
 * with the choice, and the sum lets one dot product in Q K^T mix "what" and
 * "where". The cost is that content and position share the same d dims.
 */
#include "nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ag_posenc {
    ag_posenc_kind kind;
    int max_len, d;
    ag_real *fixed;   /* (max_len, d) sinusoidal table, or NULL */
    ag_tensor *table; /* (max_len, d) learned parameter, owned, or NULL */
    int *positions;   /* (max_len) 0, 1, ..., max_len-1: the ids of a learned lookup */
};

static const char *const kind_names[] = {"none", "sinusoidal", "learned"};
#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))

const char *ag_posenc_kind_name(ag_posenc_kind kind)
{
    return (unsigned)kind < N_KINDS ? kind_names[kind] : "unknown";
}

int ag_posenc_parse(const char *name, ag_posenc_kind *kind)
{
    if (!name)
        return 0;
    for (unsigned i = 0; i < N_KINDS; i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            if (kind)
                *kind = (ag_posenc_kind)i;
            return 1;
        }
    }
    return 0;
}

static void fill_sinusoidal(ag_real *pe, int max_len, int d)
{
    for (int t = 0; t < max_len; t++) {
        for (int c = 0; c < d; c++) {
            int i2 = c - c % 2; /* 2i: the pair's even column */
            double angle = t / pow(10000.0, (double)i2 / d);
            pe[(size_t)t * d + c] = (ag_real)(c % 2 == 0 ? sin(angle) : cos(angle));
        }
    }
}

ag_posenc *ag_posenc_new(ag_posenc_kind kind, int max_len, int d, ag_rng *rng, char *err,
                         size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if ((unsigned)kind >= N_KINDS) {
        ag_err(AG_ERR_ARG, err, errlen, "unknown positional encoding %d", (int)kind);
        return NULL;
    }
    if (max_len < 1) {
        ag_err(AG_ERR_ARG, err, errlen, "max length %d must be at least 1", max_len);
        return NULL;
    }
    if (d < 1) {
        ag_err(AG_ERR_ARG, err, errlen, "dim %d must be at least 1", d);
        return NULL;
    }
    size_t size;
    ag_posenc *pe = ag_calloc(1, sizeof(*pe));
    if (!pe || !ag_shape_size(2, (int[]){max_len, d}, &size))
        goto nomem;
    pe->kind = kind;
    pe->max_len = max_len;
    pe->d = d;
    if (kind == AG_POSENC_SINUSOIDAL) {
        pe->fixed = ag_malloc(size * sizeof(ag_real));
        if (!pe->fixed)
            goto nomem;
        fill_sinusoidal(pe->fixed, max_len, d);
    } else if (kind == AG_POSENC_LEARNED) {
        pe->table = ag_param_new(2, (int[]){max_len, d});
        pe->positions = ag_malloc((size_t)max_len * sizeof(int));
        if (!pe->table || !pe->positions)
            goto nomem;
        for (int t = 0; t < max_len; t++)
            pe->positions[t] = t;
        if (rng)
            ag_fill_normal(pe->table, rng, 0, AG_POSENC_LEARNED_STD);
    }
    return pe;
nomem:
    ag_err(AG_ERR_NOMEM, err, errlen, "out of memory for positions (%d, %d)", max_len, d);
    ag_posenc_free(pe);
    return NULL;
}

void ag_posenc_free(ag_posenc *pe)
{
    if (!pe)
        return;
    free(pe->fixed);
    ag_param_free(pe->table);
    free(pe->positions);
    free(pe);
}

ag_posenc_kind ag_posenc_get_kind(const ag_posenc *pe)
{
    return pe ? pe->kind : AG_POSENC_NONE;
}

int ag_posenc_max_len(const ag_posenc *pe)
{
    return pe ? pe->max_len : 0;
}

int ag_posenc_dim(const ag_posenc *pe)
{
    return pe ? pe->d : 0;
}

const ag_real *ag_posenc_values(const ag_posenc *pe)
{
    if (!pe)
        return NULL;
    return pe->kind == AG_POSENC_LEARNED ? pe->table->data : pe->fixed;
}

size_t ag_posenc_params(ag_posenc *pe, ag_tensor **params, const char **names, size_t max)
{
    if (!pe || pe->kind != AG_POSENC_LEARNED)
        return 0;
    if (max >= 1) {
        if (params)
            params[0] = pe->table;
        if (names)
            names[0] = "pos";
    }
    return 1;
}

ag_tensor *ag_posenc_apply(ag_tape *tape, ag_posenc *pe, const ag_tensor *x)
{
    if (!tape || ag_tape_status(tape) != AG_OK)
        return NULL;
    if (!pe || !x) {
        ag_tape_fail(tape, AG_ERR_ARG, "posenc: %s is NULL", pe ? "x" : "encoding");
        return NULL;
    }
    char s[64];
    if (x->ndim < 2 || x->shape[x->ndim - 1] != pe->d) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "posenc: x is %s: needs (..., T, %d)",
                     ag_shape_str(x, s, sizeof(s)), pe->d);
        return NULL;
    }
    int T = x->shape[x->ndim - 2];
    if (T > pe->max_len) {
        ag_tape_fail(tape, AG_ERR_SHAPE, "posenc: x is %s: length %d is longer than max length %d",
                     ag_shape_str(x, s, sizeof(s)), T, pe->max_len);
        return NULL;
    }
    ag_tensor *pos; /* (T, d): the first T rows */
    switch (pe->kind) {
    case AG_POSENC_SINUSOIDAL: pos = ag_tensor_from(tape, 2, (int[]){T, pe->d}, pe->fixed); break;
    case AG_POSENC_LEARNED:
        pos = ag_embedding(tape, pe->table, pe->positions, 1, (int[]){T});
        break;
    default: return (ag_tensor *)x; /* none: the input itself, nothing recorded */
    }
    return ag_add(tape, x, pos); /* (..., T, d) + (T, d), broadcast over the batch */
}

/* ---- for display: a saved table, and how alike its rows are ---- */

ag_posenc *ag_posenc_load(const char *path, int max_size, char *err, size_t errlen)
{
    ag_st_file *f = NULL;
    ag_posenc *pe = NULL;
    int nd, shape[AG_MAX_DIMS];
    if (!path || max_size < 1) {
        ag_err(AG_ERR_ARG, err, errlen, "posenc: %s",
               path ? "max_size must be at least 1" : "path is NULL");
        return NULL;
    }
    if (ag_st_load(path, &f, err, errlen) != AG_OK)
        return NULL;
    /* the toy model's table, or a GPT's learned positions (PyTorch's name) */
    const char *name = ag_st_dtype(f, "pos") ? "pos" : "transformer.wpe.weight";
    if (!ag_st_dtype(f, name)) {
        ag_err(AG_ERR_ARG, err, errlen,
               "%s has no tensor 'pos' (a learned positional encoding: attograd train "
               "--posenc learned --save FILE) nor 'transformer.wpe.weight' (a GPT's: attograd "
               "train --task text --save FILE)",
               path);
        goto fail;
    }
    if (ag_st_shape(f, name, &nd, shape, err, errlen) != AG_OK)
        goto fail;
    if (nd != 2 || shape[0] > max_size || shape[1] > max_size || shape[0] < 1 || shape[1] < 1) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: tensor '%s' must be (T, d) with T and d in 1..%d",
               path, name, max_size);
        goto fail;
    }
    pe = ag_posenc_new(AG_POSENC_LEARNED, shape[0], shape[1], NULL, err, errlen);
    if (!pe || ag_st_get_finite(f, name, 2, shape, pe->table->data, 0, err, errlen) != AG_OK)
        goto fail;
    ag_st_free(f);
    return pe;
fail:
    ag_posenc_free(pe);
    ag_st_free(f);
    return NULL;
}

ag_status ag_posenc_similarity(const ag_posenc *pe, double *sim)
{
    const ag_real *v = ag_posenc_values(pe);
    if (!v || !sim)
        return AG_ERR_ARG;
    int T = pe->max_len, d = pe->d;
    for (int t = 0; t < T; t++) {
        for (int u = 0; u < T; u++) {
            double dot = 0, nt = 0, nu = 0;
            for (int c = 0; c < d; c++) {
                double a = v[(size_t)t * d + c], b = v[(size_t)u * d + c];
                dot += a * b;
                nt += a * a;
                nu += b * b;
            }
            sim[(size_t)t * T + u] = nt > 0 && nu > 0 ? dot / sqrt(nt * nu) : 0;
        }
    }
    return AG_OK;
}
