/*
 * grad.c - `attograd grad`: one forward and backward pass of the attention
 * layer with mse loss, on weights and a batch from files, writing outputs
 * and gradients to a file, so anyone can compare attograd with PyTorch or
 * numpy on the same numbers (DESIGN.md's contract).
 *
 *   model: wq, wk, wv, wo (d, d); metadata n_heads, causal ("true"/"false")
 *   batch: x, y (B, T, d)
 *   out:   out (B,T,d), attn (B,H,T,T), loss (1), grad.wq/wk/wv/wo (d,d), grad.x (B,T,d)
 */
#include "cli.h"

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
    const char *h = ag_st_meta(f, "n_heads"), *c = ag_st_meta(f, "causal");
    if (!h) {
        fprintf(stderr, "attograd grad: %s: metadata 'n_heads' is missing\n", path);
        return 0;
    }
    char *end;
    long v = strtol(h, &end, 10);
    if (!*h || *end || v < 1 || v > d || d % v != 0) {
        fprintf(stderr, "attograd grad: %s: metadata n_heads '%s' must be a whole number dividing d = %d\n",
                path, h, d);
        return 0;
    }
    *heads = (int)v;
    if (!c || strcmp(c, "false") == 0) {
        *causal = 0;   /* absent means not causal */
    } else if (strcmp(c, "true") == 0) {
        *causal = 1;
    } else {
        fprintf(stderr, "attograd grad: %s: metadata causal '%s' must be \"true\" or \"false\"\n", path, c);
        return 0;
    }
    return 1;
}

int ag_cmd_grad(int argc, char **argv)
{
    const ag_command *cmd = &ag_cmd_grad_info;
    const char *model_path = NULL, *batch_path = NULL, *out_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ag_cli_is_help(argv[i]))
            return print_help(cmd);
        if ((r = ag_cli_value(cmd, argc, argv, &i, "--model", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            model_path = v;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--batch", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            batch_path = v;
        } else if ((r = ag_cli_value(cmd, argc, argv, &i, "--out", &v))) {
            if (r < 0)
                return AG_EXIT_USAGE;
            out_path = v;
        } else {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
    }
    if (!model_path || !batch_path || !out_path)
        return ag_cli_usage_error(cmd, "--model, --batch and --out are all required");

    int status = AG_EXIT_FAIL;
    char err[512];
    ag_st_file *mf = NULL, *bf = NULL;
    ag_attention *layer = NULL;
    ag_tape *tape = NULL;
    ag_st_writer *w = NULL;

    if (ag_st_load(model_path, &mf, err, sizeof(err)) != AG_OK ||
        ag_st_load(batch_path, &bf, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "attograd grad: %s\n", err);
        goto done;
    }
    /* d from wq; every other shape must agree with it */
    int nd, wshape[AG_MAX_DIMS];
    if (ag_st_shape(mf, "wq", &nd, wshape, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "attograd grad: %s\n", err);
        goto done;
    }
    if (nd != 2 || wshape[0] != wshape[1] || wshape[0] < 1) {
        fprintf(stderr, "attograd grad: %s: tensor 'wq' must be square (d, d)\n", model_path);
        goto done;
    }
    int d = wshape[0], heads, causal;
    if (!read_config(mf, model_path, d, &heads, &causal))
        goto done;
    int xshape[AG_MAX_DIMS];
    if (ag_st_shape(bf, "x", &nd, xshape, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "attograd grad: %s\n", err);
        goto done;
    }
    if (nd != 3 || xshape[2] != d || xshape[0] < 1 || xshape[1] < 1) {
        fprintf(stderr, "attograd grad: %s: tensor 'x' must be (B, T, %d) to fit the model\n",
                batch_path, d);
        goto done;
    }
    layer = ag_attention_new(d, heads, causal, NULL, err, sizeof(err));
    tape = ag_tape_new();
    if (!layer || !tape) {
        fprintf(stderr, "attograd grad: %s\n", layer ? "out of memory" : err);
        goto done;
    }
    static const char *const wnames[4] = {"wq", "wk", "wv", "wo"};
    for (int k = 0; k < 4; k++) {
        ag_tensor *p = ag_attention_param(layer, wnames[k]);
        if (ag_st_get(mf, wnames[k], 2, p->shape, p->data, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "attograd grad: %s\n", err);
            goto done;
        }
    }
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 3, xshape));
    ag_tensor *y = ag_tensor_new(tape, 3, xshape);
    if (!x || !y) {
        fprintf(stderr, "attograd grad: %s\n", ag_tape_error(tape));
        goto done;
    }
    if (ag_st_get(bf, "x", 3, xshape, x->data, err, sizeof(err)) != AG_OK ||
        ag_st_get(bf, "y", 3, xshape, y->data, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "attograd grad: %s\n", err);
        goto done;
    }
    ag_tensor *attn;
    ag_tensor *out = ag_attention_forward(tape, layer, x, &attn);
    ag_tensor *loss = ag_mse(tape, out, y);
    if (ag_backward(tape, loss) != AG_OK) {
        fprintf(stderr, "attograd grad: %s\n", ag_tape_error(tape));
        goto done;
    }

    w = ag_st_writer_new(AG_ST_REAL);
    if (!w) {
        fprintf(stderr, "attograd grad: out of memory\n");
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
    if (ag_st_save(w, out_path, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "attograd grad: %s\n", err);
        goto done;
    }
    printf("grad: B=%d T=%d d=%d heads=%d causal=%s loss=%.9g wrote %s\n", xshape[0], xshape[1], d,
           heads, causal ? "true" : "false", (double)loss->data[0], out_path);
    status = AG_EXIT_OK;
done:
    ag_st_writer_free(w);
    ag_tape_free(tape);
    ag_attention_free(layer);
    ag_st_free(mf);
    ag_st_free(bf);
    return status;
}
