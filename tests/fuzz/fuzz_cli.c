/*
 * fuzz_cli.c - libFuzzer target for the command line: each input is an
 * argv (arguments separated by NUL bytes, the first one the command's
 * name), handed to that command's parse step (train and its text task,
 * sample, eval, attend, grad, explain, demo;
 * see src/cli/opts.h), which must answer run, help or usage error without
 * crashing, and when it says run, the options must be ones the run step can
 * trust. The same input also goes through the strict number parsers and
 * the quoting of file strings on their own. Build and run with
 * `make fuzz-run` (see docs/fuzzing.md); usage messages go to stderr,
 * which the run closes (-close_fd_mask=2).
 */
#include "cli/limits.h"
#include "cli/opts.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stdout, "fuzz_cli: %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_ARGS 64

static int answered(int r)
{
    return r == AG_CLI_GO || r == AG_CLI_HELP || r == AG_EXIT_USAGE;
}

static void check_path(const char *p)
{
    CHECK(p == NULL || *p != '\0');
}

static void check_train(const ag_train_opts *o)
{
    CHECK(o->steps >= 1 && o->steps <= 100000000);
    CHECK(o->config.batch >= 1 && o->config.batch <= 65536);
    CHECK(o->eval_every >= 1);
    /* with --load and no --lr, the checkpoint's learning rate is used */
    if (!o->load_path || ag_cli_given(&ag_cmd_train_info, o->given, "--lr"))
        CHECK(isfinite(o->config.lr) && o->config.lr >= 1e-12 && o->config.lr <= 1e3);
    CHECK(isfinite(o->config.momentum) && o->config.momentum >= 0 && o->config.momentum < 1);
    CHECK(isfinite(o->config.clip) && o->config.clip >= 0);
    CHECK(isfinite(o->config.weight_decay) && o->config.weight_decay >= 0);
    CHECK((unsigned)o->config.model.task < AG_TASK_COUNT);
    check_path(o->log_path);
    check_path(o->plot_path);
    check_path(o->save_path);
    check_path(o->load_path);
    check_path(o->heads_path);
    /* two names of one file are the run step's to find (ag_cli_check_files):
     * that takes the file system, which the parse step does not touch */
    if (!o->load_path) {
        /* the configuration is complete: the run step builds it as is */
        const ag_model_config *m = &o->config.model;
        CHECK(m->seq >= ag_task_min_seq(m->task) && m->seq <= ag_task_max_seq(m->task));
        CHECK(m->heads >= 1 && m->dim >= 1 && m->dim % m->heads == 0);
        uint64_t b = (uint64_t)(o->config.batch > 512 ? o->config.batch : 512);
        /* the weights are made for the heatmap's one example only */
        CHECK(ag_cli_attention_values(1, (uint64_t)m->heads, (uint64_t)m->seq) <=
              AG_CLI_MAX_VALUES);
        CHECK(ag_cli_activation_values(b, (uint64_t)m->seq, (uint64_t)m->dim) <= AG_CLI_MAX_VALUES);
        if (m->dim <= 64) { /* a big model costs the fuzzer more than it tells */
            char err[128];
            ag_model *model = ag_model_new(m, NULL, err, sizeof(err));
            CHECK(model != NULL);
            ag_model_free(model);
        }
    }
}

/* The text task: what the run step builds from without checking again. */
static void check_text(const ag_text_opts *o)
{
    CHECK(o->text_path && *o->text_path);
    CHECK(o->steps >= 1 && o->eval_every >= 1 && o->eval_iters >= 1);
    CHECK(o->threads >= 1 && o->threads <= 256);
    check_path(o->log_path);
    check_path(o->plot_path);
    check_path(o->save_path);
    check_path(o->load_path);
    const ag_gpt_config *m = &o->model;
    CHECK(m->dropout >= 0 && m->dropout < 1);
    if (!o->load_path) {
        CHECK(o->train.decay_steps >= 1);
        CHECK(m->heads >= 1 && m->dim % m->heads == 0 && m->layers >= 1 && m->seq >= 1);
        CHECK(o->train.batch >= 1 && isfinite(o->train.lr) && o->train.lr > 0);
        CHECK(o->train.min_lr <= o->train.lr); /* the schedule never rises */
        CHECK(ag_cli_attention_values((uint64_t)o->train.batch, (uint64_t)m->heads,
                                      (uint64_t)m->seq) <= AG_CLI_MAX_VALUES);
    }
}

