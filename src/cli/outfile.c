/*
 * outfile.c - the files a command names, checked before any work: each
 * output can be written by the file layer's rule (src/io/files.c), and no
 * output is one of the command's other files under another name (so that
 * `grad --out ./m.st --model m.st` cannot replace the model, nor a link or
 * a second hard link do the same). And the one place where tensors read
 * from a file are checked: finite, and said when the conversion to ag_real
 * turned a value into 0. And temporary names for files another program
 * writes (Graphviz's dot), by the same rules.
 */
#define _XOPEN_SOURCE 700   /* realpath: POSIX.1-2008, but glibc wants XSI for it */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ag_cli_check_output(const char *path, char *err, size_t errlen)
{
    return ag_atomic_check(path, err, errlen) == AG_OK;
}

/* What a name resolves to, so that two names of one file compare equal. */
typedef struct file_id {
    int exists;          /* dev and ino are the file's (links followed) */
    int device;          /* it is a character device */
    dev_t dev;
    ino_t ino;
    const char *path;    /* the name as given (borrowed) */
    int resolved;        /* a new name, with name below; else compare path as written */
    char name[PATH_MAX + 256];   /* its directory resolved, then its last component */
} file_id;

static void resolve(const char *path, file_id *id)
{
    struct stat sb;
    memset(id, 0, sizeof(*id));
    id->path = path;
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

static int same_file(const file_id *a, const file_id *b)
{
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return a->dev == b->dev && a->ino == b->ino;
    if (a->resolved && b->resolved)
        return strcmp(a->name, b->name) == 0;
    return strcmp(a->path, b->path) == 0;   /* a directory that is not there: as written */
}

/* Whether output a may name the same file as b: a character device (both
 * write through it), or the pair the command allows (--save over --load). */
static int may_share(const ag_cli_file *a, const file_id *ia, const ag_cli_file *b)
{
    return ia->device || (a->may_be && strcmp(a->may_be, b->flag) == 0) ||
           (b->may_be && strcmp(b->may_be, a->flag) == 0);
}

static int conflict(const ag_command *cmd, const ag_cli_file *a, const ag_cli_file *b)
{
    const ag_cli_file *out = a->output ? a : b, *other = a->output ? b : a;
    int same_text = strcmp(a->path, b->path) == 0;
    if (!other->output) {
        if (same_text)
            return ag_cli_usage_error(cmd, "%s '%s' would overwrite the %s file", out->flag,
                                      out->path, other->flag);
        return ag_cli_usage_error(cmd, "%s '%s' would overwrite the %s file '%s' (the same file "
                                  "under another name)", out->flag, out->path, other->flag,
                                  other->path);
    }
    if (same_text)
        return ag_cli_usage_error(cmd, "%s and %s both name '%s'", a->flag, b->flag, a->path);
    return ag_cli_usage_error(cmd, "%s '%s' and %s '%s' are the same file", a->flag, a->path,
                              b->flag, b->path);
}

/* Whether the existing file id is where standard output or error goes
 * (`--out g.st > g.st`, `--log /dev/stdout > log.csv`): the file would be
 * replaced under the messages. A terminal or /dev/null is a device: fine. */
static const char *std_stream(const file_id *id)
{
    static const char *const names[2] = {"standard output", "standard error"};
    struct stat sb;
    for (int fd = 1; fd <= 2; fd++)
        if (id->exists && !id->device && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
            sb.st_dev == id->dev && sb.st_ino == id->ino)
            return names[fd - 1];
    return NULL;
}

int ag_cli_check_files(const ag_command *cmd, const ag_cli_file *files, size_t n)
{
    file_id id[AG_CLI_MAX_FILES];
    int status = AG_EXIT_OK;
    if (n > AG_CLI_MAX_FILES)
        return ag_cli_error(cmd, "ag_cli_check_files: %zu files, at most %d", n, AG_CLI_MAX_FILES);
    for (size_t a = 0; a < n; a++)
        if (files[a].path)
            resolve(files[a].path, &id[a]);
    for (size_t a = 0; a < n && status == AG_EXIT_OK; a++) {
        if (!files[a].path)
            continue;
        for (size_t b = a + 1; b < n && status == AG_EXIT_OK; b++)
            if (files[b].path && (files[a].output || files[b].output) &&
                same_file(&id[a], &id[b]) && !may_share(&files[a], &id[a], &files[b]))
                status = conflict(cmd, &files[a], &files[b]);
        const char *std = files[a].output ? std_stream(&id[a]) : NULL;
        if (status == AG_EXIT_OK && std)
            status = ag_cli_usage_error(cmd, "%s '%s' is the file %s goes to: the messages and "
                                        "the file would overwrite each other", files[a].flag,
                                        files[a].path, std);
    }
    char err[AG_CLI_ERR_LEN];
    for (size_t a = 0; a < n && status == AG_EXIT_OK; a++)
        if (files[a].path && files[a].output && !ag_cli_check_output(files[a].path, err, sizeof(err)))
            status = ag_cli_error(cmd, "%s %s", files[a].flag, err);
    return status;
}

/* ---- tensors from files ---- */

int ag_cli_read_tensor(const ag_command *cmd, const ag_st_file *f, const char *path,
                       const char *name, int ndim, const int *shape, ag_real *dst, int nonneg,
                       char *err, size_t errlen)
{
    char shown[AG_IO_SHOW_LEN];
    if (ag_st_get(f, name, ndim, shape, dst, err, errlen) != AG_OK)
        return 0;
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(dst[i]) || (nonneg && dst[i] < 0)) {
            snprintf(err, errlen, "%s: tensor '%s' holds %s at element %zu",
                     ag_io_show(path, shown, sizeof(shown)), name,
                     isnan(dst[i]) ? "NaN" : isinf(dst[i]) ? "Inf" : "a negative value", i);
            return 0;
        }
    }
    size_t first = 0, flushed = ag_st_flushed(f, name, &first);
    if (flushed)
        ag_cli_error(cmd, "note: %s: tensor '%s': %zu value(s) too small for %s became 0 "
                     "(the first at element %zu)", ag_io_show(path, shown, sizeof(shown)), name,
                     flushed, AG_REAL_NAME, first);
    return 1;
}

