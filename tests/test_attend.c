/*
 * test_attend.c - `attograd attend`: the weights it writes (--out) are a
 * GPT's softmax weights, equal to a plain computation in double of the
 * same checkpoint (tests/gpt_ref.h), with integer ids and float32 weights
 * as other tools read them; the summary rows and heatmaps say what those
 * weights say; --png draws a grid; and every mistake is a clear message
 * with the right exit status.
 */
#include "gpt_ref.h"
#include "run.h"
#include "test_util.h"

#include <stdint.h>

#define VOCAB "\n ,:ABDEGNOabdeghinorst"

/* A checkpoint of a model with weights large enough for varied attention. */
static void write_model(const char *path, int layers, int heads, int seq, uint64_t seed)
{
    char err[256];
    ag_vocab *v = ag_vocab_from_chars(VOCAB, err, sizeof(err));
    ck_assert_msg(v != NULL, "%s", err);
    ag_gpt_config c = ag_gpt_defaults(ag_vocab_size(v));
    c.layers = layers, c.heads = heads, c.dim = 8, c.seq = seq;
    ag_rng rng = ag_rng_new(seed);
    ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
    ck_assert_msg(g != NULL, "%s", err);
    ag_tensor *p[64];
    const char *names[64];
    size_t n = ag_gpt_params(g, p, names, 64);
    for (size_t i = 0; i < n; i++)
        ag_fill_normal(p[i], &rng, p[i]->ndim == 1 ? 1 : 0, 0.7);
    ck_assert_int_eq(ag_gpt_save(g, v, path, err, sizeof(err)), AG_OK);
    ag_gpt_free(g);
    ag_vocab_free(v);
}

/* Tensor name of a safetensors file as attograd writes it: its dtype, its
 * shape (ndim, into shape) and where its bytes are. A plain reader of the
 * header's text, so the test does not take the library's word for it. */
static const unsigned char *find_tensor(const unsigned char *buf, size_t len, const char *name,
                                        char *dtype, int *ndim, long *shape)
{
    ck_assert_uint_ge(len, 8);
    size_t hlen = 0;
    for (int i = 0; i < 8; i++)
        hlen |= (size_t)buf[i] << (8 * i);
    ck_assert_uint_le(8 + hlen, len);
    char *header = strndup((const char *)buf + 8, hlen), key[64];
    snprintf(key, sizeof(key), "\"%s\":{\"dtype\":\"", name);
    const char *at = strstr(header, key);
    ck_assert_msg(at != NULL, "no tensor %s in %s", name, header);
    at += strlen(key);
    ck_assert_int_eq(sscanf(at, "%3[A-Z0-9]", dtype), 1);
    at = strstr(at, "\"shape\":[") + 9;
    *ndim = 0;
    while (*at != ']') {
        shape[(*ndim)++] = strtol(at, (char **)&at, 10);
        if (*at == ',')
            at++;
    }
    long begin, end;
    ck_assert_int_eq(sscanf(at, "],\"data_offsets\":[%ld,%ld]", &begin, &end), 2);
    free(header);
    ck_assert_uint_le(8 + hlen + (size_t)end, len);
    return buf + 8 + hlen + begin;
}

