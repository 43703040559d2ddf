/*
 * files.c - the rules for every file a caller names, in one place:
 *
 *   reading   only a regular file (or a link to one), and no more than its
 *             size when opened: a directory, a FIFO, a socket or a device
 *             such as /dev/zero is refused before a byte is read, and
 *             opening never waits for a FIFO's writer;
 *   writing   a regular file (or a link to one) or a new name is replaced
 *             atomically: a temporary file beside the target, fsync,
 *             rename; a character device (/dev/null, a terminal) is
 *             written through, never replaced; a directory, FIFO, socket,
 *             block device or a link that leads nowhere is refused;
 *   showing   a name in a message escapes control bytes and cuts the
 *             middle of a long one, so no name can drive a terminal or
 *             hide the reason at the end of the message.
 *
 * A temporary file is named "NAME.tmp-PID-XXXXXXXX" (NAME cut so that the
 * whole fits the file system's name limit) and is removed by the next
 * write of the same target once the process PID is gone, so a run killed
 * during a save (SIGKILL, a power cut) leaves nothing behind for long.
 */
#define _XOPEN_SOURCE 700 /* realpath: POSIX.1-2008, but glibc wants XSI for it */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* ---- kinds of files ---- */

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO (a pipe)"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISLNK(m)  ? "a symbolic link"
                         : "not a regular file";
}

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

/* ---- reading ---- */

ag_status ag_io_open_input(const char *path, FILE **out, size_t *size, char *err, size_t errlen)
{
    char shown[AG_IO_SHOW_LEN];
    struct stat sb;
    *out = NULL;
    *size = 0;
    if (!path || !*path)
        return ag_err(AG_ERR_ARG, err, errlen, "the file name is empty");
    ag_io_show(path, shown, sizeof(shown));
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is
     * refused below, like every file that is not a regular one */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) /* a socket cannot be opened */
            return ag_err(AG_ERR_IO, err, errlen, "%s: is %s, not a regular file", shown,
                          kind_name(sb.st_mode));
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot open: %s", shown, strerror(e));
    }
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot read: %s", shown, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        if (S_ISDIR(sb.st_mode))
            return ag_err(AG_ERR_IO, err, errlen, "%s: is a directory", shown);
        return ag_err(AG_ERR_IO, err, errlen, "%s: is %s, not a regular file", shown,
                      kind_name(sb.st_mode));
    }
    if (sb.st_size < 0 || (uintmax_t)sb.st_size >= SIZE_MAX) {
        close(fd);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: too large to read", shown);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *out = fdopen(fd, "rb");
    if (!*out) {
        int e = errno;
        close(fd);
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot read: %s", shown, strerror(e));
    }
    *size = (size_t)sb.st_size;
    return AG_OK;
}

ag_status ag_io_read_file(const char *path, size_t max, unsigned char **buf, size_t *len, char *err,
                          size_t errlen)
{
    char shown[AG_IO_SHOW_LEN];
    FILE *f;
    size_t size = 0;
    *buf = NULL;
    *len = 0;
    ag_status st = ag_io_open_input(path, &f, &size, err, errlen);
    if (st != AG_OK)
        return st;
    ag_io_show(path, shown, sizeof(shown));
    if (size > max) {
        fclose(f);
        return ag_err(AG_ERR_IO, err, errlen, "%s: is %zu bytes, more than the %zu it may be",
                      shown, size, max);
    }
    unsigned char *b = malloc(size + 1);
    if (!b) {
        fclose(f);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory (%zu bytes)", shown, size + 1);
    }
    /* the size when opened bounds the read: a file that grows meanwhile
     * (a log being written) is read as it was; in pieces, so that a long
     * read shows its progress and stops when interrupted */
    enum { PIECE = 16 << 20 };
    size_t got = 0, n = 1;
    while (got < size && n > 0) {
        if (ag_progress_report("reading", (double)got, (double)size) != AG_OK) {
            fclose(f);
            free(b);
            return ag_err(AG_ERR_STOPPED, err, errlen, "%s: stopped while reading (interrupted)",
                          shown);
        }
        n = fread(b + got, 1, size - got < PIECE ? size - got : PIECE, f);
        got += n;
    }
    int e = errno, bad = ferror(f);
    fclose(f);
    if (got != size) {
        free(b);
        if (bad)
            return ag_err(AG_ERR_IO, err, errlen, "%s: cannot read: %s", shown, strerror(e));
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot read: it shrank while being read", shown);
    }
    if (size >= PIECE)
        ag_progress_report("reading", (double)size, (double)size);
    b[size] = '\0';
    *buf = b;
    *len = size;
    return AG_OK;
}

