/*
 * args.c - the command line, read by each command's option table (cli.h):
 * the flags by name, their values through the library's strict parsers (a
 * number is the whole argument or a usage error naming the flag, never a
 * silent 0 or a prefix), and the options part of --help, written from the
 * same rows.
 */
#include "cli.h"

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
            ag_quote(msg, shown, sizeof(shown)));
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

/* Whether argv[*i] is the option `name` ("--steps 5" or "--steps=5"): then
 * *value is its value, or NULL when it is missing, and *i has moved past it. */
static int opt_matches(int argc, char **argv, int *i, const char *name, const char **value)
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

/* ---- numbers: the whole string or a usage error naming the flag ---- */

static int parse_long(const ag_command *cmd, const char *flag, const char *s, long min, long max,
                      long *out)
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

static int parse_int(const ag_command *cmd, const char *flag, const char *s, int min, int max,
                     int *out)
{
    long v = 0;
    if (!parse_long(cmd, flag, s, min, max, &v))
        return 0;
    *out = (int)v;
    return 1;
}

static int parse_u64(const ag_command *cmd, const char *flag, const char *s, uint64_t *out)
{
    int r = ag_parse_u64(s, out);
    if (r == AG_PARSE_BAD)
        return !ag_cli_usage_error(cmd, "%s: '%s' is not a non-negative integer", flag, s);
    if (r != AG_PARSE_OK)
        return !ag_cli_usage_error(cmd, "%s: %s is out of range (0..%llu)", flag, s,
                                   (unsigned long long)UINT64_MAX);
    return 1;
}

static int parse_double(const ag_command *cmd, const char *flag, const char *s, double min,
                        double max, double *out)
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

const char *ag_cli_bug_word(int k)
{
    return k == AG_BUG_SOFTMAX ? "softmax" : NULL;
}

/* ---- the option table ---- */

/* The row that argv[*i] names, or -1. For a flag that takes a value, *value
 * is it (NULL when it is missing) and *i has moved past it. */
static int find_row(const ag_command *cmd, int argc, char **argv, int *i, const char **value)
{
    for (int k = 0; k < cmd->n_options; k++) {
        const ag_option *o = &cmd->options[k];
        if (!o->name)
            continue; /* a heading */
        if (o->kind == AG_OPT_SWITCH ? strcmp(argv[*i], o->name) == 0
                                     : opt_matches(argc, argv, i, o->name, value))
            return k;
    }
    return -1;
}

static void *field_of(const ag_option *o, void *opts)
{
    return (char *)opts + o->field;
}

static size_t field_size(const ag_option *o)
{
    switch (o->kind) {
    case AG_OPT_LONG: return sizeof(long);
    case AG_OPT_U64: return sizeof(uint64_t);
    case AG_OPT_DOUBLE: return sizeof(double);
    case AG_OPT_STRING:
    case AG_OPT_PATH: return sizeof(const char *);
    case AG_OPT_LIST: return sizeof(ag_cli_list);
    default: /* SWITCH, INT, CHOICE */ return sizeof(int);
    }
}

static void set_default(const ag_option *o, void *field)
{
    if (!o->name)
        return;                      /* a heading sets nothing */
    memset(field, 0, field_size(o)); /* SWITCH, STRING, PATH, LIST */
    if (o->kind == AG_OPT_INT || o->kind == AG_OPT_CHOICE)
        *(int *)field = (int)o->def;
    else if (o->kind == AG_OPT_LONG)
        *(long *)field = (long)o->def;
    else if (o->kind == AG_OPT_U64)
        *(uint64_t *)field = (uint64_t)o->def;
    else if (o->kind == AG_OPT_DOUBLE)
        *(double *)field = o->def;
}

/* The words of a CHOICE joined by sep, leaving out word number skip. */
static const char *words(const ag_option *o, const char *sep, int skip, char *buf, size_t len)
{
    size_t used = 0;
    const char *w;
    buf[0] = '\0';
    for (int k = (int)o->lo; (w = o->word(k)) != NULL && used < len; k++)
        if (k != skip)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? sep : "", w);
    return buf;
}

static int set_choice(const ag_command *cmd, const ag_option *o, const char *v, int *field)
{
    const char *w;
    for (int k = (int)o->lo; (w = o->word(k)) != NULL; k++) {
        if (strcmp(v, w) == 0) {
            *field = k;
            return 1;
        }
    }
    char all[1024];
    return !ag_cli_usage_error(cmd, "%s: unknown %s '%s' (%s)", o->name, o->noun, v,
                               words(o, ", ", -1, all, sizeof(all)));
}

