/*
 * st_read.c - reading safetensors files, every one of them treated as
 * hostile. The header length is bounded and must fit the file; the JSON
 * header is read by a small strict parser that knows the format's schema
 * (so there is no recursion and no nesting beyond what the format has);
 * dtypes, shapes and data offsets are checked with overflow-safe arithmetic
 * before any query can see them. After ag_st_parse succeeds, the queries
 * only have to check the caller's arguments.
 */
#include "io.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct st_tensor {
    char *name;                               /* owned; UTF-8 without NUL inside */
    ag_st_type dtype;                         /* AG_ST_F32 or AG_ST_F64 */
    int ndim;                                 /* 0..AG_ST_MAX_DIMS; 0 is a scalar */
    unsigned long long shape[AG_ST_MAX_DIMS]; /* (ndim) */
    size_t count;                             /* elements: product of shape */
    size_t begin, end;                        /* bytes [begin, end) of the data section */
} st_tensor;

typedef struct st_meta {
    char *key;   /* owned */
    char *value; /* owned */
} st_meta;

struct ag_st_file {
    char *name;                /* owned copy of the path (or buffer name), for messages */
    unsigned char *buf;        /* the whole file, owned: data points into it */
    const unsigned char *data; /* (data_len) bytes: the data section, inside buf */
    size_t data_len;
    st_tensor *t; /* (n_t), sorted by name */
    size_t n_t, cap_t;
    st_meta *m; /* (n_m), sorted by key */
    size_t n_m, cap_m;
};

/* The parser's state: the JSON header and where we are in it. */
typedef struct parser {
    const unsigned char *s; /* (len) bytes of JSON, borrowed from the file */
    size_t len, pos;
    ag_st_file *f;      /* the file being filled */
    const char *tensor; /* the tensor being read, for messages, or NULL */
    ag_status status;
    char *err;
    size_t errlen;
} parser;

/* ---- messages ---- */

/* Record a failure: "FILE: [tensor 'T': ][bad header JSON at byte N: ]MSG".
 * Returns 0 so that parse functions can `return fail(...)`. */
