/*
 * explain_posenc.c - `attograd explain posenc`: what a positional encoding
 * adds to each token's vector. The sinusoidal table of the Transformer
 * paper, or (with --load) the learned table of a checkpoint: `pos`, which
 * `attograd train --posenc learned --save` wrote, or a GPT's positions
 * `transformer.wpe.weight` (`train --task text --save`), shown as numbers and as
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
            "show the learned table of a checkpoint instead: 'pos'\n"
            "(attograd train --posenc learned) or a GPT's positions\n"
            "'transformer.wpe.weight' (train --task text)"),
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

/* The table to explain, in double: --load's learned one, else the
 * sinusoidal one the library makes; its similarities into *sim. */
static double *table_of(const ag_explain_opts *o, int *T, int *d, double **sim)
{
    char err[AG_CLI_ERR_LEN];
    ag_posenc *pe = o->load ? ag_posenc_load(o->load, AG_EXPLAIN_MAX_SEQ, err, sizeof(err))
                            : ag_posenc_new(AG_POSENC_SINUSOIDAL, *T, *d, NULL, err, sizeof(err));
    double *v = NULL;
    if (pe) {
        *T = ag_posenc_max_len(pe);
        *d = ag_posenc_dim(pe);
        v = calloc((size_t)*T * (size_t)*d, sizeof(*v));
        *sim = calloc((size_t)*T * (size_t)*T, sizeof(**sim));
        if (!v || !*sim) {
            free(v), free(*sim);
            v = *sim = NULL;
            snprintf(err, sizeof(err), "out of memory");
        }
    }
    if (v) {
        const ag_real *src = ag_posenc_values(pe);
        for (size_t i = 0; i < (size_t)*T * (size_t)*d; i++)
            v[i] = (double)src[i];
        ag_posenc_similarity(pe, *sim);
    } else {
        ag_cli_error(&explain_posenc_info, "%s", err);
    }
    ag_posenc_free(pe);
    return v;
}

/* Whether the file's table is a GPT's positions (it has no 'pos'). */
static int is_gpt(const char *path)
{
    ag_st_file *f;
    if (ag_st_load(path, &f, NULL, 0) != AG_OK)
        return 0;
    int gpt = !ag_st_dtype(f, "pos") && ag_st_dtype(f, "transformer.wpe.weight");
    ag_st_free(f);
    return gpt;
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
    if (o->plot && !ag_cli_have_program("gnuplot")) { /* before any work */
        ag_cli_error(&explain_posenc_info, "gnuplot is not installed, so no plot "
                                           "(apt-get install gnuplot-nox)");
        return AG_EXIT_FAIL;
    }
    char err[AG_CLI_ERR_LEN], shown[AG_QUOTE_LEN];
    const ag_cli_file files[2] = {{"--plot", o->plot, 1, NULL}, {"--load", o->load, 0, NULL}};
    int checked = ag_cli_check_files(&explain_posenc_info, files, 2);
    if (checked != AG_EXIT_OK)
        return checked;
    int T = o->seq, d = o->dim;
    double *sim = NULL, *pe = table_of(o, &T, &d, &sim);
    if (!pe)
        return AG_EXIT_FAIL;

    int gpt = o->load && is_gpt(o->load);
    const char *name = gpt ? "transformer.wpe.weight" : "pos";
    if (o->load) {
        printf("The learned positional encoding '%s' of %s: %d positions of width %d.\n"
               "It started as small random numbers (normal, std 0.02) and was trained with\n"
               "the rest of the model: nothing but the task shaped it. Each token's vector\n"
               "gets its position's row added, %s.\n\n",
               name, o->load, T, d,
               gpt ? "x[t] = wte[id_t] + wpe[t] (wpe is this table)" : "x'[t] = x[t] + pos[t]");
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
    printf("%s (row: position t; columns 0..%d of %d):\n", o->load ? (gpt ? "wpe" : "pos") : "PE",
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
            snprintf(title, sizeof(title), "learned positional encoding '%s' of %s", name, o->load);
        else
            snprintf(title, sizeof(title), "sinusoidal positional encoding, %d positions x %d", T,
                     d);
        int sig = 0;
        if (ag_cli_plot_posenc(o->plot, title, T, d, pe, sim, &sig, err, sizeof(err))) {
            printf("plot: %s\n", ag_quote(o->plot, shown, sizeof(shown)));
        } else {
            ag_cli_error(&explain_posenc_info, "%s", err);
            status = sig ? 128 + sig : AG_EXIT_FAIL;
        }
    }
    free(sim);
    free(pe);
    return status;
}
