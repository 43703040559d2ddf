/*
 * plot.c - draw a training run with gnuplot, when it is installed: the loss
 * curve (with held-out accuracy) beside one example's attention weights.
 * gnuplot is optional; without it the caller prints one line and goes on.
 */
#include "plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int ag_cli_have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char buf[4096];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len + strlen(name) + 2 < sizeof(buf)) {
            snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, name);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += len;
        if (*path == ':')
            path++;
    }
    return 0;
}

void ag_cli_gnuplot_quote(FILE *g, const char *s)
{
    fputc('\'', g);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', g);   /* '' is a quote inside '...' */
        fputc(*s, g);
    }
    fputc('\'', g);
}

FILE *ag_cli_gnuplot_open(const char *png, int width, int height, char *tmp, size_t tmplen,
                          char *err, size_t errlen)
{
    if (!ag_cli_have_program("gnuplot")) {
        snprintf(err, errlen, "gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
        return NULL;
    }
    /* gnuplot writes a temporary file beside png, renamed over it once
     * gnuplot has succeeded: a failed plot never leaves half an image */
    if (!ag_cli_tmp_name(png, tmp, tmplen, err, errlen))
        return NULL;
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        snprintf(err, errlen, "cannot start gnuplot");
        remove(tmp);
        return NULL;
    }
    fprintf(g, "set terminal pngcairo size %d,%d font 'sans,10'\nset output ", width, height);
    ag_cli_gnuplot_quote(g, tmp);
    fprintf(g, "\n");
    return g;
}

int ag_cli_gnuplot_close(FILE *g, const char *tmp, const char *png, char *err, size_t errlen)
{
    int rc = pclose(g);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
        snprintf(err, errlen, "gnuplot failed to draw %s", png);
        remove(tmp);
        return 0;
    }
    return ag_cli_tmp_rename(tmp, png, err, errlen);
}

int ag_cli_plot_run(const char *png, const ag_plot_data *d, char *err, size_t errlen)
{
    char tmp[4096];
    FILE *g = ag_cli_gnuplot_open(png, 1100, 450, tmp, sizeof(tmp), err, errlen);
    if (!g)
        return 0;
    fprintf(g, "set multiplot layout 1,2 title ");
    ag_cli_gnuplot_quote(g, d->title);
    fprintf(g, "\n");
    fprintf(g, "set xlabel 'step'\nset ylabel 'loss'\nset logscale y\nset y2label 'held-out accuracy'\n"
               "set y2range [0:1.05]\nset y2tics\nset ytics nomirror\nset format y '%%g'\nset key right center\nset grid\n");
    fprintf(g, "plot '-' using 1:2 with lines title 'training loss', "
               "'-' using 1:2 axes x1y2 with linespoints title 'held-out accuracy'\n");
    for (size_t i = 0; i < d->n_loss; i++)
        fprintf(g, "%ld %.9g\n", d->loss_step[i], d->loss[i]);
    fprintf(g, "e\n");
    for (size_t i = 0; i < d->n_acc; i++)
        fprintf(g, "%ld %.9g\n", d->acc_step[i], d->acc[i]);
    fprintf(g, "e\n");
    if (d->attn) {
        int T = d->attn_size;
        fprintf(g, "unset logscale y\nunset y2tics\nunset y2label\nset ytics mirror\nunset grid\n"
                   "set title 'attention of one held-out example (head 1)'\n"
                   "set xlabel 'key position'\nset ylabel 'query position'\n"
                   "set xrange [-0.5:%g]\nset yrange [%g:-0.5]\nset cbrange [0:1]\n"
                   "set palette grey negative\nunset key\n",
                   T - 0.5, T - 0.5);
        fprintf(g, "plot '-' matrix with image\n");
        for (int i = 0; i < T; i++) {
            for (int j = 0; j < T; j++)
                fprintf(g, "%s%.4f", j ? " " : "", d->attn[i * T + j]);
            fprintf(g, "\n");
        }
        fprintf(g, "e\n");
    }
    fprintf(g, "unset multiplot\n");
    return ag_cli_gnuplot_close(g, tmp, png, err, errlen);
}
