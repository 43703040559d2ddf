/*
 * st_write.c - writing safetensors files the way the reference writer lays
 * them out: the JSON header (__metadata__ first, then tensors in name order)
 * padded with spaces to a multiple of 8 bytes, then every tensor's
 * little-endian data, contiguous, in the same order. The writer borrows the
 * tensors' data until save; ag_st_save goes through a temporary file so the
 * target is replaced whole or not at all.
 */
#include "io.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_entry {
    char *name;             /* owned */
    int ndim;               /* 0..AG_MAX_DIMS */
    int shape[AG_MAX_DIMS]; /* (ndim), each >= 0 */
    size_t count;           /* elements: product of shape */
    ag_st_type type;        /* how it is stored */
    const ag_real *data;    /* (count) values, borrowed until save; or */
    const void *raw;        /* (count) values of type itself (ag_st_add_typed); or */
    ag_st_fill_fn fill;     /* made as they are written (ag_st_add_fill), from */
    const void *ctx;        /* this, borrowed until save */
} st_entry;

struct ag_st_writer {
    ag_st_type dtype;
    st_entry *e; /* (n), in the order added */
    size_t n, cap;
    char **meta; /* (2 * n_meta): key, value, key, value ...; owned */
    size_t n_meta, cap_meta;
    ag_status status; /* the first error, sticky */
    char error[256];
};

ag_st_writer *ag_st_writer_new(ag_st_type dtype)
{
    if (dtype != AG_ST_F32 && dtype != AG_ST_F64)
        return NULL;
    ag_st_writer *w = calloc(1, sizeof(*w));
    if (w)
        w->dtype = dtype;
    return w;
}

void ag_st_writer_free(ag_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        free(w->e[i].name);
    for (size_t i = 0; i < 2 * w->n_meta; i++)
        free(w->meta[i]);
    free(w->e);
    free(w->meta);
    free(w);
}

const char *ag_st_writer_error(const ag_st_writer *w)
{
    return w ? w->error : "ag_st_writer: writer is NULL";
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ag_status
wfail(ag_st_writer *w, ag_status status, const char *fmt, ...)
{
    if (w->status != AG_OK)
        return w->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof(w->error), fmt, ap);
    va_end(ap);
    w->status = status;
    return status;
}

ag_status ag_st_writer_fail(ag_st_writer *w, ag_status status, const char *msg)
{
    return w ? wfail(w, status, "%s", msg) : AG_ERR_ARG;
}

static int is_utf8(const char *s)
{
    return ag_utf8_valid((const unsigned char *)s, strlen(s));
}

/* Add a tensor of type whose values are src's data, raw or fill (one of them). */
static ag_status add_entry(ag_st_writer *w, const char *name, int ndim, const int *shape,
                           ag_st_type type, const st_entry *src)
{
    int has_values = src->data || src->raw || src->fill;
    char q[AG_IO_QUOTE_LEN];
    if (!w)
        return AG_ERR_ARG;
    if (w->status != AG_OK)
        return w->status;
    if (!name)
        return wfail(w, AG_ERR_ARG, "ag_st_add: name is NULL");
    if (!is_utf8(name))
        return wfail(w, AG_ERR_ARG, "ag_st_add: tensor name is not valid UTF-8");
    ag_io_show(name, q, sizeof(q));
    if (strcmp(name, "__metadata__") == 0)
        return wfail(w, AG_ERR_ARG, "ag_st_add: '__metadata__' cannot name a tensor");
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->e[i].name, name) == 0)
            return wfail(w, AG_ERR_ARG, "ag_st_add: duplicate tensor '%s'", q);
    if (ndim < 0 || ndim > AG_MAX_DIMS || (ndim > 0 && !shape))
        return wfail(w, AG_ERR_ARG, "ag_st_add: tensor '%s': ndim %d (0..%d dims)", q, ndim,
                     AG_MAX_DIMS);
    /* elements and bytes as F64 (the larger dtype) must fit in size_t */
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return wfail(w, AG_ERR_ARG, "ag_st_add: tensor '%s': negative dim %d", q, shape[i]);
        if (shape[i] != 0 && count > SIZE_MAX / 8 / (size_t)shape[i])
            return wfail(w, AG_ERR_NOMEM, "ag_st_add: tensor '%s': too many elements", q);
        count *= (size_t)shape[i];
    }
    if (count > 0 && !has_values)
        return wfail(w, AG_ERR_ARG, "ag_st_add: tensor '%s': data is NULL", q);
    st_entry e = {.ndim = ndim, .count = count, .type = type};
    e.data = src->data, e.raw = src->raw, e.fill = src->fill, e.ctx = src->ctx;
    for (int i = 0; i < ndim; i++)
        e.shape[i] = shape[i];
    if (!ag_io_grow((void **)&w->e, &w->cap, w->n, sizeof(*w->e)) || !(e.name = strdup(name)))
        return wfail(w, AG_ERR_NOMEM, "ag_st_add: out of memory");
    w->e[w->n++] = e;
    return AG_OK;
}

