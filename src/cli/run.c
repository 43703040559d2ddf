/*
 * run.c - what the training commands share: Ctrl-C, SIGTERM and SIGHUP only
 * ask the run to stop (it finishes its step, saves, and exits 128 + the
 * signal); a monotonic clock for the seconds it reports, and the median the
 * benchmarks report. (Their files are checked before any work by
 * ag_cli_check_files, outfile.c.)
 */
#include "cli.h"
#include "signals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

void ag_cli_stop_begin(ag_cli_stop *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
    sigaction(SIGHUP, &sa, &s->old_hup);
    s->active = 1;
}

void ag_cli_stop_end(ag_cli_stop *s)
{
    if (!s->active)
        return;
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
    sigaction(SIGHUP, &s->old_hup, NULL);
    s->active = 0;
}

int ag_cli_stop_requested(void)
{
    return stop_signal;
}

const char *ag_cli_stop_reason(int sig)
{
    return sig == SIGINT    ? "interrupted"
           : sig == SIGTERM ? "stopped by SIGTERM"
                            : "stopped by SIGHUP";
}

double ag_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
