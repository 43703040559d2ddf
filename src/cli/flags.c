/*
 * flags.c - a command's options as a table: each flag's name, the kind of
 * value it takes and where the value goes, so that a command's parse step
 * is its table and its defaults. Values are checked as args.c checks them
 * (strict numbers within a range, non-empty file names), and a bad one is a
 * usage error naming the flag.
 */
#include "opts.h"

#include <string.h>

/* Store flag f's value v; 0 after a usage error. */
static int store(const ag_command *cmd, const ag_cli_flag *f, const char *v)
{
    long l;
    switch (f->kind) {
    case AG_FLAG_INT:
        if (!ag_cli_long(cmd, f->name, v, (long)f->lo, (long)f->hi, &l))
            return 0;
        *(int *)f->out = (int)l;
        return 1;
    case AG_FLAG_LONG:
        return ag_cli_long(cmd, f->name, v, (long)f->lo, (long)f->hi, f->out);
    case AG_FLAG_DOUBLE:
        return ag_cli_double(cmd, f->name, v, f->lo, f->hi, f->out);
    case AG_FLAG_U64:
        return ag_cli_u64(cmd, f->name, v, f->out);
    default:   /* AG_FLAG_PATH, AG_FLAG_STRING */
        *(const char **)f->out = v;
        return 1;
    }
}

int ag_cli_parse_flags(const ag_command *cmd, int argc, char **argv, const ag_cli_flag *flags,
                       size_t n)
{
    for (int i = 1; i < argc; i++) {
        if (ag_cli_is_help(argv[i]))
            return AG_CLI_HELP;
        size_t k = 0;
        int r = 0;
        const char *v = NULL;
        for (; k < n; k++) {
            const ag_cli_flag *f = &flags[k];
            if (f->kind == AG_FLAG_SWITCH)
                r = ag_cli_switch(argv, i, f->name);
            else if (f->kind == AG_FLAG_PATH)
                r = ag_cli_path(cmd, argc, argv, &i, f->name, &v);
            else
                r = ag_cli_value(cmd, argc, argv, &i, f->name, &v);
            if (r)
                break;
        }
        if (k == n) {
            if (argv[i][0] == '-')
                return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
            return ag_cli_usage_error(cmd, "unexpected argument '%s' (options start with --)", argv[i]);
        }
        const ag_cli_flag *f = &flags[k];
        if (r < 0)
            return AG_EXIT_USAGE;   /* the value is missing: said already */
        if (f->kind == AG_FLAG_SWITCH)
            *(int *)f->out = 1;
        else if (!store(cmd, f, v))
            return AG_EXIT_USAGE;
        if (f->given)
            *f->given = 1;
    }
    return AG_CLI_GO;
}