/* ---- writing: what an output name is ---- */

/* Whether a file can be created in dir. */
static ag_status check_dir(const char *shown, const char *dir, char *err, size_t errlen)
{
    char sd[AG_IO_SHOW_LEN];
    struct stat sb;
    ag_io_show(dir, sd, sizeof(sd));
    if (stat(dir, &sb) != 0)
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write there: directory '%s': %s", shown,
                      sd, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write there: '%s' is not a directory",
                      shown, sd);
    if (access(dir, W_OK | X_OK) != 0)
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write in directory '%s': %s", shown, sd,
                      strerror(errno));
    return AG_OK;
}

ag_status ag_io_output_kind(const char *path, ag_out_kind *kind, char *err, size_t errlen)
{
    char shown[AG_IO_SHOW_LEN];
    struct stat sb;
    *kind = AG_OUT_NEW;
    if (!path || !*path)
        return ag_err(AG_ERR_ARG, err, errlen, "the file name is empty");
    ag_io_show(path, shown, sizeof(shown));
    size_t n = strlen(path);
    if (stat(path, &sb) == 0) {
        if (S_ISREG(sb.st_mode)) {
            *kind = AG_OUT_FILE;
            char *real = realpath(path, NULL); /* a link: the file it leads to is replaced */
            char *dir = real ? dir_of(real) : NULL;
            ag_status st = dir ? check_dir(shown, dir, err, errlen)
                               : ag_err(AG_ERR_IO, err, errlen, "%s: cannot resolve: %s", shown,
                                        strerror(errno));
            free(dir);
            free(real);
            return st;
        }
        if (S_ISCHR(sb.st_mode)) {
            *kind = AG_OUT_DEVICE;
            if (access(path, W_OK) != 0)
                return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write: %s", shown,
                              strerror(errno));
            return AG_OK;
        }
        if (S_ISDIR(sb.st_mode))
            return ag_err(AG_ERR_IO, err, errlen, "%s: is a directory", shown);
        return ag_err(AG_ERR_IO, err, errlen,
                      "%s: is %s: an output is a regular file (replaced whole) or a "
                      "character device such as /dev/null (written through)",
                      shown, kind_name(sb.st_mode));
    }
    int e = errno;
    if (e != ENOENT)
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write there: %s", shown, strerror(e));
    if (lstat(path, &sb) == 0)
        return ag_err(AG_ERR_IO, err, errlen,
                      "%s: is a symbolic link to a file that does not exist", shown);
    if (path[n - 1] == '/')
        return ag_err(AG_ERR_IO, err, errlen, "%s: is a directory", shown);
    *kind = AG_OUT_NEW;
    char *dir = dir_of(path);
    if (!dir)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", shown);
    ag_status st = check_dir(shown, dir, err, errlen);
    free(dir);
    return st;
}

/* ---- temporary files ---- */

#define TMP_TAG ".tmp-"

/* The longest name the directory dir takes. */
static size_t name_max(const char *dir)
{
    long m = pathconf(dir, _PC_NAME_MAX);
    return m > 0 && m < 4096 ? (size_t)m : 255;
}

/* How many bytes of base start a temporary name beside it: all of them,
 * unless base, TMP_TAG, the pid and the random part would exceed the
 * directory's name limit; never half a UTF-8 character. */
static size_t tmp_keep(const char *base, size_t suffix, size_t max)
{
    size_t keep = strlen(base);
    if (keep + suffix > max) {
        keep = max > suffix ? max - suffix : 0;
        while (keep > 0 && ((unsigned char)base[keep] & 0xC0) == 0x80)
            keep--;
    }
    return keep;
}

/* Whether name (in a directory) is a temporary file "PREFIX.tmp-PID-XXXXXXXX"
 * of prefix (the first keep bytes of a base); *pid gets its process. */
static int tmp_of(const char *name, const char *prefix, size_t keep, long *pid)
{
    if (strncmp(name, prefix, keep) != 0 || strncmp(name + keep, TMP_TAG, strlen(TMP_TAG)) != 0)
        return 0;
    const char *p = name + keep + strlen(TMP_TAG);
    long v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
        v = v * 10 + (*p - '0');
    if (digits == 0 || *p != '-')
        return 0;
    p++;
    for (int k = 0; k < 8; k++, p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    if (*p != '\0')
        return 0;
    *pid = v;
    return 1;
}

/* Remove the temporary files of this target in dir left by processes that
 * are gone (killed during a save): ours only (same owner), regular files
 * only, never one whose process still runs. */
static void remove_stale(const char *dir, const char *base, size_t keep)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t dl = strlen(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        if (!tmp_of(e->d_name, base, keep, &pid) || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or not ours to know */
        size_t nl = strlen(e->d_name);
        char *p = malloc(dl + nl + 2);
        if (!p)
            break;
        memcpy(p, dir, dl);
        p[dl] = '/';
        memcpy(p + dl + 1, e->d_name, nl + 1);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid())
            unlink(p);
        free(p);
    }
    closedir(d);
}

