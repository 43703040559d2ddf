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
#include "opts.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ag_command ag_cmd_grad_info = {
    "grad", ag_cmd_grad,
    "attograd grad --model M.safetensors --batch B.safetensors --out G.safetensors",
    "one forward/backward of the attention layer on files, for comparison",
};

static int print_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "One forward and backward pass of the attention layer with mse loss.\n\n"
           "  --model FILE   wq, wk, wv, wo, each (d, d); metadata n_heads and causal\n"
           "                 (\"true\" or \"false\")\n"
           "  --batch FILE   x and y, each (B, T, d)\n"
           "  --out FILE     written: out (B,T,d), attn (B,H,T,T), loss (1),\n"
           "                 grad.wq, grad.wk, grad.wv, grad.wo (d,d), grad.x (B,T,d)\n\n"
           "Files are safetensors (F32 or F64 in; %s out). Row vectors: Q = x wq, ...,\n"
           "out = concat_h(softmax(Q_h K_h^T / sqrt(dh)) V_h) wo; loss = mean((out - y)^2).\n",
           cmd->usage, AG_ST_REAL == AG_ST_F32 ? "F32" : "F64");
    return AG_EXIT_OK;
}

/* The model's metadata: n_heads (an integer dividing d) and causal. */
static int read_config(const ag_st_file *f, const char *path, int d, int *heads, int *causal)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    const char *h = ag_st_meta(f, "n_heads"), *c = ag_st_meta(f, "causal");
    char q[AG_CLI_QUOTE_LEN];
    if (!h) {
        ag_cli_error(cmd, "%s: metadata 'n_heads' is missing", path);
        return 0;
    }
    long v = 0;
    if (ag_cli_parse_long(h, &v) != AG_PARSE_OK || v < 1 || v > d || d % v != 0) {
        ag_cli_error(cmd, "%s: metadata n_heads '%s' must be a whole number dividing d = %d", path,
                     ag_cli_quote(h, q, sizeof(q)), d);
        return 0;
    }
    *heads = (int)v;
    if (!c || strcmp(c, "false") == 0) {
        *causal = 0;   /* absent means not causal */
    } else if (strcmp(c, "true") == 0) {
        *causal = 1;
    } else {
        ag_cli_error(cmd, "%s: metadata causal '%s' must be \"true\" or \"false\"", path,
                     ag_cli_quote(c, q, sizeof(q)));
        return 0;
    }
    return 1;
}

/* The first of n buffers (v[k] holding size[k] values) with a NaN or Inf:
 * its index, and *elem; or -1. Finite inputs can still overflow (targets
 * of 1e20 square to Inf in float), and a file of Inf is no answer. */
static int first_nonfinite(const ag_real *const *v, const size_t *size, int n, size_t *elem)
{
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < size[k]; i++)
            if (!isfinite(v[k][i])) {
                *elem = i;
                return k;
            }
    return -1;
}

