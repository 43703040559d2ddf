/*
 * demo.c - `attograd demo`: the seed's three-word example. Each word is a
 * 2-d vector, Q = K = V = x, and one soft lookup gives each word a blend of
 * the others: weights = softmax(x x^T / sqrt(2)), output = weights x.
 */
#include "opts.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const ag_command ag_cmd_demo_info = {
    "demo", ag_cmd_demo, "attograd demo [--decimals N]",
    "the seed example: self-attention over \"cat sat mat\"",
};

int ag_cli_demo_parse(int argc, char **argv, ag_demo_opts *o)
{
    const ag_command *cmd = &ag_cmd_demo_info;
    o->decimals = 2;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ag_cli_is_help(argv[i]))
            return AG_CLI_HELP;
        if ((r = ag_cli_value(cmd, argc, argv, &i, "--decimals", &v))) {
            if (r < 0 || !ag_cli_int(cmd, "--decimals", v, 0, 9, &o->decimals))
                return AG_EXIT_USAGE;
        } else if (argv[i][0] == '-') {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else {
            return ag_cli_usage_error(cmd, "unexpected argument '%s' (options start with --)", argv[i]);
        }
    }
    return AG_CLI_GO;
}

int ag_cmd_demo(int argc, char **argv)
{
    ag_demo_opts o;
    int r = ag_cli_demo_parse(argc, argv, &o);
    if (r == AG_CLI_HELP) {
        printf("usage: %s\n\n"
               "Self-attention over three words, cat=[1,0] sat=[0,1] mat=[1,1], with\n"
               "Q = K = V = x: weights = softmax(Q K^T / sqrt(2)), output = weights V.\n"
               "Row i of weights is where word i looks.\n\n"
               "  --decimals N   digits after the point (default 2, 0..9)\n",
               ag_cmd_demo_info.usage);
        return AG_EXIT_OK;
    }
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_demo_run(&o);
}

int ag_cli_demo_run(const ag_demo_opts *o)
{
    int decimals = o->decimals;
    ag_tape *tape = ag_tape_new();
    if (!tape) {
        ag_cli_error(&ag_cmd_demo_info, "out of memory");
        return AG_EXIT_FAIL;
    }
    const ag_real words[] = {1, 0,  /* cat */
                             0, 1,  /* sat */
                             1, 1}; /* mat */
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){3, 2}, words);
    ag_tensor *scores = ag_scale(tape, ag_matmul_bt(tape, x, x), 1 / sqrt(2.0));
    ag_tensor *weights = ag_softmax(tape, scores);
    ag_tensor *out = ag_matmul(tape, weights, x);
    int status = AG_EXIT_OK;
    if (!out) {
        ag_cli_error(&ag_cmd_demo_info, "%s", ag_tape_error(tape));
        status = AG_EXIT_FAIL;
    } else {
        printf("weights:\n");
        ag_tensor_print(stdout, weights, decimals);
        printf("output:\n");
        ag_tensor_print(stdout, out, decimals);
    }
    ag_tape_free(tape);
    return status;
}