static void parse_command(int argc, char **argv)
{
    const char *cmd = argv[0];
    if (strcmp(cmd, "train") == 0 && ag_cli_is_text_task(argc, argv)) {
        ag_text_opts o;
        int r = ag_cli_text_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO)
            check_text(&o);
    } else if (strcmp(cmd, "sample") == 0) {
        ag_sample_opts o;
        int r = ag_cli_sample_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO) {
            CHECK(o.load_path && *o.load_path);
            CHECK(o.tokens >= 0 && o.top_k >= 0 && o.temperature >= 0 && isfinite(o.temperature));
            CHECK(!o.prompt || ag_utf8_valid((const unsigned char *)o.prompt, strlen(o.prompt)));
        }
    } else if (strcmp(cmd, "attend") == 0) {
        ag_attend_opts o;
        int r = ag_cli_attend_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO) {
            CHECK(o.load_path && *o.load_path && o.prompt && *o.prompt);
            CHECK(o.layer >= -1 && o.head >= -1);
            check_path(o.png);
            check_path(o.out);
        }
    } else if (strcmp(cmd, "eval") == 0) {
        ag_eval_opts o;
        int r = ag_cli_eval_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO)
            CHECK(o.load_path && *o.load_path && o.text_path && *o.text_path && o.threads >= 1);
    } else if (strcmp(cmd, "train") == 0) {
        ag_train_opts o;
        int r = ag_cli_train_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO) {
            check_train(&o);
            if (o.load_path) {
                /* what the run step checks once a checkpoint fills the model in */
                o.config.model.task = AG_TASK_LOOKUP;
                o.config.model.seq = 5, o.config.model.dim = 32, o.config.model.heads = 1;
                (void)ag_cli_train_check(&o);
            }
        }
    } else if (strcmp(cmd, "grad") == 0) {
        ag_grad_opts o;
        int r = ag_cli_grad_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO) {
            CHECK(o.model_path && o.batch_path && o.out_path);
            check_path(o.model_path);
            check_path(o.batch_path);
            check_path(o.out_path);
        }
    } else if (strcmp(cmd, "explain") == 0) {
        ag_explain_opts o;
        int r = ag_cli_explain_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO) {
            if (o.topic == AG_EXPLAIN_SOFTMAX) {
                int n = o.logits.n;
                CHECK(n >= 1 && n <= AG_EXPLAIN_MAX_LOGITS && o.upstream.n == n);
                CHECK(o.decimals >= 4 && o.decimals <= 10);
                for (int i = 0; i < n; i++) /* -inf is a masked logit */
                    CHECK((isfinite(o.logits.v[i]) || o.logits.v[i] == -INFINITY) &&
                          isfinite(o.upstream.v[i]));
            } else if (o.topic == AG_EXPLAIN_LAYERNORM) {
                int n = o.x.n;
                CHECK(n >= 1 && n <= AG_EXPLAIN_MAX_LOGITS && o.upstream.n == n);
                CHECK(o.weight.n == 0 || o.weight.n == n);
                CHECK(o.bias.n == 0 || o.bias.n == n);
                for (int i = 0; i < n; i++)
                    CHECK(isfinite(o.x.v[i]) && isfinite(o.upstream.v[i]));
            } else if (o.topic == AG_EXPLAIN_POSENC) {
                CHECK(o.seq >= 1 && o.seq <= AG_EXPLAIN_MAX_SEQ);
                CHECK(o.dim >= 1 && o.dim <= AG_EXPLAIN_MAX_SEQ);
                check_path(o.plot);
                check_path(o.load);
            } else if (o.topic == AG_EXPLAIN_BLOCK) {
                CHECK(o.layer >= 0);
                CHECK(!o.load || (o.prompt && strlen(o.prompt) >= 2));
                CHECK(o.load || (!o.prompt && o.layer == 0));
                check_path(o.load);
                check_path(o.dot);
                check_path(o.png);
                CHECK(!o.dot || !o.png || strcmp(o.dot, o.png) != 0);
            } else {
                CHECK(o.topic == AG_EXPLAIN_ATTENTION);
                CHECK(isfinite(o.lr) && o.lr >= 1e-6 && o.lr <= 100);
                CHECK(o.bug == AG_BUG_NONE || o.bug == AG_BUG_SOFTMAX);
                check_path(o.dot);
                check_path(o.png);
                CHECK(!o.dot || !o.png || strcmp(o.dot, o.png) != 0);
            }
        }
    } else if (strcmp(cmd, "demo") == 0) {
        ag_demo_opts o;
        int r = ag_cli_demo_parse(argc, argv, &o);
        CHECK(answered(r));
        if (r == AG_CLI_GO)
            CHECK(o.decimals >= 0 && o.decimals <= 9);
    }
}

/* The strict parsers on one string: what they accept has no white space,
 * starts like a number, and is finite. */
static void parse_numbers(const char *s)
{
    long l;
    uint64_t u;
    double d;
    int rl = ag_parse_long(s, &l), ru = ag_parse_u64(s, &u), rd = ag_parse_double(s, &d);
    CHECK(rl >= AG_PARSE_OK && rl <= AG_PARSE_TINY);
    CHECK(ru >= AG_PARSE_OK && ru <= AG_PARSE_TINY);
    CHECK(rd >= AG_PARSE_OK && rd <= AG_PARSE_TINY);
    int any = rl == AG_PARSE_OK || ru == AG_PARSE_OK || rd == AG_PARSE_OK;
    if (any) {
        CHECK(*s != '\0');
        for (const char *c = s; *c; c++)
            CHECK(!isspace((unsigned char)*c));
    }
    if (ru == AG_PARSE_OK)
        CHECK(*s >= '0' && *s <= '9');
    if (rl == AG_PARSE_OK) {
        char back[32];
        snprintf(back, sizeof(back), "%ld", l);
        /* the same number, up to a leading '+' and leading zeros */
        CHECK(strtol(back, NULL, 10) == l);
        CHECK(rd == AG_PARSE_OK && d == (double)l); /* an integer is a number too */
    }
    if (rd == AG_PARSE_OK)
        CHECK(isfinite(d));

    char q[AG_QUOTE_LEN];
    ag_quote(s, q, sizeof(q));
    CHECK(strlen(q) < sizeof(q));
    for (const char *c = q; *c; c++)
        CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private, NUL-terminated copy: argv strings may be written by nobody,
     * but the parsers must not read past them */
    char *buf = malloc(size + 1);
    CHECK(buf);
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    parse_numbers(argv[0]);
    if (argc > 1)
        parse_numbers(argv[argc - 1]);
    parse_command(argc, argv);
    free(buf);
    return 0;
}
