/*
 * explain_posenc.c - `attograd explain posenc`: what a positional encoding
 * adds to each token's vector. The sinusoidal table of the Transformer
 * paper, or (with --load) the learned table `pos` of a checkpoint that
 * `attograd train --posenc learned --save` wrote, shown as numbers and as
 * the cosine similarity of its rows; --plot draws both with gnuplot.
 */
#include "opts.h"
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What is printed of a table: the first positions and columns (all of them
 * are plotted). */
enum { SHOW_ROWS = 12, SHOW_COLS = 8 };

static const ag_option options[] = {
    AG_INT(ag_explain_opts, "--seq", seq, 1, AG_EXPLAIN_MAX_SEQ, 8, "T",
           "positions (default %D, %R)"),
    AG_INT(ag_explain_opts, "--dim", dim, 1, AG_EXPLAIN_MAX_SEQ, 16, "D",
           "width of each position's vector (default %D, %R)"),
    AG_PATH(ag_explain_opts, "--load", load, "FILE",
            "show the learned table 'pos' of a safetensors file instead,\n"
            "such as a checkpoint of attograd train --posenc learned"),
    AG_PATH(ag_explain_opts, "--plot", plot, "FILE.png",
            "draw the table and the similarity with gnuplot (exit 1\n"
            "when gnuplot is not installed)"),
};

static const ag_command explain_posenc_info = {
    .name = "explain posenc",
    .usage = "attograd explain posenc [--seq T] [--dim D] [--load FILE] [--plot FILE.png]",
    .summary = "positional encodings, as numbers and as a picture",
    .options = options,
    .n_options = AG_CLI_COUNT(options),
    .help_width = 19,
};

void ag_cli_explain_posenc_help(void)
{
    printf("usage: %s\n\n"
           "The positional encoding that is added to each token's vector, x'[t] = x[t] +\n"
           "PE[t]: by default the sinusoidal table of the Transformer paper,\n"
           "PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(t / 10000^(2i/d)),\n"
           "with the cosine similarity of its rows (which depends only on t - u).\n"
           "At most %d positions and %d columns are printed; --plot draws them all.\n\n",
           explain_posenc_info.usage, SHOW_ROWS, SHOW_COLS);
    ag_cli_print_options(&explain_posenc_info);
}

int ag_cli_explain_posenc_parse(int argc, char **argv, ag_explain_opts *o)
{
    const ag_command *cmd = &explain_posenc_info;
    uint64_t given;
    o->topic = AG_EXPLAIN_POSENC;
    int r = ag_cli_parse(cmd, argc, argv, o, &given);
    if (r != AG_CLI_GO)
        return r;
    if (o->load && (ag_cli_given(cmd, given, "--seq") || ag_cli_given(cmd, given, "--dim")))
        return ag_cli_usage_error(cmd, "--load takes --seq and --dim from the file; give neither");
    if (o->load && o->plot && strcmp(o->load, o->plot) == 0)
        return ag_cli_usage_error(cmd, "--load and --plot both name '%s'", o->load);
    return AG_CLI_GO;
}