ag_status ag_st_add(ag_st_writer *w, const char *name, int ndim, const int *shape,
                    const ag_real *data)
{
    return add_entry(w, name, ndim, shape, w ? w->dtype : AG_ST_F32, &(st_entry){.data = data});
}

ag_status ag_st_add_fill(ag_st_writer *w, const char *name, int ndim, const int *shape,
                         ag_st_fill_fn fill, const void *ctx)
{
    return add_entry(w, name, ndim, shape, w ? w->dtype : AG_ST_F32,
                     &(st_entry){.fill = fill, .ctx = ctx});
}

ag_status ag_st_add_typed(ag_st_writer *w, const char *name, ag_st_type type, int ndim,
                          const int *shape, const void *data)
{
    if (w && type != AG_ST_F32 && type != AG_ST_F64 && type != AG_ST_I32 && type != AG_ST_I64)
        return wfail(w, AG_ERR_ARG, "ag_st_add_typed: unknown type %d", (int)type);
    return add_entry(w, name, ndim, shape, type, &(st_entry){.raw = data});
}

ag_status ag_st_add_tensor(ag_st_writer *w, const char *name, const ag_tensor *t)
{
    if (!w)
        return AG_ERR_ARG;
    if (!t) { /* wfail keeps an earlier error */
        char q[AG_IO_QUOTE_LEN];
        return wfail(w, AG_ERR_ARG, "ag_st_add_tensor: tensor '%s' is NULL",
                     name && is_utf8(name) ? ag_io_show(name, q, sizeof(q)) : "?");
    }
    return ag_st_add(w, name, t->ndim, t->shape, t->data);
}

ag_status ag_st_add_meta(ag_st_writer *w, const char *key, const char *value)
{
    char q[AG_IO_QUOTE_LEN];
    if (!w)
        return AG_ERR_ARG;
    if (w->status != AG_OK)
        return w->status;
    if (!key || !value)
        return wfail(w, AG_ERR_ARG, "ag_st_add_meta: key or value is NULL");
    if (!is_utf8(key) || !is_utf8(value))
        return wfail(w, AG_ERR_ARG, "ag_st_add_meta: key or value is not valid UTF-8");
    for (size_t i = 0; i < w->n_meta; i++)
        if (strcmp(w->meta[2 * i], key) == 0)
            return wfail(w, AG_ERR_ARG, "ag_st_add_meta: duplicate key '%s'",
                         ag_io_show(key, q, sizeof(q)));
    char *k = strdup(key), *v = strdup(value);
    /* cap_meta counts pairs: grow an array of pairs of pointers */
    if (!k || !v || !ag_io_grow((void **)&w->meta, &w->cap_meta, w->n_meta, 2 * sizeof(*w->meta))) {
        free(k);
        free(v);
        return wfail(w, AG_ERR_NOMEM, "ag_st_add_meta: out of memory");
    }
    w->meta[2 * w->n_meta] = k;
    w->meta[2 * w->n_meta + 1] = v;
    w->n_meta++;
    return AG_OK;
}

/* ---- encoding ---- */

/* A growing string for the JSON header. */
typedef struct sbuf {
    char *s; /* (cap) bytes, owned */
    size_t n, cap;
    int oom; /* an append failed: everything after it is dropped */
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (n > SIZE_MAX - b->n - 1) {
        b->oom = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n + 1)
            c = c > SIZE_MAX / 2 ? b->n + n + 1 : c * 2;
        char *p = realloc(b->s, c);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = c;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void putu(sbuf *b, unsigned long long v)
{
    char t[32];
    put(b, t, (size_t)snprintf(t, sizeof(t), "%llu", v));
}

/* s as a JSON string: '"', '\\' and control characters escaped; UTF-8
 * passes through (it was checked when added). */
static void put_json(sbuf *b, const char *s)
{
    put(b, "\"", 1);
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        char t[8];
        if (u == '"' || u == '\\') {
            t[0] = '\\';
            t[1] = (char)u;
            put(b, t, 2);
        } else if (u < 0x20) {
            put(b, t, (size_t)snprintf(t, sizeof(t), "\\u%04x", u));
        } else {
            put(b, c, 1);
        }
    }
    put(b, "\"", 1);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp((*(const st_entry *const *)a)->name, (*(const st_entry *const *)b)->name);
}

