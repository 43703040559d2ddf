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
    ag_train_config config; /* the run's settings; with --load, the checkpoint's but for
                              * the flags given */
    int steps, eval_every, quiet, detect_anomaly;
    int threads; /* for ag_set_threads; results do not depend on it */
    const char *log_path, *plot_path, *save_path, *load_path; /* NULL when not given */
    const char *heads_path;                                   /* --plot-heads, or NULL */
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

/* ---- attograd train --task text (train_text.c) ---- */
typedef struct ag_text_opts {
    ag_gpt_config model;       /* vocab is the text's; with --load, the checkpoint's */
    ag_gpt_train_config train; /* decay_steps 0 until known: --steps by default */
    int steps, eval_every, eval_iters, quiet, threads;
    const char *text_path, *log_path, *plot_path, *save_path, *load_path; /* NULL: not given */
    const char *heads_path;                                               /* --plot-heads */
    const char *task;                                                     /* --task: "text" */
    /* which flags were given, by ag_cli_given: with --load, a model flag must
     * agree with the checkpoint and a training flag replaces its setting */
    uint64_t given;
} ag_text_opts;

/* Whether train's argv asks for the text task (--task text, or --text). */
int ag_cli_is_text_task(int argc, char **argv);
/* Fill o from argv (argv[0] is "train"); without --load every size is
 * checked here. */
int ag_cli_text_parse(int argc, char **argv, ag_text_opts *o);
int ag_cli_text_run(ag_text_opts *o);
/* `attograd train` for the text task: parse, help or run. */
int ag_cli_text_main(int argc, char **argv);

/* ---- attograd sample ---- */
typedef struct ag_sample_opts {
    const char *load_path;
    const char *prompt; /* NULL: start from a newline, not printed */
    long tokens;
    double temperature;
    int top_k; /* 0: all */
    uint64_t seed;
} ag_sample_opts;

int ag_cli_sample_parse(int argc, char **argv, ag_sample_opts *o);
int ag_cli_sample_run(const ag_sample_opts *o);

/* ---- attograd eval ---- */
typedef struct ag_eval_opts {
    const char *load_path, *text_path;
    int threads;
} ag_eval_opts;

int ag_cli_eval_parse(int argc, char **argv, ag_eval_opts *o);
int ag_cli_eval_run(const ag_eval_opts *o);

/* ---- attograd attend ---- */
#define AG_ATTEND_MAX 1000000 /* --layer and --head: checked against the model when it is read */
typedef struct ag_attend_opts {
    const char *load_path, *prompt;
    int layer, head;       /* -1: every one */
    const char *png, *out; /* NULL: not given */
} ag_attend_opts;

int ag_cli_attend_parse(int argc, char **argv, ag_attend_opts *o);
int ag_cli_attend_run(const ag_attend_opts *o);

/* ---- attograd grad ---- */
typedef struct ag_grad_opts {
    const char *model_path, *batch_path, *out_path;
} ag_grad_opts;

int ag_cli_grad_parse(int argc, char **argv, ag_grad_opts *o);
int ag_cli_grad_run(const ag_grad_opts *o);

/* ---- attograd explain ---- */
#define AG_EXPLAIN_MAX_LOGITS AG_CLI_LIST_MAX
#define AG_EXPLAIN_MAX_SEQ 1024 /* posenc's --seq and --dim */
typedef enum ag_explain_topic {
    AG_EXPLAIN_SOFTMAX,
    AG_EXPLAIN_ATTENTION,
    AG_EXPLAIN_POSENC,
    AG_EXPLAIN_LAYERNORM,
    AG_EXPLAIN_BLOCK
} ag_explain_topic;
typedef struct ag_explain_opts {
    ag_explain_topic topic;
    /* softmax */
    ag_cli_list logits;   /* z */
    ag_cli_list upstream; /* g = dL/ds (layernorm: dL/dy), one per value */
    int decimals;
    /* attention */
    double lr;       /* SGD learning rate */
    const char *dot; /* write the tape as Graphviz here, or NULL */
    const char *png; /* draw it here with Graphviz's dot, or NULL */
    int bug;         /* AG_BUG_NONE or AG_BUG_SOFTMAX */
    /* posenc */
    int seq, dim;     /* the sinusoidal table's size */
    const char *plot; /* draw it here with gnuplot, or NULL */
    const char *load; /* show the learned table 'pos' of this file, or NULL */
    /* layernorm */
    ag_cli_list x;            /* the row */
    ag_cli_list weight, bias; /* as many as x, or none (1s and 0s) */
    int example;              /* softmax, layernorm: none given, the example's numbers */
    /* block (and dot, png, load from above) */
    uint64_t block_seed; /* the tiny block's numbers */
    int layer;           /* --load's block */
    const char *prompt;  /* --load's text, or NULL */
} ag_explain_opts;

/* argv[0] is "explain", argv[1] the topic (softmax, attention, posenc or
 * layernorm). */
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
/* The layer-norm topic (explain_layernorm.c): argv[0] is "layernorm". */
int ag_cli_explain_layernorm_parse(int argc, char **argv, ag_explain_opts *o);
void ag_cli_explain_layernorm_help(void);
int ag_cli_explain_layernorm_run(const ag_explain_opts *o);
/* The block topic (explain_block.c): argv[0] is "block". */
int ag_cli_explain_block_parse(int argc, char **argv, ag_explain_opts *o);
void ag_cli_explain_block_help(void);
int ag_cli_explain_block_run(const ag_explain_opts *o);
/* For the topics' files: explain softmax's row printer. */
void ag_cli_explain_vec(const char *label, const double *v, int n, int decimals);

/* ---- attograd demo ---- */
typedef struct ag_demo_opts {
    int decimals;
} ag_demo_opts;

int ag_cli_demo_parse(int argc, char **argv, ag_demo_opts *o);
int ag_cli_demo_run(const ag_demo_opts *o);

#endif /* AG_CLI_OPTS_H */