int ag_io_is_tmp_name(const char *name)
{
    const char *tag = strstr(name, TMP_TAG);
    long pid;
    while (tag) {
        if (tmp_of(tag, "", 0, &pid))
            return 1;
        tag = strstr(tag + 1, TMP_TAG);
    }
    return 0;
}

/* ---- atomic replacement ---- */

/* The temporary files being written, for ag_atomic_remove_all (a signal
 * handler): a slot's name is complete before `used` says so, and `used` is
 * cleared before the name is reused. A run writes two or three files at
 * once; one beyond the slots is simply not listed (the next write of its
 * target removes it once this process is gone). Threads that save at once
 * claim and free slots under live_mu (the handler only reads them). */
#define LIVE_SLOTS 8
static struct {
    volatile sig_atomic_t used;
    char path[4096];
} live[LIVE_SLOTS];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;

static void live_add(ag_atomic *a)
{
    size_t n = strlen(a->tmp);
    pthread_mutex_lock(&live_mu);
    for (int k = 0; k < LIVE_SLOTS && n < sizeof(live[k].path); k++)
        if (!live[k].used) {
            memcpy(live[k].path, a->tmp, n + 1);
            live[k].used = 1;
            a->live = k + 1;
            break;
        }
    pthread_mutex_unlock(&live_mu);
}

void ag_atomic_remove_all(void)
{
    for (int k = 0; k < LIVE_SLOTS; k++)
        if (live[k].used)
            unlink(live[k].path);
}

void ag_atomic_release(ag_atomic *a)
{
    if (a->live > 0) {
        pthread_mutex_lock(&live_mu);
        live[a->live - 1].used = 0;
        pthread_mutex_unlock(&live_mu);
    }
    free(a->path);
    free(a->tmp);
    free(a->shown);
    memset(a, 0, sizeof(*a));
}

double ag_atomic_room(const char *path)
{
    ag_out_kind kind;
    char err[8];
    if (ag_io_output_kind(path, &kind, err, sizeof(err)) != AG_OK || kind == AG_OUT_DEVICE)
        return -1;
    /* the directory ag_atomic_open writes in: the target's own, links followed */
    char *target = kind == AG_OUT_FILE ? realpath(path, NULL) : strdup(path);
    char *dir = target ? dir_of(target) : NULL;
    struct statvfs vfs;
    double room = dir && statvfs(dir, &vfs) == 0 ? (double)vfs.f_bavail * vfs.f_frsize : -1;
    free(target);
    free(dir);
    return room;
}

/* fd, or a copy of it at 3 or above when it is 0, 1 or 2 (the original
 * closed), or -1. A program that closed a standard stream gets that number
 * back from its next open; a file written there would also take whatever is
 * printed to the stream (progress lines into a checkpoint). Between the
 * open and the move another thread could still print into it: a program
 * with threads keeps 0, 1 and 2 open (attograd's command holds them). */
