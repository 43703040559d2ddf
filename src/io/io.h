/*
 * io.h - private helpers of the file layer: error messages into a caller's
 * buffer, UTF-8 checks, safe quoting of names taken from files, atomic file
 * replacement (temporary file, fsync, rename) and an in-memory safetensors
 * encoder for the fuzz target and the tests. Not installed.
 */
#ifndef AG_IO_H
#define AG_IO_H

#include "attograd.h"

#include <stdio.h>

/* Format a one-line message into err (when err is not NULL and errlen > 0);
 * returns status so callers can write `return ag_io_err(...)`. */
ag_status ag_io_err(ag_status status, char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Whether the len bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates, nothing beyond U+10FFFF). */
int ag_utf8_valid(const unsigned char *s, size_t len);

/* Copy s into buf (len bytes) for a message: at most 48 bytes of it, control
 * characters replaced by '?', "..." appended when cut, never cutting a UTF-8
 * sequence in half. s must be valid UTF-8. Returns buf. */
const char *ag_io_quote(const char *s, char *buf, size_t len);
#define AG_IO_QUOTE_LEN 64      /* a buffer that ag_io_quote never overflows */

/* Make room for element n of an array *arr of elem-byte elements with room
 * for *cap (doubling, from 16): returns 1, or 0 when out of memory (*arr
 * and *cap unchanged). */
int ag_io_grow(void **arr, size_t *cap, size_t n, size_t elem);

/* Format a shape as "[2x3]" ("[]" for a scalar) into buf; returns buf. */
const char *ag_io_shape_str(int ndim, const unsigned long long *shape, char *buf, size_t len);

/* A file being written atomically: data goes to tmp, which replaces path
 * on commit. Owns both strings and the stream. */
typedef struct ag_atomic {
    char *path;     /* the target */
    char *tmp;      /* the temporary file beside it */
    FILE *f;        /* open on tmp */
} ag_atomic;

/* Create a new temporary file in path's directory (O_EXCL, mode 0666 less the
 * umask) and open it for writing. On failure a is zeroed and err is set. */
ag_status ag_atomic_open(ag_atomic *a, const char *path, char *err, size_t errlen);
/* fflush, fsync, fclose and rename tmp over path, then fsync the directory.
 * On any failure the temporary file is removed and path is untouched.
 * Always releases a. */
ag_status ag_atomic_commit(ag_atomic *a, char *err, size_t errlen);
/* Close and remove the temporary file; release a. Safe on a zeroed a. */
void ag_atomic_abort(ag_atomic *a);

/* Read the whole file at path (a pipe too) into a new malloc'd buffer
 * (*out, *len; the caller frees it; one spare byte past the end). More than
 * max bytes is AG_ERR_FORMAT; a directory or a read error AG_ERR_IO; the
 * message names the file. */
ag_status ag_io_read_file(const char *path, size_t max, unsigned char **out, size_t *len,
                          char *err, size_t errlen);

/* Settings from a file's metadata (src/io/meta.c), read as hostile input:
 * the value of key must be there and be exactly what is asked, a decimal
 * number within [lo, hi] with nothing around it (no NaN, no Inf), or "true"
 * or "false". Return 1, or 0 with a message naming path, the key and the
 * value: "m.safetensors: metadata n_head '0' is not a whole number in
 * 1..4096". Strings are borrowed from f. */
int ag_meta_str(const ag_st_file *f, const char *path, const char *key, const char **out,
                char *err, size_t errlen);
int ag_meta_long(const ag_st_file *f, const char *path, const char *key, long lo, long hi,
                 long *out, char *err, size_t errlen);
int ag_meta_int(const ag_st_file *f, const char *path, const char *key, int lo, int hi, int *out,
                char *err, size_t errlen);
int ag_meta_u64(const ag_st_file *f, const char *path, const char *key, uint64_t *out,
                char *err, size_t errlen);
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
    return dtype == AG_ST_F64 ? 8 : 4;
}

static inline const char *ag_st_dtype_name(ag_st_type dtype)
{
    return dtype == AG_ST_F64 ? "F64" : "F32";
}

/* The whole safetensors file a writer describes, in a new malloc'd buffer
 * the caller owns (*buf, *len): the bytes ag_st_save would write (both lay
 * out and write through the same code in st_write.c). The writer's sticky
 * error is returned when it has one. Used by the fuzz target's round trip
 * and the tests. */
ag_status ag_st_encode(const ag_st_writer *w, unsigned char **buf, size_t *len, char *err,
                       size_t errlen);

#endif /* AG_IO_H */
