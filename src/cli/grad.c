/*
 * grad.c - `attograd grad`: one forward and backward pass of the attention
 * layer with mse loss, on weights and a batch from files, writing outputs
 * and gradients to a file, so anyone can compare attograd with PyTorch or
 * numpy on the same numbers (the file contract of docs/cli.md).
 *
 *   model: wq, wk, wv, wo (d, d); metadata n_heads, causal ("true"/"false")
 *   batch: x, y (B, T, d)
 *   out:   out (B,T,d), attn (B,H,T,T), loss (1), grad.wq/wk/wv/wo (d,d), grad.x (B,T,d)
 */
#include "limits.h"
#include "opts.h"
#include "signals.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ag_option options[] = {
    AG_PATH(ag_grad_opts, "--model", model_path, "FILE",
            "wq, wk, wv, wo, each (d, d); metadata n_heads and causal\n(\"true\" or \"false\")"),
    AG_PATH(ag_grad_opts, "--batch", batch_path, "FILE", "x and y, each (B, T, d)"),
    AG_PATH(ag_grad_opts, "--out", out_path, "FILE",
            "written: out (B,T,d), attn (B,H,T,T), loss (1),\n"
            "grad.wq, grad.wk, grad.wv, grad.wo (d,d), grad.x (B,T,d)"),
};

const ag_command ag_cmd_grad_info = {
    .name = "grad",
    .run = ag_cmd_grad,
    .usage = "attograd grad --model M.safetensors --batch B.safetensors --out G.safetensors",
    .summary = "one forward/backward of the attention layer on files, for comparison",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 17,
};

static int print_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "One forward and backward pass of the attention layer with mse loss.\n\n",
           cmd->usage);
    ag_cli_print_options(cmd);
    printf("\nFiles are safetensors (F32 or F64 in; %s out). Row vectors: Q = x wq, ...,\n"
           "out = concat_h(softmax(Q_h K_h^T / sqrt(dh)) V_h) wo; loss = mean((out - y)^2).\n",
           AG_ST_REAL == AG_ST_F32 ? "F32" : "F64");
    return AG_EXIT_OK;
}

int ag_cli_grad_parse(int argc, char **argv, ag_grad_opts *o)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    int r = ag_cli_parse(cmd, argc, argv, o, NULL);
    if (r != AG_CLI_GO)
        return r;
    const char *missing = !o->model_path   ? "--model"
                          : !o->batch_path ? "--batch"
                          : !o->out_path   ? "--out"
                                           : NULL;
    if (missing)
        return ag_cli_usage_error(
            cmd, "%s is missing (--model, --batch and --out are all required)", missing);
    return AG_CLI_GO;
}

int ag_cmd_grad(int argc, char **argv)
{
    ag_grad_opts o;
    int r = ag_cli_grad_parse(argc, argv, &o);
    if (r == AG_CLI_HELP)
        return print_help(&ag_cmd_grad_info);
    if (r != AG_CLI_GO)
        return r;
    return ag_cli_grad_run(&o);
}

/* One pass: the files, what is read from them and what is made. */
typedef struct grad_job {
    const ag_grad_opts *o;
    ag_st_file *mf, *bf; /* the model and the batch */
    int d, heads, causal;
    int xshape[AG_MAX_DIMS]; /* (B, T, d) */
    ag_attention *layer;
    ag_tape *tape;
    ag_tensor *x, *y, *out, *attn, *loss;
} grad_job;

static const char *const wnames[4] = {"wq", "wk", "wv", "wo"};

/* The layer from the model file (ag_attention_load: d from wq, the heads
 * and causal from the metadata, every weight finite); B and T from x, one
 * step's size within the limit; x and y on the tape, finite. */
static int read_inputs(grad_job *g)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    const char *model = g->o->model_path, *batch = g->o->batch_path;
    char err[AG_CLI_ERR_LEN];
    int nd, *x = g->xshape;
    if (!(g->layer = ag_attention_load(g->mf, model, err, sizeof(err))))
        return !ag_cli_error(cmd, "%s", err);
    g->d = ag_attention_dim(g->layer);
    g->heads = ag_attention_heads(g->layer);
    g->causal = ag_attention_causal(g->layer);
    for (int k = 0; k < 4; k++)
        ag_cli_note_flushed(cmd, g->mf, model, wnames[k]);
    if (ag_st_shape(g->bf, "x", &nd, x, err, sizeof(err)) != AG_OK)
        return !ag_cli_error(cmd, "%s", err);
    if (nd != 3 || x[2] != g->d || x[0] < 1 || x[1] < 1)
        return !ag_cli_error(cmd, "%s: tensor 'x' must be (B, T, %d) to fit the model", batch,
                             g->d);
    uint64_t values = ag_cli_attention_values((uint64_t)x[0], (uint64_t)g->heads, (uint64_t)x[1]);
    if (values > AG_CLI_MAX_VALUES)
        return !ag_cli_error(cmd,
                             "%s: tensor 'x' is [%dx%dx%d]: with %d head(s) its attention "
                             "weights would hold %llu values, more than %llu",
                             batch, x[0], x[1], x[2], g->heads, (unsigned long long)values,
                             (unsigned long long)AG_CLI_MAX_VALUES);
    if (!(g->tape = ag_tape_new()))
        return !ag_cli_error(cmd, "out of memory");
    g->x = ag_requires_grad(g->tape, ag_tensor_new(g->tape, 3, g->xshape));
    g->y = ag_tensor_new(g->tape, 3, g->xshape);
    if (!g->x || !g->y)
        return !ag_cli_error(cmd, "%s", ag_tape_error(g->tape));
    if (!ag_cli_read_tensor(cmd, g->bf, batch, "x", 3, g->xshape, g->x->data, 0, err,
                            sizeof(err)) ||
        !ag_cli_read_tensor(cmd, g->bf, batch, "y", 3, g->xshape, g->y->data, 0, err, sizeof(err)))
        return !ag_cli_error(cmd, "%s", err);
    return 1;
}