static int cmp_pair(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where the bytes go: a FILE or a memory buffer. */
typedef struct sink {
    FILE *f;            /* when writing a file */
    unsigned char *mem; /* else: the buffer, with room for everything */
    size_t pos;
} sink;

static int emit(sink *k, const void *p, size_t n)
{
    if (k->f)
        return fwrite(p, 1, n, k->f) == n;
    if (n == 0) /* an empty tensor's data: p may be NULL */
        return 1;
    assert(k->mem); /* a sink is a file or a buffer */
    memcpy(k->mem + k->pos, p, n);
    k->pos += n;
    return 1;
}

/* The layout of a save: entries in name order with their offsets, and the
 * padded header. Everything here is owned by the plan. */
typedef struct plan {
    const st_entry **order; /* (n) entries sorted by name */
    sbuf header;            /* the JSON, padded to a multiple of 8 (with the 8-byte length) */
    size_t total;           /* bytes of the whole file */
} plan;

static void plan_free(plan *pl)
{
    free(pl->order);
    free(pl->header.s);
}

/* Sort, lay out and build the header. what names the output in messages. */
static ag_status plan_make(const ag_st_writer *w, plan *pl, const char *what, char *err,
                           size_t errlen)
{
    memset(pl, 0, sizeof(*pl));
    char **meta = NULL;
    ag_status st = AG_OK;
    pl->order = malloc((w->n ? w->n : 1) * sizeof(*pl->order));
    if (w->n_meta) {
        meta = malloc(w->n_meta * 2 * sizeof(*meta));
        if (meta)
            memcpy(meta, w->meta, w->n_meta * 2 * sizeof(*meta));
    }
    if (!pl->order || (w->n_meta && !meta)) {
        st = ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", what);
        goto done;
    }
    for (size_t i = 0; i < w->n; i++)
        pl->order[i] = &w->e[i];
    if (w->n > 1)
        qsort(pl->order, w->n, sizeof(*pl->order), cmp_entry);
    if (w->n_meta > 1)
        qsort(meta, w->n_meta, 2 * sizeof(*meta), cmp_pair);

    sbuf *b = &pl->header;
    put(b, "        {", 9); /* the length goes in the first 8 bytes */
    int first = 1;
    if (w->n_meta) {
        puts_(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->n_meta; i++) {
            if (i)
                put(b, ",", 1);
            put_json(b, meta[2 * i]);
            put(b, ":", 1);
            put_json(b, meta[2 * i + 1]);
        }
        put(b, "}", 1);
        first = 0;
    }
    size_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        const st_entry *e = pl->order[i];
        size_t bytes = e->count * ag_st_dtype_size(e->type); /* checked when added */
        if (bytes > SIZE_MAX - off) {
            st = ag_err(AG_ERR_NOMEM, err, errlen, "%s: the tensors are too large", what);
            goto done;
        }
        if (!first)
            put(b, ",", 1);
        first = 0;
        put_json(b, e->name);
        puts_(b, ":{\"dtype\":\"");
        puts_(b, ag_st_dtype_name(e->type));
        puts_(b, "\",\"shape\":[");
        for (int d = 0; d < e->ndim; d++) {
            if (d)
                put(b, ",", 1);
            putu(b, (unsigned long long)e->shape[d]);
        }
        puts_(b, "],\"data_offsets\":[");
        putu(b, off);
        put(b, ",", 1);
        putu(b, off + bytes);
        puts_(b, "]}");
        off += bytes;
    }
    put(b, "}", 1);
    while (!b->oom && b->n % 8 != 0)
        put(b, " ", 1);
    if (b->oom) {
        st = ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory building the header", what);
        goto done;
    }
    size_t hlen = b->n - 8;
    if (hlen > AG_ST_MAX_HEADER) {
        st = ag_err(AG_ERR_FORMAT, err, errlen,
                    "%s: the header would take %zu bytes, over the limit of %u", what, hlen,
                    (unsigned)AG_ST_MAX_HEADER);
        goto done;
    }
    for (int i = 0; i < 8; i++)
        b->s[i] = (char)((unsigned long long)hlen >> (8 * i) & 0xFF);
    if (off > SIZE_MAX - b->n) {
        st = ag_err(AG_ERR_NOMEM, err, errlen, "%s: the tensors are too large", what);
        goto done;
    }
    pl->total = b->n + off;
done:
    free(meta);
    if (st != AG_OK)
        plan_free(pl);
    return st;
}

static void put_f32(unsigned char *o, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    for (int i = 0; i < 4; i++)
        o[i] = (unsigned char)(u >> (8 * i));
}

static void put_u64(unsigned char *o, uint64_t u)
{
    for (int i = 0; i < 8; i++)
        o[i] = (unsigned char)(u >> (8 * i));
}

static void put_f64(unsigned char *o, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    put_u64(o, u);
}

