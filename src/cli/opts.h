/*
 * opts.h - each command's options and its parse step, kept apart from the
 * run step. Parsing touches nothing (no file, no signal, no stdout): its only
 * effect is a usage message on stderr, so the fuzz target
 * (tests/fuzz/fuzz_cli.c) can run it on any argv.
 */
#ifndef AG_CLI_OPTS_H
#define AG_CLI_OPTS_H

#include "cli.h"

/* ---- attograd train ---- */
typedef struct ag_train_opts {
    ag_train_config config;  /* the run's settings; with --load, the checkpoint's but for
                              * the flags given */
    int steps, eval_every, quiet, detect_anomaly;
    int threads;             /* for ag_set_threads; results do not depend on it */
    const char *log_path, *plot_path, *save_path, *load_path;   /* NULL when not given */
    const char *heads_path;  /* --plot-heads, or NULL */
    /* which flags were given, by ag_cli_given (a checkpoint's settings win
     * over defaults only) */
    uint64_t given;
} ag_train_opts;

/* Fill o from argv (argv[0] is "train"). Without --load the model's
 * configuration is complete and checked here; with --load the run step
 * checks it once the checkpoint has filled it in. */
int ag_cli_train_parse(int argc, char **argv, ag_train_opts *o);
/* Whether o's model and batch make a run: --seq within the task's range,
 * --heads dividing --dim, one step's tensors within AG_CLI_MAX_VALUES.
 * Prints a usage error naming the flag and returns 0 otherwise. */
int ag_cli_train_check(const ag_train_opts *o);
int ag_cli_train_run(ag_train_opts *o);

/* ---- attograd grad ---- */
typedef struct ag_grad_opts {
    const char *model_path, *batch_path, *out_path;
} ag_grad_opts;

int ag_cli_grad_parse(int argc, char **argv, ag_grad_opts *o);
int ag_cli_grad_run(const ag_grad_opts *o);

/* ---- attograd explain ---- */
#define AG_EXPLAIN_MAX_LOGITS AG_CLI_LIST_MAX
#define AG_EXPLAIN_MAX_SEQ 1024   /* posenc's --seq and --dim */
typedef enum ag_explain_topic {
    AG_EXPLAIN_SOFTMAX, AG_EXPLAIN_ATTENTION, AG_EXPLAIN_POSENC
} ag_explain_topic;
typedef struct ag_explain_opts {
    ag_explain_topic topic;
    /* softmax */
    ag_cli_list logits;                /* z */
    ag_cli_list upstream;              /* g = dL/ds, as many as the logits */
    int decimals;
    /* attention */
    double lr;                         /* SGD learning rate */
    const char *dot;                   /* write the tape as Graphviz here, or NULL */
    const char *png;                   /* draw it here with Graphviz's dot, or NULL */
    int bug;                           /* AG_BUG_NONE or AG_BUG_SOFTMAX */
    /* posenc */
    int seq, dim;                      /* the sinusoidal table's size */
    const char *plot;                  /* draw it here with gnuplot, or NULL */
    const char *load;                  /* show the learned table 'pos' of this file, or NULL */
} ag_explain_opts;

/* argv[0] is "explain", argv[1] the topic (softmax, attention or posenc). */
int ag_cli_explain_parse(int argc, char **argv, ag_explain_opts *o);
int ag_cli_explain_run(const ag_explain_opts *o);
/* The attention topic (explain_attention.c): argv[0] is "attention". */
int ag_cli_explain_attention_parse(int argc, char **argv, ag_explain_opts *o);
void ag_cli_explain_attention_help(void);
int ag_cli_explain_attention_run(const ag_explain_opts *o);
/* The positional-encoding topic (explain_posenc.c): argv[0] is "posenc". */
int ag_cli_explain_posenc_parse(int argc, char **argv, ag_explain_opts *o);
void ag_cli_explain_posenc_help(void);
int ag_cli_explain_posenc_run(const ag_explain_opts *o);

/* ---- attograd demo ---- */
typedef struct ag_demo_opts {
    int decimals;
} ag_demo_opts;

int ag_cli_demo_parse(int argc, char **argv, ag_demo_opts *o);
int ag_cli_demo_run(const ag_demo_opts *o);

#endif /* AG_CLI_OPTS_H */
