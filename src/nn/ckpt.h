/*
 * ckpt.h - what the two checkpoint formats share (ckpt.c): the toy model's
 * (checkpoint.c) and the GPT's (gpt_file.c) are both a safetensors file
 * whose metadata says its format and version, whose settings call for an
 * exact list of tensors, and whose counters stay within AG_TRAIN_MAX_STEP.
 * One reader opens and checks them all, before any model is made from
 * them. Not installed.
 */
#ifndef AG_NN_CKPT_H
#define AG_NN_CKPT_H

#include "../io/io.h"

#include <stdarg.h>

/* A checkpoint being read: the file, checked as safetensors, and its name
 * for messages (owned). */
typedef struct ag_ckpt {
    ag_st_file *st;
    char *path;
} ag_ckpt;

/* Read path (or, when buf is not NULL, the len bytes at buf, named path in
 * messages) into *ck, and check that its metadata "format" is format and
 * "version" is version: "PATH: not an attograd GPT checkpoint (format
 * 'x')" (kind is "attograd GPT checkpoint"), "PATH: checkpoint version '2'
 * is not supported (only 1)". On failure *ck is empty (ag_ckpt_close does
 * nothing more). */
ag_status ag_ckpt_open(ag_ckpt *ck, const char *path, const void *buf, size_t len,
                       const char *format, const char *kind, const char *version, char *err,
                       size_t errlen);
void ag_ckpt_close(ag_ckpt *ck);

/* A format error "PATH: " and the message (names the file); returns 0. */
int ag_ckpt_fail(const ag_ckpt *ck, char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#define AG_CKPT_NAME_MAX 112

/* One tensor a checkpoint's settings call for. The two texts are borrowed
 * (the reader keeps them while it checks) and say, in the metadata's
 * words, which settings call for the tensor ("n_layer 2") and which fix its
 * shape ("vocab_size 53, n_embd 16"). */
typedef struct ag_ckpt_tensor {
    char name[AG_CKPT_NAME_MAX];
    int ndim, shape[2];
    int optional; /* may be absent (the GPT's tied lm_head) */
    const char *need, *fix;
} ag_ckpt_tensor;

/* The list of them; errors (out of memory) are sticky, seen by ag_ckpt_expect. */
typedef struct ag_ckpt_list {
    ag_ckpt_tensor *t; /* (n), of cap */
    size_t n, cap;
    int nomem;
} ag_ckpt_list;

/* Add name of shape (ndim 1 or 2: shape[0], shape[1]); name is printf's
 * format with the arguments that follow. */
void ag_ckpt_list_add(ag_ckpt_list *l, int ndim, int rows, int cols, const char *need,
                      const char *fix, int optional, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;
void ag_ckpt_list_free(ag_ckpt_list *l);

/* Explains a tensor of the file that the settings do not call for, in
 * buf: "metadata n_layer is 1, but the file holds block 1" (the setting,
 * its value and what the file holds); NULL when no setting explains it. */
typedef const char *(*ag_ckpt_extra_fn)(const void *ctx, const char *name, char *buf, size_t len);

/* The file holds exactly the tensors of l: each present (unless optional)
 * with its shape, and no other. Otherwise AG_ERR_FORMAT naming the file,
 * the tensor and both sides:
 *   "PATH: tensor 'X' is missing (the metadata's n_layer 2 calls for it)"
 *   "PATH: tensor 'X' has shape [53x16], but the metadata's vocab_size 53,
 *    n_embd 4096 call for [53x4096]"
 *   "PATH: tensor 'X' disagrees with the metadata: <extra's words>"
 * Reads only the header (nothing is allocated but an index). */
ag_status ag_ckpt_expect(const ag_ckpt *ck, const ag_ckpt_list *l, ag_ckpt_extra_fn extra,
                         const void *ctx, char *err, size_t errlen);

/* Tensor name, of exactly (ndim, shape), into dst, every value finite (and
 * with nonneg none negative). */
ag_status ag_ckpt_read(const ag_ckpt *ck, const char *name, int ndim, const int *shape,
                       ag_real *dst, int nonneg, char *err, size_t errlen);

/* A counter a checkpoint keeps (what: "step", "optimizer step") may be
 * saved: within 0..AG_TRAIN_MAX_STEP, the range every reader accepts, so a
 * file written always loads. AG_ERR_ARG "PATH: not saved: the step count N
 * is beyond M, the most a checkpoint holds" otherwise. */
ag_status ag_ckpt_count_fits(const char *path, const char *what, long count, char *err,
                             size_t errlen);

/* The counters every checkpoint keeps, "step" and "optim_steps", one rule
 * for both formats: read each within 0..AG_TRAIN_MAX_STEP (else a message
 * naming the file, the key and the value; returns 0), and write them only
 * when they are (else AG_ERR_ARG from ag_ckpt_count_fits, nothing added). */
int ag_ckpt_counts_read(const ag_ckpt *ck, long *step, long *optim_steps, char *err, size_t errlen);
ag_status ag_ckpt_counts_write(ag_st_writer *w, const char *path, long step, long optim_steps,
                               char *err, size_t errlen);

/* The settings both trainers keep, under the same keys: batch, lr,
 * weight_decay, clip, seed and data_rng (the training stream's state). */
void ag_ckpt_run_meta(ag_st_writer *w, int batch, double lr, double weight_decay, double clip,
                      uint64_t seed, uint64_t data_rng);

/* A writer for a checkpoint: format and version first. NULL: out of memory. */
ag_st_writer *ag_ckpt_writer_new(const char *format, const char *version);
/* Metadata key = printf(fmt, ...) (errors are sticky, as the writer's). */
void ag_ckpt_meta(ag_st_writer *w, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* AG_NN_CKPT_H */
