/*
 * io.h - private helpers of the file layer: UTF-8 checks, safe quoting of
 * names taken from files, the rules for files a caller names (what may be
 * read, how an output is written, how a name is shown), strict numbers, and
 * an in-memory safetensors encoder for the fuzz target and the tests. Not
 * installed; the command (src/cli) uses it too.
 */
#ifndef AG_IO_H
#define AG_IO_H

#include "../core/internal.h" /* ag_err, the one formatter of messages */

#include <stdio.h>

/* Whether the len bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates, nothing beyond U+10FFFF). */
int ag_utf8_valid(const unsigned char *s, size_t len);

/* Make room for element n of an array *arr of elem-byte elements with room
 * for *cap (doubling, from 16): returns 1, or 0 when out of memory (*arr
 * and *cap unchanged). */
int ag_io_grow(void **arr, size_t *cap, size_t n, size_t elem);

/* Format a shape as "[2x3]" ("[]" for a scalar) into buf; returns buf. */
const char *ag_io_shape_str(int ndim, const unsigned long long *shape, char *buf, size_t len);

/* ---- files named by a caller (files.c): one rule for each direction ---- */

/* s made fit to show in a one-line message: C0 controls, DEL, C1 controls
 * (U+0080..U+009F, e.g. CSI) and bytes that are not UTF-8 are escaped (\n,
 * \t, \x1b, \xc2\x9b; a backslash is left as it is); when the result does
 * not fit len bytes, the middle is cut ("[...N bytes...]") so that both
 * ends show. Returns buf. */
const char *ag_io_show(const char *s, char *buf, size_t len);
#define AG_IO_SHOW_LEN 512 /* enough for any name a message shows */
/* A name inside a message about something else (a tensor's name, a
 * metadata value): the same rule as ag_io_show, in a shorter buffer, so a
 * long one shows its two ends and the message its reason. */
#define AG_IO_QUOTE_LEN 128

/* Open path for reading, only when it is a regular file (or a symbolic
 * link to one): a directory, FIFO, socket or device (/dev/zero, /dev/stdin)
 * is refused before anything is read, and the open never waits (a FIFO
 * without a writer). *size is the file's size now: read no more than that,
 * and a file that grows meanwhile cannot make a read unbounded. The caller
 * owns *out. For every reader of the library and the command. */
ag_status ag_io_open_input(const char *path, FILE **out, size_t *size, char *err, size_t errlen);
/* The whole of a regular file (ag_io_open_input's rule) in a new buffer
 * the caller frees, NUL-terminated after its *len bytes; a file of more than
 * max bytes is refused before it is read. */
ag_status ag_io_read_file(const char *path, size_t max, unsigned char **buf, size_t *len, char *err,
                          size_t errlen);

/* How an output will be written (what path names, links followed):
 *   AG_OUT_NEW     nothing there: created (its directory must exist and be writable)
 *   AG_OUT_FILE    a regular file: replaced whole (temporary file, fsync, rename)
 *   AG_OUT_DEVICE  a character device (/dev/null, a terminal): written through
 * A directory, FIFO, socket, block device or a symbolic link to nothing is
 * refused with a message naming the path and its kind. */
typedef enum ag_out_kind { AG_OUT_NEW, AG_OUT_FILE, AG_OUT_DEVICE } ag_out_kind;
ag_status ag_io_output_kind(const char *path, ag_out_kind *kind, char *err, size_t errlen);

/* A file being written: data goes to tmp, which replaces path on commit;
 * or, for a character device, straight to it (tmp NULL). Owns the strings
 * and the stream. */
typedef struct ag_atomic {
    char *path;  /* the target (a symbolic link resolved to its file) */
    char *tmp;   /* the temporary file beside it, or NULL for a device */
    char *shown; /* the name as given, fit for messages (ag_io_show) */
    FILE *f;     /* open on tmp (or on the device) */
    int live;    /* 1 + its slot among the live temporary files (ag_atomic_remove_all), or 0 */
} ag_atomic;

/* Open an output by ag_io_output_kind's rule. For a file, a new temporary
 * file "NAME.tmp-PID-XXXXXXXX" beside the target (O_EXCL; mode 0666 less the
 * umask, or the replaced file's mode; NAME cut so that the whole fits the
 * directory's name limit), after removing this target's temporary files
 * left by processes that no longer run. On failure a is zeroed and err is
 * set. */
