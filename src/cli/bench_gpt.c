/*
 * bench_gpt.c - `attograd bench gpt`: one training step of the text task's
 * GPT, the trainer's own step (ag_gpt_trainer_step: batch, forward,
 * cross-entropy, backward, global-norm clip, AdamW), on random characters
 * so no file is needed: the data does not change the time.
 *
 *   attograd bench gpt --layers 4 --dim 128 --heads 4 --seq 64 --batch 12
 *   bench: op=gpt layers=4 dim=128 heads=4 seq=64 batch=12 threads=1 us_per_step=...
 */
#include "cli.h"
#include "limits.h"

#include <stdio.h>
#include <stdlib.h>

#define VOCAB 65          /* tinyshakespeare's distinct characters */
#define TEXT_CHARS 100000 /* the random text the windows are drawn from */

typedef struct gpt_bench_opts {
    ag_gpt_config model;
    ag_gpt_train_config train;
    int steps; /* 0: about a second's worth */
    int threads;
} gpt_bench_opts;

#define INT(...) AG_INT(gpt_bench_opts, __VA_ARGS__)
static const ag_option options[] = {
    INT("--layers", model.layers, 1, 256, AG_GPT_LAYERS, "N",
        "transformer blocks (default %D, %R)"),
    INT("--dim", model.dim, 1, AG_TRAIN_MAX_SIZE, AG_GPT_DIM, "C",
        "width of the residual stream (default %D)"),
    INT("--heads", model.heads, 1, AG_TRAIN_MAX_SIZE, AG_GPT_HEADS, "H",
        "attention heads, dividing --dim (default %D)"),
    INT("--seq", model.seq, 1, AG_TRAIN_MAX_SIZE, AG_GPT_SEQ, "T", "context length (default %D)"),
    INT("--batch", train.batch, 1, AG_TRAIN_MAX_BATCH, AG_GPT_BATCH, "B",
        "windows per step (default %D)"),
    INT("--steps", steps, 1, 100000, 0, "N",
        "timed steps, %R (default: about a second's worth,\nat least 5 and at most 2000)"),
    INT("--threads", threads, 1, 256, 1, "N", "threads for ag_set_threads (default %D, %R)"),
};
#undef INT

static const ag_command bench_gpt_info = {
    .name = "bench gpt",
    .usage = "attograd bench gpt [--layers N] [--dim C] [--heads H] [--seq T] [--batch B] "
             "[--steps N] [--threads N]",
    .summary = "one training step of the text task's GPT (forward, backward, clip, AdamW)",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 16,
};

static int print_help(void)
{
    printf("usage: %s\n\n"
           "Times the text task's training step (what `attograd train --task text`\n"
           "runs: random windows, forward, mean cross-entropy, backward, global-norm\n"
           "clip at 1, AdamW) on a GPT with a vocabulary of %d, trained on random\n"
           "characters. After a few warm-up steps it prints one line:\n"
           "  bench: op=gpt layers=.. dim=.. heads=.. seq=.. batch=.. threads=..\n"
           "         us_per_step=US gflops=G peak_bytes=P allocs_per_step=A\n"
           "         kernels=K gemm=NAME\n"
           "US is the median step time in microseconds; G counts the matmuls of\n"
           "forward and backward, three times the forward's 2 B T (12 L C^2 + C V)\n"
           "+ 4 L B C T (T + 1) / 2 (the causal pairs of attention);\n"
           "P is the step's memory: its tapes' high-water bytes (the batch runs as\n"
           "two halves: on two or three threads at once, a tape each, else on one\n"
           "tape, one after the other) plus parameters, gradients (the halves' two\n"
           "sets) and AdamW's state; A is the library's heap allocations per\n"
           "timed step (ag_alloc_count); K and NAME the kernels that ran (fast or\n"
           "reference, and the gemm micro-kernel), as bench matmul says.\n\n",
           bench_gpt_info.usage, VOCAB);
    ag_cli_print_options(&bench_gpt_info);
    return AG_EXIT_OK;
}

