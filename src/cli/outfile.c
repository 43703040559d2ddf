/*
 * outfile.c - the files a command names, checked before any work: each
 * output can be written by the file layer's rule (ag_file_check_output),
 * and no output is one of the command's other files under another name
 * (ag_file_same: so that `grad --out ./m.st --model m.st` cannot replace
 * the model, nor a link or a second hard link do the same), nor the file
 * the messages go to. And the one place where tensors read from a file are
 * checked: finite, and said when the conversion to ag_real turned a value
 * into 0.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* Whether output a may name the same file as b: a character device (both
 * write through it), or the pair the command allows (--save over --load). */
static int may_share(const ag_cli_file *a, int device, const ag_cli_file *b)
{
    return device || (a->may_be && strcmp(a->may_be, b->flag) == 0) ||
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
        return ag_cli_usage_error(cmd,
                                  "%s '%s' would overwrite the %s file '%s' (the same file "
                                  "under another name)",
                                  out->flag, out->path, other->flag, other->path);
    }
    if (same_text)
        return ag_cli_usage_error(cmd, "%s and %s both name '%s'", a->flag, b->flag, a->path);
    return ag_cli_usage_error(cmd, "%s '%s' and %s '%s' are the same file", a->flag, a->path,
                              b->flag, b->path);
}

/* Whether output path is the file standard output or error goes to
 * (`--out g.st > g.st`, `--log /dev/stdout > log.csv`): the file would be
 * replaced under the messages. A terminal or /dev/null is a device: fine. */
static const char *std_stream(const char *path)
{
    return ag_file_is_fd(path, 1)   ? "standard output"
           : ag_file_is_fd(path, 2) ? "standard error"
                                    : NULL;
}

/* Output pairs that name one file, then outputs onto the messages' file. */
static int check_pairs(const ag_command *cmd, const ag_cli_file *files, size_t n)
{
    for (size_t a = 0; a < n; a++) {
        if (!files[a].path)
            continue;
        for (size_t b = a + 1; b < n; b++) {
            int device;
            if (files[b].path && (files[a].output || files[b].output) &&
                ag_file_same(files[a].path, files[b].path, &device) &&
                !may_share(&files[a], device, &files[b]))
                return conflict(cmd, &files[a], &files[b]);
        }
        const char *std = files[a].output ? std_stream(files[a].path) : NULL;
        if (std)
            return ag_cli_usage_error(cmd,
                                      "%s '%s' is the file %s goes to: the messages and "
                                      "the file would overwrite each other",
                                      files[a].flag, files[a].path, std);
    }
    return AG_EXIT_OK;
}

int ag_cli_check_files(const ag_command *cmd, const ag_cli_file *files, size_t n)
{
    int status = check_pairs(cmd, files, n);
    char err[AG_CLI_ERR_LEN];
    for (size_t a = 0; a < n && status == AG_EXIT_OK; a++)
        if (files[a].path && files[a].output &&
            ag_file_check_output(files[a].path, err, sizeof(err)) != AG_OK)
            status = ag_cli_error(cmd, "%s %s", files[a].flag, err);
    return status;
}

/* ---- tensors from files ---- */

int ag_cli_read_tensor(const ag_command *cmd, const ag_st_file *f, const char *path,
                       const char *name, int ndim, const int *shape, ag_real *dst, int nonneg,
                       char *err, size_t errlen)
{
    if (ag_st_get_finite(f, name, ndim, shape, dst, nonneg, err, errlen) != AG_OK)
        return 0;
    ag_cli_note_flushed(cmd, f, path, name);
    return 1;
}

void ag_cli_note_flushed(const ag_command *cmd, const ag_st_file *f, const char *path,
                         const char *name)
{
    char shown[AG_QUOTE_LEN];
    size_t first = 0, flushed = ag_st_flushed(f, name, &first);
    if (flushed)
        ag_cli_error(cmd,
                     "note: %s: tensor '%s': %zu value(s) too small for %s became 0 "
                     "(the first at element %zu)",
                     ag_quote(path, shown, sizeof(shown)), name, flushed, AG_REAL_NAME, first);
}