/* ---- files another program writes by name ---- */

int ag_cli_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    ag_out_kind kind;
    if (ag_io_output_kind(path, &kind, err, errlen) != AG_OK)
        return 0;
    if (kind == AG_OUT_DEVICE) {
        /* nothing is made beside a device: the bytes wait in the temporary
         * directory until ag_cli_tmp_rename copies them through */
        const char *dir = getenv("TMPDIR");
        int n = snprintf(tmp, tmplen, "%s/attograd-XXXXXX", dir && *dir ? dir : "/tmp");
        int fd = n > 0 && (size_t)n < tmplen ? mkstemp(tmp) : -1;
        if (fd < 0) {
            snprintf(err, errlen, "cannot make a temporary file: %s", strerror(errno));
            return 0;
        }
        close(fd);
        return 1;
    }
    ag_atomic a;
    if (ag_atomic_open(&a, path, err, errlen) != AG_OK)
        return 0;
    int fits = strlen(a.tmp) < tmplen;
    if (fits)
        strcpy(tmp, a.tmp);
    /* keep the empty file for the other program: close it, release a's strings */
    fclose(a.f);
    if (!fits) {
        unlink(a.tmp);
        snprintf(err, errlen, "%s: the file name is too long", a.shown);
    }
    free(a.path);
    free(a.tmp);
    free(a.shown);
    return fits;
}

int ag_cli_tmp_rename(const char *tmp, const char *path, char *err, size_t errlen)
{
    ag_out_kind kind;
    int ok = ag_io_output_kind(path, &kind, err, errlen) == AG_OK;
    if (ok && kind == AG_OUT_DEVICE) {
        unsigned char *buf = NULL;
        size_t len = 0;
        ag_atomic a;
        ok = ag_io_read_file(tmp, SIZE_MAX - 1, &buf, &len, err, errlen) == AG_OK &&
             ag_atomic_open(&a, path, err, errlen) == AG_OK;
        if (ok) {
            if (fwrite(buf, 1, len, a.f) != len) {
                snprintf(err, errlen, "%s: cannot write: %s", a.shown, strerror(errno));
                ag_atomic_abort(&a);
                ok = 0;
            } else {
                ok = ag_atomic_commit(&a, err, errlen) == AG_OK;
            }
        }
        free(buf);
    } else if (ok) {
        /* a link to a file: the file it leads to is replaced, the link stays */
        char *target = kind == AG_OUT_FILE ? realpath(path, NULL) : strdup(path);
        char shown[AG_IO_SHOW_LEN];
        ok = target && rename(tmp, target) == 0;
        if (!ok)
            snprintf(err, errlen, "%s: cannot replace it: %s",
                     ag_io_show(path, shown, sizeof(shown)), strerror(errno));
        free(target);
    }
    if (!ok || kind == AG_OUT_DEVICE)
        unlink(tmp);   /* renamed away, or no longer needed */
    return ok;
}