static int vfail(parser *p, ag_status status, int syntax, const char *fmt, va_list ap)
{
    char msg[256], q[AG_IO_QUOTE_LEN], where[64] = "";
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (syntax)
        snprintf(where, sizeof(where), "bad header JSON at byte %zu: ", p->pos);
    if (p->tensor)
        ag_err(status, p->err, p->errlen, "%s: tensor '%s': %s%s", p->f->name,
               ag_io_show(p->tensor, q, sizeof(q)), where, msg);
    else
        ag_err(status, p->err, p->errlen, "%s: %s%s", p->f->name, where, msg);
    p->status = status;
    return 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
syntax(parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(p, AG_ERR_FORMAT, 1, fmt, ap);
    va_end(ap);
    return 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(parser *p, ag_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(p, status, 0, fmt, ap);
    va_end(ap);
    return 0;
}

/* What stands at the current position, for "expected X, found Y". */
static const char *found(const parser *p, char *buf, size_t len)
{
    if (p->pos >= p->len)
        return "the end of the header";
    unsigned char c = p->s[p->pos];
    if (c >= 0x20 && c < 0x7F)
        snprintf(buf, len, "'%c'", c);
    else
        snprintf(buf, len, "byte 0x%02x", c);
    return buf;
}

static int expected(parser *p, const char *what)
{
    char b[16];
    return syntax(p, "expected %s, found %s", what, found(p, b, sizeof(b)));
}

/* ---- JSON pieces ---- */

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

/* Skip whitespace, then consume c or fail naming it. */
static int expect(parser *p, char c, const char *what)
{
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != (unsigned char)c)
        return expected(p, what);
    p->pos++;
    return 1;
}

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(unsigned cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string (after whitespace) into a new NUL-terminated UTF-8 string
 * *out, owned by the caller. Escapes, \uXXXX and surrogate pairs are
 * decoded; control characters, bad escapes, lone surrogates, \u0000 (which
 * a C string cannot hold) and invalid UTF-8 are errors. */
static int parse_string(parser *p, char **out)
{
    *out = NULL;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '"') {
        expected(p, "a string");
        return 0;
    }
    size_t start = ++p->pos, end = start;
    while (end < p->len && p->s[end] != '"')
        end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->len) {
        syntax(p, "unterminated string");
        return 0;
    }
    /* decoding never makes a string longer: end - start + 1 bytes suffice */
    char *o = malloc(end - start + 1);
    if (!o) {
        fail(p, AG_ERR_NOMEM, "out of memory reading the header");
        return 0;
    }
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = p->s[p->pos];
        if (c < 0x20) {
            syntax(p, "control character 0x%02x in a string", c);
            goto fail;
        }
        if (c != '\\') {
            o[n++] = (char)c;
            p->pos++;
            continue;
        }
        unsigned char e = p->s[p->pos + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            o[n++] = map[simple - "\"\\/bfnrt"];
            p->pos += 2;
            continue;
        }
        if (e != 'u') {
            syntax(p, "bad escape in a string");
            goto fail;
        }
        unsigned cp, lo;
        if (end - p->pos < 6 || !hex4(p->s + p->pos + 2, &cp)) {
            syntax(p, "bad \\u escape in a string");
            goto fail;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            syntax(p, "unpaired surrogate \\u%04x in a string", cp);
            goto fail;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - p->pos < 12 || p->s[p->pos + 6] != '\\' || p->s[p->pos + 7] != 'u' ||
                !hex4(p->s + p->pos + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                syntax(p, "unpaired surrogate \\u%04x in a string", cp);
                goto fail;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p->pos += 6;
        }
        if (cp == 0) {
            syntax(p, "\\u0000 in a string is not supported");
            goto fail;
        }
        n += put_utf8(cp, o + n);
        p->pos += 6;
    }
    if (!ag_utf8_valid((const unsigned char *)o, n)) {
        p->pos = start - 1;
        syntax(p, "string is not valid UTF-8");
        goto fail;
    }
    o[n] = '\0';
    p->pos = end + 1;
    *out = o;
    return 1;
fail:
    free(o);
    return 0;
}

/* A non-negative integer without sign, fraction or exponent, that fits. */
static int parse_uint(parser *p, unsigned long long *out)
{
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '-')
        return syntax(p, "negative number");
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
        return expected(p, "a non-negative integer");
    size_t start = p->pos;
    unsigned long long v = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        unsigned d = p->s[p->pos] - '0';
        if (v > (ULLONG_MAX - d) / 10) {
            p->pos = start;
            return syntax(p, "number too large");
        }
        v = v * 10 + d;
        p->pos++;
    }
    if (p->s[start] == '0' && p->pos - start > 1) {
        p->pos = start;
        return syntax(p, "number with a leading zero");
    }
    if (p->pos < p->len && p->s[p->pos] && strchr(".eE", p->s[p->pos]))
        return syntax(p, "expected an integer, found a fraction or an exponent");
    *out = v;
    return 1;
}

/* [n0, n1, ...] with at most max entries; *n is the count. Returns 1 on
 * success, 0 on an error (reported), -1 when there are more than max entries
 * (for the caller to report). */
static int parse_uints(parser *p, unsigned long long *v, int max, int *n)
{
    *n = 0;
    if (!expect(p, '[', "'['"))
        return 0;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return 1;
    }
    for (;;) {
        if (*n == max)
            return -1;
        if (!parse_uint(p, &v[(*n)++]))
            return 0;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        return expect(p, ']', "',' or ']'");
    }
}

/* After a member: ',' (another follows) or '}' (the object ends). Sets
 * *more accordingly. */
static int next_member(parser *p, int *more)
{
    skip_ws(p);
    if (p->pos < p->len && (p->s[p->pos] == ',' || p->s[p->pos] == '}')) {
        *more = p->s[p->pos++] == ',';
        return 1;
    }
    return expected(p, "',' or '}'");
}

