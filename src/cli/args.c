/*
 * args.c - strict command-line parsing shared by every subcommand: a number
 * is the whole argument or it is an error (through the library's strict
 * ag_parse_*), never a silent 0 or a prefix.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ag_cli_usage_error(const ag_command *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* the message quotes the user's argument: a tab or a newline in it is
     * shown escaped, so the message stays one line */
    fprintf(stderr, "attograd %s: ", cmd->name);
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++) {
        if (*c == '\n')
            fputs("\\n", stderr);
        else if (*c == '\t')
            fputs("\\t", stderr);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(stderr, "\\x%02x", *c);
        else
            fputc(*c, stderr);
    }
    fprintf(stderr, "\nusage: %s\nTry 'attograd %s --help' for more.\n", cmd->usage, cmd->name);
    return AG_EXIT_USAGE;
}

int ag_cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int ag_cli_switch(char **argv, int i, const char *name)
{
    return strcmp(argv[i], name) == 0;
}

int ag_cli_opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    /* "--save --quiet" forgot the file name: the next option is not a value
     * (to really name a file "--quiet", write --save=--quiet) */
    if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
        *value = argv[++*i];
    } else {
        *value = NULL;
    }
    return 1;
}

int ag_cli_value(const ag_command *cmd, int argc, char **argv, int *i, const char *name,
                 const char **value)
{
    if (!ag_cli_opt(argc, argv, i, name, value))
        return 0;
    if (!*value) {
        if (*i + 1 < argc)
            ag_cli_usage_error(cmd, "%s needs a value, but '%s' follows it", name, argv[*i + 1]);
        else
            ag_cli_usage_error(cmd, "%s needs a value", name);
        return -1;
    }
    return 1;
}

int ag_cli_path(const ag_command *cmd, int argc, char **argv, int *i, const char *name,
                const char **value)
{
    int r = ag_cli_value(cmd, argc, argv, i, name, value);
    if (r > 0 && !**value) {
        ag_cli_usage_error(cmd, "%s: the file name is empty", name);
        return -1;
    }
    return r;
}

int ag_cli_long(const ag_command *cmd, const char *flag, const char *s, long min, long max, long *out)
{
    long v = 0;
    int r = ag_parse_long(s, &v);
    if (r == AG_PARSE_BAD)
        return !ag_cli_usage_error(cmd, "%s: '%s' is not an integer", flag, s);
    if (r != AG_PARSE_OK || v < min || v > max)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range (%ld..%ld)", flag, s, min, max);
    *out = v;
    return 1;
}

int ag_cli_int(const ag_command *cmd, const char *flag, const char *s, int min, int max, int *out)
{
    long v = 0;
    if (!ag_cli_long(cmd, flag, s, min, max, &v))
        return 0;
    *out = (int)v;
    return 1;
}

int ag_cli_u64(const ag_command *cmd, const char *flag, const char *s, uint64_t *out)
{
    int r = ag_parse_u64(s, out);
    if (r == AG_PARSE_BAD)
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a non-negative integer", flag, s);
    if (r != AG_PARSE_OK)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range (0..%llu)", flag, s,
                                   (unsigned long long)UINT64_MAX);
    return 1;
}

int ag_cli_double(const ag_command *cmd, const char *flag, const char *s, double min, double max,
                  double *out)
{
    double v = 0;
    int r = ag_parse_double(s, &v);
    if (r == AG_PARSE_BAD)
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a number", flag, s);
    if (r == AG_PARSE_RANGE)
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a finite number", flag, s);
    if (r != AG_PARSE_OK || v < min || v > max)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range (%g..%g)", flag, s, min, max);
    *out = v;
    return 1;
}

int ag_cli_bug(const ag_command *cmd, const char *s, int *bug)
{
    if (strcmp(s, "softmax") != 0)
        return !ag_cli_usage_error(cmd, "--inject-bug: unknown bug '%s' (softmax)", s);
    *bug = AG_BUG_SOFTMAX;
    return 1;
}
