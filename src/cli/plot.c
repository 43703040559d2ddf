/*
 * plot.c - draw a training run with gnuplot, when it is installed: the loss
 * curve (with held-out accuracy) beside one example's attention weights.
 * gnuplot is optional; without it the caller prints one line and goes on.
 */
#include "cli.h"

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

/* Quote a file name for gnuplot's single-quoted strings. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);   /* '' is a quote inside '...' */
        fputc(*s, f);
    }
    fputc('\'', f);
}

int ag_cli_plot_run(const char *png, const ag_plot_data *d, char *err, size_t errlen)
{
    if (!ag_cli_have_program("gnuplot")) {
        snprintf(err, errlen, "gnuplot is not installed, so no plot (apt-get install gnuplot-nox)");
        return 0;
    }
    /* gnuplot writes a temporary file beside png, renamed over it once
     * gnuplot has succeeded: a failed plot never leaves half an image */
    size_t n = strlen(png);
    char *tmp = malloc(n + sizeof(".tmp-XXXXXX"));
    if (!tmp) {
        snprintf(err, errlen, "%s: out of memory", png);
        return 0;
    }
    memcpy(tmp, png, n);
    memcpy(tmp + n, ".tmp-XXXXXX", sizeof(".tmp-XXXXXX"));
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file beside it: %s", png, strerror(errno));
        free(tmp);
        return 0;
    }
    mode_t mask = umask(0);   /* mkstemp makes 0600; a plot is as readable as any file */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        snprintf(err, errlen, "cannot start gnuplot");
        remove(tmp);
        free(tmp);
        return 0;
    }
    fprintf(g, "set terminal pngcairo size 1100,450 font 'sans,10'\nset output ");
    put_quoted(g, tmp);
    fprintf(g, "\nset multiplot layout 1,2 title '%s'\n", d->title);
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
    int rc = pclose(g);
    int ok = 0;
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        snprintf(err, errlen, "gnuplot failed to draw %s", png);
    else if (rename(tmp, png) != 0)
        snprintf(err, errlen, "%s: cannot replace it: %s", png, strerror(errno));
    else
        ok = 1;
    if (!ok)
        remove(tmp);
    free(tmp);
    return ok;
}
