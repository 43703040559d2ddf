/*
 * meta.c - reading settings from a safetensors file's metadata, which is
 * hostile input like the rest of the file: a value must be exactly a number
 * in its range (strtol and friends would skip white space, accept "0x10",
 * "nan" or a trailing word), and a message names the file, the key and the
 * value, quoted safely.
 */
#include "io.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ag_meta_str(const ag_st_file *f, const char *path, const char *key, const char **out,
                char *err, size_t errlen)
{
    *out = ag_st_meta(f, key);
    if (!*out)
        ag_io_err(AG_ERR_FORMAT, err, errlen, "%s: metadata '%s' is missing", path, key);
    return *out != NULL;
}

/* Whether s starts like a decimal number: a digit, after an optional sign
 * when signed. */
static int starts_like_number(const char *s, int sign)
{
    const char *p = s + (sign && (*s == '-' || *s == '+'));
    return (*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9');
}

static int bad_value(const char *path, const char *key, const char *s, const char *what,
                     char *err, size_t errlen)
{
    char q[AG_IO_QUOTE_LEN];
    ag_io_err(AG_ERR_FORMAT, err, errlen, "%s: metadata %s '%s' is not %s", path, key,
              ag_io_quote(s, q, sizeof(q)), what);
    return 0;
}

int ag_meta_long(const ag_st_file *f, const char *path, const char *key, long lo, long hi,
                 long *out, char *err, size_t errlen)
{
    const char *s;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    char *end, what[96];
    errno = 0;
    long v = starts_like_number(s, 1) ? strtol(s, &end, 10) : 0;
    if (!starts_like_number(s, 1) || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
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

int ag_meta_u64(const ag_st_file *f, const char *path, const char *key, uint64_t *out,
                char *err, size_t errlen)
{
    const char *s;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    char *end;
    errno = 0;
    /* strtoull would take "-1" as 2^64 - 1: digits only */
    unsigned long long v = starts_like_number(s, 0) ? strtoull(s, &end, 10) : 0;
    if (!starts_like_number(s, 0) || *s == '.' || *end != '\0' || errno == ERANGE ||
        v > UINT64_MAX)
        return bad_value(path, key, s, "an unsigned 64-bit number", err, errlen);
    *out = (uint64_t)v;
    return 1;
}

int ag_meta_double(const ag_st_file *f, const char *path, const char *key, double lo, double hi,
                   double *out, char *err, size_t errlen)
{
    const char *s;
    if (!ag_meta_str(f, path, key, &s, err, errlen))
        return 0;
    char *end, what[96];
    errno = 0;
    double v = starts_like_number(s, 1) ? strtod(s, &end) : 0;
    /* an underflow to 0 is still the number 0 (%.17g never writes one) */
    if (!starts_like_number(s, 1) || *end != '\0' || !isfinite(v) ||
        (errno == ERANGE && fabs(v) >= DBL_MIN) || v < lo || v > hi) {
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