int ag_cli_grad_parse(int argc, char **argv, ag_grad_opts *o)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ag_cli_is_help(argv[i]))
            return AG_CLI_HELP;
        if ((r = ag_cli_path(cmd, argc, argv, &i, "--model", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->model_path = v;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--batch", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->batch_path = v;
        } else if ((r = ag_cli_path(cmd, argc, argv, &i, "--out", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            o->out_path = v;
        } else if (argv[i][0] == '-') {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else {
            return ag_cli_usage_error(cmd, "unexpected argument '%s' (options start with --)", argv[i]);
        }
    }
    const char *missing = !o->model_path ? "--model" : !o->batch_path ? "--batch"
                        : !o->out_path   ? "--out"   : NULL;
    if (missing)
        return ag_cli_usage_error(cmd, "%s is missing (--model, --batch and --out are all required)",
                                  missing);
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

int ag_cli_grad_run(const ag_grad_opts *o)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    const char *model_path = o->model_path, *batch_path = o->batch_path, *out_path = o->out_path;
    int status = AG_EXIT_FAIL;
    char err[AG_CLI_ERR_LEN], shown[AG_IO_SHOW_LEN];
    ag_st_file *mf = NULL, *bf = NULL;
    ag_attention *layer = NULL;
    ag_tape *tape = NULL;
    ag_st_writer *w = NULL;

    /* the output replaces its file: never one of the inputs, whatever name reaches it */
    const ag_cli_file files[] = {
        {"--model", model_path, 0, NULL},
        {"--batch", batch_path, 0, NULL},
        {"--out", out_path, 1, NULL},
    };
    int checked = ag_cli_check_files(cmd, files, 3);
    if (checked != AG_EXIT_OK)
        return checked;
    if (ag_st_load(model_path, &mf, err, sizeof(err)) != AG_OK ||
        ag_st_load(batch_path, &bf, err, sizeof(err)) != AG_OK) {
        ag_cli_error(cmd, "%s", err);
        goto done;
    }
    /* d from wq; every other shape must agree with it */
    int nd, wshape[AG_MAX_DIMS];
    if (ag_st_shape(mf, "wq", &nd, wshape, err, sizeof(err)) != AG_OK) {
        ag_cli_error(cmd, "%s", err);
        goto done;
    }
    if (nd != 2 || wshape[0] != wshape[1] || wshape[0] < 1) {
        if (nd == 2)
            ag_cli_error(cmd, "%s: tensor 'wq' is [%dx%d], must be square (d, d)", model_path,
                         wshape[0], wshape[1]);
        else
            ag_cli_error(cmd, "%s: tensor 'wq' has %d dims, must be square (d, d)", model_path, nd);
        goto done;
    }
    int d = wshape[0], heads, causal;
    if (!read_config(mf, model_path, d, &heads, &causal))
        goto done;
    int xshape[AG_MAX_DIMS];
    if (ag_st_shape(bf, "x", &nd, xshape, err, sizeof(err)) != AG_OK) {
        ag_cli_error(cmd, "%s", err);
        goto done;
    }
    if (nd != 3 || xshape[2] != d || xshape[0] < 1 || xshape[1] < 1) {
        ag_cli_error(cmd, "%s: tensor 'x' must be (B, T, %d) to fit the model", batch_path, d);
        goto done;
    }
    uint64_t attn_values = ag_cli_attention_values((uint64_t)xshape[0], (uint64_t)heads,
                                                   (uint64_t)xshape[1]);
    if (attn_values > AG_CLI_MAX_VALUES) {
        ag_cli_error(cmd,
                     "%s: tensor 'x' is [%dx%dx%d]: with %d head(s) its attention "
                     "weights would hold %llu values, more than %llu",
                     batch_path, xshape[0], xshape[1], xshape[2], heads,
                     (unsigned long long)attn_values, (unsigned long long)AG_CLI_MAX_VALUES);
        goto done;
    }
    layer = ag_attention_new(d, heads, causal, NULL, err, sizeof(err));
    tape = ag_tape_new();
    if (!layer || !tape) {
        ag_cli_error(cmd, "%s", layer ? "out of memory" : err);
        goto done;
    }
    static const char *const wnames[4] = {"wq", "wk", "wv", "wo"};
    for (int k = 0; k < 4; k++) {
        ag_tensor *p = ag_attention_param(layer, wnames[k]);
        if (!ag_cli_read_tensor(cmd, mf, model_path, wnames[k], 2, p->shape, p->data, 0, err,
                                sizeof(err))) {
            ag_cli_error(cmd, "%s", err);
            goto done;
        }
    }
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 3, xshape));
    ag_tensor *y = ag_tensor_new(tape, 3, xshape);
    if (!x || !y) {
        ag_cli_error(cmd, "%s", ag_tape_error(tape));
        goto done;
    }
    if (!ag_cli_read_tensor(cmd, bf, batch_path, "x", 3, xshape, x->data, 0, err, sizeof(err)) ||
        !ag_cli_read_tensor(cmd, bf, batch_path, "y", 3, xshape, y->data, 0, err, sizeof(err))) {
        ag_cli_error(cmd, "%s", err);
        goto done;
    }
    ag_tensor *attn;
    ag_tensor *out = ag_attention_forward(tape, layer, x, &attn);
    ag_tensor *loss = ag_mse(tape, out, y);
    if (ag_backward(tape, loss) != AG_OK) {
        ag_cli_error(cmd, "%s", ag_tape_error(tape));
        goto done;
    }
    /* finite inputs, yet a result beyond the precision's range: an error
     * naming the first tensor, and nothing written */
    static const char *const result_names[] = {"out", "attn", "loss", "grad.wq", "grad.wk",
                                               "grad.wv", "grad.wo", "grad.x"};
    const ag_real *results[8] = {out->data, attn->data, loss->data};
    size_t sizes[8] = {out->size, attn->size, loss->size};
    for (int k = 0; k < 4; k++) {
        const ag_tensor *p = ag_attention_param(layer, wnames[k]);
        results[3 + k] = p->grad;
        sizes[3 + k] = p->size;
    }
    results[7] = x->grad;
    sizes[7] = x->size;
    size_t elem = 0;
    int bad = first_nonfinite(results, sizes, 8, &elem);
    if (bad >= 0) {
        double v = results[bad][elem];
        ag_cli_error(cmd,
                     "the result is not finite: '%s' holds %s at element %zu, from finite "
                     "inputs too large for %s arithmetic (scale them down%s); nothing was written",
                     result_names[bad], isnan(v) ? "NaN" : "Inf", elem, AG_REAL_NAME,
#ifdef AG_REAL_DOUBLE
                     "");
#else
                     ", or use the double build");
#endif
        goto done;
    }

    w = ag_st_writer_new(AG_ST_REAL);
    if (!w) {
        ag_cli_error(cmd, "out of memory");
        goto done;
    }
    char heads_str[16];
    snprintf(heads_str, sizeof(heads_str), "%d", heads);
    ag_st_add_meta(w, "n_heads", heads_str);
    ag_st_add_meta(w, "causal", causal ? "true" : "false");
    ag_st_add_tensor(w, "out", out);
    ag_st_add_tensor(w, "attn", attn);
    ag_st_add_tensor(w, "loss", loss);
    for (int k = 0; k < 4; k++) {
        char name[16];
        ag_tensor *p = ag_attention_param(layer, wnames[k]);
        snprintf(name, sizeof(name), "grad.%s", wnames[k]);
        ag_st_add(w, name, 2, p->shape, p->grad);
    }
    ag_st_add(w, "grad.x", 3, xshape, x->grad);
    sigset_t held;
    ag_cli_hold_signals(1, &held);
    ag_status saved = ag_st_save(w, out_path, err, sizeof(err));
    ag_cli_hold_signals(0, &held);
    if (saved != AG_OK) {
        ag_cli_error(cmd, "%s", err);
        goto done;
    }
    printf("grad: B=%d T=%d d=%d heads=%d causal=%s loss=%.9g wrote %s\n", xshape[0], xshape[1], d,
           heads, causal ? "true" : "false", (double)loss->data[0],
           ag_io_show(out_path, shown, sizeof(shown)));
    status = AG_EXIT_OK;
done:
    ag_st_writer_free(w);
    ag_tape_free(tape);
    ag_attention_free(layer);
    ag_st_free(mf);
    ag_st_free(bf);
    return status;
}
