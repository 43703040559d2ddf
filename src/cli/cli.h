/*
 * cli.h - the attograd command's commands and how they read their
 * arguments: the command table, each command's option table and the
 * parser and --help writer built on it, usage errors, and the exit status
 * convention (0 ok, 1 failure at run time, 2 bad usage). The other
 * concerns have their own headers: opts.h (each command's options and
 * parse step), signals.h, plot.h (gnuplot), limits.h (the size of a step),
 * dot.h (Graphviz).
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include "attograd.h"
#include "../io/io.h" /* the library's strict numbers, quoting and file rules */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum { AG_EXIT_OK = 0, AG_EXIT_FAIL = 1, AG_EXIT_USAGE = 2 };

/*
 * A command's options are one table: each row names a flag, the kind of
 * value it takes, the field of the command's options struct it sets, its
 * range and default, and its line in --help. ag_cli_parse reads argv by the
 * table and ag_cli_print_options writes --help's options from it, so a flag,
 * its range and its help cannot disagree.
 *
 * The kind fixes the field's type:
 *   AG_OPT_SWITCH   int, set to 1; the flag takes no value (--quiet)
 *   AG_OPT_INT      int within lo..hi (a whole number, strictly)
 *   AG_OPT_LONG     long within lo..hi
 *   AG_OPT_U64      uint64_t, any (--seed)
 *   AG_OPT_DOUBLE   double within lo..hi, finite
 *   AG_OPT_STRING   const char *, the argument itself: UTF-8 text
 *   AG_OPT_PATH     const char *, a file name: not empty
 *   AG_OPT_CHOICE   int (or an int-sized enum): the number k of the word
 *                   given, word(k) for k = lo, lo + 1, ... until NULL
 *   AG_OPT_LIST     ag_cli_list: comma-separated numbers, lo..hi of them (with
 *                   AG_OPT_MASKS an item may be -inf)
 */
typedef enum ag_opt_kind {
    AG_OPT_SWITCH,
    AG_OPT_INT,
    AG_OPT_LONG,
    AG_OPT_U64,
    AG_OPT_DOUBLE,
    AG_OPT_STRING,
    AG_OPT_PATH,
    AG_OPT_CHOICE,
    AG_OPT_LIST
} ag_opt_kind;

typedef struct ag_option {
    const char *name; /* "--steps" */
    ag_opt_kind kind;
    size_t field;               /* offsetof(the options struct, the field it sets) */
    double lo, hi;              /* the range (INT, DOUBLE), how many numbers (LIST), the
                                     * first word's number (CHOICE) */
    double def;                 /* the default (INT, U64, DOUBLE; CHOICE: the word's number);
                                     * every other kind starts at 0 or NULL */
    const char *value;          /* --help's name for the value: "N", "FILE" */
    const char *help;           /* --help's text (see ag_cli_print_options); NULL: not shown */
    const char *(*word)(int k); /* CHOICE: word number k, NULL when there is none */
    const char *noun;           /* CHOICE: "task" in "unknown task 'x'" */
    unsigned flags;             /* AG_OPT_MASKS */
} ag_option;

/* A LIST row's item may be -inf (a masked entry; inf and +inf are still refused). */
#define AG_OPT_MASKS 1u

/* One row of each kind, for the struct `type` and its field `member`; a
 * command's file names its own shorthands (INT(...) for AG_INT(its_opts, ...)). */
#define AG_ROW(type, name, kind, member, lo, hi, def, value, help, word, noun, flags)              \
    {                                                                                              \
        name, kind, offsetof(type, member), lo, hi, def, value, help, word, noun, flags            \
    }
#define AG_SWITCH(type, name, member, help)                                                        \
    AG_ROW(type, name, AG_OPT_SWITCH, member, 0, 0, 0, NULL, help, NULL, NULL, 0)
#define AG_INT(type, name, member, lo, hi, def, value, help)                                       \
    AG_ROW(type, name, AG_OPT_INT, member, lo, hi, def, value, help, NULL, NULL, 0)
#define AG_LONG(type, name, member, lo, hi, def, value, help)                                      \
    AG_ROW(type, name, AG_OPT_LONG, member, lo, hi, def, value, help, NULL, NULL, 0)
#define AG_U64(type, name, member, def, value, help)                                               \
    AG_ROW(type, name, AG_OPT_U64, member, 0, 0, def, value, help, NULL, NULL, 0)