ag_status ag_atomic_open(ag_atomic *a, const char *path, char *err, size_t errlen);
/* fflush, fsync, fclose and rename tmp over path, then fsync the directory
 * (for a device: fflush and fclose). On any failure the temporary file is
 * removed and path is untouched. Always releases a. */
ag_status ag_atomic_commit(ag_atomic *a, char *err, size_t errlen);
/* Close and remove the temporary file; release a. Safe on a zeroed a. */
void ag_atomic_abort(ag_atomic *a);
/* Free a's strings and zero it, touching no file (after it is closed). */
void ag_atomic_release(ag_atomic *a);
/* Before any work: whether ag_atomic_open(path) would succeed now (the kind
 * is allowed, the directory takes a temporary file: one is made and
 * removed). The check for every output, so that a long run never ends in
 * "cannot create". */
ag_status ag_atomic_check(const char *path, char *err, size_t errlen);
/* The bytes free now on the file system where ag_atomic_open(path) would
 * write (beside the file a link leads to), or -1 when that cannot be told
 * or path is a device (written through: it takes no room). */
double ag_atomic_room(const char *path);
/* Remove every temporary file this process has open for writing (the
 * targets are untouched): for a program that must end at once (a second
 * Ctrl-C) and leave nothing behind. Async-signal-safe: it only unlinks. */
void ag_atomic_remove_all(void);
/* Whether a directory entry's name is one of ag_atomic's temporary files. */
int ag_io_is_tmp_name(const char *name);

/* Settings from a file's metadata (src/io/meta.c), read as hostile input:
 * the value of key must be there and be exactly what is asked, a decimal
 * number within [lo, hi] with nothing around it (no NaN, no Inf), or "true"
 * or "false". Return 1, or 0 with a message naming path, the key and the
 * value: "m.safetensors: metadata n_head '0' is not a whole number in
 * 1..4096". Strings are borrowed from f. */
int ag_meta_str(const ag_st_file *f, const char *path, const char *key, const char **out, char *err,
                size_t errlen);
int ag_meta_long(const ag_st_file *f, const char *path, const char *key, long lo, long hi,
                 long *out, char *err, size_t errlen);
int ag_meta_int(const ag_st_file *f, const char *path, const char *key, int lo, int hi, int *out,
                char *err, size_t errlen);
int ag_meta_u64(const ag_st_file *f, const char *path, const char *key, uint64_t *out, char *err,
                size_t errlen);
int ag_meta_double(const ag_st_file *f, const char *path, const char *key, double lo, double hi,
                   double *out, char *err, size_t errlen);
int ag_meta_bool(const ag_st_file *f, const char *path, const char *key, int *out, char *err,
                 size_t errlen);

/* Values read from path's tensor name (n of them) before they are trusted:
 * every one finite, and with nonneg none negative (Adam's v, a mean of
 * squares). AG_OK, or AG_ERR_NUMERIC with "PATH: tensor 'NAME' holds NaN
 * at element I" (Inf, a negative value). */
ag_status ag_io_check_values(const char *path, const char *name, const ag_real *v, size_t n,
                             int nonneg, char *err, size_t errlen);

/* Bytes per element and the header's name of a dtype, for the reader and
 * the writer alike. */
static inline size_t ag_st_dtype_size(ag_st_type dtype)
{
    return dtype == AG_ST_F64 || dtype == AG_ST_I64 ? 8 : 4;
}

static inline const char *ag_st_dtype_name(ag_st_type dtype)
{
    return dtype == AG_ST_F64   ? "F64"
           : dtype == AG_ST_I32 ? "I32"
           : dtype == AG_ST_I64 ? "I64"
                                : "F32";
}

/* Make w's sticky error (status, msg) unless it has one: for the callers
 * that add many things to w and find a fault of their own. Returns it. */
ag_status ag_st_writer_fail(ag_st_writer *w, ag_status status, const char *msg);

/* Values made as they are written: fill(ctx, at, n, out) puts the tensor's
 * elements at .. at + n - 1 (n at most a few hundred; in the file's order)
 * into out. */
typedef void (*ag_st_fill_fn)(const void *ctx, size_t at, size_t n, ag_real *out);
/* ag_st_add of a tensor whose values fill makes as the file is written (ctx
 * borrowed until the save): a layout other than memory's is written with
 * no copy of the whole tensor, so saving needs no memory a model's size. */
