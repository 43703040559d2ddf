/*
 * train_text_plot.c - the pictures of `attograd train --task text`: --plot
 * draws the losses beside the gradient flow (each block's gradient norm and
 * the residual stream's RMS after it, at every estimate), --plot-heads every
 * head's attention on the first validation window at the end.
 */
#include "cli.h"
#include "plot.h"

#include <stdio.h>
#include <stdlib.h>

int ag_cli_text_plot(const char *png, const ag_text_plot *d, int *sig, char *err, size_t errlen)
{
    ag_cli_gnuplot gp;
    *sig = 0;
    int flow = d->flow && d->flow->n > 0 && d->layers > 0;
    if (!ag_cli_gnuplot_begin(&gp, flow ? 1500 : 900, flow ? 480 : 500, err, errlen))
        return 0;
    FILE *g = gp.f;
    if (flow)
        fprintf(g, "set multiplot layout 1,3 title ");
    else
        fprintf(g, "set title ");
    ag_cli_gnuplot_quote(g, d->title);
    fprintf(g, "\nset xlabel 'step'\nset grid\nset key top right\n");
    if (flow)
        fprintf(g, "set title 'the loss'\nset bmargin 6\n");
    fprintf(g, "set ylabel 'loss (nats per character)'\n"
               "plot '-' using 1:2 with lines lc rgb '#bbbbbb' title 'batch loss', "
               "'-' using 1:2 with linespoints title 'training (estimate)', "
               "'-' using 1:3 with linespoints title 'validation (estimate)'\n");
    ag_curve_write(d->loss, g);
    for (int k = 0; k < 2; k++) {
        fprintf(g, "e\n");
        ag_curve_write(d->est, g);
    }
    fprintf(g, "e\n");
    if (flow) {
        /* the flow curve's columns: grad_norm.0 .. L-1, then resid_rms.0 .. L-1 */
        static const char *const what[2][2] = {
            {"the gradient reaching each block", "norm of the gradient of its weights"},
            {"the residual stream after each block", "RMS of the stream"}};
        fprintf(
            g,
            "set logscale y\nset format y '%%g'\nset key below horizontal font ',9'\nset bmargin 6\n");
        for (int part = 0; part < 2; part++) {
            fprintf(g, "set title '%s'\nset ylabel '%s'\nplot ", what[part][0], what[part][1]);
            for (int l = 0; l < d->layers; l++)
                fprintf(g, "%s'-' using 1:%d with linespoints title 'block %d'", l ? ", " : "",
                        2 + part * d->layers + l, l);
            fprintf(g, "\n");
            for (int l = 0; l < d->layers; l++) {
                ag_curve_write(d->flow, g);
                fprintf(g, "e\n");
            }
        }
        fprintf(g, "unset multiplot\n");
    }
    return ag_cli_gnuplot_end(&gp, png, sig, err, errlen);
}

int ag_cli_text_plot_heads(const char *png, ag_gpt *g, const ag_text *text, int *sig, char *err,
                           size_t errlen)
{
    const ag_gpt_config *c = ag_gpt_get_config(g);
    int L = c->layers, H = c->heads, T = c->seq;
    size_t cells = (size_t)L * H * T * T;
    ag_real *p = malloc(cells * sizeof(*p));
    double *attn = malloc(cells * sizeof(*attn));
    char(*labels)[8] = malloc((size_t)T * sizeof(*labels));
    const char **names = malloc((size_t)T * sizeof(*names));
    int *ids = malloc((size_t)T * sizeof(*ids));
    int ok = p && attn && labels && names && ids;
    if (!ok)
        snprintf(err, errlen, "out of memory");
    /* the first window of the full validation loss: val[0 .. T) */
    if (ok)
        ag_text_ids(text, text->n_train, (size_t)T, ids);
    ok = ok && ag_gpt_attention(g, ids, T, p, err, errlen) == AG_OK;
    if (ok) {
        for (size_t i = 0; i < cells; i++)
            attn[i] = (double)p[i];
        for (int t = 0; t < T; t++)
            names[t] = ag_cli_show_char(ag_vocab_char(text->vocab, ids[t]), labels[t]);
        char title[160];
        snprintf(title, sizeof(title),
                 "attention on the first validation window (%d characters), every block and head",
                 T);
        ok = ag_cli_plot_gpt_heads(png, title, L, H, T, attn, names, sig, err, errlen);
    }
    free(ids);
    free(names);
    free(labels);
    free(attn);
    free(p);
    return ok;
}
