/*
 * args.c - strict command-line parsing shared by every subcommand: a number
 * is the whole argument or it is an error, never a silent 0 or a prefix.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ag_cli_usage_error(const ag_command *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "attograd %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
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
    if (*i + 1 < argc) {
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
        ag_cli_usage_error(cmd, "%s needs a value", name);
        return -1;
    }
    return 1;
}

int ag_cli_long(const ag_command *cmd, const char *flag, const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = *s ? strtol(s, &end, 10) : 0;
    if (!*s || *end != '\0' || s[0] == ' ')
        return !ag_cli_usage_error(cmd, "%s: '%s' is not an integer", flag, s);
    if (errno == ERANGE || v < min || v > max)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range (%ld..%ld)", flag, s, min, max);
    *out = v;
    return 1;
}

int ag_cli_int(const ag_command *cmd, const char *flag, const char *s, int min, int max, int *out)
{
    long v;
    if (!ag_cli_long(cmd, flag, s, min, max, &v))
        return 0;
    *out = (int)v;
    return 1;
}

int ag_cli_u64(const ag_command *cmd, const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a non-negative integer", flag, s);
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a non-negative integer", flag, s);
    if (errno == ERANGE || v > UINT64_MAX)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range", flag, s);
    *out = (uint64_t)v;
    return 1;
}

int ag_cli_double(const ag_command *cmd, const char *flag, const char *s, double min, double max,
                  double *out)
{
    char *end;
    errno = 0;
    double v = *s ? strtod(s, &end) : 0;
    if (!*s || *end != '\0' || s[0] == ' ')
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a number", flag, s);
    if (!isfinite(v) || errno == ERANGE)
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a finite number", flag, s);
    if (v < min || v > max)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range (%g..%g)", flag, s, min, max);
    *out = v;
    return 1;
}
