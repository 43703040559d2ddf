/*
 * plot.h - drawing with gnuplot, when it is installed (plot.c), and the
 * temporary files another program writes for us (outfile.c).
 */
#ifndef AG_CLI_PLOT_H
#define AG_CLI_PLOT_H

#include <stddef.h>
#include <stdio.h>

/* Whether an executable `name` is on the PATH. */
int ag_cli_have_program(const char *name);

/* What a training plot shows. */
typedef struct ag_plot_data {
    const char *title;
    const long *loss_step;       /* (n_loss) */
    const double *loss;          /* (n_loss) training loss */
    size_t n_loss;
    const long *acc_step;        /* (n_acc) */
    const double *acc;           /* (n_acc) held-out accuracy */
    size_t n_acc;
    const double *attn;          /* (attn_size, attn_size) weights, or NULL */
    int attn_size;
} ag_plot_data;

/* Draw d into png with gnuplot. Returns 1, or 0 with the reason in err
 * (gnuplot missing or failing); never stops the caller. */
int ag_cli_plot_run(const char *png, const ag_plot_data *d, char *err, size_t errlen);

/* Held-out example's attention, one heatmap per head with every weight
 * written in its cell: attn is (heads, T, T), labels the T positions' names.
 * Returns 1, or 0 with the reason in err (gnuplot missing or failing). */
int ag_cli_plot_heads(const char *png, const char *title, int heads, int T, const double *attn,
                      const char *const *labels, char *err, size_t errlen);
/* A positional encoding pe (T, d) beside the cosine similarity sim (T, T)
 * of its rows. Returns 1, or 0 with the reason in err. */
int ag_cli_plot_posenc(const char *png, const char *title, int T, int d, const double *pe,
                       const double *sim, char *err, size_t errlen);

/* Start gnuplot drawing a width x height PNG into a temporary file beside
 * png (its name in tmp); write the plot commands to the returned pipe, then
 * ag_cli_gnuplot_close renames the image into place when gnuplot succeeded
 * (and removes it otherwise). NULL, or 0, with the reason in err. */
FILE *ag_cli_gnuplot_open(const char *png, int width, int height, char *tmp, size_t tmplen,
                          char *err, size_t errlen);
int ag_cli_gnuplot_close(FILE *g, const char *tmp, const char *png, char *err, size_t errlen);
/* Write s as a gnuplot single-quoted string. */
void ag_cli_gnuplot_quote(FILE *g, const char *s);

/* For files another program writes (gnuplot): ag_cli_tmp_name creates an
 * empty temporary file beside path (tmp gets its name, "PATH.tmp-XXXXXX")
 * and ag_cli_tmp_rename moves it into place, removing it on failure. Files
 * attograd writes itself use ag_atomic (src/io/io.h). */
int ag_cli_tmp_name(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen);
int ag_cli_tmp_rename(const char *tmp, const char *path, char *err, size_t errlen);

#endif /* AG_CLI_PLOT_H */
