/*
 * eval.c - `attograd eval`: the full validation loss of a saved GPT on a
 * text, the number `train --task text` ends with: the mean cross-entropy
 * over every non-overlapping window of the text's last 10%.
 */
#include "opts.h"

#include <stdio.h>
#include <string.h>

static const ag_option options[] = {
    AG_PATH(ag_eval_opts, "--load", load_path, "CKPT", "the checkpoint (required)"),
    AG_PATH(ag_eval_opts, "--text", text_path, "FILE", "the text (required)"),
    AG_INT(ag_eval_opts, "--threads", threads, 1, 256, 1, "N",
           "threads for the matmuls (default %D)"),
};

const ag_command ag_cmd_eval_info = {
    .name = "eval",
    .run = ag_cmd_eval,
    .usage = "attograd eval --load CKPT --text FILE [--threads N]",
    .summary = "the full validation loss of a trained GPT on a text",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 23,
};

static int print_help(void)
{
    printf("usage: %s\n\n"
           "Compute a GPT checkpoint's full validation loss on FILE: the mean cross-entropy\n"
           "(nats per character) over every non-overlapping window of the last 10%% of the\n"
           "text, x = val[i*T:(i+1)*T], y = val[i*T+1:(i+1)*T+1] for i = 0 .. (len-1)/T - 1,\n"
           "T being the model's context length. FILE is read with the checkpoint's\n"
           "vocabulary. Prints one line:\n"
           "  eval: val_loss=V windows=W\n\n"
           "options:\n",
           ag_cmd_eval_info.usage);
    ag_cli_print_options(&ag_cmd_eval_info);
    return AG_EXIT_OK;
}

int ag_cli_eval_parse(int argc, char **argv, ag_eval_opts *o)
{
    const ag_command *cmd = &ag_cmd_eval_info;
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r == AG_CLI_GO && (!o->load_path || !o->text_path))
        return ag_cli_usage_error(cmd, "%s is required",
                                  o->load_path ? "--text FILE" : "--load CKPT");
    return r;
}

int ag_cli_eval_run(const ag_eval_opts *o)
{
    char err[512];
    ag_gpt_file *f = NULL;
    ag_gpt *g = NULL;
    ag_text *text = NULL;
    double loss = 0;
    size_t windows = 0;
    int ok = ag_gpt_file_load(o->load_path, &f, err, sizeof(err)) == AG_OK &&
             (g = ag_gpt_file_model(f, err, sizeof(err))) != NULL &&
             ag_text_load(o->text_path, ag_gpt_file_vocab(f), &text, err, sizeof(err)) == AG_OK;
    if (ok) {
        ag_set_threads(o->threads);
        ok = ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err)) == AG_OK;
        ag_set_threads(1);
    }
    if (ok)
        printf("eval: val_loss=%.6f windows=%zu\n", loss, windows);
    else
        ag_cli_error(&ag_cmd_eval_info, "%s", err);
    ag_text_free(text);
    ag_gpt_free(g);
    ag_gpt_file_free(f);
    return ok ? AG_EXIT_OK : AG_EXIT_FAIL;
}

int ag_cmd_eval(int argc, char **argv)
{
    ag_eval_opts o;
    int r = ag_cli_eval_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help();
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_eval_run(&o);
}