/* '{' and, when the object is empty, '}': *empty tells which. */
static int open_object(parser *p, const char *what, int *empty)
{
    *empty = 0;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '{')
        return expected(p, what);
    p->pos++;
    skip_ws(p);
    *empty = p->pos < p->len && p->s[p->pos] == '}';
    if (*empty)
        p->pos++;
    return 1;
}

/* ---- the schema ---- */

static int grow(parser *p, void **arr, size_t *cap, size_t n, size_t elem)
{
    if (ag_io_grow(arr, cap, n, elem))
        return 1;
    return fail(p, AG_ERR_NOMEM, "out of memory reading the header");
}

/* Check a tensor's dtype, shape and offsets against the data section. */
static int check_tensor(parser *p, st_tensor *t, const unsigned long long *off)
{
    char s[128];
    unsigned long long count = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] != 0 && count > ULLONG_MAX / t->shape[i])
            return fail(p, AG_ERR_FORMAT, "shape %s has too many elements",
                        ag_io_shape_str(t->ndim, t->shape, s, sizeof(s)));
        count *= t->shape[i];
    }
    size_t size = ag_st_dtype_size(t->dtype);
    if (count > SIZE_MAX / size)
        return fail(p, AG_ERR_FORMAT, "shape %s has too many elements",
                    ag_io_shape_str(t->ndim, t->shape, s, sizeof(s)));
    if (off[0] > off[1])
        return fail(p, AG_ERR_FORMAT, "data_offsets [%llu, %llu] end before they begin", off[0],
                    off[1]);
    if (off[1] > p->f->data_len)
        return fail(p, AG_ERR_FORMAT,
                    "data_offsets [%llu, %llu] run past the data section (%zu bytes)", off[0],
                    off[1], p->f->data_len);
    if (off[1] - off[0] != count * size)
        return fail(
            p, AG_ERR_FORMAT, "data_offsets [%llu, %llu] hold %llu bytes, but %s %s needs %llu",
            off[0], off[1], off[1] - off[0], ag_st_dtype_name(t->dtype),
            ag_io_shape_str(t->ndim, t->shape, s, sizeof(s)), (unsigned long long)(count * size));
    t->count = (size_t)count;
    t->begin = (size_t)off[0];
    t->end = (size_t)off[1];
    return 1;
}

/* {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}, keys in any
 * order, each exactly once, no others. Takes name (appends the tensor, or
 * frees name on failure). */
