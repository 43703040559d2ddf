/*
 * progress.c - the long phases of a command, shown as they go (progress.h):
 * reading and tokenizing a text, making or loading a model, the validation
 * pass, writing a checkpoint. A phase that ends within AG_PROGRESS_SECONDS
 * shows nothing, so short runs and the tests' outputs stay as they were.
 */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    const ag_command *cmd;
    int tty;
    double delay, every; /* seconds before the first line, between lines */
    char what[32];       /* the phase being reported, "" when none */
    double start, last, done;
    int shown;   /* lines of this phase shown */
    int redrawn; /* a terminal line waits for its end */
    int any;     /* a line shown since ag_cli_progress_shown */
} pr;

/* How the phase counts: its unit ("MB"), and a divisor for it. */
static void unit_of(const char *what, const char **unit, double *per)
{
    *per = 1;
    if (strcmp(what, "reading") == 0 || strcmp(what, "tokenizing") == 0)
        *unit = "MB", *per = 1e6;
    else if (strcmp(what, "validation") == 0)
        *unit = "windows";
    else if (strcmp(what, "initialising") == 0)
        *unit = "blocks";
    else if (strcmp(what, "loading") == 0)
        *unit = "tensors";
    else
        *unit = "";
}

static void show(double done, double total, double now)
{
    const char *unit;
    double per;
    unit_of(pr.what, &unit, &per);
    double t = now - pr.start, pct = total > 0 ? 100 * done / total : 100;
    char left[48] = "";
    if (done > 0 && done < total)
        snprintf(left, sizeof(left), ", about %.0f s left", t * (total - done) / done);
    char amount[96];
    /* whole units, but tenths where a count is part-way (a chunk of windows) */
    int tenths = per > 1 || (done != (double)(long)done && total < 1000);
    if (*unit)
        snprintf(amount, sizeof(amount), "%.*f of %.*f %s (%.0f%%)", tenths, done / per,
                 per > 1 ? 1 : 0, total / per, unit, pct);
    else
        snprintf(amount, sizeof(amount), "%.0f%%", pct);
    const char *name = pr.cmd ? pr.cmd->name : "";
    if (pr.tty)
        fprintf(stderr, "\r\033[K");
    if (done >= total)
        fprintf(stderr, "attograd %s: %s: %s, done in %.1f s\n", name, pr.what, amount, t);
    else
        fprintf(stderr, "attograd %s: %s: %s, %.1f s%s%s", name, pr.what, amount, t, left,
                pr.tty ? "" : "\n");
    fflush(stderr);
    pr.redrawn = pr.tty && done < total;
    pr.shown++;
    pr.any = 1;
    pr.last = now;
}

static void hook(void *ctx, const char *what, double done, double total)
{
    (void)ctx;
    if (strcmp(what, "sampling") == 0)
        return; /* sample's output is its progress */
    double now = ag_cli_now();
    if (strcmp(what, pr.what) != 0 || done < pr.done) { /* a new phase */
        if (pr.redrawn)
            fprintf(stderr, "\n");
        snprintf(pr.what, sizeof(pr.what), "%s", what);
        pr.start = now;
        pr.shown = pr.redrawn = 0;
    }
    pr.done = done;
    int end = done >= total;
    if (now - pr.start >= pr.delay && (pr.shown == 0 || now - pr.last >= pr.every || end))
        show(done, total, now);
    if (end)
        pr.what[0] = '\0', pr.redrawn = 0;
}

void ag_cli_progress_begin(const ag_command *cmd, int quiet)
{
    memset(&pr, 0, sizeof(pr));
    if (quiet)
        return;
    pr.cmd = cmd;
    pr.tty = isatty(STDERR_FILENO);
    double d = 1;
    const char *env = getenv("AG_PROGRESS_SECONDS");
    if (env && (ag_parse_double(env, &d) != AG_PARSE_OK || d < 0))
        d = 1;
    pr.delay = d;
    pr.every = d == 0 ? 0 : pr.tty ? 0.2 : 5;
    ag_progress_set(hook, NULL);
}

void ag_cli_progress_end(void)
{
    if (pr.redrawn)
        fprintf(stderr, "\n");
    ag_progress_set(NULL, NULL);
    memset(&pr, 0, sizeof(pr));
}

int ag_cli_progress_shown(void)
{
    int any = pr.any;
    pr.any = 0;
    return any;
}