/* The table 'pos' of a safetensors file, (T, d) into a new array. */
static double *load_table(const char *path, int *T, int *d)
{
    ag_st_file *f = NULL;
    char err[512];
    int nd, shape[AG_MAX_DIMS];
    double *pe = NULL;
    ag_real *raw = NULL;
    if (ag_st_load(path, &f, err, sizeof(err)) != AG_OK)
        goto fail;
    if (!ag_st_dtype(f, "pos")) {
        snprintf(err, sizeof(err), "%s has no tensor 'pos' (a learned positional encoding: "
                 "attograd train --posenc learned --save FILE)", path);
        goto fail;
    }
    if (ag_st_shape(f, "pos", &nd, shape, err, sizeof(err)) != AG_OK)
        goto fail;
    if (nd != 2 || shape[0] > AG_EXPLAIN_MAX_SEQ || shape[1] > AG_EXPLAIN_MAX_SEQ ||
        shape[0] < 1 || shape[1] < 1) {
        snprintf(err, sizeof(err), "%s: tensor 'pos' must be (T, d) with T and d in 1..%d",
                 path, AG_EXPLAIN_MAX_SEQ);
        goto fail;
    }
    size_t n = (size_t)shape[0] * (size_t)shape[1];
    raw = malloc(n * sizeof(*raw));
    pe = calloc(n, sizeof(*pe));
    if (!raw || !pe) {
        snprintf(err, sizeof(err), "out of memory");
        goto fail;
    }
    if (ag_st_get(f, "pos", 2, shape, raw, err, sizeof(err)) != AG_OK)
        goto fail;
    if (ag_first_nonfinite(raw, n) < n) {
        snprintf(err, sizeof(err), "%s: tensor 'pos' holds a NaN or Inf", path);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        pe[i] = (double)raw[i];
    *T = shape[0];
    *d = shape[1];
    free(raw);
    ag_st_free(f);
    return pe;
fail:
    ag_cli_error(&ag_cmd_explain_info, "%s", err);
    free(raw);
    free(pe);
    ag_st_free(f);
    return NULL;
}

/* The sinusoidal table, as the library makes it. */
static double *sinusoidal_table(int T, int d)
{
    char err[256];
    ag_posenc *pe = ag_posenc_new(AG_POSENC_SINUSOIDAL, T, d, NULL, err, sizeof(err));
    double *v = pe ? calloc((size_t)T * (size_t)d, sizeof(*v)) : NULL;
    if (!v) {
        ag_cli_error(&ag_cmd_explain_info, "%s", pe ? "out of memory" : err);
        ag_posenc_free(pe);
        return NULL;
    }
    const ag_real *src = ag_posenc_values(pe);
    for (size_t i = 0; i < (size_t)T * (size_t)d; i++)
        v[i] = (double)src[i];
    ag_posenc_free(pe);
    return v;
}

/* sim[t][u] = <PE[t], PE[u]> / (|PE[t]| |PE[u]|), 0 where a row is zero. */
static void cosine_similarity(const double *pe, int T, int d, double *sim)
{
    for (int t = 0; t < T; t++) {
        for (int u = 0; u < T; u++) {
            double dot = 0, nt = 0, nu = 0;
            for (int c = 0; c < d; c++) {
                dot += pe[(size_t)t * d + c] * pe[(size_t)u * d + c];
                nt += pe[(size_t)t * d + c] * pe[(size_t)t * d + c];
                nu += pe[(size_t)u * d + c] * pe[(size_t)u * d + c];
            }
            sim[(size_t)t * T + u] = nt > 0 && nu > 0 ? dot / sqrt(nt * nu) : 0;
        }
    }
}

/* The first SHOW_ROWS x SHOW_COLS of an rows x cols matrix, with labels. */
static void print_table(const double *m, int rows, int cols, const char *row_name,
                        const char *col_name)
{
    int r = rows < SHOW_ROWS ? rows : SHOW_ROWS, c = cols < SHOW_COLS ? cols : SHOW_COLS;
    printf("  %4s %s", row_name, col_name);
    for (int j = 0; j < c; j++)
        printf("%s%6d", j ? " " : "", j);
    printf("%s\n", c < cols ? "  ..." : "");
    for (int i = 0; i < r; i++) {
        printf("  %4d %*s", i, (int)strlen(col_name), "");
        for (int j = 0; j < c; j++)
            printf("%s%6.2f", j ? " " : "", m[(size_t)i * cols + j] + 0.0);
        printf("%s\n", c < cols ? "  ..." : "");
    }
    if (r < rows)
        printf("  ... (%d more)\n", rows - r);
}

int ag_cli_explain_posenc_run(const ag_explain_opts *o)
{
    if (o->plot && !ag_cli_have_program("gnuplot")) {   /* before any work */
        ag_cli_error(&ag_cmd_explain_info, "gnuplot is not installed, so no plot "
                     "(apt-get install gnuplot-nox)");
        return AG_EXIT_FAIL;
    }
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    const ag_cli_file files[2] = {{"--plot", o->plot, 1, NULL}, {"--load", o->load, 0, NULL}};
    int checked = ag_cli_check_files(&ag_cmd_explain_info, files, 2);
    if (checked != AG_EXIT_OK)
        return checked;
    int T = o->seq, d = o->dim;
    double *pe = o->load ? load_table(o->load, &T, &d) : sinusoidal_table(T, d);
    if (!pe)
        return AG_EXIT_FAIL;
    double *sim = calloc((size_t)T * (size_t)T, sizeof(*sim));
    if (!sim) {
        ag_cli_error(&ag_cmd_explain_info, "out of memory");
        free(pe);
        return AG_EXIT_FAIL;
    }
    cosine_similarity(pe, T, d, sim);

    if (o->load) {
        printf("The learned positional encoding 'pos' of %s: %d positions of width %d.\n"
               "It started as small random numbers (normal, std 0.02) and was trained with\n"
               "the rest of the model: nothing but the task shaped it. Each token's vector\n"
               "gets its position's row added, x'[t] = x[t] + pos[t].\n\n",
               o->load, T, d);
    } else {
        printf("The sinusoidal positional encoding (the Transformer paper's), %d positions\n"
               "of width %d:\n"
               "  PE[t, 2i] = sin(t / 10000^(2i/d)),  PE[t, 2i+1] = cos(t / 10000^(2i/d))\n"
               "Columns 2i and 2i+1 are one wave. Its wavelength grows from 2 pi = 6.3\n"
               "positions (columns 0 and 1) to %.0f (the last pair): the first columns tell\n"
               "neighbours apart, the last change so slowly that they tell near from far.\n"
               "Each token's vector gets its position's row added, x'[t] = x[t] + PE[t].\n\n",
               T, d, 6.283185307179586 * pow(10000.0, (double)((d - 1) - (d - 1) % 2) / d));
    }
    printf("%s (row: position t; columns 0..%d of %d):\n", o->load ? "pos" : "PE",
           (d < SHOW_COLS ? d : SHOW_COLS) - 1, d);
    print_table(pe, T, d, "t", "");
    printf("\nCosine similarity of the rows, <PE[t], PE[u]> / (|PE[t]| |PE[u]|):\n");
    print_table(sim, T, T, "t", "u");
    if (o->load)
        printf("\nLearned rows need not follow any rule: what the table holds is whatever\n"
               "helped the task. Compare the sinusoidal one (attograd explain posenc).\n");
    else
        printf("\nEvery diagonal is constant: <PE[t], PE[u]> = sum_i cos((t - u) w_i) depends\n"
               "only on the distance t - u, so \"k positions before me\" looks the same from\n"
               "every position; and a position's neighbours have the rows most like its own.\n");

    int status = AG_EXIT_OK;
    if (o->plot) {
        char title[600];
        if (o->load)
            snprintf(title, sizeof(title), "learned positional encoding 'pos' of %s", o->load);
        else
            snprintf(title, sizeof(title), "sinusoidal positional encoding, %d positions x %d", T, d);
        int sig = 0;
        if (ag_cli_plot_posenc(o->plot, title, T, d, pe, sim, &sig, err, sizeof(err))) {
            printf("plot: %s\n", ag_quote(o->plot, shown, sizeof(shown)));
        } else {
            ag_cli_error(&ag_cmd_explain_info, "%s", err);
            status = sig ? 128 + sig : AG_EXIT_FAIL;
        }
    }
    free(sim);
    free(pe);
    return status;
}