/* The parse step: the library's defaults, then the table; sizes that fit. */
static int parse(int argc, char **argv, gpt_bench_opts *o)
{
    const ag_command *cmd = &bench_gpt_info;
    o->model = ag_gpt_defaults(VOCAB);
    o->train = ag_gpt_train_defaults(); /* what no flag sets */
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r != AG_CLI_GO)
        return r;
    const ag_gpt_config *m = &o->model;
    int batch = o->train.batch;
    if (m->heads > m->dim || m->dim % m->heads != 0)
        return ag_cli_usage_error(cmd, "--heads %d does not divide --dim %d", m->heads, m->dim);
    uint64_t attn = ag_cli_attention_values((uint64_t)batch, (uint64_t)m->heads, (uint64_t)m->seq);
    uint64_t act =
        ag_cli_activation_values((uint64_t)batch, (uint64_t)m->seq, 4 * (uint64_t)m->dim);
    if (attn > AG_CLI_MAX_VALUES || act > AG_CLI_MAX_VALUES)
        return ag_cli_usage_error(cmd,
                                  "--seq %d with --batch %d, --dim %d and --heads %d is too "
                                  "large: a step would hold %llu values in one tensor (at most "
                                  "%llu)",
                                  m->seq, batch, m->dim, m->heads,
                                  (unsigned long long)(attn > act ? attn : act),
                                  (unsigned long long)AG_CLI_MAX_VALUES);
    if (m->seq + 1 > TEXT_CHARS / 10)
        return ag_cli_usage_error(cmd,
                                  "--seq %d is too long for the random text's %d "
                                  "validation characters",
                                  m->seq, TEXT_CHARS / 10);
    return AG_CLI_GO;
}

/* TEXT_CHARS random characters of a VOCAB-letter alphabet, every letter
 * present (the alphabet leads). */
static ag_text *random_text(char *err, size_t errlen)
{
    char *s = malloc(TEXT_CHARS);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ag_rng rng = ag_rng_new(7);
    for (int i = 0; i < TEXT_CHARS; i++)
        s[i] = (char)('0' + (i < VOCAB ? i : (int)(ag_rng_uniform(&rng) * VOCAB) % VOCAB));
    ag_text *text = NULL;
    ag_text_parse(s, TEXT_CHARS, "random text", NULL, &text, err, errlen);
    free(s);
    return text;
}

/* One timed step: the trainer's, its message kept for the error. */
typedef struct gpt_step {
    ag_gpt_trainer *t;
    char err[256];
} gpt_step;

static int step(void *ctx)
{
    gpt_step *s = ctx;
    return ag_gpt_trainer_step(s->t, NULL, s->err, sizeof(s->err)) == AG_OK;
}

int ag_cli_bench_gpt(int argc, char **argv)
{
    gpt_bench_opts o;
    int r = parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help();
    if (r != AG_CLI_GO)
        return r;
    const ag_gpt_config m = o.model;
    const ag_gpt_train_config tc = o.train;
    int threads = o.threads;
    int status = AG_EXIT_FAIL;
    char err[256];
    ag_gpt *g = NULL;
    ag_gpt_trainer *t = NULL;
    ag_rng rng = ag_rng_new(1);
    ag_text *text = random_text(err, sizeof(err));
    if (text)
        g = ag_gpt_new(&m, &rng, err, sizeof(err));
    if (g)
        t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
    if (!t)
        goto failed;
    ag_set_threads(threads);
    gpt_step s = {t, ""};
    ag_step_timing tm;
    ag_status st = ag_time_steps(step, &s, o.steps, &tm);
    if (st != AG_OK) {
        snprintf(err, sizeof(err), "%s", st == AG_ERR_NOMEM ? "out of memory" : s.err);
        goto failed;
    }
    double sec = tm.seconds;
    double B = tc.batch, T = m.seq, C = m.dim, L = m.layers, V = VOCAB;
    double forward = 2 * B * T * (12 * L * C * C + C * V) + 4 * L * B * C * T * (T + 1) / 2;
    /* w, grad, m, v, and the twin's grad for a batch's second half */
    double state = (tc.batch > 1 ? 5.0 : 4.0) * (double)ag_gpt_n_weights(g) * sizeof(ag_real);
    double peak = (double)ag_gpt_trainer_peak_bytes(t) + state;
    printf("bench: op=gpt layers=%d dim=%d heads=%d seq=%d batch=%d threads=%d us_per_step=%.2f "
           "gflops=%.2f peak_bytes=%.0f allocs_per_step=%g %s\n",
           m.layers, m.dim, m.heads, m.seq, tc.batch, threads, sec * 1e6,
           sec > 0 ? 3 * forward / sec / 1e9 : 0, peak, tm.allocs, ag_cli_kernels());
    status = AG_EXIT_OK;
    goto done;
failed:
    ag_cli_error(&bench_gpt_info, "%s", err);
done:
    ag_set_threads(1);
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
    return status;
}