static int above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* A character device: opened as it is, written through. */
static ag_status open_device(ag_atomic *a, const char *path, const char *shown, char *err,
                             size_t errlen)
{
    /* O_NONBLOCK: should path have become a FIFO since it was looked at,
     * the open fails instead of waiting; fstat then confirms the kind */
    int fd = above_stdio(open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat sb;
    if (fd < 0) {
        int e = errno;
        ag_atomic_release(a);
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot write: %s", shown, strerror(e));
    }
    if (fstat(fd, &sb) != 0 || !S_ISCHR(sb.st_mode)) {
        close(fd);
        ag_atomic_release(a);
        return ag_err(AG_ERR_IO, err, errlen, "%s: changed while being opened", shown);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    a->path = strdup(path);
    a->f = a->path ? fdopen(fd, "wb") : NULL;
    if (!a->f) {
        close(fd);
        ag_atomic_release(a);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", shown);
    }
    return AG_OK;
}

ag_status ag_atomic_open(ag_atomic *a, const char *path, char *err, size_t errlen)
{
    char shown[AG_IO_SHOW_LEN];
    ag_out_kind kind = AG_OUT_NEW;
    memset(a, 0, sizeof(*a));
    if (!path || !*path)
        return ag_err(AG_ERR_ARG, err, errlen, "save: empty file name");
    ag_status st = ag_io_output_kind(path, &kind, err, errlen);
    if (st != AG_OK)
        return st;
    ag_io_show(path, shown, sizeof(shown));
    a->shown = strdup(shown);
    if (!a->shown)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", shown);
    if (kind == AG_OUT_DEVICE)
        return open_device(a, path, shown, err, errlen);

    /* a link to a file: the file it leads to is replaced, the link stays */
    struct stat old;
    int replacing = kind == AG_OUT_FILE && stat(path, &old) == 0;
    a->path = kind == AG_OUT_FILE ? realpath(path, NULL) : strdup(path);
    char *dir = a->path ? dir_of(a->path) : NULL;
    const char *slash = a->path ? strrchr(a->path, '/') : NULL;
    const char *base = slash ? slash + 1 : a->path;
    size_t prefix = base ? (size_t)(base - a->path) : 0;
    /* TMP_TAG, up to 10 digits of pid, '-', 8 hex digits */
    const size_t suffix = strlen(TMP_TAG) + 10 + 1 + 8;
    a->tmp = a->path ? malloc(prefix + strlen(base) + suffix + 1) : NULL;
    if (!dir || !a->tmp) {
        free(dir);
        ag_atomic_release(a);
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", shown);
    }
    char pid[16];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    size_t keep = tmp_keep(base, strlen(TMP_TAG) + strlen(pid) + 1 + 8, name_max(dir));
    remove_stale(dir, base, keep);

    /* A fresh name beside the target. O_EXCL makes it ours alone; unlike
     * mkstemp (mode 0600) the file gets 0666 less the umask, like any other
     * file the user writes, or the mode of the file it replaces. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ag_rng rng = ag_rng_new((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                            ((uint64_t)getpid() << 17) ^ (uint64_t)(uintptr_t)a);
    int fd = -1, e = 0;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(a->tmp, prefix + strlen(base) + suffix + 1, "%.*s%.*s" TMP_TAG "%s-%08lx",
                 (int)prefix, a->path, (int)keep, base, pid,
                 (unsigned long)(ag_rng_next(&rng) & 0xffffffffUL));
        fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        e = errno;
        if (fd >= 0 && (fd = above_stdio(fd)) < 0) {
            e = errno;
            unlink(a->tmp);
            break;
        }
        if (fd < 0 && e != EEXIST)
            break;
    }
    free(dir);
    if (fd < 0) {
        ag_atomic_release(a);
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot create a temporary file beside it: %s",
                      shown, strerror(e));
    }
    live_add(a);
    if (replacing)
        fchmod(fd, old.st_mode & 07777);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        e = errno;
        close(fd);
        unlink(a->tmp);
        ag_atomic_release(a);
        return ag_err(AG_ERR_IO, err, errlen, "%s: cannot open a temporary file: %s", shown,
                      strerror(e));
    }
    return AG_OK;
}

ag_status ag_atomic_check(const char *path, char *err, size_t errlen)
{
    ag_out_kind kind = AG_OUT_NEW;
    ag_status st = ag_io_output_kind(path, &kind, err, errlen);
    if (st != AG_OK || kind == AG_OUT_DEVICE)
        return st; /* a device is not opened twice: opening some has effects */
    ag_atomic a;
    st = ag_atomic_open(&a, path, err, errlen);
    if (st == AG_OK)
        ag_atomic_abort(&a);
    return st;
}

void ag_atomic_abort(ag_atomic *a)
{
    if (a->f) {
        fclose(a->f);
        if (a->tmp)
            unlink(a->tmp);
    }
    ag_atomic_release(a);
}

ag_status ag_atomic_commit(ag_atomic *a, char *err, size_t errlen)
{
    const char *what = NULL;
    int e = 0;
    if (fflush(a->f) != 0)
        what = "cannot write", e = errno;
    else if (a->tmp && fsync(fileno(a->f)) != 0)
        what = "cannot sync", e = errno;
    int closed = fclose(a->f);
    a->f = NULL;
    if (!what && closed != 0)
        what = "cannot write", e = errno;
    if (!what && a->tmp && rename(a->tmp, a->path) != 0)
        what = "cannot replace it", e = errno;
    ag_status st = AG_OK;
    if (what) {
        if (a->tmp)
            unlink(a->tmp);
        st = ag_err(AG_ERR_IO, err, errlen, "%s: %s: %s", a->shown, what, strerror(e));
    } else if (a->tmp) {
        /* make the rename itself durable; a failure here loses nothing */
        char *dir = dir_of(a->path);
        int fd = dir ? open(dir, O_RDONLY | O_CLOEXEC) : -1;
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
        free(dir);
    }
    ag_atomic_release(a);
    return st;
}
