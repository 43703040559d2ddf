/*
 * cli.h - shared pieces of the attograd command: the command table, strict
 * argument parsing, and the exit status convention
 * (0 ok, 1 failure at run time, 2 bad usage).
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include "attograd.h"

#include <signal.h>
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
 * returns AG_EXIT_USAGE. */
int ag_cli_usage_error(const ag_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

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
/* A string from a file (a metadata value), fit to quote in a message: at
 * most AG_CLI_QUOTE_MAX bytes of it, control characters escaped (\n, \t,
 * \x1b, and C1 controls such as CSI as \xc2\x9b), "..." when cut. Returns
 * buf; AG_CLI_QUOTE_LEN always fits. */
#define AG_CLI_QUOTE_MAX 48
#define AG_CLI_QUOTE_LEN (4 * AG_CLI_QUOTE_MAX + 8)
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

/* Whether a file can be written at path later (its directory exists and is
 * writable, path is not a directory), checked before a long run rather than
 * after it. Returns 0 with a message naming the path in err. */
int ag_cli_check_output(const char *path, char *err, size_t errlen);

/* Hold Ctrl-C, SIGTERM and SIGHUP while a file is written (hold 1, saved a
 * mask), then let them through (hold 0, the same saved): a signal that
 * comes during the write takes effect once the file is whole or gone, so no
 * temporary file is left behind. */
void ag_cli_hold_signals(int hold, sigset_t *saved);

/* Before any work (run.c): every file a run will write (paths[k], given by
 * flags[k]; NULL when not asked for) can be written. Prints "attograd CMD:
 * FLAG reason" on stderr and returns 0 otherwise. */
int ag_cli_check_outputs(const char *cmd, const char *const *flags, const char *const *paths, int n);

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

/* Draw d into png with gnuplot. Returns 1, or 0 with the reason in err
 * (gnuplot missing or failing); never stops the caller. */
int ag_cli_plot_run(const char *png, const ag_plot_data *d, char *err, size_t errlen);

/* Held-out example's attention, one heatmap per head with every weight
 * written in its cell: attn is (heads, T, T), labels the T positions' names.
 * Returns 1, or 0 with the reason in err (gnuplot missing or failing). */
int ag_cli_plot_heads(const char *png, const char *title, int heads, int T, const double *attn,
                      const char *const *labels, char *err, size_t errlen);
/* A positional encoding pe (T, d) beside the cosine similarity sim (T, T)
 * of its rows. Returns 1, or 0 with the reason in err. */
int ag_cli_plot_posenc(const char *png, const char *title, int T, int d, const double *pe,
                       const double *sim, char *err, size_t errlen);

/* Start gnuplot drawing a width x height PNG into a temporary file beside
 * png (its name in tmp); write the plot commands to the returned pipe, then
 * ag_cli_gnuplot_close renames the image into place when gnuplot succeeded
 * (and removes it otherwise). NULL, or 0, with the reason in err. */
FILE *ag_cli_gnuplot_open(const char *png, int width, int height, char *tmp, size_t tmplen,
                          char *err, size_t errlen);
int ag_cli_gnuplot_close(FILE *g, const char *tmp, const char *png, char *err, size_t errlen);
/* Write s as a gnuplot single-quoted string. */
void ag_cli_gnuplot_quote(FILE *g, const char *s);

/* For files another program writes (gnuplot): ag_cli_tmp_name creates an
 * empty temporary file beside path (tmp gets its name, "PATH.tmp-XXXXXX")
 * and ag_cli_tmp_rename moves it into place, removing it on failure. Files
 * attograd writes itself use ag_atomic (src/io/io.h). */
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
 * into model and opt, which were made from st. Every value must be finite.
 * Returns 0 with a message naming the file and the tensor. */
int ag_cli_checkpoint_restore(const ag_st_file *f, const char *path, ag_model *model,
                              ag_optim *opt, const ag_train_state *st, char *err, size_t errlen);
/* Write model, opt and st to path atomically. Returns 0 with a message. */
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
int ag_cli_bench_gpt(int argc, char **argv);   /* bench_gpt.c: `attograd bench gpt` */
int ag_cmd_sample(int argc, char **argv);
extern const ag_command ag_cmd_sample_info;
int ag_cmd_eval(int argc, char **argv);
extern const ag_command ag_cmd_eval_info;

#endif /* AG_CLI_H */