/* "1,2.5,-3": lo..hi numbers, each through the same strict parser as every flag. */
static int set_list(const ag_command *cmd, const ag_option *o, const char *s, ag_cli_list *l)
{
    const char *p = s;
    l->n = 0;
    if (!*s)
        return !ag_cli_usage_error(cmd, "%s: the list is empty", o->name);
    for (;;) {
        if (l->n == (int)o->hi)
            return !ag_cli_usage_error(cmd, "%s: at most %d numbers", o->name, (int)o->hi);
        size_t len = strcspn(p, ",");
        char item[64];
        double x = 0;
        int r = AG_PARSE_BAD;
        if (len < sizeof(item)) {
            memcpy(item, p, len);
            item[len] = '\0';
            r = ag_parse_double(item, &x);
            int masks = o->flags & AG_OPT_MASKS;
            if (masks && strcmp(item, "-inf") == 0) {
                x = -INFINITY;
                r = AG_PARSE_OK;
            } else if (masks && (strcmp(item, "inf") == 0 || strcmp(item, "+inf") == 0)) {
                return !ag_cli_usage_error(cmd, "%s: '%s' is not allowed; -inf masks an entry",
                                           o->name, item);
            }
        }
        if (r == AG_PARSE_BAD)
            return !ag_cli_usage_error(cmd, "%s: '%.*s' is not a number (in '%s')", o->name,
                                       (int)len, p, s);
        if (r != AG_PARSE_OK)
            return !ag_cli_usage_error(cmd, "%s: '%.*s' is not a finite number", o->name, (int)len,
                                       p);
        l->v[l->n++] = x;
        if (p[len] == '\0')
            return 1;
        p += len + 1;
    }
}

/* Set row o's field from the argument v; 0 after a usage error. */
static int set_value(const ag_command *cmd, const ag_option *o, const char *v, void *field)
{
    switch (o->kind) {
    case AG_OPT_SWITCH: *(int *)field = 1; return 1;
    case AG_OPT_INT: return parse_int(cmd, o->name, v, (int)o->lo, (int)o->hi, field);
    case AG_OPT_LONG: return parse_long(cmd, o->name, v, (long)o->lo, (long)o->hi, field);
    case AG_OPT_U64: return parse_u64(cmd, o->name, v, field);
    case AG_OPT_DOUBLE: return parse_double(cmd, o->name, v, o->lo, o->hi, field);
    case AG_OPT_PATH:
        if (!*v)
            return !ag_cli_usage_error(cmd, "%s: the file name is empty", o->name);
        *(const char **)field = v; /* a file name is any bytes */
        return 1;
    case AG_OPT_STRING: /* text a command reads (a prompt): UTF-8, as every text is */
        if (!ag_utf8_valid((const unsigned char *)v, strlen(v)))
            return !ag_cli_usage_error(cmd, "%s: not UTF-8 text", o->name);
        *(const char **)field = v;
        return 1;
    case AG_OPT_CHOICE: return set_choice(cmd, o, v, field);
    case AG_OPT_LIST: return set_list(cmd, o, v, field);
    }
    return 0;
}

int ag_cli_parse(const ag_command *cmd, int argc, char **argv, void *opts, uint64_t *given)
{
    for (int k = 0; k < cmd->n_options; k++)
        set_default(&cmd->options[k], field_of(&cmd->options[k], opts));
    if (given)
        *given = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (ag_cli_is_help(argv[i]))
            return AG_CLI_HELP;
        int k = find_row(cmd, argc, argv, &i, &v);
        if (k < 0 && argv[i][0] == '-')
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        if (k < 0)
            return ag_cli_usage_error(cmd, "unexpected argument '%s' (options start with --)",
                                      argv[i]);
        const ag_option *o = &cmd->options[k];
        if (o->kind != AG_OPT_SWITCH && !v) {
            if (i + 1 < argc)
                return ag_cli_usage_error(cmd, "%s needs a value, but '%s' follows it", o->name,
                                          argv[i + 1]);
            return ag_cli_usage_error(cmd, "%s needs a value", o->name);
        }
        if (!set_value(cmd, o, v, field_of(o, opts)))
            return AG_EXIT_USAGE;
        if (given && k < 64)
            *given |= (uint64_t)1 << k;
    }
    return AG_CLI_GO;
}

static const ag_option *row_named(const ag_command *cmd, const char *name, int *k)
{
    for (*k = 0; *k < cmd->n_options; ++*k)
        if (cmd->options[*k].name && strcmp(cmd->options[*k].name, name) == 0)
            return &cmd->options[*k];
    return NULL;
}

