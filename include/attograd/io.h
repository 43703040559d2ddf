/*
 * attograd/io.h - files: safetensors read as hostile input and written
 * atomically, CSV logs, and a step's drawing saved to a file. Included by
 * attograd.h; needs attograd/core.h.
 */
#ifndef ATTOGRAD_IO_H
#define ATTOGRAD_IO_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Files: safetensors. The format: an 8-byte little-endian header length N,
 * N bytes of JSON ({"name": {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value"}}),
 * then the raw little-endian data (offsets count from the data's start).
 *
 * Reading: every file is treated as hostile. ag_st_load reads the whole file
 * and checks it completely (header length, strict JSON, dtypes, shapes,
 * offsets, overlaps) before it returns; after that, queries cannot fail on
 * the file's account. Only F32 and F64 tensors are accepted; both convert to
 * ag_real. Messages name the file and, where there is one, the tensor:
 *   "model.safetensors: tensor 'wq' has shape [4x4], expected [8x8]"
 *
 *     ag_st_file *f;
 *     char err[256];
 *     int d[AG_MAX_DIMS], nd;
 *     if (ag_st_load("model.safetensors", &f, err, sizeof(err)) != AG_OK ||
 *         ag_st_shape(f, "wq", &nd, d, err, sizeof(err)) != AG_OK)
 *         ...report err...
 *     ag_tensor *wq = ag_param_new(nd, d);
 *     ag_st_get(f, "wq", wq->ndim, wq->shape, wq->data, err, sizeof(err));
 *     const char *heads = ag_st_meta(f, "n_heads");   // NULL when absent
 *     ag_st_free(f);
 *
 * Writing: collect tensors and metadata in a writer, then save. The file is
 * written to a temporary file beside the target, flushed, fsynced and renamed
 * over it: a failed or interrupted save leaves the previous file intact.
 * Errors are sticky, as on the tape: add everything, check ag_st_save once.
 *
 *     ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
 *     ag_st_add_tensor(w, "wq", wq);
 *     ag_st_add_meta(w, "n_heads", "2");
 *     if (ag_st_save(w, "model.safetensors", err, sizeof(err)) != AG_OK) ...
 *     ag_st_writer_free(w);
 * ------------------------------------------------------------------------ */

#define AG_ST_MAX_HEADER 100000000u /* longest JSON header accepted (bytes) */
#define AG_ST_MAX_DIMS 8            /* most dims a tensor in a file may have */

/* A loaded file: its tensors (in name order), metadata and data. */
typedef struct ag_st_file ag_st_file;

/* Read and check path; on success *out is a new file the caller owns (free
 * it with ag_st_free). On failure *out is NULL and err (when not NULL) holds
 * a one-line message. AG_ERR_IO: cannot open or read; AG_ERR_FORMAT: the
 * contents are malformed; AG_ERR_NOMEM: out of memory. */
ag_status ag_st_load(const char *path, ag_st_file **out, char *err, size_t errlen);
/* The same for the len bytes at buf (borrowed for the call only: the file
 * keeps its own copy). name is used in messages; NULL means "<buffer>". */
ag_status ag_st_parse(const void *buf, size_t len, const char *name, ag_st_file **out, char *err,
                      size_t errlen);
void ag_st_free(ag_st_file *f); /* ag_st_free(NULL) does nothing */

/* Tensors, in name order: the count and the i-th name (NULL when i is out
 * of range). Names are borrowed from f. */
size_t ag_st_count(const ag_st_file *f);
const char *ag_st_name(const ag_st_file *f, size_t i);
/* "F32" or "F64", or NULL when there is no such tensor. */
const char *ag_st_dtype(const ag_st_file *f, const char *name);
/* The shape of a tensor: *ndim (0 for a scalar, up to AG_MAX_DIMS) and its
 * dims in shape[0..*ndim) (shape has room for AG_MAX_DIMS). Fails with
 * AG_ERR_FORMAT when there is no such tensor, AG_ERR_SHAPE when its shape
 * does not fit an ag_tensor (more dims, or a dim beyond INT_MAX). */
ag_status ag_st_shape(const ag_st_file *f, const char *name, int *ndim, int *shape, char *err,
                      size_t errlen);
/* Copy tensor name, which must have exactly the shape (ndim, shape), into
 * dst (product of shape elements, caller-owned), converting to ag_real.
 * AG_ERR_FORMAT: no such tensor; AG_ERR_SHAPE: another shape; AG_ERR_NUMERIC:
 * an F64 value beyond float's range in a float build; AG_ERR_ARG: NULL
 * arguments or ndim outside 0..AG_MAX_DIMS. dst is untouched on failure. */
ag_status ag_st_get(const ag_st_file *f, const char *name, int ndim, const int *shape, ag_real *dst,
                    char *err, size_t errlen);
/* ag_st_get, then every value checked before it is trusted: finite, and
 * with nonneg none negative (Adam's v, a mean of squares). AG_ERR_NUMERIC
 * with "PATH: tensor 'NAME' holds NaN at element I" (Inf, a negative
 * value); dst then holds the values read. */
ag_status ag_st_get_finite(const ag_st_file *f, const char *name, int ndim, const int *shape,
                           ag_real *dst, int nonneg, char *err, size_t errlen);
/* How many values of tensor name are not 0 in the file but become 0 as
 * ag_real (an F64 file's 1e-50 in a float build), for a program to say so;
 * *first (may be NULL) gets the first one's index. 0 when there are none or
 * no such tensor. */
size_t ag_st_flushed(const ag_st_file *f, const char *name, size_t *first);

/* Metadata: the value for key, or NULL when absent (borrowed from f); the
 * count and the i-th key, in key order. */
const char *ag_st_meta(const ag_st_file *f, const char *key);
size_t ag_st_meta_count(const ag_st_file *f);
const char *ag_st_meta_key(const ag_st_file *f, size_t i);

/* The element type a writer stores. AG_ST_REAL is the build's ag_real.
 * The integer types are for ag_st_add_typed only (token ids for other
 * tools): ag_st_load reads F32 and F64. */
typedef enum ag_st_type { AG_ST_F32 = 1, AG_ST_F64 = 2, AG_ST_I32 = 3, AG_ST_I64 = 4 } ag_st_type;
#ifdef AG_REAL_DOUBLE
#define AG_ST_REAL AG_ST_F64
#else
#define AG_ST_REAL AG_ST_F32
#endif

typedef struct ag_st_writer ag_st_writer;

/* A new, empty writer storing dtype; NULL when out of memory or dtype is
 * not an ag_st_type. */
ag_st_writer *ag_st_writer_new(ag_st_type dtype);
void ag_st_writer_free(ag_st_writer *w); /* NULL does nothing */
/* Add a tensor: name is copied; shape (ndim 0..AG_MAX_DIMS, dims >= 0) is
 * copied; data (the product of shape elements) is BORROWED until ag_st_save
 * and must stay valid and unchanged until then. A name used twice, the name
 * "__metadata__", a string that is not UTF-8, or a bad shape is an error;
 * the first error is kept and returned again by ag_st_save. */
ag_status ag_st_add(ag_st_writer *w, const char *name, int ndim, const int *shape,
                    const ag_real *data);
/* ag_st_add for a tensor stored as type whatever the writer's dtype:
 * data holds the product of shape values of that type as the machine
 * keeps them (float, double, int32_t or int64_t), borrowed until the save.
 * For files other tools read: float32 weights from a double build, token
 * ids as integers. AG_ERR_ARG for a type that is not an ag_st_type. */
ag_status ag_st_add_typed(ag_st_writer *w, const char *name, ag_st_type type, int ndim,
                          const int *shape, const void *data);
/* ag_st_add of t's shape and data (borrowed). */
ag_status ag_st_add_tensor(ag_st_writer *w, const char *name, const ag_tensor *t);
/* Add a metadata entry; key and value are copied UTF-8 strings. */
ag_status ag_st_add_meta(ag_st_writer *w, const char *key, const char *value);
/* The writer's first error, "" when there is none. */
const char *ag_st_writer_error(const ag_st_writer *w);
/* Write everything to path atomically (temporary file, fsync, rename):
 * header padded with spaces to a multiple of 8 bytes, tensors in name order,
 * contiguous. On failure the previous file at path is left as it was and no
 * temporary file remains. A symlink at path stays: the file it leads to is
 * replaced (docs/robustness.md has the rules for every kind of path). The
 * writer can be saved again or freed. */
ag_status ag_st_save(ag_st_writer *w, const char *path, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * Files: CSV logs. A header row, then one row of numbers per call. The log
 * is written to a temporary file beside path and renamed over path by
 * ag_csv_close, so a reader never sees half a log; ag_csv_free without close
 * discards it.
 *
 *     ag_csv *log;
 *     if (ag_csv_open("train.csv", "step,loss", &log, err, sizeof(err)) != AG_OK) ...
 *     for (...) ag_csv_row(log, (double[]){step, loss}, 2);
 *     if (ag_csv_close(log, err, sizeof(err)) != AG_OK) ...
 * ------------------------------------------------------------------------ */
typedef struct ag_csv ag_csv;

/* Start a log at path with header (comma-separated column names, no
 * newline; it is written as given). *out is owned by the caller until
 * ag_csv_close or ag_csv_free. */
ag_status ag_csv_open(const char *path, const char *header, ag_csv **out, char *err, size_t errlen);
/* Append a row of n values (n must be the header's column count), written
 * with %.10g; a NaN is written as an empty field (a value the row lacks).
 * Errors are sticky: ag_csv_close reports the first. */
ag_status ag_csv_row(ag_csv *csv, const double *values, size_t n);
/* Finish: flush, fsync, rename over path, free csv (always, even on
 * failure; on failure the temporary file is removed). */
ag_status ag_csv_close(ag_csv *csv, char *err, size_t errlen);
/* Discard an unfinished log (the temporary file is removed) and free csv. */
void ag_csv_free(ag_csv *csv);

/* ------------------------------------------------------------------------
 * A step's drawing, saved.
 * ------------------------------------------------------------------------ */
/* ag_tape_dot into the file path, written atomically (a temporary file
 * beside it, fsync, rename): on failure the previous file is left as it
 * was, and err says why. */
ag_status ag_tape_dot_save(const ag_tape *tape, const char *path, const ag_tensor_name *names,
                           size_t n_names, const char *title, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* ATTOGRAD_IO_H */
