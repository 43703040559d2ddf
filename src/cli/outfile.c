/*
 * outfile.c - files another program writes for us (gnuplot's PNGs): a
 * temporary name beside the target, renamed over it only once the program
 * has succeeded, so a failure never leaves half an image under the name the
 * user asked for. Files attograd writes itself go through the file layer's
 * ag_atomic (src/io/io.h), which also fsyncs.
 */
#include "plot.h"

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

int ag_cli_tmp_rename(const char *tmp, const char *path, char *err, size_t errlen)
{
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return 0;
    }
    return 1;
}