static int parse_tensor(parser *p, char *name)
{
    st_tensor t = {.name = name};
    unsigned long long off[2] = {0, 0};
    int n_off = 0, seen[3] = {0, 0, 0}, empty, more = 1;
    char *key = NULL, *dtype = NULL;
    p->tensor = name;
    if (!open_object(p, "an object for the tensor", &empty))
        goto fail;
    while (!empty && more) {
        if (!parse_string(p, &key) || !expect(p, ':', "':'"))
            goto fail;
        char q[AG_IO_QUOTE_LEN];
        int k = strcmp(key, "dtype") == 0          ? 0
                : strcmp(key, "shape") == 0        ? 1
                : strcmp(key, "data_offsets") == 0 ? 2
                                                   : -1;
        if (k < 0) {
            fail(p, AG_ERR_FORMAT, "unknown key '%s'", ag_io_show(key, q, sizeof(q)));
            goto fail;
        }
        if (seen[k]++) {
            fail(p, AG_ERR_FORMAT, "duplicate key '%s'", key);
            goto fail;
        }
        free(key);
        key = NULL;
        if (k == 0) {
            if (!parse_string(p, &dtype))
                goto fail;
            int f32 = strcmp(dtype, "F32") == 0;
            if (f32 || strcmp(dtype, "F64") == 0) {
                t.dtype = f32 ? AG_ST_F32 : AG_ST_F64;
            } else {
                fail(p, AG_ERR_FORMAT, "unsupported dtype %s (attograd reads F32 and F64)",
                     ag_io_show(dtype, q, sizeof(q)));
                goto fail;
            }
            free(dtype);
            dtype = NULL;
        } else if (k == 1) {
            int r = parse_uints(p, t.shape, AG_ST_MAX_DIMS, &t.ndim);
            if (r < 0)
                fail(p, AG_ERR_FORMAT, "shape has more than %d dims", AG_ST_MAX_DIMS);
            if (r != 1)
                goto fail;
        } else {
            int r = parse_uints(p, off, 2, &n_off);
            if (r == 0)
                goto fail;
            if (r < 0 || n_off != 2) {
                fail(p, AG_ERR_FORMAT, "data_offsets must hold 2 numbers");
                goto fail;
            }
        }
        if (!next_member(p, &more))
            goto fail;
    }
    static const char *const keys[] = {"dtype", "shape", "data_offsets"};
    for (int k = 0; k < 3; k++) {
        if (!seen[k]) {
            fail(p, AG_ERR_FORMAT, "missing '%s'", keys[k]);
            goto fail;
        }
    }
    if (!check_tensor(p, &t, off))
        goto fail;
    ag_st_file *f = p->f;
    if (!grow(p, (void **)&f->t, &f->cap_t, f->n_t, sizeof(*f->t)))
        goto fail;
    f->t[f->n_t++] = t;
    p->tensor = NULL;
    return 1;
fail:
    free(key);
    free(dtype);
    free(name);
    p->tensor = NULL;
    return 0;
}

/* {"key": "string value", ...} */
static int parse_meta(parser *p)
{
    int empty, more = 1;
    if (!open_object(p, "an object for __metadata__", &empty))
        return 0;
    while (!empty && more) {
        st_meta m = {NULL, NULL};
        char q[AG_IO_QUOTE_LEN];
        if (!parse_string(p, &m.key) || !expect(p, ':', "':'"))
            goto fail;
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != '"') {
            fail(p, AG_ERR_FORMAT, "metadata '%s' is not a string",
                 ag_io_show(m.key, q, sizeof(q)));
            goto fail;
        }
        if (!parse_string(p, &m.value))
            goto fail;
        ag_st_file *f = p->f;
        if (!grow(p, (void **)&f->m, &f->cap_m, f->n_m, sizeof(*f->m)))
            goto fail;
        f->m[f->n_m++] = m;
        if (!next_member(p, &more))
            return 0;
        continue;
    fail:
        free(m.key);
        free(m.value);
        return 0;
    }
    return 1;
}

/* The whole header: one object of tensors and at most one __metadata__. */
static int parse_header(parser *p)
{
    int empty, more = 1, have_meta = 0;
    if (!open_object(p, "'{' at the start of the header", &empty))
        return 0;
    while (!empty && more) {
        char *key;
        if (!parse_string(p, &key))
            return 0;
        if (!expect(p, ':', "':'")) {
            free(key);
            return 0;
        }
        if (strcmp(key, "__metadata__") == 0) {
            free(key);
            if (have_meta++)
                return fail(p, AG_ERR_FORMAT, "duplicate __metadata__");
            if (!parse_meta(p))
                return 0;
        } else if (!parse_tensor(p, key)) {
            return 0;
        }
        if (!next_member(p, &more))
            return 0;
    }
    skip_ws(p);
    if (p->pos < p->len)
        return syntax(p, "trailing characters after the header object");
    return 1;
}

/* ---- whole-file checks ---- */

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int cmp_meta_key(const void *a, const void *b)
{
    return strcmp(((const st_meta *)a)->key, ((const st_meta *)b)->key);
}

