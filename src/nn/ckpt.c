/*
 * ckpt.c - the one reader (and the shared parts of the writers) of
 * attograd's checkpoints (ckpt.h). A checkpoint is hostile input: its
 * format and version are checked first, then its settings (by the format's
 * own code), then the tensors against the list those settings call for,
 * from the header alone, so that a file whose settings and tensors
 * disagree is refused before a model is made from it.
 */
#include "ckpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ag_status ag_ckpt_open(ag_ckpt *ck, const char *path, const void *buf, size_t len,
                       const char *format, const char *kind, const char *version, char *err,
                       size_t errlen)
{
    memset(ck, 0, sizeof(*ck));
    if (!path)
        return ag_err(AG_ERR_ARG, err, errlen, "load: path is NULL");
    if (!(ck->path = malloc(strlen(path) + 1)))
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    strcpy(ck->path, path);
    ag_status st = buf ? ag_st_parse(buf, len, path, &ck->st, err, errlen)
                       : ag_st_load(path, &ck->st, err, errlen);
    const char *v;
    char q[AG_IO_QUOTE_LEN];
    if (st == AG_OK && !ag_meta_str(ck->st, path, "format", &v, err, errlen))
        st = AG_ERR_FORMAT;
    else if (st == AG_OK && strcmp(v, format) != 0)
        st = ag_err(AG_ERR_FORMAT, err, errlen, "%s: not an %s (format '%s')", path, kind,
                    ag_io_show(v, q, sizeof(q)));
    else if (st == AG_OK && !ag_meta_str(ck->st, path, "version", &v, err, errlen))
        st = AG_ERR_FORMAT;
    else if (st == AG_OK && strcmp(v, version) != 0)
        st = ag_err(AG_ERR_FORMAT, err, errlen,
                    "%s: checkpoint version '%s' is not supported (only %s)", path,
                    ag_io_show(v, q, sizeof(q)), version);
    if (st != AG_OK)
        ag_ckpt_close(ck);
    return st;
}

void ag_ckpt_close(ag_ckpt *ck)
{
    ag_st_free(ck->st);
    free(ck->path);
    memset(ck, 0, sizeof(*ck));
}

int ag_ckpt_fail(const ag_ckpt *ck, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ag_err(AG_ERR_FORMAT, err, errlen, "%s: %s", ck->path, msg);
    return 0;
}

/* ---- the tensors the settings call for ---- */

void ag_ckpt_list_add(ag_ckpt_list *l, int ndim, int rows, int cols, const char *need,
                      const char *fix, int optional, const char *fmt, ...)
{
    if (l->nomem)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        ag_ckpt_tensor *t = ag_realloc(l->t, cap * sizeof(*t));
        if (!t) {
            l->nomem = 1;
            return;
        }
        l->t = t, l->cap = cap;
    }
    ag_ckpt_tensor *t = &l->t[l->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof(t->name), fmt, ap);
    va_end(ap);
    t->ndim = ndim;
    t->shape[0] = rows;
    t->shape[1] = ndim > 1 ? cols : 1;
    t->optional = optional;
    t->need = need;
    t->fix = fix;
}

void ag_ckpt_list_free(ag_ckpt_list *l)
{
    free(l->t);
    memset(l, 0, sizeof(*l));
}

static const ag_ckpt_tensor *sort_base;

static int by_name(const void *a, const void *b)
{
    return strcmp(sort_base[*(const size_t *)a].name, sort_base[*(const size_t *)b].name);
}

