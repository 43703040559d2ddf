/*
 * heatmap.c - matrices drawn with gnuplot, when it is installed: each head's
 * attention weights for one example (`attograd train --plot-heads`), and a
 * positional encoding beside the similarity of its rows (`attograd explain
 * posenc --plot`). Run, checked and written into place by plot.c's
 * gnuplot helpers.
 */
#include "plot.h"

#include <math.h>
#include <stdio.h>

/* Axis ticks at 0..n-1 named by labels: set xtics ('a' 0, 'b' 1, ...). */
static void put_tics(FILE *g, const char *axis, int n, const char *const *labels)
{
    fprintf(g, "set %stics (", axis);
    for (int i = 0; i < n; i++) {
        fprintf(g, "%s", i ? ", " : "");
        ag_cli_gnuplot_quote(g, labels[i]);
        fprintf(g, " %d", i);
    }
    fprintf(g, ")\n");
}

/* An rows x cols matrix as gnuplot's `matrix` data, ended by "e". */
static void put_matrix(FILE *g, const double *m, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++)
            fprintf(g, "%s%.6g", j ? " " : "", m[(size_t)i * cols + j]);
        fprintf(g, "\n");
    }
    fprintf(g, "e\n");
}

int ag_cli_plot_heads(const char *png, const char *title, int heads, int T, const double *attn,
                      const char *const *labels, int *sig, char *err, size_t errlen)
{
    ag_cli_gnuplot gp;
    *sig = 0;
    if (!ag_cli_gnuplot_begin(&gp, 80 + 420 * heads, 470, err, errlen))
        return 0;
    FILE *g = gp.f;
    fprintf(g, "set multiplot layout 1,%d title ", heads);
    ag_cli_gnuplot_quote(g, title);
    fprintf(g,
            "\nset size ratio -1\nunset key\nset cbrange [0:1]\n"
            "set palette defined (0 '#ffffff', 1 '#4292c6')\n"
            "set xrange [-0.5:%g]\nset yrange [%g:-0.5]\n"
            "set xlabel 'where it looks (key position)'\nset ylabel 'position (query)'\n"
            "set xtics rotate by 45 right\nunset colorbox\nset lmargin 12\nset rmargin 3\n",
            T - 0.5, T - 0.5);
    put_tics(g, "x", T, labels);
    put_tics(g, "y", T, labels);
    for (int h = 0; h < heads; h++) {
        const double *p = attn + (size_t)h * T * T;
        fprintf(g, "set title 'head %d'\n", h + 1);
        fprintf(g, "plot '-' matrix with image, "
                   "'-' matrix using 1:2:(sprintf('%%.2f', $3)) with labels font ',9'\n");
        put_matrix(g, p, T, T);
        put_matrix(g, p, T, T);
    }
    fprintf(g, "unset multiplot\n");
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}

int ag_cli_plot_posenc(const char *png, const char *title, int T, int d, const double *pe,
                       const double *sim, int *sig, char *err, size_t errlen)
{
    ag_cli_gnuplot gp;
    *sig = 0;
    if (!ag_cli_gnuplot_begin(&gp, 1100, 480, err, errlen))
        return 0;
    FILE *g = gp.f;
    double peak = 0;
    for (size_t i = 0; i < (size_t)T * d; i++)
        peak = fmax(peak, fabs(pe[i]));
    if (!(peak > 0))
        peak = 1;
    fprintf(g, "set multiplot layout 1,2 title ");
    ag_cli_gnuplot_quote(g, title);
    fprintf(g,
            "\nunset key\nset palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\n"
            "set title 'the encoding: row t is added to token t'\nset xlabel 'column (dimension)'\n"
            "set ylabel 'position t'\nset xrange [-0.5:%g]\nset yrange [%g:-0.5]\n"
            "set cbrange [%g:%g]\nplot '-' matrix with image\n",
            d - 0.5, T - 0.5, -peak, peak);
    put_matrix(g, pe, T, d);
    fprintf(g,
            "set title 'cosine similarity of rows t and u'\n"
            "set xlabel 'position u'\nset size ratio -1\nset xrange [-0.5:%g]\n"
            "set cbrange [-1:1]\nplot '-' matrix with image\n",
            T - 0.5);
    put_matrix(g, sim, T, T);
    fprintf(g, "unset multiplot\n");
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}
