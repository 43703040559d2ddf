/*
 * cli.h - shared pieces of the attograd command: the command table, strict
 * argument parsing, and the exit status convention
 * (0 ok, 1 failure at run time, 2 bad usage).
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include "attograd.h"
#include "../io/io.h"   /* the file layer's rules: ag_io_show, ag_atomic, ag_io_open_input */

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>

enum { AG_EXIT_OK = 0, AG_EXIT_FAIL = 1, AG_EXIT_USAGE = 2 };

/* One subcommand: argv[0] is the command's name. */
typedef struct ag_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;     /* "attograd demo [--decimals N]" */
    const char *summary;   /* one line for `attograd --help` */
} ag_command;

/* Print "attograd CMD: message", the usage line and a --help hint to stderr;
 * returns AG_EXIT_USAGE. The message is shown as ag_cli_error shows it. */
int ag_cli_usage_error(const ag_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Print "attograd CMD: message" (cmd NULL: "attograd: message") to stderr as
 * one line: control bytes escaped (ag_io_show), a long message cut in the
 * middle so that its start and its reason show. Returns AG_EXIT_FAIL. Every
 * message of the command goes through here or ag_cli_usage_error. */
int ag_cli_error(const ag_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int ag_cli_verror(const ag_command *cmd, const char *fmt, va_list ap);
/* A buffer for an error from the library or the command: long enough for
 * two names as ag_io_show shows them and the reason after them. */
#define AG_CLI_ERR_LEN (3 * AG_IO_SHOW_LEN)

/* Whether argv[*i] is the option `name` ("--steps 5" or "--steps=5"). For an
 * option that takes a value, *value is set and *i advanced past it; when the
 * value is missing, *value is NULL (report it with ag_cli_usage_error). */
int ag_cli_opt(int argc, char **argv, int *i, const char *name, const char **value);
/* ag_cli_opt for an option that needs a value: 0 when argv[*i] is not
 * `name`, 1 with *value set, -1 (after a usage error naming the flag) when
 * the value is missing. */
int ag_cli_value(const ag_command *cmd, int argc, char **argv, int *i, const char *name,
                 const char **value);
/* ag_cli_value for a file name: an empty name is a usage error too. */
int ag_cli_path(const ag_command *cmd, int argc, char **argv, int *i, const char *name,
                const char **value);
/* A string from a file (a metadata value), fit to quote in a message:
 * ag_io_show's escapes (\n, \t, \x1b, C1 controls such as CSI as
 * \xc2\x9b), cut in the middle when longer than len. Returns buf. */
#define AG_CLI_QUOTE_LEN 200
const char *ag_cli_quote(const char *s, char *buf, size_t len);
/* Whether argv[i] is the switch `name` exactly (no value). */
int ag_cli_switch(char **argv, int i, const char *name);
/* Whether argv[i] is -h or --help. */
int ag_cli_is_help(const char *arg);

/* Strict number parsing: the whole string must be a number within
 * [min, max] (finite for doubles). On failure prints a usage error naming
 * the flag and the value, and returns 0. */
int ag_cli_long(const ag_command *cmd, const char *flag, const char *s, long min, long max,
                long *out);
int ag_cli_int(const ag_command *cmd, const char *flag, const char *s, int min, int max, int *out);
int ag_cli_u64(const ag_command *cmd, const char *flag, const char *s, uint64_t *out);
int ag_cli_double(const ag_command *cmd, const char *flag, const char *s, double min, double max,
                  double *out);
/* --inject-bug's value: "softmax" sets *bug to AG_BUG_SOFTMAX (the test-only
 * wrong backward of src/core/internal.h); anything else is a usage error. */
int ag_cli_bug(const ag_command *cmd, const char *s, int *bug);

/* The strict parsers underneath, printing nothing (also for numbers read
 * from files' metadata): the whole string must be the number, with no
 * leading white space, sign only where it makes sense, no NaN or Inf. */
enum { AG_PARSE_OK = 0, AG_PARSE_BAD = 1, AG_PARSE_RANGE = 2, AG_PARSE_TINY = 3 };
int ag_cli_parse_long(const char *s, long *out);
int ag_cli_parse_u64(const char *s, uint64_t *out);
int ag_cli_parse_double(const char *s, double *out);   /* TINY: underflows to 0 */

/* ---- the files a command names (outfile.c) ---- */

/* Whether a file can be written at path later: ag_atomic_check, the file
 * layer's rule (a regular file or a new name in a writable directory, whose
 * temporary name fits; or a character device; never a directory, FIFO,
 * socket or block device). Returns 0 with a message naming the path in
 * err. For every output, before any work. */
int ag_cli_check_output(const char *path, char *err, size_t errlen);

/* One file a command names. */
typedef struct ag_cli_file {
    const char *flag;          /* "--save" */
    const char *path;          /* as given; NULL when the flag was not given */
    int output;                /* 1: the command writes it; 0: reads it */
    const char *may_be;        /* the flag of an input this output may name (train's
                                * --save over --load: resuming in place), or NULL */
} ag_cli_file;
#define AG_CLI_MAX_FILES 8

/* Before any work, for all the files of one command:
 * - no output is another of its files under another name (./x, dir/../x,
 *   a symbolic or hard link: compared by device and inode, or for a new
 *   name by its resolved directory and last component), nor the file that
 *   standard output or standard error goes to: a usage error naming both
 *   flags (AG_EXIT_USAGE); a character device named twice is fine;
 * - every output passes ag_cli_check_output (else AG_EXIT_FAIL, "FLAG PATH:
 *   reason").
 * Inputs are refused by their readers (ag_io_open_input) when they are not
 * regular files. Prints the message; returns AG_EXIT_OK or the status. */
int ag_cli_check_files(const ag_command *cmd, const ag_cli_file *files, size_t n);

/* Read tensor name (shape ndim, shape) of f, loaded from path, into dst:
 * every value must be finite (and >= 0 with nonneg), else 0 with a message
 * naming the file, the tensor and the element in err. Values that become 0
 * on the way into ag_real (an F64 file's 1e-50 in a float build) are said on
 * stderr, as a note of cmd, not hidden. */
int ag_cli_read_tensor(const ag_command *cmd, const ag_st_file *f, const char *path,
                       const char *name, int ndim, const int *shape, ag_real *dst, int nonneg,
                       char *err, size_t errlen);

/* Hold Ctrl-C, SIGTERM and SIGHUP while a file is written (hold 1, saved a
 * mask), then let them through (hold 0, the same saved): a signal that
 * comes during the write takes effect once the file is whole or gone, so no
 * temporary file is left behind. */
void ag_cli_hold_signals(int hold, sigset_t *saved);


/* Stopping a long run (run.c): between ag_cli_stop_begin and
 * ag_cli_stop_end, SIGINT, SIGTERM and SIGHUP only record themselves;
 * ag_cli_stop_requested returns the signal (0 when none), which the run
 * checks between steps, then saves and exits 128 + it. */
typedef struct ag_cli_stop {
    struct sigaction old_int, old_term, old_hup;   /* restored by ag_cli_stop_end */
    int active;
} ag_cli_stop;
void ag_cli_stop_begin(ag_cli_stop *s);
void ag_cli_stop_end(ag_cli_stop *s);   /* does nothing unless begun */
int ag_cli_stop_requested(void);
/* "interrupted", "stopped by SIGTERM" or "stopped by SIGHUP". */
const char *ag_cli_stop_reason(int sig);
/* Seconds on a monotonic clock. */
double ag_cli_now(void);

/* The most values one tensor of a step may hold (128 MB of floats). The
 * fused attention op keeps no (B, H, T, T) tensor, but the weights are made
 * where they are shown or written (train's heatmap, grad's attn) and by the
 * op-by-op form, and they grow with T squared: a modest --seq or a file's
 * long x could otherwise ask for more memory than the machine has. The two
 * counts saturate instead of overflowing. */
#define AG_CLI_MAX_VALUES ((uint64_t)1 << 25)
uint64_t ag_cli_attention_values(uint64_t batch, uint64_t heads, uint64_t seq);
uint64_t ag_cli_activation_values(uint64_t batch, uint64_t seq, uint64_t dim);

/* ---- gnuplot (plot.c) ---- */

/* Whether an executable `name` is on the PATH. */
int ag_cli_have_program(const char *name);

/* What a training plot shows. */
typedef struct ag_plot_data {
    const char *title;
    const long *loss_step;       /* (n_loss) */
    const double *loss;          /* (n_loss) training loss */
    size_t n_loss;
    const long *acc_step;        /* (n_acc) */
    const double *acc;           /* (n_acc) held-out accuracy */
    size_t n_acc;
    const double *attn;          /* (attn_size, attn_size) weights, or NULL */
    int attn_size;
} ag_plot_data;

/* Draw d into png with gnuplot (ag_cli_gnuplot_end's rules). Returns 1, or
 * 0 with the reason in err and, when Ctrl-C, SIGTERM or SIGHUP stopped it,
 * the signal in *sig; never stops the caller. */
int ag_cli_plot_run(const char *png, const ag_plot_data *d, int *sig, char *err, size_t errlen);

/* A gnuplot run being prepared: write plot commands to f. */
typedef struct ag_cli_gnuplot {
    FILE *f;           /* the script, in memory */
    char *script;      /* (len) its bytes, once ended */
    size_t len;
} ag_cli_gnuplot;
/* Start a script drawing a width x height PNG. Returns 0 with err set. */
int ag_cli_gnuplot_begin(ag_cli_gnuplot *g, int width, int height, char *err, size_t errlen);
/* Run gnuplot on the script and put the picture at png; releases g.
 * No name reaches gnuplot: it reads the script on its stdin and writes the
 * PNG to its stdout, a pipe. The picture is kept only when it is a whole
 * PNG (signature to IEND), then written by the file layer's rule (see
 * ag_atomic_open). gnuplot gets AG_GNUPLOT_SECONDS seconds (environment,
 * default 60); Ctrl-C, SIGTERM or SIGHUP while it runs stops it and sets
 * *sig. Returns 1, or 0 with the reason in err (nothing written). */
int ag_cli_gnuplot_end(ag_cli_gnuplot *g, const char *png, int *sig, char *err, size_t errlen);
#define AG_GNUPLOT_SECONDS 60
/* Write s as a gnuplot single-quoted string (control bytes as spaces, so
 * that nothing can end the command). */
void ag_cli_gnuplot_quote(FILE *g, const char *s);

/* Held-out example's attention, one heatmap per head with every weight
 * written in its cell: attn is (heads, T, T), labels the T positions' names.
 * Returns 1, or 0 with the reason in err (and *sig, ag_cli_gnuplot_end's). */
int ag_cli_plot_heads(const char *png, const char *title, int heads, int T, const double *attn,
                      const char *const *labels, int *sig, char *err, size_t errlen);
/* A positional encoding pe (T, d) beside the cosine similarity sim (T, T)
 * of its rows. Returns 1, or 0 with the reason in err (and *sig). */
int ag_cli_plot_posenc(const char *png, const char *title, int T, int d, const double *pe,
                       const double *sim, int *sig, char *err, size_t errlen);

/* For files another program writes by name (Graphviz's dot): ag_cli_tmp_name
 * makes an empty temporary file for path, as ag_atomic_open would (beside
 * the file a link leads to, "NAME.tmp-PID-XXXXXXXX"; in the temporary
 * directory when path is a device), tmp gets its name; ag_cli_tmp_rename
 * puts it in place by the file layer's rule (renamed over a file, copied
 * into a device) and removes it. Both refuse what ag_io_output_kind
 * refuses. Files attograd writes itself use ag_atomic (src/io/io.h). */
int ag_cli_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen);
int ag_cli_tmp_rename(const char *tmp, const char *path, char *err, size_t errlen);

/* Write the tape as a Graphviz digraph (ag_tape_dot: tensors with their
 * shapes, values and gradients, ops between them) to path, atomically.
 * Returns 1, or 0 with err set. */
int ag_cli_write_dot(const char *path, const ag_tape *tape, const ag_tensor_name *names,
                     size_t n_names, const char *title, char *err, size_t errlen);
/* The same drawing rendered to a PNG at png by Graphviz's dot, when it is
 * installed (written beside png and renamed into place once dot has
 * succeeded). Returns 1, or 0 with err set: dot missing or failing. */
int ag_cli_render_dot(const char *png, const ag_tape *tape, const ag_tensor_name *names,
                      size_t n_names, const char *title, char *err, size_t errlen);

/* The settings that define a training run: what `attograd train`'s flags
 * choose (ag_train_opts) and a checkpoint records (ag_train_state), one
 * struct in both so that they copy as one value. */
typedef struct ag_train_config {
    ag_model_config model;
    int optimizer_adam;      /* 1 adam, 0 sgd */
    double lr, momentum, weight_decay, clip;
    int batch;
    uint64_t seed;           /* the run's seed: weights, data and held-out set */
} ag_train_config;

/* The range of each setting a checkpoint records, shared by train's flags
 * and the checkpoint reader, so that a run can always load what it saved. */
#define AG_CLI_MAX_STEP 2000000000L   /* steps done, optimizer steps */
#define AG_CLI_MAX_SIZE 4096          /* seq, dim, heads */
#define AG_CLI_MAX_BATCH 65536
#define AG_CLI_LR_MIN 1e-12
#define AG_CLI_LR_MAX 1e3
#define AG_CLI_MOMENTUM_MAX 0.999999
#define AG_CLI_WEIGHT_DECAY_MAX 1e3
#define AG_CLI_CLIP_MAX 1e12

/* A training run's state beyond its tensors: what a checkpoint's metadata holds. */
typedef struct ag_train_state {
    ag_train_config config;
    uint64_t data_rng;       /* the training stream's state, to continue it exactly */
    long step;               /* steps done */
    long optim_steps;        /* the optimizer's own count (Adam's bias correction) */
} ag_train_state;

/* Read a checkpoint's metadata into *st; on success *file is the loaded
 * file (the caller frees it with ag_st_free) for ag_cli_checkpoint_restore.
 * Returns 0 with a message in err. */
int ag_cli_checkpoint_open(const char *path, ag_st_file **file, ag_train_state *st, char *err,
                           size_t errlen);
/* Copy the parameters and the optimizer state from f (loaded from path)
 * into model and opt, which were made from st, with ag_cli_read_tensor (its
 * notes are cmd's). Every value must be finite. Returns 0 with a message
 * naming the file and the tensor. */
int ag_cli_checkpoint_restore(const ag_command *cmd, const ag_st_file *f, const char *path,
                              ag_model *model, ag_optim *opt, const ag_train_state *st, char *err,
                              size_t errlen);
/* Write model, opt and st to path atomically; refused (0 with a message)
 * when a count is beyond what ag_cli_checkpoint_open accepts, so that every
 * file it writes loads. */
int ag_cli_checkpoint_save(const char *path, ag_model *model, ag_optim *opt,
                           const ag_train_state *st, char *err, size_t errlen);

/* The commands. */
int ag_cmd_demo(int argc, char **argv);
extern const ag_command ag_cmd_demo_info;
int ag_cmd_explain(int argc, char **argv);
extern const ag_command ag_cmd_explain_info;
int ag_cmd_train(int argc, char **argv);
extern const ag_command ag_cmd_train_info;
int ag_cmd_gradcheck(int argc, char **argv);
extern const ag_command ag_cmd_gradcheck_info;
int ag_cmd_grad(int argc, char **argv);
extern const ag_command ag_cmd_grad_info;
int ag_cmd_bench(int argc, char **argv);
extern const ag_command ag_cmd_bench_info;
int ag_cmd_sample(int argc, char **argv);
extern const ag_command ag_cmd_sample_info;
int ag_cmd_eval(int argc, char **argv);
extern const ag_command ag_cmd_eval_info;

#endif /* AG_CLI_H */
