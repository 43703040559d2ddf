/*
 * output.c - files the command writes: check before a long run that a file
 * can be written where the user asked (so an hour of training does not end
 * in "cannot create"), and the size limit that keeps a step within memory.
 */
#include "cli.h"
#include "limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ag_cli_check_output(const char *path, char *err, size_t errlen)
{
    size_t n = strlen(path);
    struct stat sb;
    if (n == 0) {
        snprintf(err, errlen, "the file name is empty");
        return 0;
    }
    if (path[n - 1] == '/' || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))) {
        snprintf(err, errlen, "%s: is a directory", path);
        return 0;
    }
    const char *slash = strrchr(path, '/');
    char *dir = slash ? malloc((size_t)(slash - path) + 2) : NULL;
    if (slash && !dir) {
        snprintf(err, errlen, "%s: out of memory", path);
        return 0;
    }
    if (dir) {
        size_t len = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, len);
        dir[len] = '\0';
    }
    const char *d = dir ? dir : ".";
    int ok = 0;
    if (stat(d, &sb) != 0)
        snprintf(err, errlen, "%s: cannot write there: directory '%s': %s", path, d, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        snprintf(err, errlen, "%s: cannot write there: '%s' is not a directory", path, d);
    else if (access(d, W_OK | X_OK) != 0)
        snprintf(err, errlen, "%s: cannot write in directory '%s': %s", path, d, strerror(errno));
    else
        ok = 1;
    free(dir);
    return ok;
}

/* a * b, saturating at UINT64_MAX */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

uint64_t ag_cli_attention_values(uint64_t batch, uint64_t heads, uint64_t seq)
{
    return mul_sat(mul_sat(batch, heads), mul_sat(seq, seq));
}

uint64_t ag_cli_activation_values(uint64_t batch, uint64_t seq, uint64_t dim)
{
    return mul_sat(mul_sat(batch, seq), dim);
}
