/*
 * attention_file.c - an attention layer read from a safetensors file in
 * the format `attograd grad` documents, so that a model made with numpy or
 * PyTorch runs here unchanged: wq, wk, wv, wo, each (d, d), and metadata
 * n_heads (dividing d) and causal ("true" or "false"). The file is hostile
 * input: every setting and every weight is checked before it is used.
 */
#include "nn.h"
#include "../io/io.h"

#include <stdio.h>
#include <string.h>

static const char *const weight_names[4] = {"wq", "wk", "wv", "wo"};

/* d from wq, which must be square. */
static int read_dim(const ag_st_file *f, const char *path, int *d, char *err, size_t errlen)
{
    int nd, w[AG_MAX_DIMS];
    if (ag_st_shape(f, "wq", &nd, w, err, errlen) != AG_OK)
        return 0;
    if (nd != 2) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: tensor 'wq' has %d dims, must be square (d, d)", path,
               nd);
        return 0;
    }
    if (w[0] != w[1] || w[0] < 1) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: tensor 'wq' is [%dx%d], must be square (d, d)", path,
               w[0], w[1]);
        return 0;
    }
    *d = w[0];
    return 1;
}

/* The metadata: n_heads (a whole number dividing d) and causal (absent: false). */
static int read_config(const ag_st_file *f, const char *path, int d, int *heads, int *causal,
                       char *err, size_t errlen)
{
    const char *h = ag_st_meta(f, "n_heads"), *c = ag_st_meta(f, "causal");
    char q[AG_QUOTE_LEN];
    long v = 0;
    if (!h) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: metadata 'n_heads' is missing", path);
        return 0;
    }
    if (ag_parse_long(h, &v) != AG_PARSE_OK || v < 1 || v > d || d % v != 0) {
        ag_err(AG_ERR_ARG, err, errlen,
               "%s: metadata n_heads '%s' must be a whole number dividing "
               "d = %d",
               path, ag_quote(h, q, sizeof(q)), d);
        return 0;
    }
    *heads = (int)v;
    *causal = c && strcmp(c, "true") == 0;
    if (c && !*causal && strcmp(c, "false") != 0) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: metadata causal '%s' must be \"true\" or \"false\"",
               path, ag_quote(c, q, sizeof(q)));
        return 0;
    }
    return 1;
}

ag_attention *ag_attention_load(const ag_st_file *f, const char *path, char *err, size_t errlen)
{
    int d, heads, causal;
    if (!f || !path) {
        ag_err(AG_ERR_ARG, err, errlen, "ag_attention_load: %s is NULL", f ? "path" : "the file");
        return NULL;
    }
    if (!read_dim(f, path, &d, err, errlen) ||
        !read_config(f, path, d, &heads, &causal, err, errlen))
        return NULL;
    ag_attention *layer = ag_attention_new(d, heads, causal, NULL, err, errlen);
    for (int k = 0; layer && k < 4; k++) {
        ag_tensor *p = ag_attention_param(layer, weight_names[k]);
        if (ag_st_get_finite(f, weight_names[k], 2, p->shape, p->data, 0, err, errlen) != AG_OK) {
            ag_attention_free(layer);
            return NULL;
        }
    }
    return layer;
}

void ag_attention_add(ag_st_writer *w, ag_attention *att, int grads)
{
    if (!att) { /* sticky on w, as a NULL tensor is for ag_st_add_tensor */
        ag_st_writer_fail(w, AG_ERR_ARG, "ag_attention_add: the layer is NULL");
        return;
    }
    char heads[16], name[16];
    snprintf(heads, sizeof(heads), "%d", ag_attention_heads(att));
    ag_st_add_meta(w, "n_heads", heads);
    ag_st_add_meta(w, "causal", ag_attention_causal(att) ? "true" : "false");
    for (int k = 0; k < 4; k++) {
        ag_tensor *p = ag_attention_param(att, weight_names[k]);
        snprintf(name, sizeof(name), "%s%s", grads ? "grad." : "", weight_names[k]);
        ag_st_add(w, name, 2, p->shape, grads ? p->grad : p->data);
    }
}
