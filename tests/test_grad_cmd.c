/*
 * test_grad_cmd.c - `attograd grad` against an independent implementation:
 * the layer's math written here as plain loops in double, and every
 * gradient taken from that by central differences, so nothing of the
 * library's forward or backward is trusted. The files go through the real
 * command: weights and batch written with ag_st, the output read back.
 */
#include "test_util.h"
#include "run.h"

#include <unistd.h>

/* loss = mean((attention(x) - y)^2), the layer's math (docs/attention-layer.md),
 * in double. out and attn (either may be NULL) receive (B,T,d) and (B,H,T,T). */
static double reference(const double *x, const double *y, const double *const w[4], int B, int T,
                        int d, int H, int causal, double *out, double *attn)
{
    int dh = d / H;
    double *q = calloc((size_t)B * T * d, sizeof(double)),
           *k = calloc((size_t)B * T * d, sizeof(double));
    double *v = calloc((size_t)B * T * d, sizeof(double)),
           *o = calloc((size_t)B * T * d, sizeof(double));
    double *proj[3] = {q, k, v};
    for (int m = 0; m < 3; m++)
        for (int r = 0; r < B * T; r++)
            for (int j = 0; j < d; j++)
                for (int i = 0; i < d; i++)
                    proj[m][r * d + j] += x[r * d + i] * w[m][i * d + j];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                double s[64], max = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    double dot = 0;
                    for (int c = 0; c < dh; c++)
                        dot += q[(b * T + i) * d + h * dh + c] * k[(b * T + j) * d + h * dh + c];
                    s[j] = causal && j > i ? -INFINITY : dot / sqrt((double)dh);
                    max = fmax(max, s[j]);
                }
                for (int j = 0; j < T; j++)
                    sum += s[j] = exp(s[j] - max);
                for (int j = 0; j < T; j++) {
                    double p = s[j] / sum;
                    if (attn)
                        attn[((b * H + h) * T + i) * T + j] = p;
                    for (int c = 0; c < dh; c++)
                        o[(b * T + i) * d + h * dh + c] += p * v[(b * T + j) * d + h * dh + c];
                }
            }
    double loss = 0;
    for (int r = 0; r < B * T; r++)
        for (int j = 0; j < d; j++) {
            double z = 0;
            for (int i = 0; i < d; i++)
                z += o[r * d + i] * w[3][i * d + j];
            if (out)
                out[r * d + j] = z;
            loss += (z - y[r * d + j]) * (z - y[r * d + j]);
        }
    free(q), free(k), free(v), free(o);
    return loss / (B * T * d);
}

/* |got - want| within tol of the tensor's scale (max |want|), elementwise. */
static void assert_close(const char *name, const ag_real *got, const double *want, size_t n,
                         double tol)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    /* one assertion for the whole tensor: Check reports each passing one */
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol * fmax(fabs(want[i]), 1e-2 * scale)))
            ck_abort_msg("%s[%zu] = %.9g, reference %.9g", name, i, (double)got[i], want[i]);
}