int ag_cli_given(const ag_command *cmd, uint64_t given, const char *name)
{
    int k;
    return row_named(cmd, name, &k) && k < 64 && (given >> k & 1);
}

void ag_cli_copy_given(const ag_command *cmd, uint64_t given, void *dst, const void *src)
{
    for (int k = 0; k < cmd->n_options && k < 64; k++) {
        const ag_option *o = &cmd->options[k];
        if (given >> k & 1)
            memcpy(field_of(o, dst), (const char *)src + o->field, field_size(o));
    }
}

/* A value of row o as a user would give it: the field's, or (field NULL)
 * the default. */
static const char *show(const ag_option *o, const void *field, char *buf, size_t len)
{
    const char *w;
    switch (o->kind) {
    case AG_OPT_SWITCH:
        snprintf(buf, len, "%s", field && *(const int *)field ? "on" : "off");
        break;
    case AG_OPT_INT: snprintf(buf, len, "%d", field ? *(const int *)field : (int)o->def); break;
    case AG_OPT_LONG: snprintf(buf, len, "%ld", field ? *(const long *)field : (long)o->def); break;
    case AG_OPT_U64:
        snprintf(buf, len, "%llu",
                 field ? (unsigned long long)*(const uint64_t *)field : (unsigned long long)o->def);
        break;
    case AG_OPT_DOUBLE: snprintf(buf, len, "%g", field ? *(const double *)field : o->def); break;
    case AG_OPT_CHOICE:
        w = o->word(field ? *(const int *)field : (int)o->def);
        snprintf(buf, len, "%s", w ? w : "?");
        break;
    case AG_OPT_STRING:
    case AG_OPT_PATH:
        w = field ? *(const char *const *)field : NULL;
        snprintf(buf, len, "%s", w ? w : "");
        break;
    case AG_OPT_LIST: snprintf(buf, len, "%s", ""); break;
    }
    return buf;
}

const char *ag_cli_format(const ag_command *cmd, const char *name, const void *opts, char *buf,
                          size_t len)
{
    int k;
    const ag_option *o = row_named(cmd, name, &k);
    if (!o)
        return snprintf(buf, len, "?"), buf;
    return show(o, (const char *)opts + o->field, buf, len);
}

int ag_cli_check_fixed(const ag_command *cmd, uint64_t given, const void *mine, const void *saved,
                       const char *const *names, int n, const char *path)
{
    for (int k = 0; k < n; k++) {
        char a[64], b[64];
        ag_cli_format(cmd, names[k], mine, a, sizeof(a));
        ag_cli_format(cmd, names[k], saved, b, sizeof(b));
        if (ag_cli_given(cmd, given, names[k]) && strcmp(a, b) != 0)
            return !ag_cli_usage_error(cmd,
                                       "%s %s conflicts with %s, made with %s (--load fixes "
                                       "the %s)",
                                       names[k], a, path, b,
                                       strcmp(names[k], "--seed") == 0 ? "seed" : "model");
    }
    return 1;
}

/* One % token of a help text. */
static void print_token(const ag_option *o, char t)
{
    char buf[1024];
    const char *num = o->kind == AG_OPT_DOUBLE ? "%g" : "%.0f";
    if (t == 'D')
        fputs(show(o, NULL, buf, sizeof(buf)), stdout);
    else if (t == 'L' || t == 'R')
        printf(num, o->lo);
    if (t == 'R')
        fputs("..", stdout);
    if (t == 'H' || t == 'R')
        printf(num, o->hi);
    else if (t == 'C')
        fputs(words(o, "|", -1, buf, sizeof(buf)), stdout);
    else if (t == 'O')
        fputs(words(o, ", ", (int)o->def, buf, sizeof(buf)), stdout);
    else if (t == '%')
        putchar('%');
}

void ag_cli_print_options(const ag_command *cmd)
{
    int width = cmd->help_width;
    for (int k = 0; k < cmd->n_options; k++) {
        const ag_option *o = &cmd->options[k];
        if (!o->help)
            continue; /* a row not shown */
        if (!o->name) {
            printf("%s\n", o->help); /* a heading */
            continue;
        }
        int n = printf("  %s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
        if (n < width)
            printf("%*s", width - n, "");
        else /* too long for the column: the text starts on the next line */
            printf("\n%*s", width, "");
        for (const char *p = o->help; *p; p++) {
            if (*p == '\n')
                printf("\n%*s", width, "");
            else if (*p == '%' && p[1])
                print_token(o, *++p);
            else
                putchar(*p);
        }
        putchar('\n');
    }
}
