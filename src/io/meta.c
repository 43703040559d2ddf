/*
 * meta.c - reading settings from a safetensors file's metadata, which is
 * hostile input like the rest of the file: a value must be exactly a number
 * in its range (the strict ag_parse_* of text.c: strtol and friends would
 * skip white space, accept "0x10", "nan" or a trailing word), and a message
 * names the file, the key and the value, quoted safely (ag_quote). Also
 * the check of the tensors' values a checkpoint reader trusts.
 */
#include "io.h"

#include <math.h>
#include <string.h>

int ag_meta_str(const ag_st_file *f, const char *path, const char *key, const char **out, char *err,
                size_t errlen)
{
    *out = ag_st_meta(f, key);
    if (!*out)
        ag_err(AG_ERR_FORMAT, err, errlen, "%s: metadata '%s' is missing", path, key);
    return *out != NULL;
}

static int bad_value(const char *path, const char *key, const char *s, const char *what, char *err,
                     size_t errlen)
{
    char q[AG_QUOTE_LEN];
    ag_err(AG_ERR_FORMAT, err, errlen, "%s: metadata %s '%s' is not %s", path, key,
           ag_quote(s, q, sizeof(q)), what);
    return 0;
}

/* The numbers go through the library's strict parsers (text.c). */
int ag_meta_long(const ag_st_file *f, const char *path, const char *key, long lo, long hi,
                 long *out, char *err, size_t errlen)
{
    const char *s;
    long v = 0;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    if (ag_parse_long(s, &v) != AG_PARSE_OK || v < lo || v > hi) {
        char what[96];
        snprintf(what, sizeof(what), "a whole number in %ld..%ld", lo, hi);
        return bad_value(path, key, s, what, err, errlen);
    }
    *out = v;
    return 1;
}

int ag_meta_int(const ag_st_file *f, const char *path, const char *key, int lo, int hi, int *out,
                char *err, size_t errlen)
{
    long v;
    if (!ag_meta_long(f, path, key, lo, hi, &v, err, errlen))
        return 0;
    *out = (int)v;
    return 1;
}

int ag_meta_u64(const ag_st_file *f, const char *path, const char *key, uint64_t *out, char *err,
                size_t errlen)
{
    const char *s;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    if (ag_parse_u64(s, out) != AG_PARSE_OK)
        return bad_value(path, key, s, "an unsigned 64-bit number", err, errlen);
    return 1;
}

int ag_meta_double(const ag_st_file *f, const char *path, const char *key, double lo, double hi,
                   double *out, char *err, size_t errlen)
{
    const char *s;
    double v = 0;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    int r = ag_parse_double(s, &v);
    if (r == AG_PARSE_TINY)
        r = AG_PARSE_OK; /* a subnormal, as %.17g wrote it, or an underflow to 0 */
    if (r != AG_PARSE_OK || v < lo || v > hi) {
        char what[96];
        snprintf(what, sizeof(what), "a number in %g..%g", lo, hi);
        return bad_value(path, key, s, what, err, errlen);
    }
    *out = v;
    return 1;
}

int ag_meta_bool(const ag_st_file *f, const char *path, const char *key, int *out, char *err,
                 size_t errlen)
{
    const char *s;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
        return bad_value(path, key, s, "true or false", err, errlen);
    *out = strcmp(s, "true") == 0;
    return 1;
}