#define AG_DOUBLE(type, name, member, lo, hi, def, value, help)                                    \
    AG_ROW(type, name, AG_OPT_DOUBLE, member, lo, hi, def, value, help, NULL, NULL, 0)
#define AG_STRING(type, name, member, value, help)                                                 \
    AG_ROW(type, name, AG_OPT_STRING, member, 0, 0, 0, value, help, NULL, NULL, 0)
#define AG_PATH(type, name, member, value, help)                                                   \
    AG_ROW(type, name, AG_OPT_PATH, member, 0, 0, 0, value, help, NULL, NULL, 0)
#define AG_CHOICE(type, name, member, first, def, word, noun, value, help)                         \
    AG_ROW(type, name, AG_OPT_CHOICE, member, first, 0, def, value, help, word, noun, 0)
#define AG_LIST(type, name, member, lo, hi, value, help)                                           \
    AG_ROW(type, name, AG_OPT_LIST, member, lo, hi, 0, value, help, NULL, NULL, 0)
#define AG_LIST_MASKS(type, name, member, lo, hi, value, help)                                     \
    AG_ROW(type, name, AG_OPT_LIST, member, lo, hi, 0, value, help, NULL, NULL, AG_OPT_MASKS)

/* A heading between a table's rows in --help ("model:"); parsing skips it. */
#define AG_HEADING(text)                                                                           \
    {                                                                                              \
        NULL, AG_OPT_SWITCH, 0, 0, 0, 0, NULL, text, NULL, NULL, 0                                 \
    }

/* AG_OPT_LIST's field. */
#define AG_CLI_LIST_MAX 16
typedef struct ag_cli_list {
    double v[AG_CLI_LIST_MAX]; /* (n) */
    int n;
} ag_cli_list;

/* One subcommand: argv[0] is the command's name. */
typedef struct ag_command {
    const char *name; /* "train"; "bench matmul" for a benchmark */
    int (*run)(int argc, char **argv);
    const char *usage;        /* "attograd demo [--decimals N]" */
    const char *summary;      /* one line for `attograd --help` */
    const ag_option *options; /* the option table (at most 64 rows) */
    int n_options;
    int help_width; /* the column --help's option texts start at */
} ag_command;

#define AG_CLI_COUNT(table) ((int)(sizeof(table) / sizeof((table)[0])))

/* A parse step returns AG_CLI_GO (run it), AG_CLI_HELP (print the help) or
 * AG_EXIT_USAGE (a usage error was printed). */
enum { AG_CLI_GO = 0, AG_CLI_HELP = -1 };

/* Fill *opts from argv[1..argc) by cmd's option table: every field its
 * default first, then each argument in turn ("--name value" or
 * "--name=value"; a switch alone; -h or --help anywhere asks for the help).
 * A flag given twice counts the last time. *given (when not NULL) gets bit k
 * for each row k given. Touches nothing but *opts, *given and, for a usage
 * error, stderr, so any argv can be thrown at it (tests/fuzz/fuzz_cli.c). */
int ag_cli_parse(const ag_command *cmd, int argc, char **argv, void *opts, uint64_t *given);
/* Whether the option `name` of cmd's table was given. */
int ag_cli_given(const ag_command *cmd, uint64_t given, const char *name);
/* The value of option `name` in opts, written as a user would give it (a
 * switch as "on" or "off"), into buf; returns buf. */
const char *ag_cli_format(const ag_command *cmd, const char *name, const void *opts, char *buf,
                          size_t len);
/* With --load: each option of names[0..n) given (bits of given) must have
 * in mine the value it has in saved, the checkpoint's; otherwise a usage
 * error "--seq 8 conflicts with PATH, made with 5 (--load fixes the model)"
 * and 0. Values are compared as ag_cli_format writes them. */
int ag_cli_check_fixed(const ag_command *cmd, uint64_t given, const void *mine, const void *saved,
                       const char *const *names, int n, const char *path);
/* Copy the fields of the options given (bits of given) from src to dst. */
void ag_cli_copy_given(const ag_command *cmd, uint64_t given, void *dst, const void *src);

/* --help's options, on stdout: a row per option, "  --name VALUE" padded to
 * cmd->help_width, then the text; a newline in the text goes on at the
 * same column. In the text, %D is the default, %R the range "lo..hi", %L
 * and %H its ends, %C the words "a|b|c", %O the words other than the
 * default "b, c", %% a percent sign. */
