/*
 * plot.h - drawing with gnuplot, when it is installed (plot.c, heatmap.c).
 */
#ifndef AG_CLI_PLOT_H
#define AG_CLI_PLOT_H

#include "attograd.h"
#include "curve.h"
#include "../io/io.h"

#include <stddef.h>
#include <stdio.h>

/* Whether an executable `name` is on the PATH. */
int ag_cli_have_program(const char *name);

/* What a training plot shows. */
typedef struct ag_plot_data {
    const char *title;
    const ag_curve *loss; /* the training loss */
    const ag_curve *acc;  /* the held-out accuracy */
    const double *attn;   /* (attn_size, attn_size) weights, or NULL */
    int attn_size;
} ag_plot_data;

/* Draw d into png with gnuplot (ag_cli_gnuplot_end's rules). Returns 1, or
 * 0 with the reason in err and, when Ctrl-C, SIGTERM or SIGHUP stopped it,
 * the signal in *sig; never stops the caller. */
int ag_cli_plot_run(const char *png, const ag_plot_data *d, int *sig, char *err, size_t errlen);

/* A gnuplot run being prepared: write plot commands to f. */
typedef struct ag_cli_gnuplot {
    FILE *f;      /* the script, in memory */
    char *script; /* (len) its bytes, once ended */
    size_t len;
} ag_cli_gnuplot;
/* Start a script drawing a width x height PNG. Returns 0 with err set. */
int ag_cli_gnuplot_begin(ag_cli_gnuplot *g, int width, int height, char *err, size_t errlen);
/* Run gnuplot on the script and put the picture at png; releases g.
 * No name reaches gnuplot: it reads the script on its stdin and writes the
 * PNG to its stdout, a pipe. The picture is kept only when it is a whole
 * PNG (signature to IEND), then written by the file layer's rule
 * (ag_file_write). gnuplot gets AG_GNUPLOT_SECONDS seconds (environment,
 * default 60); Ctrl-C, SIGTERM or SIGHUP while it runs stops it and sets
 * *sig. Returns 1, or 0 with the reason in err (nothing written). */
int ag_cli_gnuplot_end(ag_cli_gnuplot *g, const char *png, int *sig, char *err, size_t errlen);
#define AG_GNUPLOT_SECONDS 60
/* The most points of a curve a --plot keeps (ag_curve_init_thinned): a long
 * run is thinned, not stored whole. */
#define AG_CLI_PLOT_POINTS 10000
/* Write s as a gnuplot single-quoted string (control bytes as spaces, so
 * that nothing can end the command). */
void ag_cli_gnuplot_quote(FILE *g, const char *s);

/* Held-out example's attention, one heatmap per head with every weight
 * written in its cell: attn is (heads, T, T), labels the T positions' names.
 * Returns 1, or 0 with the reason in err (and *sig, ag_cli_gnuplot_end's). */
int ag_cli_plot_heads(const char *png, const char *title, int heads, int T, const double *attn,
                      const char *const *labels, int *sig, char *err, size_t errlen);
/* A GPT's attention for one text: a grid of heatmaps, its layers blocks as
 * rows and its heads as columns, with one colour bar. attn is (layers,
 * heads, T, T), labels the T characters as shown. Returns 1, or 0 with the
 * reason in err (and *sig, ag_cli_gnuplot_end's). */
int ag_cli_plot_gpt_heads(const char *png, const char *title, int layers, int heads, int T,
                          const double *attn, const char *const *labels, int *sig, char *err,
                          size_t errlen);
/* What `train --task text --plot` draws: the batch losses and the estimates
 * (train, val) and, when flow has rows, the gradient flow beside them: flow
 * holds 2 layers values per estimate, each block's gradient norm, then the
 * RMS of the residual stream after each block (ag_gpt_trainer_flow). */
typedef struct ag_text_plot {
    const char *title;
    const ag_curve *loss, *est, *flow; /* flow may be NULL */
    int layers;
} ag_text_plot;
/* Draw d into png (ag_cli_gnuplot_end's rules). Returns 1, or 0 with err set. */
int ag_cli_text_plot(const char *png, const ag_text_plot *d, int *sig, char *err, size_t errlen);
/* `train --task text --plot-heads`: every head of g on the first window of
 * the full validation loss, text's val[0 .. seq), as ag_cli_plot_gpt_heads
 * draws it. Returns 1, or 0 with err set (and *sig). */
int ag_cli_text_plot_heads(const char *png, ag_gpt *g, const ag_text *text, int *sig, char *err,
                           size_t errlen);
/* A positional encoding pe (T, d) beside the cosine similarity sim (T, T)
 * of its rows. Returns 1, or 0 with the reason in err (and *sig). */
int ag_cli_plot_posenc(const char *png, const char *title, int T, int d, const double *pe,
                       const double *sim, int *sig, char *err, size_t errlen);

#endif /* AG_CLI_PLOT_H */
