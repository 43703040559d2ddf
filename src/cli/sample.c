/*
 * sample.c - `attograd sample`: a trained GPT writes. The prompt, then each
 * new character as soon as it is drawn, go to stdout and nothing else does,
 * so the output can be piped or saved as it is. A key/value cache makes
 * each character cost one position of the model, not the whole window.
 * The memory the model needs is checked before it is made; logits that
 * are not finite stop it (exit 1) rather than read as a character; a
 * signal stops it (exit 128 + it).
 */
#include "limits.h"
#include "opts.h"
#include "signals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ag_option options[] = {
    AG_PATH(ag_sample_opts, "--load", load_path, "CKPT", "the checkpoint (required)"),
    AG_STRING(ag_sample_opts, "--prompt", prompt, "TEXT",
              "text to continue (default: start after a newline, not printed);\n"
              "every character must be in the checkpoint's vocabulary"),
    AG_LONG(ag_sample_opts, "--tokens", tokens, 0, 1000000000L, 500, "N",
            "characters to generate (default %D)"),
    AG_DOUBLE(ag_sample_opts, "--temperature", temperature, 0, 100, 1, "T",
              "divide the logits by T: below 1 is safer, above 1 wilder;\n"
              "0 always takes the likeliest (default %D)"),
    AG_INT(ag_sample_opts, "--top-k", top_k, 0, AG_VOCAB_MAX, 0, "K",
           "draw only among the K likeliest characters; 0: all (default %D)"),
    AG_U64(ag_sample_opts, "--seed", seed, 1, "S",
           "the same seed writes the same text (default %D)"),
};

const ag_command ag_cmd_sample_info = {
    .name = "sample",
    .run = ag_cmd_sample,
    .usage = "attograd sample --load CKPT [--prompt TEXT] [--tokens N] [--temperature T] "
             "[--top-k K] [--seed S]",
    .summary = "let a trained GPT (train --task text --save) write text",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 23,
};

static int print_help(void)
{
    printf("usage: %s\n\n"
           "Generate text with a GPT checkpoint written by `attograd train --task text --save`.\n"
           "The prompt and the generated characters stream to stdout as they are made.\n\n"
           "options:\n",
           ag_cmd_sample_info.usage);
    ag_cli_print_options(&ag_cmd_sample_info);
    return AG_EXIT_OK;
}

int ag_cli_sample_parse(int argc, char **argv, ag_sample_opts *o)
{
    const ag_command *cmd = &ag_cmd_sample_info;
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r != AG_CLI_GO)
        return r;
    if (!o->load_path)
        return ag_cli_usage_error(cmd, "--load CKPT is required: the model to sample from");
    return AG_CLI_GO;
}

/* Each character as it is made; a failed write (a closed pipe) stops. */
static int emit(int id, void *ctx)
{
    char buf[8];
    size_t n = ag_vocab_utf8(ctx, id, buf);
    return fwrite(buf, 1, n, stdout) != n || fflush(stdout) != 0;
}

/* A signal: said (after the text written so far); 128 + it. */
static int interrupted(const char *what)
{
    int sig = ag_cli_stop_requested();
    fflush(stdout);
    ag_cli_error(&ag_cmd_sample_info, "%s; %s", ag_cli_stop_reason(sig), what);
    return 128 + sig;
}

static int sample(const ag_sample_opts *o, ag_gpt_file **f, ag_gpt **g, ag_gpt_cache **cache,
                  int **ids)
{
    const ag_command *cmd = &ag_cmd_sample_info;
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    int status =
        ag_cli_gpt_load(cmd, o->load_path, (ag_gpt_run){.sample = 1}, "nothing was written", f, g);
    if (status != AG_EXIT_OK)
        return status;
    if (!(*cache = ag_gpt_cache_new(*g, err, sizeof(err))))
        return ag_cli_error(cmd, "%s", err);
    ag_status st;
    const ag_vocab *vocab = ag_gpt_file_vocab(*f);
    size_t len = o->prompt ? strlen(o->prompt) : 0, n = 0;
    st = ag_vocab_prompt(vocab, o->prompt, len, ids, &n, err, sizeof(err));
    if (st == AG_ERR_NOMEM)
        return ag_cli_error(cmd, "out of memory");
    if (st != AG_OK) /* a given prompt with a character the model never saw */
        return ag_cli_error(cmd, "--prompt: %s of %s", err,
                            ag_quote(o->load_path, shown, sizeof(shown)));
    if (len) {
        fwrite(o->prompt, 1, len, stdout);
        fflush(stdout);
    }
    ag_rng rng = ag_rng_new(o->seed);
    st = ag_gpt_generate(*cache, *ids, n, (size_t)o->tokens, o->temperature, o->top_k, &rng, emit,
                         (void *)vocab, err, sizeof(err));
    if (st == AG_ERR_STOPPED && ag_cli_stop_requested())
        return interrupted(err);
    if (st != AG_OK) {
        fflush(stdout);
        return ag_cli_error(cmd, "%s", err);
    }
    return AG_EXIT_OK;
}

int ag_cli_sample_run(const ag_sample_opts *o)
{
    ag_gpt_file *f = NULL;
    ag_gpt *g = NULL;
    ag_gpt_cache *cache = NULL;
    int *ids = NULL;
    ag_cli_stop stop_signals = {0};
    ag_cli_stop_begin(&stop_signals);
    int status = sample(o, &f, &g, &cache, &ids);
    ag_cli_stop_end(&stop_signals);
    free(ids);
    ag_gpt_cache_free(cache);
    ag_gpt_free(g);
    ag_gpt_file_free(f);
    return status;
}

int ag_cmd_sample(int argc, char **argv)
{
    ag_sample_opts o;
    int r = ag_cli_sample_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help();
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_sample_run(&o);
}
