/*
 * text.c - numbers and strings that come from outside: strict parsers (a
 * number is the whole string or it is an error, never a silent 0 or a
 * prefix) and the quoting (files.c's ag_io_show) that makes any string safe
 * to show in a one-line message. A checkpoint's metadata and the command line's flags are both
 * read through them.
 */
#include "io.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strtol and friends skip leading white space (tabs and newlines too) and
 * accept what follows; we accept only a string that starts like a number. */
static int starts_like_number(const char *s)
{
    const char *p = s + (*s == '-' || *s == '+');
    return (*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9');
}

int ag_parse_long(const char *s, long *out)
{
    if (!s || !starts_like_number(s))
        return AG_PARSE_BAD;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0')
        return AG_PARSE_BAD;
    if (errno == ERANGE)
        return AG_PARSE_RANGE;
    *out = v;
    return AG_PARSE_OK;
}

int ag_parse_u64(const char *s, uint64_t *out)
{
    /* strtoull would take "-1" as 2^64 - 1 */
    if (!s || *s < '0' || *s > '9')
        return AG_PARSE_BAD;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return AG_PARSE_BAD;
    if (errno == ERANGE || v > UINT64_MAX)
        return AG_PARSE_RANGE;
    *out = (uint64_t)v;
    return AG_PARSE_OK;
}

int ag_parse_double(const char *s, double *out)
{
    /* "nan", "inf" and "infinity" do not start like a number: refused here;
     * strtod would also take hexadecimal ("0x10", "0x1p-4"), but the flags
     * and the files say decimal: only digits, a sign, a point and an
     * exponent may appear */
    if (!s || !starts_like_number(s) || s[strspn(s, "0123456789+-.eE")] != '\0')
        return AG_PARSE_BAD;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        return AG_PARSE_BAD;
    /* ERANGE: beyond DBL_MAX (inf), or so small that it underflowed */
    if (!isfinite(v) || (errno == ERANGE && fabs(v) >= DBL_MIN))
        return AG_PARSE_RANGE;
    *out = v;
    return errno == ERANGE ? AG_PARSE_TINY : AG_PARSE_OK;
}

const char *ag_quote(const char *s, char *buf, size_t len)
{
    return ag_io_show(s, buf, len); /* files.c's, the rule for every name a message shows */
}
