/*
 * eval.c - `attograd eval`: the full validation loss of a saved GPT on a
 * text, the number `train --task text` ends with: the mean cross-entropy
 * over every non-overlapping window of the text's last 10%. Only that part
 * is read against the checkpoint's vocabulary; the memory the model needs
 * is checked before it is made; a long pass shows its progress and stops
 * at a signal (exit 128 + it).
 */
#include "limits.h"
#include "opts.h"
#include "progress.h"
#include "signals.h"

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
           "T being the model's context length. The characters of that part must be in\n"
           "the checkpoint's vocabulary (the first 90%% is not evaluated). Prints one line:\n"
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

/* A signal stopped eval while it was doing `what`: said; 128 + it. */
static int interrupted(const char *what)
{
    int sig = ag_cli_stop_requested();
    ag_cli_error(&ag_cmd_eval_info, "%s; %s", ag_cli_stop_reason(sig), what);
    return 128 + sig;
}

/* The checkpoint, its model, the text's validation part. AG_EXIT_OK or the
 * status, said. */
static int load(const ag_eval_opts *o, ag_gpt_file **f, ag_gpt **g, ag_text **text)
{
    const ag_command *cmd = &ag_cmd_eval_info;
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    ag_gpt_run run = {
        .validate = 1, .threads = o->threads, .text_bytes = ag_cli_file_bytes(o->text_path)};
    int status = ag_cli_gpt_load(cmd, o->load_path, run, "nothing was evaluated", f, g);
    if (status != AG_EXIT_OK)
        return status;
    ag_status st = ag_text_load_eval(o->text_path, ag_gpt_file_vocab(*f), text, err, sizeof(err));
    if (st == AG_ERR_STOPPED && ag_cli_stop_requested())
        return interrupted("nothing was evaluated");
    if (st == AG_ERR_ARG) /* a character the checkpoint's vocabulary lacks */
        return ag_cli_error(cmd, "%s of %s", err, ag_quote(o->load_path, shown, sizeof(shown)));
    if (st != AG_OK)
        return ag_cli_error(cmd, "%s", err);
    int T = ag_gpt_get_config(*g)->seq;
    if (ag_text_windows(*text, T) == 0)
        return ag_cli_error(cmd,
                            "%s: its validation part (the last 10%%) has %zu characters; a "
                            "window of %d (the block_size of %s) needs %d",
                            o->text_path, (*text)->len - (*text)->n_train, T,
                            ag_quote(o->load_path, shown, sizeof(shown)), T + 1);
    return AG_EXIT_OK;
}

int ag_cli_eval_run(const ag_eval_opts *o)
{
    ag_gpt_file *f = NULL;
    ag_gpt *g = NULL;
    ag_text *text = NULL;
    double loss = 0;
    size_t windows = 0;
    char err[AG_CLI_ERR_LEN];
    ag_cli_stop stop_signals = {0};
    ag_cli_stop_begin(&stop_signals);
    ag_cli_progress_begin(&ag_cmd_eval_info, 0);
    ag_set_threads(o->threads);
    int status = load(o, &f, &g, &text);
    if (status == AG_EXIT_OK) {
        ag_status st = ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err));
        if (st == AG_OK)
            printf("eval: val_loss=%.6f windows=%zu\n", loss, windows);
        else if (st == AG_ERR_STOPPED && ag_cli_stop_requested())
            status = interrupted(err);
        else
            status = ag_cli_error(&ag_cmd_eval_info, "%s", err);
    }
    ag_set_threads(1);
    ag_cli_progress_end();
    ag_cli_stop_end(&stop_signals);
    ag_text_free(text);
    ag_gpt_free(g);
    ag_gpt_file_free(f);
    return status;
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
