/*
 * demo.c - `attograd demo`: the seed's three-word example. Each word is a
 * 2-d vector, Q = K = V = x, and one soft lookup gives each word a blend of
 * the others: weights = softmax(x x^T / sqrt(2)), output = weights x.
 */
#include "opts.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const ag_option options[] = {
    AG_INT(ag_demo_opts, "--decimals", decimals, 0, 9, 2, "N",
           "digits after the point (default %D, %R)"),
};

const ag_command ag_cmd_demo_info = {
    .name = "demo",
    .run = ag_cmd_demo,
    .usage = "attograd demo [--decimals N]",
    .summary = "the seed example: self-attention over \"cat sat mat\"",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 17,
};

int ag_cli_demo_parse(int argc, char **argv, ag_demo_opts *o)
{
    return ag_cli_parse(&ag_cmd_demo_info, argc, argv, o, NULL);
}

int ag_cmd_demo(int argc, char **argv)
{
    ag_demo_opts o;
    int r = ag_cli_demo_parse(argc, argv, &o);
    if (r == AG_CLI_HELP) {
        printf("usage: %s\n\n"
               "Self-attention over three words, cat=[1,0] sat=[0,1] mat=[1,1], with\n"
               "Q = K = V = x: weights = softmax(Q K^T / sqrt(2)), output = weights V.\n"
               "Row i of weights is where word i looks.\n\n",
               ag_cmd_demo_info.usage);
        ag_cli_print_options(&ag_cmd_demo_info);
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