/* Element j of an ag_st_add_typed tensor, little-endian, into o. */
static void put_raw(unsigned char *o, ag_st_type type, const void *raw, size_t j)
{
    if (type == AG_ST_F32) {
        put_f32(o, ((const float *)raw)[j]);
    } else if (type == AG_ST_F64) {
        put_f64(o, ((const double *)raw)[j]);
    } else if (type == AG_ST_I64) {
        put_u64(o, (uint64_t)((const int64_t *)raw)[j]);
    } else {
        uint32_t u = (uint32_t)((const int32_t *)raw)[j];
        for (int i = 0; i < 4; i++)
            o[i] = (unsigned char)(u >> (8 * i));
    }
}

/* Write the planned file into k. */
static ag_status write_all(const ag_st_writer *w, const plan *pl, sink *k, const char *what,
                           char *err, size_t errlen)
{
    enum { CHUNK = 512 };
    unsigned char buf[CHUNK * 8];
    ag_real made[CHUNK]; /* a chunk of a filled tensor's values */
    char q[AG_IO_QUOTE_LEN];
    int e = 0;
    if (!emit(k, pl->header.s, pl->header.n))
        goto write_error;
    double done = 0, total = 0;
    for (size_t i = 0; i < w->n; i++)
        total += (double)pl->order[i]->count;
    for (size_t i = 0; i < w->n; i++) {
        const st_entry *t = pl->order[i];
        /* shown, never stopped: a file is written whole or not at all */
        if (k->f && total >= (1 << 22))
            (void)ag_progress_report("writing", done, total);
        done += (double)t->count;
        size_t esize = ag_st_dtype_size(t->type);
        for (size_t at = 0; at < t->count; at += CHUNK) {
            size_t n = t->count - at < CHUNK ? t->count - at : CHUNK;
            if (t->fill)
                t->fill(t->ctx, at, n, made);
            for (size_t j = 0; j < n; j++) {
                if (t->raw) {
                    put_raw(buf + esize * j, t->type, t->raw, at + j);
                    continue;
                }
                double v = (double)(t->fill ? made[j] : t->data[at + j]);
                if (t->type == AG_ST_F64) {
                    put_f64(buf + 8 * j, v);
                    continue;
                }
                /* narrowing a finite double beyond FLT_MAX is undefined */
                if (isfinite(v) && fabs(v) > FLT_MAX)
                    return ag_err(AG_ERR_NUMERIC, err, errlen,
                                  "%s: tensor '%s': element %zu (%g) is out of range for F32", what,
                                  ag_io_show(t->name, q, sizeof(q)), at + j, v);
                put_f32(buf + 4 * j, (float)v);
            }
            if (!emit(k, buf, n * esize))
                goto write_error;
        }
    }
    if (k->f && total >= (1 << 22))
        (void)ag_progress_report("writing", total, total);
    return AG_OK;
write_error:
    e = errno;
    return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write: %s", what, strerror(e));
}

ag_status ag_st_encode(const ag_st_writer *w, unsigned char **buf, size_t *len, char *err,
                       size_t errlen)
{
    if (!buf || !len)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_encode: buf or len is NULL");
    *buf = NULL;
    *len = 0;
    if (!w)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_encode: writer is NULL");
    if (w->status != AG_OK)
        return ag_err(w->status, err, errlen, "%s", w->error);
    plan pl;
    ag_status st = plan_make(w, &pl, "safetensors", err, errlen);
    if (st != AG_OK)
        return st;
    sink k = {.mem = malloc(pl.total)};
    if (!k.mem) {
        st = ag_err(AG_ERR_NOMEM, err, errlen, "safetensors: out of memory (%zu bytes)", pl.total);
    } else {
        st = write_all(w, &pl, &k, "safetensors", err, errlen);
    }
    if (st == AG_OK) {
        *buf = k.mem;
        *len = pl.total;
    } else {
        free(k.mem);
    }
    plan_free(&pl);
    return st;
}

ag_status ag_st_save(ag_st_writer *w, const char *path, char *err, size_t errlen)
{
    if (!w || !path)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_save: %s is NULL", w ? "path" : "writer");
    char shown[AG_IO_SHOW_LEN];
    ag_io_show(path, shown, sizeof(shown));
    if (w->status != AG_OK)
        return ag_err(w->status, err, errlen, "%s: not saved: %s", shown, w->error);
    plan pl;
    ag_status st = plan_make(w, &pl, shown, err, errlen);
    if (st != AG_OK)
        return st;
    ag_atomic a;
    st = ag_atomic_open(&a, path, err, errlen);
    if (st == AG_OK) {
        sink k = {.f = a.f};
        st = write_all(w, &pl, &k, shown, err, errlen);
        if (st == AG_OK)
            st = ag_atomic_commit(&a, err, errlen);
        else
            ag_atomic_abort(&a);
    }
    plan_free(&pl);
    return st;
}