static double f32_at(const unsigned char *p, size_t i)
{
    uint32_t u = 0;
    for (int b = 0; b < 4; b++)
        u |= (uint32_t)p[4 * i + b] << (8 * b);
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* --out of the model at ckpt on prompt, checked against the plain
 * computation; returns the weights (the caller frees them). */
static double *check_out(const char *dir, const char *ckpt, const char *prompt, int want_T)
{
    char out[512];
    file_path(out, sizeof(out), dir, "attn.safetensors");
    run_proc p = run_cmd("attend", "--load", ckpt, "--prompt", prompt, "--out", out, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "saved: ");
    run_free(&p);
    size_t len;
    unsigned char *buf = (unsigned char *)file_read(out, &len);
    ck_assert_ptr_nonnull(buf);
    char dtype[4];
    int nd;
    long shape[8];
    const unsigned char *ids = find_tensor(buf, len, "ids", dtype, &nd, shape);
    ck_assert_str_eq(dtype, "I64");
    ck_assert_int_eq(nd, 1);
    ck_assert_int_eq(shape[0], want_T);
    /* the model, read by the library, and the reference computed from its weights */
    ag_gpt_file *f;
    char err[256];
    ck_assert_int_eq(ag_gpt_file_load(ckpt, &f, err, sizeof(err)), AG_OK);
    ag_gpt *g = ag_gpt_file_model(f, err, sizeof(err));
    ck_assert_ptr_nonnull(g);
    const ag_gpt_config *c = ag_gpt_get_config(g);
    int T = want_T, L = c->layers, H = c->heads, id[64];
    size_t n;
    ck_assert_int_eq(
        ag_vocab_encode(ag_gpt_file_vocab(f), prompt, strlen(prompt), id, &n, err, sizeof(err)),
        AG_OK);
    for (int t = 0; t < T; t++) {
        int64_t v = 0;
        for (int b = 0; b < 8; b++)
            v |= (int64_t)ids[8 * t + b] << (8 * b);
        ck_assert_int_eq(v, id[t]);
    }
    const unsigned char *attn = find_tensor(buf, len, "attn", dtype, &nd, shape);
    ck_assert_str_eq(dtype, "F32");
    ck_assert_int_eq(nd, 4);
    ck_assert(shape[0] == L && shape[1] == H && shape[2] == T && shape[3] == T);
    size_t cells = (size_t)L * H * T * T;
    double *want = malloc(cells * sizeof(double)), *got = malloc(cells * sizeof(double));
    gpt_ref_attention(g, id, T, want);
    double worst = 0;
    int sharp = 0;
    for (size_t i = 0; i < cells; i++) {
        got[i] = f32_at(attn, i);
        worst = fmax(worst, fabs(got[i] - want[i]));
        sharp |= got[i] > 0.9 && (i % T) != 0; /* not only the first row's 1 */
        if ((int)(i % T) > (int)(i / T % T))
            ck_assert_msg(got[i] == 0, "element %zu above the diagonal is %g", i, got[i]);
    }
    ck_assert_msg(worst <= 1e-5, "attend --out differs from the reference by %g", worst);
    ck_assert(sharp);
    free(want);
    free(buf);
    ag_gpt_free(g);
    ag_gpt_file_free(f);
    return got;
}

START_TEST(test_out_equals_reference)
{
    char dir[256], ckpt[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ckpt, sizeof(ckpt), dir, "m.safetensors");
    write_model(ckpt, 2, 2, 16, 1);
    free(check_out(dir, ckpt, "ANNA:\nGood bread", 16));
    write_model(ckpt, 3, 4, 12, 2);
    free(check_out(dir, ckpt, "BEN: going", 10));
    /* beyond the context: the first 12 characters */
    free(check_out(dir, ckpt, "BEN: going on to the inn", 12));
    file_rmdir(dir);
}
END_TEST

/* The number under head (l, h)'s column k of the summary, as printed. */
static double summary_value(const char *out, int l, int h, int k)
{
    char row[64];
    snprintf(row, sizeof(row), "layer %d head %d ", l, h);
    const char *at = text_line(out, row);
    ck_assert_msg(at != NULL, "no summary row '%s' in:\n%s", row, out);
    at += strlen(row);
    double v = 0;
    for (int i = 0; i <= k; i++)
        v = strtod(at, (char **)&at);
    return v;
}

START_TEST(test_text_output)
{
    char dir[256], ckpt[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ckpt, sizeof(ckpt), dir, "m.safetensors");
    write_model(ckpt, 2, 2, 16, 3);
    const char *prompt = "ANNA:\nGo on", *shown = "ANNA:\xe2\x86\xb5Go\xe2\x90\xa3on";
    int T = 11;
    double *w = check_out(dir, ckpt, prompt, T);
    run_proc p = run_cmd("attend", "--load", ckpt, "--prompt", prompt, NULL);
    run_assert_status(&p, 0);
    ck_assert_uint_eq(p.err_len, 0);
    run_assert_has(p.out, "2 blocks of 2 heads, dim 8, context 16; the prompt's 11 characters:");
    run_assert_has(p.out, shown); /* the newline and the space made visible */
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) {
            const double *a = w + (size_t)(l * 2 + h) * T * T;
            /* back, self, previous, word, newline, first: what the weights say */
            double back = 0, self = 0, prev = 0, first = 0, nl = 0, word = 0;
            for (int i = 0; i < T; i++) {
                for (int j = 0; j <= i; j++)
                    back += a[i * T + j] * (i - j) / T;
                self += a[i * T + i] / T;
                first += a[i * T] / T;
                prev += i ? a[i * T + i - 1] / (T - 1) : 0;
                nl += i > 5 ? a[i * T + 5] / (T - 6) : 0; /* the newline is position 5 */
            }
            /* the words: "ANNA:" (0..4), "Go" (6, 7), "on" (9, 10) */
            static const int start[11] = {0, 0, 0, 0, 0, -1, 6, 6, -1, 9, 9};
            for (int i = 0; i < T; i++)
                for (int j = start[i]; start[i] >= 0 && j <= i; j++)
                    word += a[i * T + j] / 9;
            double want[6] = {back, self, prev, word, nl, first};
            for (int k = 0; k < 6; k++)
                ck_assert_msg(fabs(summary_value(p.out, l, h, k) - want[k]) <= 0.0051,
                              "layer %d head %d column %d: printed %g, the weights say %g", l, h, k,
                              summary_value(p.out, l, h, k), want[k]);
        }
    /* the heatmap of layer 1 head 0: the percentages of the weights */
    const char *map = strstr(p.out, "layer 1 head 0 (row:");
    ck_assert_ptr_nonnull(map);
    const char *row = strstr(map, "\n  G  "); /* query 6 */
    ck_assert_ptr_nonnull(row);
    row += 6;
    for (int j = 0; j <= 6; j++) {
        long pct = lround(w[(size_t)(2 * T + 6) * T + j] * 100);
        char cell[8];
        ck_assert_int_eq(sscanf(row, "%7s", cell), 1);
        row = strstr(row, cell) + strlen(cell);
        if (pct == 0)
            ck_assert_str_eq(cell, ".");
        else
            ck_assert_int_eq(atol(cell), pct);
    }
    run_free(&p);
    free(w);
    /* --layer and --head choose the rows and the heatmaps */
    p = run_cmd("attend", "--load", ckpt, "--prompt", prompt, "--layer", "1", "--head", "0", NULL);
    run_assert_status(&p, 0);
    ck_assert_ptr_nonnull(text_line(p.out, "layer 1 head 0 "));
    ck_assert_ptr_null(text_line(p.out, "layer 0 head 0 "));
    ck_assert_ptr_null(text_line(p.out, "layer 1 head 1 "));
    ck_assert_ptr_null(strstr(p.out, "layer 0 head 1 ("));
    run_free(&p);
    /* a long prompt: the last rows, one shade per weight */
    write_model(ckpt, 2, 2, 20, 3);
    p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA:\nGo on, go on to the", "--head", "1",
                NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.err, "the prompt has 25 characters, the model's context 20: the first 20");
    run_assert_has(p.out, "layer 0 head 1 (the last 16 of 20 rows;");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_png)
{
    if (!run_have("gnuplot"))
        return;
    char dir[256], ckpt[512], png[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ckpt, sizeof(ckpt), dir, "m.safetensors");
    file_path(png, sizeof(png), dir, "heads.png");
    write_model(ckpt, 2, 2, 16, 4);
    run_proc p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA: go", "--png", png, NULL);
    run_assert_picture(&p, "plot: ", png, dir, "heads.png m.safetensors");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_errors)
{
    char dir[256], ckpt[512], bin[512], png[512];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin));
    file_path(ckpt, sizeof(ckpt), dir, "m.safetensors");
    file_path(png, sizeof(png), dir, "a.png");
    write_model(ckpt, 2, 2, 16, 5);
    static const char *const usage = "usage: attograd attend";
    run_proc p = run_cmd("attend", "--prompt", "ANNA", NULL);
    run_assert_usage(&p, usage);
    run_assert_has(p.err, "--load CKPT is required");
    run_free(&p);
    p = run_cmd("attend", "--load", ckpt, NULL);
    run_assert_usage(&p, usage);
    run_assert_has(p.err, "--prompt TEXT is required");
    run_free(&p);
    p = run_cmd("attend", "--load", ckpt, "--prompt", "", NULL);
    run_assert_usage(&p, usage);
    run_assert_has(p.err, "--prompt is empty");
    run_free(&p);
    p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA", "--layer", "-1", NULL);
    run_assert_usage(&p, usage);
    run_free(&p);
    p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA", "--layer", "2", NULL);
    run_assert_status(&p, 2);
    run_assert_has(p.err, "attograd attend: --layer 2: ");
    run_assert_has(p.err, "m.safetensors has 2 blocks (0..1)");
    run_free(&p);
    p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA", "--head", "2", NULL);
    run_assert_status(&p, 2);
    run_assert_has(p.err, "has 2 heads per block (0..1)");
    run_free(&p);
    p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA!", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "attograd attend: --prompt: character '!' (U+0021) on line 1 is not in "
                          "the vocabulary of ");
    ck_assert_uint_eq(p.out_len, 0);
    run_free(&p);
    p = run_cmd("attend", "--load", dir, "--prompt", "ANNA", NULL);
    run_assert_status(&p, 1);
    run_free(&p);
    /* no gnuplot: said before any work, and nothing written */
    const char *args[] = {"attend", "--load", ckpt, "--prompt", "ANNA", "--png", png, NULL};
    run_opts o = {.path = bin};
    p = run_args(args, &o);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "gnuplot is not installed");
    ck_assert_uint_eq(p.out_len, 0);
    run_free(&p);
    char listing[256];
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin m.safetensors");
    /* an output that is the checkpoint */
    p = run_cmd("attend", "--load", ckpt, "--prompt", "ANNA", "--out", ckpt, NULL);
    run_assert_status(&p, 2);
    run_assert_has(p.err, "would overwrite the --load file");
    run_free(&p);
    p = run_cmd("attend", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "--out FILE");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

Suite *suite_attend(void)
{
    Suite *s = suite_create("attend");
    TCase *tc = tcase_create("attend");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_out_equals_reference);
    tcase_add_test(tc, test_text_output);
    tcase_add_test(tc, test_png);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}