static int cmp_tensor_offset(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* No two names alike, no two tensors sharing a byte of the data section. */
static int check_file(parser *p)
{
    ag_st_file *f = p->f;
    char q[AG_IO_QUOTE_LEN], q2[AG_IO_QUOTE_LEN];
    if (f->n_t > 1)
        qsort(f->t, f->n_t, sizeof(*f->t), cmp_tensor_name);
    if (f->n_m > 1)
        qsort(f->m, f->n_m, sizeof(*f->m), cmp_meta_key);
    for (size_t i = 1; i < f->n_t; i++)
        if (strcmp(f->t[i - 1].name, f->t[i].name) == 0)
            return fail(p, AG_ERR_FORMAT, "duplicate tensor '%s'",
                        ag_io_show(f->t[i].name, q, sizeof(q)));
    for (size_t i = 1; i < f->n_m; i++)
        if (strcmp(f->m[i - 1].key, f->m[i].key) == 0)
            return fail(p, AG_ERR_FORMAT, "duplicate metadata key '%s'",
                        ag_io_show(f->m[i].key, q, sizeof(q)));
    if (f->n_t < 2)
        return 1;
    st_tensor **by_off = malloc(f->n_t * sizeof(*by_off)); /* n_t * size fits: t exists */
    if (!by_off)
        return fail(p, AG_ERR_NOMEM, "out of memory reading the header");
    for (size_t i = 0; i < f->n_t; i++)
        by_off[i] = &f->t[i];
    qsort(by_off, f->n_t, sizeof(*by_off), cmp_tensor_offset);
    const st_tensor *last = NULL; /* the non-empty tensor reaching furthest so far */
    int ok = 1;
    for (size_t i = 0; i < f->n_t && ok; i++) {
        const st_tensor *t = by_off[i];
        if (t->begin == t->end)
            continue;
        if (last && t->begin < last->end)
            ok = fail(p, AG_ERR_FORMAT, "tensors '%s' and '%s' overlap in the data section",
                      ag_io_show(last->name, q, sizeof(q)), ag_io_show(t->name, q2, sizeof(q2)));
        if (!last || t->end > last->end)
            last = t;
    }
    free(by_off);
    return ok;
}

/* Parse the len bytes at buf, taking ownership of buf (freed on failure). */
static ag_status parse_owned(unsigned char *buf, size_t len, const char *name, ag_st_file **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    ag_st_file *f = calloc(1, sizeof(*f));
    if (!f || !(f->name = strdup(name ? name : "<buffer>"))) {
        free(f);
        free(buf);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", name ? name : "<buffer>");
    }
    f->buf = buf;
    parser p = {.f = f, .status = AG_OK, .err = err, .errlen = errlen};
    if (len < 8) {
        fail(&p, AG_ERR_FORMAT,
             "too short for a safetensors file (%zu bytes; the header length alone takes 8)", len);
        goto fail;
    }
    unsigned long long n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | buf[i];
    if (n > AG_ST_MAX_HEADER) {
        fail(&p, AG_ERR_FORMAT, "header length %llu is over the limit of %u bytes", n,
             (unsigned)AG_ST_MAX_HEADER);
        goto fail;
    }
    if (n > len - 8) {
        fail(&p, AG_ERR_FORMAT, "header length %llu runs past the end of the file (%zu bytes)", n,
             len);
        goto fail;
    }
    p.s = buf + 8;
    p.len = (size_t)n;
    f->data = buf + 8 + n;
    f->data_len = len - 8 - (size_t)n;
    if (!parse_header(&p) || !check_file(&p))
        goto fail;
    *out = f;
    return AG_OK;
fail:
    ag_st_free(f);
    return p.status;
}

/* ---- the public API ---- */

ag_status ag_st_parse(const void *buf, size_t len, const char *name, ag_st_file **out, char *err,
                      size_t errlen)
{
    if (!out)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_parse: out is NULL");
    *out = NULL;
    if (!buf && len > 0)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_parse: buf is NULL");
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory (%zu bytes)",
                      name ? name : "<buffer>", len);
    if (len)
        memcpy(copy, buf, len);
    return parse_owned(copy, len, name, out, err, errlen);
}