static void check_config(int B, int T, int d, int H, int causal, uint64_t seed)
{
    char dir[256], model[320], batch[320], outp[320], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(model, sizeof(model), dir, "m.safetensors");
    file_path(batch, sizeof(batch), dir, "b.safetensors");
    file_path(outp, sizeof(outp), dir, "g.safetensors");
    ag_rng rng = ag_rng_new(seed);
    size_t nx = (size_t)B * T * d, nw = (size_t)d * d;
    ag_real *wr[4], *xr = malloc(nx * sizeof(ag_real)), *yr = malloc(nx * sizeof(ag_real));
    double *w[4], *x = malloc(nx * sizeof(double)), *y = malloc(nx * sizeof(double));
    for (int m = 0; m < 4; m++) {
        wr[m] = malloc(nw * sizeof(ag_real));
        w[m] = malloc(nw * sizeof(double));
        for (size_t i = 0; i < nw; i++)
            w[m][i] = wr[m][i] = (ag_real)(ag_rng_normal(&rng) / sqrt((double)d));
    }
    for (size_t i = 0; i < nx; i++) {
        x[i] = xr[i] = (ag_real)ag_rng_normal(&rng);
        y[i] = yr[i] = (ag_real)ag_rng_normal(&rng);
    }
    static const char *const names[4] = {"wq", "wk", "wv", "wo"};
    ag_st_writer *mw = ag_st_writer_new(AG_ST_REAL), *bw = ag_st_writer_new(AG_ST_REAL);
    char heads[8];
    snprintf(heads, sizeof(heads), "%d", H);
    ag_st_add_meta(mw, "n_heads", heads);
    ag_st_add_meta(mw, "causal", causal ? "true" : "false");
    for (int m = 0; m < 4; m++)
        ag_st_add(mw, names[m], 2, (int[]){d, d}, wr[m]);
    ag_st_add(bw, "x", 3, (int[]){B, T, d}, xr);
    ag_st_add(bw, "y", 3, (int[]){B, T, d}, yr);
    ck_assert_int_eq(ag_st_save(mw, model, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_st_save(bw, batch, err, sizeof(err)), AG_OK);

    run_proc run = run_cmd("grad", "--model", model, "--batch", batch, "--out", outp, NULL);
    run_assert_status(&run, 0);
    run_free(&run);
    ag_st_file *g;
    ck_assert_int_eq(ag_st_load(outp, &g, err, sizeof(err)), AG_OK);

    /* outputs and attention weights against the reference forward */
    double *out = malloc(nx * sizeof(double)),
           *attn = malloc((size_t)B * H * T * T * sizeof(double));
    double loss = reference(x, y, (const double *const *)w, B, T, d, H, causal, out, attn);
    size_t most = nx > nw ? nx : nw;
    if ((size_t)B * H * T * T > most)
        most = (size_t)B * H * T * T;
    ag_real *got = malloc(most * sizeof(ag_real));
    ck_assert_int_eq(ag_st_get(g, "out", 3, (int[]){B, T, d}, got, err, sizeof(err)), AG_OK);
    assert_close("out", got, out, nx, 1e-4);
    ck_assert_int_eq(ag_st_get(g, "attn", 4, (int[]){B, H, T, T}, got, err, sizeof(err)), AG_OK);
    assert_close("attn", got, attn, (size_t)B * H * T * T, 1e-4);
    ck_assert_int_eq(ag_st_get(g, "loss", 1, (int[]){1}, got, err, sizeof(err)), AG_OK);
    assert_close("loss", got, &loss, 1, 1e-4);

    /* every gradient against central differences of the reference */
    const double h = 1e-5;
    double *want = malloc((nx > nw ? nx : nw) * sizeof(double));
    for (int m = 0; m <= 4; m++) {
        double *p = m < 4 ? w[m] : x;
        size_t n = m < 4 ? nw : nx;
        for (size_t i = 0; i < n; i++) {
            double keep = p[i];
            p[i] = keep + h;
            double lp = reference(x, y, (const double *const *)w, B, T, d, H, causal, NULL, NULL);
            p[i] = keep - h;
            double lm = reference(x, y, (const double *const *)w, B, T, d, H, causal, NULL, NULL);
            p[i] = keep;
            want[i] = (lp - lm) / (2 * h);
        }
        char name[16];
        snprintf(name, sizeof(name), "grad.%s", m < 4 ? names[m] : "x");
        int ndim = m < 4 ? 2 : 3;
        ck_assert_int_eq(ag_st_get(g, name, ndim, m < 4 ? (int[]){d, d} : (int[]){B, T, d}, got,
                                   err, sizeof(err)),
                         AG_OK);
        assert_close(name, got, want, n, 1e-4);
    }
    ag_st_free(g);
    ag_st_writer_free(mw);
    ag_st_writer_free(bw);
    for (int m = 0; m < 4; m++)
        free(wr[m]), free(w[m]);
    free(xr), free(yr), free(x), free(y), free(out), free(attn), free(got), free(want);
    file_rmdir(dir);
}

START_TEST(test_grad_matches_reference)
{
    static const struct {
        int B, T, d, H, causal;
    } c[] = {
        {2, 5, 8, 1, 0},
        {2, 5, 8, 2, 1},
        {1, 4, 8, 4, 0},
        {3, 1, 4, 2, 1},
    };
    check_config(c[_i].B, c[_i].T, c[_i].d, c[_i].H, c[_i].causal, 100 + (uint64_t)_i);
}
END_TEST

Suite *suite_grad_cmd(void)
{
    Suite *s = suite_create("grad_cmd");
    TCase *tc = tcase_create("reference");
    tcase_add_loop_test(tc, test_grad_matches_reference, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}
