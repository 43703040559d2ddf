/*
 * args.c - strict command-line parsing shared by every subcommand: a number
 * is the whole argument or it is an error, never a silent 0 or a prefix.
 * The same strict parsers read numbers from files' metadata (checkpoints,
 * `attograd grad`'s model), which are hostile input too.
 */
#include "cli.h"
#include "../core/internal.h"   /* AG_BUG_SOFTMAX */

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "attograd NAME: MESSAGE" on stderr, one line: whatever the message quotes
 * (a flag's value, a file name, an unknown command) has its control bytes
 * escaped, and a message too long to read is cut in the middle, so that
 * both the flag it starts with and the reason it ends with are shown. */
int ag_cli_verror(const ag_command *cmd, const char *fmt, va_list ap)
{
    char small[1024], shown[1024];
    char *msg = small;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    if (n >= (int)sizeof(small)) {
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            msg = big;
        }
    }
    va_end(again);
    fprintf(stderr, "attograd%s%s: %s\n", cmd ? " " : "", cmd ? cmd->name : "",
            ag_io_show(msg, shown, sizeof(shown)));
    if (msg != small)
        free(msg);
    return AG_EXIT_FAIL;
}

int ag_cli_error(const ag_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ag_cli_verror(cmd, fmt, ap);
    va_end(ap);
    return AG_EXIT_FAIL;
}

int ag_cli_usage_error(const ag_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ag_cli_verror(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, "usage: %s\nTry 'attograd %s --help' for more.\n", cmd->usage, cmd->name);
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

const char *ag_cli_quote(const char *s, char *buf, size_t len)
{
    return ag_io_show(s, buf, len);
}

/* ---- numbers: the whole string, nothing skipped ---- */

/* strtol and friends skip leading white space (tabs and newlines too) and
 * accept what follows; we accept only a string that starts like a number. */
static int starts_like_number(const char *s)
{
    const char *p = s + (*s == '-' || *s == '+');
    return (*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9');
}

int ag_cli_parse_long(const char *s, long *out)
{
    if (!s || !starts_like_number(s))
        return AG_PARSE_BAD;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0')
        return AG_PARSE_BAD;
    if (errno == ERANGE)
        return AG_PARSE_RANGE;
    *out = v;
    return AG_PARSE_OK;
}

int ag_cli_parse_u64(const char *s, uint64_t *out)
{
    /* strtoull would take "-1" as 2^64 - 1 */
    if (!s || *s < '0' || *s > '9')
        return AG_PARSE_BAD;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return AG_PARSE_BAD;
    if (errno == ERANGE || v > UINT64_MAX)
        return AG_PARSE_RANGE;
    *out = (uint64_t)v;
    return AG_PARSE_OK;
}

int ag_cli_parse_double(const char *s, double *out)
{
    /* "nan", "inf" and "infinity" do not start like a number: refused here;
     * strtod would also take hexadecimal ("0x10", "0x1p-4"), but the flags
     * and the files say decimal: only digits, a sign, a point and an
     * exponent may appear */
    if (!s || !starts_like_number(s) || s[strspn(s, "0123456789+-.eE")] != '\0')
        return AG_PARSE_BAD;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        return AG_PARSE_BAD;
    /* ERANGE: beyond DBL_MAX (inf), or so small that it underflowed */
    if (!isfinite(v) || (errno == ERANGE && fabs(v) >= DBL_MIN))
        return AG_PARSE_RANGE;
    if (errno == ERANGE)
        return AG_PARSE_TINY;
    *out = v;
    return AG_PARSE_OK;
}

int ag_cli_long(const ag_command *cmd, const char *flag, const char *s, long min, long max, long *out)
{
    long v = 0;
    int r = ag_cli_parse_long(s, &v);
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
    int r = ag_cli_parse_u64(s, out);
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
    int r = ag_cli_parse_double(s, &v);
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