/* Finite inputs, yet a result beyond the precision's range: an error
 * naming the first tensor, and nothing written. */
static int results_finite(const grad_job *g)
{
    static const char *const names[] = {"out",     "attn",    "loss",    "grad.wq",
                                        "grad.wk", "grad.wv", "grad.wo", "grad.x"};
    const ag_tensor *t[8] = {g->out, g->attn, g->loss, NULL, NULL, NULL, NULL, g->x};
    for (int k = 0; k < 4; k++)
        t[3 + k] = ag_attention_param(g->layer, wnames[k]);
    for (int k = 0; k < 8; k++) {
        const ag_real *v = k < 3 ? t[k]->data : t[k]->grad;
        size_t i = ag_first_nonfinite(v, t[k]->size);
        if (i < t[k]->size)
            return !ag_cli_error(&ag_cmd_grad_info,
                                 "the result is not finite: '%s' holds %s at element %zu, from "
                                 "finite inputs too large for %s arithmetic (scale them down%s); "
                                 "nothing was written",
                                 names[k], isnan(v[i]) ? "NaN" : "Inf", i, AG_REAL_NAME,
#ifdef AG_REAL_DOUBLE
                                 "");
#else
                                 ", or use the double build");
#endif
    }
    return 1;
}

/* out, attn, loss and the gradients to --out, with signals held. */
static int write_outputs(const grad_job *g)
{
    char err[AG_CLI_ERR_LEN];
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    if (!w)
        return !ag_cli_error(&ag_cmd_grad_info, "out of memory");
    ag_st_add_tensor(w, "out", g->out);
    ag_st_add_tensor(w, "attn", g->attn);
    ag_st_add_tensor(w, "loss", g->loss);
    ag_attention_add(w, g->layer, 1); /* n_heads, causal, grad.wq .. grad.wo */
    ag_st_add(w, "grad.x", 3, g->xshape, g->x->grad);
    sigset_t held;
    ag_cli_hold_signals(1, &held);
    ag_status saved = ag_st_save(w, g->o->out_path, err, sizeof(err));
    ag_cli_hold_signals(0, &held);
    ag_st_writer_free(w);
    if (saved != AG_OK)
        ag_cli_error(&ag_cmd_grad_info, "%s", err);
    return saved == AG_OK;
}

int ag_cli_grad_run(const ag_grad_opts *o)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    grad_job g;
    memset(&g, 0, sizeof(g));
    g.o = o;
    int status = AG_EXIT_FAIL;
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    /* the output replaces its file: never one of the inputs, whatever name reaches it */
    const ag_cli_file files[] = {
        {"--model", o->model_path, 0, NULL},
        {"--batch", o->batch_path, 0, NULL},
        {"--out", o->out_path, 1, NULL},
    };
    int checked = ag_cli_check_files(cmd, files, 3);
    if (checked != AG_EXIT_OK)
        return checked;
    if (ag_st_load(o->model_path, &g.mf, err, sizeof(err)) != AG_OK ||
        ag_st_load(o->batch_path, &g.bf, err, sizeof(err)) != AG_OK) {
        ag_cli_error(cmd, "%s", err);
        goto done;
    }
    if (!read_inputs(&g))
        goto done;
    g.out = ag_attention_forward(g.tape, g.layer, g.x, &g.attn);
    g.loss = ag_mse(g.tape, g.out, g.y);
    if (ag_backward(g.tape, g.loss) != AG_OK) {
        ag_cli_error(cmd, "%s", ag_tape_error(g.tape));
        goto done;
    }
    if (!results_finite(&g) || !write_outputs(&g))
        goto done;
    printf("grad: B=%d T=%d d=%d heads=%d causal=%s loss=%.9g wrote %s\n", g.xshape[0], g.xshape[1],
           g.d, g.heads, g.causal ? "true" : "false", (double)g.loss->data[0],
           ag_quote(o->out_path, shown, sizeof(shown)));
    status = AG_EXIT_OK;
done:
    ag_tape_free(g.tape);
    ag_attention_free(g.layer);
    ag_st_free(g.mf);
    ag_st_free(g.bf);
    return status;
}