ag_status ag_st_load(const char *path, ag_st_file **out, char *err, size_t errlen)
{
    if (!out)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_load: out is NULL");
    *out = NULL;
    if (!path)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_load: path is NULL");
    /* a regular file only, read no further than its size: /dev/zero or a
     * FIFO is refused before a byte is read */
    unsigned char *buf;
    size_t len;
    ag_status st = ag_io_read_file(path, SIZE_MAX - 1, &buf, &len, err, errlen);
    if (st != AG_OK)
        return st;
    char shown[AG_IO_SHOW_LEN];
    return parse_owned(buf, len, ag_io_show(path, shown, sizeof(shown)), out, err, errlen);
}

void ag_st_free(ag_st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_t; i++)
        free(f->t[i].name);
    for (size_t i = 0; i < f->n_m; i++) {
        free(f->m[i].key);
        free(f->m[i].value);
    }
    free(f->t);
    free(f->m);
    free(f->buf);
    free(f->name);
    free(f);
}

size_t ag_st_count(const ag_st_file *f)
{
    return f ? f->n_t : 0;
}

const char *ag_st_name(const ag_st_file *f, size_t i)
{
    return f && i < f->n_t ? f->t[i].name : NULL;
}

static const st_tensor *find(const ag_st_file *f, const char *name)
{
    if (!f || !name || f->n_t == 0)
        return NULL;
    st_tensor key = {.name = (char *)name};
    return bsearch(&key, f->t, f->n_t, sizeof(*f->t), cmp_tensor_name);
}

const char *ag_st_dtype(const ag_st_file *f, const char *name)
{
    const st_tensor *t = find(f, name);
    return t ? ag_st_dtype_name(t->dtype) : NULL;
}

/* The tensor called name, or NULL with "FILE: tensor 'name' not found". */
static const st_tensor *need(const ag_st_file *f, const char *name, const char *fn, ag_status *st,
                             char *err, size_t errlen)
{
    char q[AG_IO_QUOTE_LEN];
    if (!f || !name) {
        *st = ag_err(AG_ERR_ARG, err, errlen, "%s: %s is NULL", fn, f ? "name" : "file");
        return NULL;
    }
    const st_tensor *t = find(f, name);
    if (!t)
        *st = ag_err(AG_ERR_FORMAT, err, errlen, "%s: tensor '%s' not found", f->name,
                     ag_io_show(name, q, sizeof(q)));
    return t;
}

ag_status ag_st_shape(const ag_st_file *f, const char *name, int *ndim, int *shape, char *err,
                      size_t errlen)
{
    ag_status st = AG_OK;
    char q[AG_IO_QUOTE_LEN], s[128];
    const st_tensor *t = need(f, name, "ag_st_shape", &st, err, errlen);
    if (!t)
        return st;
    if (!ndim || !shape)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_shape: ndim or shape is NULL");
    if (t->ndim > AG_MAX_DIMS)
        return ag_err(AG_ERR_SHAPE, err, errlen,
                      "%s: tensor '%s' has %d dims; attograd tensors have at most %d", f->name,
                      ag_io_show(name, q, sizeof(q)), t->ndim, AG_MAX_DIMS);
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] > INT_MAX)
            return ag_err(AG_ERR_SHAPE, err, errlen,
                          "%s: tensor '%s' has shape %s: a dim is beyond %d", f->name,
                          ag_io_show(name, q, sizeof(q)),
                          ag_io_shape_str(t->ndim, t->shape, s, sizeof(s)), INT_MAX);
    *ndim = t->ndim;
    for (int i = 0; i < t->ndim; i++)
        shape[i] = (int)t->shape[i];
    return AG_OK;
}

