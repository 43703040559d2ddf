/*
 * io.c - helpers shared by the file formats: UTF-8 checks, quoting
 * names from untrusted files. Files themselves (what may be read, how an
 * output is replaced) are files.c's.
 */
#include "io.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ag_utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            /* ASCII, most of most text: eight bytes at a time while no byte has its top bit */
            for (i++; len - i >= 8; i += 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (w & 0x8080808080808080u)
                    break;
            }
            continue;
        }
        size_t n;
        unsigned cp, min;
        if ((c & 0xE0) == 0xC0) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0; /* a stray continuation byte, or 0xF8..0xFF */
        }
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n + 1;
    }
    return 1;
}

/* ---- showing a name ---- */

/* The unit at s (a whole UTF-8 character, or one byte that is not part of
 * one): its length in bytes, and in *width its length as shown. */
static size_t show_unit(const unsigned char *s, size_t *width)
{
    unsigned c = s[0];
    if (c == '\n' || c == '\t') {
        *width = 2; /* \n \t */
        return 1;
    }
    if (c < 0x20 || c == 0x7f) {
        *width = 4; /* \x1b */
        return 1;
    }
    if (c < 0x80) {
        *width = 1;
        return 1;
    }
    size_t k = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    for (size_t j = 1; j < k; j++)
        if ((s[j] & 0xC0) != 0x80) /* stops at the NUL too */
            k = 0;
    if (k == 0 || !ag_utf8_valid(s, k)) {
        *width = 4; /* a stray byte: \xff */
        return 1;
    }
    /* a C1 control (U+0080..U+009F, e.g. CSI) drives terminals too */
    *width = c == 0xC2 && s[1] <= 0x9F ? 8 : k;
    return k;
}

static size_t put_unit(const unsigned char *s, size_t k, size_t width, char *out)
{
    if (width == k) {
        memcpy(out, s, k);
    } else if (width == 2) {
        out[0] = '\\';
        out[1] = s[0] == '\n' ? 'n' : 't';
    } else if (width == 4) {
        snprintf(out, 5, "\\x%02x", s[0]);
    } else {
        snprintf(out, 9, "\\x%02x\\x%02x", s[0], s[1]);
    }
    return width;
}

const char *ag_io_show(const char *str, char *buf, size_t len)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "(null)");
    size_t total = 0, w, n = 0;
    if (!buf || len == 0)
        return buf;
    for (size_t i = 0; s[i];) {
        i += show_unit(s + i, &w);
        total += w;
    }
    /* what is kept of each end when the whole does not fit */
    char mark[48];
    size_t head = SIZE_MAX, tail = 0, cut_from = 0, cut_to = 0;
    if (total >= len) {
        size_t room = len - 1 > sizeof(mark) ? len - 1 - sizeof(mark) : 0;
        head = room - room / 3;
        tail = room / 3;
        size_t at = 0;
        cut_from = cut_to = SIZE_MAX;
        for (size_t i = 0; s[i];) {
            size_t k = show_unit(s + i, &w);
            if (cut_from == SIZE_MAX && at + w > head)
                cut_from = i;
            if (cut_from != SIZE_MAX && total - at <= tail) {
                cut_to = i;
                break;
            }
            at += w;
            i += k;
        }
        if (cut_to == SIZE_MAX)
            cut_to = strlen((const char *)s);
        snprintf(mark, sizeof(mark), "[...%zu bytes...]", cut_to - cut_from);
    }
    for (size_t i = 0; s[i];) {
        if (head != SIZE_MAX && i == cut_from) {
            size_t m = strlen(mark);
            if (n + m < len)
                memcpy(buf + n, mark, m), n += m;
            i = cut_to;
            head = SIZE_MAX;
            continue;
        }
        size_t k = show_unit(s + i, &w);
        if (n + w >= len)
            break;
        n += put_unit(s + i, k, w, buf + n);
        i += k;
    }
    buf[n] = '\0';
    return buf;
}

const char *ag_io_shape_str(int ndim, const unsigned long long *shape, char *buf, size_t len)
{
    size_t pos = 0;
    if (!buf || len == 0)
        return buf;
    buf[0] = '\0';
    pos += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%llu", i ? "x" : "", shape[i]);
    if (pos < len)
        snprintf(buf + pos, len - pos, "]");
    return buf;
}

int ag_io_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 1;
    size_t c = *cap ? *cap : 8;
    if (c > SIZE_MAX / 2 / elem)
        return 0;
    c *= 2;
    void *a = realloc(*arr, c * elem);
    if (!a)
        return 0;
    *arr = a;
    *cap = c;
    return 1;
}

ag_status ag_io_check_values(const char *path, const char *name, const ag_real *v, size_t n,
                             int nonneg, char *err, size_t errlen)
{
    size_t i = ag_first_nonfinite(v, n);
    for (size_t j = 0; nonneg && j < i; j++) {
        if (v[j] < 0) {
            i = j;
            break;
        }
    }
    if (i == n)
        return AG_OK;
    const char *what = isnan(v[i]) ? "NaN" : isinf(v[i]) ? "Inf" : "a negative value";
    char shown[AG_IO_SHOW_LEN];
    return ag_err(AG_ERR_NUMERIC, err, errlen, "%s: tensor '%s' holds %s at element %zu",
                  ag_io_show(path, shown, sizeof(shown)), name, what, i);
}
