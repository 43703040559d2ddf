/*
 * io.c - helpers shared by the file formats: UTF-8 checks, quoting
 * names from untrusted files. Files themselves (what may be read, how an
 * output is replaced) are files.c's.
 */
#include "io.h"

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
            i++;
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