/* "[53x16]" for a file's shape (any number of dims) in buf. */
static const char *dims_str(int ndim, const int *shape, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? "x" : "", shape[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* The index of name in l (sorted through idx), or -1. */
static long find(const ag_ckpt_list *l, const size_t *idx, const char *name)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->t[idx[mid]].name, name);
        if (c == 0)
            return (long)idx[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

ag_status ag_ckpt_expect(const ag_ckpt *ck, const ag_ckpt_list *l, ag_ckpt_extra_fn extra,
                         const void *ctx, char *err, size_t errlen)
{
    if (l->nomem)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", ck->path);
    size_t *idx = ag_malloc((l->n ? l->n : 1) * sizeof(*idx));
    if (!idx)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", ck->path);
    for (size_t i = 0; i < l->n; i++)
        idx[i] = i;
    sort_base = l->t; /* qsort has no context argument; the reader runs on one thread */
    qsort(idx, l->n, sizeof(*idx), by_name);
    sort_base = NULL;
    char a[64], b[64], why[256];
    int ok = 1;
    /* what the settings call for: present, with its shape */
    for (size_t i = 0; i < l->n && ok; i++) {
        const ag_ckpt_tensor *t = &l->t[i];
        int nd, shape[AG_MAX_DIMS];
        if (!ag_st_dtype(ck->st, t->name)) {
            if (!t->optional)
                ok = ag_ckpt_fail(ck, err, errlen,
                                  "tensor '%s' is missing (the metadata's %s calls for it)",
                                  t->name, t->need);
            continue;
        }
        int same = ag_st_shape(ck->st, t->name, &nd, shape, NULL, 0) == AG_OK && nd == t->ndim;
        for (int k = 0; same && k < nd; k++)
            same = shape[k] == t->shape[k];
        if (!same) {
            int nds;
            int fs[AG_ST_MAX_DIMS];
            /* the file's own shape, even one no tensor could have (ag_st_shape refuses it) */
            if (ag_st_shape(ck->st, t->name, &nds, fs, NULL, 0) != AG_OK)
                snprintf(a, sizeof(a), "a shape no tensor can have");
            else
                dims_str(nds, fs, a, sizeof(a));
            ok = ag_ckpt_fail(ck, err, errlen,
                              "tensor '%s' has shape %s, but the metadata's %s call%s for %s",
                              t->name, a, t->fix, strchr(t->fix, ',') ? "" : "s",
                              dims_str(t->ndim, t->shape, b, sizeof(b)));
        }
    }
    /* and nothing else */
    for (size_t i = 0; i < ag_st_count(ck->st) && ok; i++) {
        const char *name = ag_st_name(ck->st, i);
        if (find(l, idx, name) >= 0)
            continue;
        const char *said = extra ? extra(ctx, name, why, sizeof(why)) : NULL;
        char q[AG_IO_QUOTE_LEN];
        ag_io_show(name, q, sizeof(q));
        if (said)
            ok = ag_ckpt_fail(ck, err, errlen, "tensor '%s' disagrees with the metadata: %s", q,
                              said);
        else
            ok = ag_ckpt_fail(ck, err, errlen,
                              "tensor '%s' is not one the metadata calls for (a left-over?)", q);
    }
    free(idx);
    return ok ? AG_OK : AG_ERR_FORMAT;
}

ag_status ag_ckpt_read(const ag_ckpt *ck, const char *name, int ndim, const int *shape,
                       ag_real *dst, int nonneg, char *err, size_t errlen)
{
    return ag_st_get_finite(ck->st, name, ndim, shape, dst, nonneg, err, errlen);
}

/* ---- counters and writing ---- */

ag_status ag_ckpt_count_fits(const char *path, const char *what, long count, char *err,
                             size_t errlen)
{
    if (count >= 0 && count <= AG_TRAIN_MAX_STEP)
        return AG_OK;
    return ag_err(AG_ERR_ARG, err, errlen,
                  "%s: not saved: the %s count %ld is beyond %ld, the most a checkpoint holds",
                  path, what, count, AG_TRAIN_MAX_STEP);
}

int ag_ckpt_counts_read(const ag_ckpt *ck, long *step, long *optim_steps, char *err, size_t errlen)
{
    return ag_meta_long(ck->st, ck->path, "step", 0, AG_TRAIN_MAX_STEP, step, err, errlen) &&
           ag_meta_long(ck->st, ck->path, "optim_steps", 0, AG_TRAIN_MAX_STEP, optim_steps, err,
                        errlen);
}

ag_status ag_ckpt_counts_write(ag_st_writer *w, const char *path, long step, long optim_steps,
                               char *err, size_t errlen)
{
    ag_status st = ag_ckpt_count_fits(path, "step", step, err, errlen);
    if (st == AG_OK)
        st = ag_ckpt_count_fits(path, "optimizer step", optim_steps, err, errlen);
    if (st != AG_OK)
        return st;
    ag_ckpt_meta(w, "step", "%ld", step);
    ag_ckpt_meta(w, "optim_steps", "%ld", optim_steps);
    return AG_OK;
}

void ag_ckpt_run_meta(ag_st_writer *w, int batch, double lr, double weight_decay, double clip,
                      uint64_t seed, uint64_t data_rng)
{
    ag_ckpt_meta(w, "batch", "%d", batch);
    ag_ckpt_meta(w, "lr", "%.17g", lr);
    ag_ckpt_meta(w, "weight_decay", "%.17g", weight_decay);
    ag_ckpt_meta(w, "clip", "%.17g", clip);
    ag_ckpt_meta(w, "seed", "%" PRIu64, seed);
    ag_ckpt_meta(w, "data_rng", "%" PRIu64, data_rng);
}

ag_st_writer *ag_ckpt_writer_new(const char *format, const char *version)
{
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    if (w) {
        ag_st_add_meta(w, "format", format);
        ag_st_add_meta(w, "version", version);
    }
    return w;
}

void ag_ckpt_meta(ag_st_writer *w, const char *key, const char *fmt, ...)
{
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ag_st_add_meta(w, key, buf); /* errors are sticky: ag_st_save reports them */
}