ag_status ag_st_add_fill(ag_st_writer *w, const char *name, int ndim, const int *shape,
                         ag_st_fill_fn fill, const void *ctx);

/* The whole safetensors file a writer describes, in a new malloc'd buffer
 * the caller owns (*buf, *len): the bytes ag_st_save would write (both lay
 * out and write through the same code in st_write.c). The writer's sticky
 * error is returned when it has one. Used by the fuzz target's round trip
 * and the tests. */
ag_status ag_st_encode(const ag_st_writer *w, unsigned char **buf, size_t *len, char *err,
                       size_t errlen);

/* ------------------------------------------------------------------------
 * Files a program names (for the command, which names files for the user). Every output of the library follows one rule: a
 * regular file (or a symbolic link to one) or a new name is replaced whole
 * (a temporary file "NAME.tmp-PID-XXXXXXXX" beside it, fsync, rename), a
 * character device (/dev/null, a terminal) is written through, and a
 * directory, FIFO, socket, block device or a link to nothing is refused.
 * These give a program's own files the same rule, and the checks that
 * belong before any work.
 * ------------------------------------------------------------------------ */
/* Whether path can be written later by the rule (a temporary file is made
 * in its directory and removed). AG_OK, or the error with a message naming
 * path. Check every output before a long run, so it never ends in "cannot
 * create". */
ag_status ag_file_check_output(const char *path, char *err, size_t errlen);
/* Write len bytes of data to path by the rule; on failure path is as it
 * was. */
ag_status ag_file_write(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* For a file another program writes by name (Graphviz's `dot -o`):
 * ag_file_tmp_name makes an empty temporary file where the rule would
 * (beside the file a link leads to; in $TMPDIR or /tmp when path is a
 * device) and writes its name to tmp (tmplen bytes); once the program has
 * written it, ag_file_tmp_commit puts it in place (renamed over the file,
 * copied into a device) and removes it, also on failure. Both refuse what
 * the rule refuses. */
ag_status ag_file_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen);
ag_status ag_file_tmp_commit(const char *tmp, const char *path, char *err, size_t errlen);
/* Whether names a and b lead to one file: an existing file by device and
 * inode (./x, dir/../x, a symbolic or a second hard link all match), a new
 * name by its directory resolved and its last component. *device (may be
 * NULL) is set to 1 when they do and it is a character device, which two
 * writers share harmlessly. So a program can refuse an output that would
 * replace one of its inputs under another name. */
int ag_file_same(const char *a, const char *b, int *device);
/* Whether path is an existing regular file open on file descriptor fd
 * (`--out g.st > g.st`: the output would replace the messages' file). */
int ag_file_is_fd(const char *path, int fd);


/* ------------------------------------------------------------------------
 * Text from outside: strict numbers and safe quoting, for a file's metadata
 * (the checkpoint reader uses them) and a program's arguments (the attograd
 * command does). A number is the whole string or it is an error: no leading
 * white space, a sign only where it makes sense, no NaN or Inf, never a
 * silent 0 or a prefix.
 * ------------------------------------------------------------------------ */
enum {
    AG_PARSE_OK = 0,    /* *out is set */
    AG_PARSE_BAD = 1,   /* not a number at all */
    AG_PARSE_RANGE = 2, /* a number, but beyond the type (or infinite) */
    AG_PARSE_TINY = 3   /* a number below DBL_MIN (doubles only): *out is strtod's nearest
                           subnormal or 0 */
};
/* Each returns AG_PARSE_*; *out is untouched unless AG_PARSE_OK (or TINY). */
int ag_parse_long(const char *s, long *out);     /* decimal, optional sign */
int ag_parse_u64(const char *s, uint64_t *out);  /* decimal digits only */
int ag_parse_double(const char *s, double *out); /* finite */

/* s made fit to show in a one-line message: C0 controls, DEL, C1 controls
 * (U+0080..U+009F, e.g. CSI) and bytes that are not UTF-8 escaped (\n, \t,
 * \x1b, \xc2\x9b); when the result does not fit len bytes, the middle is
 * cut ("[...N bytes...]") so that both ends show. Writes buf and returns
 * it; AG_QUOTE_LEN is enough for any name a message shows. */
#define AG_QUOTE_LEN 512
const char *ag_quote(const char *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* AG_IO_H */
