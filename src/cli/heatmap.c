/*
 * heatmap.c - matrices drawn with gnuplot, when it is installed: each head's
 * attention weights for one example (`attograd train --plot-heads`), every
 * head of a GPT for one text (`attograd attend --png`), and a
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

/* Ticks at every step-th of 0..n-1 named by labels, in font size pt. */
static void put_thin_tics(FILE *g, const char *axis, int n, int step, int pt,
                          const char *const *labels)
{
    fprintf(g, "set %stics font ',%d' (", axis, pt);
    for (int i = 0; i < n; i += step) {
        fprintf(g, "%s", i ? ", " : "");
        ag_cli_gnuplot_quote(g, labels[i]);
        fprintf(g, " %d", i);
    }
    fprintf(g, ")\n");
}

int ag_cli_plot_gpt_heads(const char *png, const char *title, int layers, int heads, int T,
                          const double *attn, const char *const *labels, int *sig, char *err,
                          size_t errlen)
{
    ag_cli_gnuplot gp;
    *sig = 0;
    /* a panel of 300 pixels, or 7 per character (every one labelled) up to 560 */
    int panel = T <= 40 ? 300 : T <= 80 ? 7 * T : 560, cols = heads, rows = layers;
    int width = 80 + cols * panel + 90, height = 80 + rows * (panel + 45);
    if (!ag_cli_gnuplot_begin(&gp, width, height, err, errlen))
        return 0;
    FILE *g = gp.f;
    /* the labels are the text's own characters: none of them is markup */
    fprintf(g, "set termoption noenhanced\n");
    double left = 70.0 / width, right = 1 - 90.0 / width, bottom = 40.0 / height,
           top = 1 - 70.0 / height;
    fprintf(g, "set multiplot layout %d,%d margins %.4f,%.4f,%.4f,%.4f spacing %.4f,%.4f title ",
            rows, cols, left, right, bottom, top, 28.0 / width, 70.0 / height);
    ag_cli_gnuplot_quote(g, title);
    int step = (7 * T + panel - 1) / panel, pt = T <= 24 ? 8 : 6;
    fprintf(g,
            "\nset size ratio -1\nunset key\nset cbrange [0:1]\n"
            "set palette defined (0 '#ffffff', 1 '#08519c')\n"
            "set xrange [-0.5:%g]\nset yrange [%g:-0.5]\nunset colorbox\n",
            T - 0.5, T - 0.5);
    put_thin_tics(g, "x", T, step, pt, labels);
    put_thin_tics(g, "y", T, step, pt, labels);
    for (int l = 0; l < layers; l++)
        for (int h = 0; h < heads; h++) {
            if (l == layers - 1 && h == heads - 1) /* one colour bar, beside the grid */
                fprintf(g,
                        "set colorbox user origin %.4f,%.4f size %.4f,%.4f\n"
                        "set cbtics font ',8'\nset cblabel 'weight' font ',9'\n",
                        right + 25.0 / width, bottom, 14.0 / width, top - bottom);
            fprintf(g, "set title 'layer %d head %d' font ',10'\n", l, h);
            fprintf(g, "plot '-' matrix with image\n");
            put_matrix(g, attn + ((size_t)l * heads + h) * T * T, T, T);
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
    /* the similarity's colours fitted to its values: a sinusoidal table's
     * are all positive (0.4 .. 1 and the like), and on -1 .. 1 they would
     * all be one colour */
    double lo = 1, hi = -1;
    for (size_t i = 0; i < (size_t)T * T; i++)
        lo = fmin(lo, sim[i]), hi = fmax(hi, sim[i]);
    if (lo >= 0 && hi > lo) {
        fprintf(g, "set palette defined (0 '#f7f7f7', 1 '#b2182b')\nset cbrange [%g:%g]\n", lo, hi);
    } else {
        double m = fmax(fabs(lo), fabs(hi));
        fprintf(g, "set cbrange [%g:%g]\n", m > 0 ? -m : -1, m > 0 ? m : 1);
    }
    fprintf(g,
            "set title 'cosine similarity of rows t and u'\n"
            "set xlabel 'position u'\nset size ratio -1\nset xrange [-0.5:%g]\n"
            "plot '-' matrix with image\n",
            T - 0.5);
    put_matrix(g, sim, T, T);
    fprintf(g, "unset multiplot\n");
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}