void ag_cli_print_options(const ag_command *cmd);

/* Print "attograd CMD: message", the usage line and a --help hint to stderr;
 * returns AG_EXIT_USAGE. The message is shown as ag_cli_error shows it. */
int ag_cli_usage_error(const ag_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Print "attograd CMD: message" (cmd NULL: "attograd: message") to stderr as
 * one line: control bytes escaped (ag_quote), a long message cut in the
 * middle so that its start and its reason show. Returns AG_EXIT_FAIL. Every
 * message of the command goes through here or ag_cli_usage_error. */
int ag_cli_error(const ag_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int ag_cli_verror(const ag_command *cmd, const char *fmt, va_list ap);
/* A buffer for an error from the library or the command: long enough for
 * two names as ag_quote shows them and the reason after them. */
#define AG_CLI_ERR_LEN (3 * AG_QUOTE_LEN)

/* Whether argv[i] is -h or --help. */
int ag_cli_is_help(const char *arg);

/* --inject-bug's words (a CHOICE's word function): "softmax" for
 * AG_BUG_SOFTMAX, the deliberately wrong backward of ag_gradcheck_opts.bug. */
const char *ag_cli_bug_word(int k);

/* ---- the files a command names (outfile.c) ---- */

/* One file a command names. */
typedef struct ag_cli_file {
    const char *flag;   /* "--save" */
    const char *path;   /* as given; NULL when the flag was not given */
    int output;         /* 1: the command writes it; 0: reads it */
    const char *may_be; /* the flag of an input this output may name (train's
                                * --save over --load: resuming in place), or NULL */
} ag_cli_file;

/* Before any work, for all the files of one command:
 * - no output is another of its files under another name (./x, dir/../x,
 *   a symbolic or hard link: compared by device and inode, or for a new
 *   name by its resolved directory and last component), nor the file that
 *   standard output or standard error goes to: a usage error naming both
 *   flags (AG_EXIT_USAGE); a character device named twice is fine;
 * - every output passes ag_file_check_output (a regular file or a new name in
 *   a writable directory, or a character device; else AG_EXIT_FAIL, "FLAG
 *   PATH: reason").
 * Inputs are refused by their readers when they are not regular files.
 * Prints the message; returns AG_EXIT_OK or the status. */
int ag_cli_check_files(const ag_command *cmd, const ag_cli_file *files, size_t n);

/* Read tensor name (shape ndim, shape) of f, loaded from path, into dst:
 * every value must be finite (and >= 0 with nonneg), else 0 with a message
 * naming the file, the tensor and the element in err. Values that become 0
 * on the way into ag_real (an F64 file's 1e-50 in a float build) are said on
 * stderr, as a note of cmd, not hidden. */
int ag_cli_read_tensor(const ag_command *cmd, const ag_st_file *f, const char *path,
                       const char *name, int ndim, const int *shape, ag_real *dst, int nonneg,
                       char *err, size_t errlen);
/* ag_cli_read_tensor's note, for a tensor read by the library
 * (ag_attention_load): said on stderr when values of name became 0. */
void ag_cli_note_flushed(const ag_command *cmd, const ag_st_file *f, const char *path,
                         const char *name);

/* The kernels a benchmark ran, "kernels=fast gemm=avx512" (bench.c). */
const char *ag_cli_kernels(void);

/* Code point c as one visible glyph for a label (attend.c), UTF-8 into buf
 * (room for 8 bytes), returned: a newline is U+21B5, a space U+2423, a tab
 * U+21E5, another control character its picture (U+2400 + c; DEL U+2421),
 * a C1 control a middle dot; any other character itself. */
const char *ag_cli_show_char(uint32_t c, char *buf);

/* Seconds on a monotonic clock (run.c). */
double ag_cli_now(void);

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
int ag_cli_bench_gpt(int argc, char **argv); /* bench_gpt.c: `attograd bench gpt` */
int ag_cmd_sample(int argc, char **argv);
extern const ag_command ag_cmd_sample_info;
int ag_cmd_eval(int argc, char **argv);
extern const ag_command ag_cmd_eval_info;
int ag_cmd_attend(int argc, char **argv);
extern const ag_command ag_cmd_attend_info;

#endif /* AG_CLI_H */
