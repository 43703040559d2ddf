/*
 * cli.h - shared pieces of the attograd command: the command table, strict
 * argument parsing, and the exit status convention
 * (0 ok, 1 failure at run time, 2 bad usage).
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include "attograd.h"

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

/* The commands. */
int ag_cmd_demo(int argc, char **argv);
extern const ag_command ag_cmd_demo_info;
int ag_cmd_bench(int argc, char **argv);
extern const ag_command ag_cmd_bench_info;

#endif /* AG_CLI_H */