static float get_f32(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static double get_f64(const unsigned char *b)
{
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = u << 8 | b[i];
    double v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

ag_status ag_st_get(const ag_st_file *f, const char *name, int ndim, const int *shape, ag_real *dst,
                    char *err, size_t errlen)
{
    ag_status st = AG_OK;
    char q[AG_IO_QUOTE_LEN], have[128], want[128];
    const st_tensor *t = need(f, name, "ag_st_get", &st, err, errlen);
    if (!t)
        return st;
    unsigned long long w[AG_MAX_DIMS];
    if (ndim < 0 || ndim > AG_MAX_DIMS || (ndim > 0 && !shape))
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_get: '%s': bad expected shape (ndim %d)",
                      ag_io_show(name, q, sizeof(q)), ndim);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return ag_err(AG_ERR_ARG, err, errlen,
                          "ag_st_get: '%s': negative dim %d in the expected shape",
                          ag_io_show(name, q, sizeof(q)), shape[i]);
        w[i] = (unsigned long long)shape[i];
    }
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == w[i];
    if (!same)
        return ag_err(AG_ERR_SHAPE, err, errlen, "%s: tensor '%s' has shape %s, expected %s",
                      f->name, ag_io_show(name, q, sizeof(q)),
                      ag_io_shape_str(t->ndim, t->shape, have, sizeof(have)),
                      ag_io_shape_str(ndim, w, want, sizeof(want)));
    if (!dst && t->count > 0)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_st_get: '%s': dst is NULL",
                      ag_io_show(name, q, sizeof(q)));
    const unsigned char *src = f->data + t->begin;
    if (t->dtype == AG_ST_F32) {
        for (size_t i = 0; i < t->count; i++)
            dst[i] = (ag_real)get_f32(src + 4 * i);
        return AG_OK;
    }
#ifndef AG_REAL_DOUBLE
    /* narrowing a finite double beyond FLT_MAX is undefined: refuse it first */
    for (size_t i = 0; i < t->count; i++) {
        double v = get_f64(src + 8 * i);
        if (isfinite(v) && fabs(v) > FLT_MAX)
            return ag_err(AG_ERR_NUMERIC, err, errlen,
                          "%s: tensor '%s': element %zu (%g) is out of range for float", f->name,
                          ag_io_show(name, q, sizeof(q)), i, v);
    }
#endif
    for (size_t i = 0; i < t->count; i++)
        dst[i] = (ag_real)get_f64(src + 8 * i);
    return AG_OK;
}

ag_status ag_st_get_finite(const ag_st_file *f, const char *name, int ndim, const int *shape,
                           ag_real *dst, int nonneg, char *err, size_t errlen)
{
    ag_status st = ag_st_get(f, name, ndim, shape, dst, err, errlen);
    if (st != AG_OK)
        return st;
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d]; /* ag_st_get checked that it is the tensor's count */
    return ag_io_check_values(f->name, name, dst, n, nonneg, err, errlen);
}

size_t ag_st_flushed(const ag_st_file *f, const char *name, size_t *first)
{
    size_t n = 0;
#ifdef AG_REAL_DOUBLE
    (void)f, (void)name, (void)first; /* F32 and F64 both fit a double */
#else
    const st_tensor *t = find(f, name);
    if (!t || t->dtype != AG_ST_F64)
        return 0;
    for (size_t i = 0; i < t->count; i++) {
        double v = get_f64(f->data + t->begin + 8 * i);
        if (v != 0 && fabs(v) <= FLT_MAX && (float)v == 0 && n++ == 0 && first)
            *first = i;
    }
#endif
    return n;
}

static const st_meta *find_meta(const ag_st_file *f, const char *key)
{
    if (!f || !key || f->n_m == 0)
        return NULL;
    st_meta k = {.key = (char *)key};
    return bsearch(&k, f->m, f->n_m, sizeof(*f->m), cmp_meta_key);
}

const char *ag_st_meta(const ag_st_file *f, const char *key)
{
    const st_meta *m = find_meta(f, key);
    return m ? m->value : NULL;
}

size_t ag_st_meta_count(const ag_st_file *f)
{
    return f ? f->n_m : 0;
}

const char *ag_st_meta_key(const ag_st_file *f, size_t i)
{
    return f && i < f->n_m ? f->m[i].key : NULL;
}
