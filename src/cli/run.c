/*
 * run.c - what the long commands share: Ctrl-C, SIGTERM and SIGHUP ask the
 * run to stop (the library's work stops at its next op, the command saves
 * what it has and exits 128 + the signal), and a second one ends it at
 * once; a monotonic clock for the seconds it reports, and the median the
 * benchmarks report. (Their files are checked before any work by
 * ag_cli_check_files, outfile.c.)
 */
#include "cli.h"
#include "signals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

/* The first signal asks: the library stops its work at the next op or
 * piece (ag_interrupt) and the command saves what it has. A second one
 * ends the process at once, after removing the temporary files being
 * written (their targets keep what they held). */
static void on_stop_signal(int sig)
{
    if (stop_signal) {
        static const char said[] = "attograd: stopped at once (a second signal); files being "
                                   "written were left as they were\n";
        ag_atomic_remove_all();
        ssize_t ignored = write(STDERR_FILENO, said, sizeof(said) - 1);
        (void)ignored;
        _exit(128 + sig);
    }
    stop_signal = sig;
    ag_interrupt();
}

void ag_cli_stop_begin(ag_cli_stop *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART; /* a write to stdout goes on after the first */
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    ag_interrupt_clear();
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
    ag_interrupt_clear();
}

void ag_cli_stop_resume(void)
{
    ag_interrupt_clear(); /* the signal stays recorded: ag_cli_stop_requested */
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

int ag_cli_say_stopped(const ag_command *cmd, const char *phase, int trained, const char *save,
                       int saved, long step)
{
    int sig = ag_cli_stop_requested();
    const char *why = ag_cli_stop_reason(sig);
    char shown[AG_QUOTE_LEN];
    if (!trained)
        ag_cli_error(cmd, "%s while %s; nothing was saved", why, phase);
    else if (saved && phase)
        ag_cli_error(cmd, "%s during %s after step %ld; %s (step %ld) was saved before it", why,
                     phase, step, ag_quote(save, shown, sizeof(shown)), step);
    else if (saved)
        ag_cli_error(cmd, "%s after step %ld; saved %s (step %ld)", why, step,
                     ag_quote(save, shown, sizeof(shown)), step);
    else
        ag_cli_error(cmd, "%s after step %ld; nothing was saved%s", why, step,
                     save ? "" : " (no --save)");
    return 128 + sig;
}

/* What to change before trying again, after a step failed with why. */
static const char *retry_advice(ag_status why)
{
    return why == AG_ERR_NUMERIC ? "a smaller --lr or --clip"
           : why == AG_ERR_NOMEM ? "a smaller --batch (or more free memory)"
                                 : NULL;
}

void ag_cli_say_failed(const ag_command *cmd, ag_status why, int broken, const char *save,
                       int saved, long step)
{
    char shown[AG_QUOTE_LEN];
    const char *advice = retry_advice(why);
    if (broken)
        ag_cli_error(cmd, "stopped; the update made a weight NaN or Inf, so nothing was saved "
                          "(files already there keep their content); try a smaller --lr or "
                          "--clip");
    else if (saved)
        ag_cli_error(cmd,
                     "stopped; saved %s at step %ld, the last good one: resume it with --load%s%s",
                     ag_quote(save, shown, sizeof(shown)), step, advice ? " and " : "",
                     advice ? advice : "");
    else
        ag_cli_error(cmd, "stopped at step %ld; nothing was saved%s%s%s", step + 1,
                     save ? "" : " (no --save)", advice ? "; try " : "", advice ? advice : "");
}
