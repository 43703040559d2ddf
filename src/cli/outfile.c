/*
 * outfile.c - write an output file atomically: everything goes to a
 * temporary file beside the target, which is flushed, fsynced and renamed
 * over it only when complete. A failure or a crash never leaves a
 * half-written file under the name the user asked for.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make tmp = "PATH.tmp-XXXXXX" and create it; returns the descriptor or -1. */
static int make_tmp(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    int n = snprintf(tmp, tmplen, "%s.tmp-XXXXXX", path);
    if (n < 0 || (size_t)n >= tmplen) {
        snprintf(err, errlen, "%s: the file name is too long", path);
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    /* mkstemp makes the file 0600; give it the mode fopen would have */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    return fd;
}

int ag_cli_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    int fd = make_tmp(path, tmp, tmplen, err, errlen);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

FILE *ag_cli_tmp_open(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    int fd = make_tmp(path, tmp, tmplen, err, errlen);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
    }
    return f;
}

int ag_cli_tmp_rename(const char *tmp, const char *path, char *err, size_t errlen)
{
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return 0;
    }
    return 1;
}

int ag_cli_tmp_commit(FILE *f, const char *tmp, const char *path, char *err, size_t errlen)
{
    int ok = !ferror(f) && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, errlen, "writing %s failed: %s", path, strerror(saved ? saved : EIO));
        unlink(tmp);
        return 0;
    }
    return ag_cli_tmp_rename(tmp, path, err, errlen);
}

void ag_cli_tmp_discard(FILE *f, const char *tmp)
{
    if (f)
        fclose(f);
    unlink(tmp);
}
