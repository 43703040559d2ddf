/*
 * io.c - helpers shared by the file formats: messages, UTF-8 checks, quoting
 * names from untrusted files, and atomic replacement of a file (write a
 * temporary file beside it, fsync, rename), so that a crash or a failed
 * write never leaves a torn file behind.
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

ag_status ag_io_err(ag_status status, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}

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
            return 0;    /* a stray continuation byte, or 0xF8..0xFF */
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

const char *ag_io_quote(const char *s, char *buf, size_t len)
{
    const size_t max = 48;
    size_t n = 0, i = 0;
    if (!buf || len == 0)
        return buf;
    if (!s)
        s = "(null)";
    while (s[i]) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        int bad = c >= 0x80 && (c & 0xC0) == 0x80;    /* a stray continuation byte */
        for (size_t j = 1; j < k && !bad; j++)
            bad = ((unsigned char)s[i + j] & 0xC0) != 0x80;
        if (bad)
            k = 1;
        if (i >= max || n + k + 4 > len)
            break;    /* cut, always between whole characters */
        /* C0 and C1 controls could drive a terminal: show them as '?' */
        if (bad || c < 0x20 || c == 0x7F || (c == 0xC2 && (unsigned char)s[i + 1] <= 0x9F)) {
            buf[n++] = '?';
        } else {
            memcpy(buf + n, s + i, k);
            n += k;
        }
        i += k;
    }
    if (s[i] && n + 4 <= len) {
        memcpy(buf + n, "...", 3);
        n += 3;
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

/* ---- atomic replacement ---- */

/* The directory holding path, in a new string ("." when path has no '/'). */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

ag_status ag_atomic_open(ag_atomic *a, const char *path, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    if (!path || !*path)
        return ag_io_err(AG_ERR_ARG, err, errlen, "save: empty file name");
    size_t n = strlen(path);
    if (path[n - 1] == '/')
        return ag_io_err(AG_ERR_IO, err, errlen, "%s: is a directory", path);
    const size_t suffix = sizeof(".tmp-0123456789abcdef");
    if (n > SIZE_MAX - suffix)
        return ag_io_err(AG_ERR_NOMEM, err, errlen, "%s: file name too long", path);
    a->path = strdup(path);
    a->tmp = malloc(n + suffix);
    if (!a->path || !a->tmp) {
        ag_atomic_abort(a);
        return ag_io_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }

    /* A fresh name beside the target. O_EXCL makes it ours alone; unlike
     * mkstemp (mode 0600) the file gets 0666 less the umask, like any other
     * file the user writes. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ag_rng rng = ag_rng_new((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                            ((uint64_t)getpid() << 17) ^ (uint64_t)(uintptr_t)a);
    int fd = -1, e = 0;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(a->tmp, n + suffix, "%s.tmp-%016llx", path,
                 (unsigned long long)ag_rng_next(&rng));
        fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        e = errno;
        if (fd < 0 && e != EEXIST)
            break;
    }
    if (fd < 0) {
        ag_atomic_abort(a);
        return ag_io_err(AG_ERR_IO, err, errlen, "%s: cannot create a temporary file beside it: %s",
                         path, strerror(e));
    }
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        e = errno;
        close(fd);
        remove(a->tmp);
        ag_atomic_abort(a);
        return ag_io_err(AG_ERR_IO, err, errlen, "%s: cannot open a temporary file: %s", path,
                         strerror(e));
    }
    return AG_OK;
}

static void release(ag_atomic *a)
{
    free(a->path);
    free(a->tmp);
    memset(a, 0, sizeof(*a));
}

void ag_atomic_abort(ag_atomic *a)
{
    if (a->f) {
        fclose(a->f);
        remove(a->tmp);
    }
    release(a);
}

ag_status ag_atomic_commit(ag_atomic *a, char *err, size_t errlen)
{
    ag_status st = AG_OK;
    const char *what = NULL;
    int e = 0;
    if (fflush(a->f) != 0)
        what = "cannot write", e = errno;
    else if (fsync(fileno(a->f)) != 0)
        what = "cannot sync", e = errno;
    int closed = fclose(a->f);
    a->f = NULL;
    if (!what && closed != 0)
        what = "cannot write", e = errno;
    if (!what && rename(a->tmp, a->path) != 0)
        what = "cannot replace it", e = errno;
    if (what) {
        remove(a->tmp);
        st = ag_io_err(AG_ERR_IO, err, errlen, "%s: %s: %s", a->path, what, strerror(e));
    } else {
        /* make the rename itself durable; a failure here loses nothing */
        char *dir = dir_of(a->path);
        int fd = dir ? open(dir, O_RDONLY | O_CLOEXEC) : -1;
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
        free(dir);
    }
    release(a);
    return st;
}

ag_status ag_io_read_file(const char *path, size_t max, unsigned char **out, size_t *len,
                          char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    ag_status st = AG_OK;
    unsigned char *buf = NULL;
    size_t n = 0, cap;
    struct stat sb;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ag_io_err(AG_ERR_IO, err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(fp), &sb) != 0) {
        st = ag_io_err(AG_ERR_IO, err, errlen, "%s: cannot read: %s", path, strerror(errno));
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        st = ag_io_err(AG_ERR_IO, err, errlen, "%s: is a directory", path);
        goto done;
    }
    /* A regular file's size is a good first guess; pipes grow as needed. */
    cap = S_ISREG(sb.st_mode) && sb.st_size >= 0 && (uintmax_t)sb.st_size < SIZE_MAX
              ? (size_t)sb.st_size + 1
              : 4096;
    buf = malloc(cap);
    if (!buf) {
        st = ag_io_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory (%zu bytes)", path, cap);
        goto done;
    }
    for (;;) {
        if (n == cap) {
            if (cap > SIZE_MAX / 2) {
                st = ag_io_err(AG_ERR_NOMEM, err, errlen, "%s: too large to read", path);
                goto done;
            }
            cap *= 2;
            unsigned char *b = realloc(buf, cap);
            if (!b) {
                st = ag_io_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory (%zu bytes)", path,
                               cap);
                goto done;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (n > max) {
            st = ag_io_err(AG_ERR_FORMAT, err, errlen, "%s: larger than %zu bytes", path, max);
            goto done;
        }
        if (got == 0)
            break;
    }
    if (ferror(fp)) {
        st = ag_io_err(AG_ERR_IO, err, errlen, "%s: cannot read: %s", path, strerror(errno));
        goto done;
    }
    fclose(fp);
    *out = buf;
    *len = n;
    return AG_OK;
done:
    fclose(fp);
    free(buf);
    return st;
}
