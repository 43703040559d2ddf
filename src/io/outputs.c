/*
 * outputs.c - the file layer's rules (files.c) for a program's own files:
 * whether an output can be written, before any work; a buffer written by
 * the rule; a temporary name for a file another program writes by name
 * (Graphviz's dot), put in place by the same rule; and whether two names
 * lead to one file, so that a program can refuse `--out ./m.st --model
 * m.st`, or a link, or a second hard link, before it replaces its input.
 */
#define _XOPEN_SOURCE 700 /* realpath: POSIX.1-2008, but glibc wants XSI for it */
#include "io.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ag_status ag_file_check_output(const char *path, char *err, size_t errlen)
{
    return ag_atomic_check(path, err, errlen);
}

ag_status ag_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    ag_atomic a;
    ag_status st = ag_atomic_open(&a, path, err, errlen);
    if (st != AG_OK)
        return st;
    if (fwrite(data, 1, len, a.f) != len) {
        ag_err(AG_ERR_IO, err, errlen, "%s: cannot write: %s", a.shown, strerror(errno));
        ag_atomic_abort(&a);
        return AG_ERR_IO;
    }
    return ag_atomic_commit(&a, err, errlen);
}

/* ---- files another program writes by name ---- */

/* A new empty file in the temporary directory, for a device's bytes. */
static ag_status tmp_for_device(char *tmp, size_t tmplen, char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    int n = snprintf(tmp, tmplen, "%s/attograd-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = n > 0 && (size_t)n < tmplen ? mkstemp(tmp) : -1;
    if (fd < 0)
        return ag_err(AG_ERR_IO, err, errlen, "cannot make a temporary file: %s", strerror(errno));
    close(fd);
    return AG_OK;
}

ag_status ag_file_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    ag_out_kind kind;
    ag_status st = ag_io_output_kind(path, &kind, err, errlen);
    if (st != AG_OK)
        return st;
    /* nothing is made beside a device: the bytes wait in the temporary
     * directory until ag_file_tmp_commit copies them through */
    if (kind == AG_OUT_DEVICE)
        return tmp_for_device(tmp, tmplen, err, errlen);
    ag_atomic a;
    if ((st = ag_atomic_open(&a, path, err, errlen)) != AG_OK)
        return st;
    int fits = strlen(a.tmp) < tmplen;
    if (fits)
        strcpy(tmp, a.tmp);
    /* keep the empty file for the other program: close it, release a's strings */
    fclose(a.f);
    if (!fits) {
        unlink(a.tmp);
        st = ag_err(AG_ERR_ARG, err, errlen, "%s: the file name is too long", a.shown);
    }
    ag_atomic_release(&a);
    return st;
}

ag_status ag_file_tmp_commit(const char *tmp, const char *path, char *err, size_t errlen)
{
    ag_out_kind kind;
    ag_status st = ag_io_output_kind(path, &kind, err, errlen);
    if (st == AG_OK && kind == AG_OUT_DEVICE) {
        unsigned char *buf = NULL;
        size_t len = 0;
        st = ag_io_read_file(tmp, SIZE_MAX - 1, &buf, &len, err, errlen);
        if (st == AG_OK)
            st = ag_file_write(path, buf, len, err, errlen);
        free(buf);
    } else if (st == AG_OK) {
        /* a link to a file: the file it leads to is replaced, the link stays */
        char *target = kind == AG_OUT_FILE ? realpath(path, NULL) : strdup(path);
        char shown[AG_IO_SHOW_LEN];
        if (!target || rename(tmp, target) != 0)
            st = ag_err(AG_ERR_IO, err, errlen, "%s: cannot replace it: %s",
                        ag_io_show(path, shown, sizeof(shown)), strerror(errno));
        free(target);
    }
    if (st != AG_OK || kind == AG_OUT_DEVICE)
        unlink(tmp); /* renamed away, or no longer needed */
    return st;
}

/* ---- two names, one file ---- */

/* What a name resolves to, so that two names of one file compare equal. */
typedef struct file_id {
    int exists; /* dev and ino are the file's (links followed) */
    int device; /* it is a character device */
    dev_t dev;
    ino_t ino;
    int resolved;              /* a new name, with name below; else compare the path as written */
    char name[PATH_MAX + 256]; /* its directory resolved, then its last component */
} file_id;

static void resolve(const char *path, file_id *id)
{
    struct stat sb;
    memset(id, 0, sizeof(*id));
    if (stat(path, &sb) == 0) {
        id->exists = 1;
        id->device = S_ISCHR(sb.st_mode);
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
        return;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *real = dir ? realpath(dir, NULL) : NULL;
    if (real) {
        int n = snprintf(id->name, sizeof(id->name), "%s%s%s", real,
                         strcmp(real, "/") == 0 ? "" : "/", base);
        id->resolved = n > 0 && (size_t)n < sizeof(id->name);
    }
    free(real);
    free(dir);
}

int ag_file_same(const char *a, const char *b, int *device)
{
    file_id ia, ib;
    resolve(a, &ia);
    resolve(b, &ib);
    int same;
    if (ia.exists != ib.exists)
        same = 0;
    else if (ia.exists)
        same = ia.dev == ib.dev && ia.ino == ib.ino;
    else if (ia.resolved && ib.resolved)
        same = strcmp(ia.name, ib.name) == 0;
    else
        same = strcmp(a, b) == 0; /* a directory that is not there: as written */
    if (device)
        *device = same && ia.device;
    return same;
}

int ag_file_is_fd(const char *path, int fd)
{
    struct stat sp, sf;
    return stat(path, &sp) == 0 && S_ISREG(sp.st_mode) && fstat(fd, &sf) == 0 &&
           S_ISREG(sf.st_mode) && sp.st_dev == sf.st_dev && sp.st_ino == sf.st_ino;
}
