/*
 * signals.h - the command and the signals that stop it: a long run is only
 * asked to stop (it finishes its step, saves, and exits 128 + the signal),
 * and a file being written is finished or removed before a signal takes
 * effect, so no temporary file is left behind.
 */
#ifndef AG_CLI_SIGNALS_H
#define AG_CLI_SIGNALS_H

#include <signal.h>

/* Hold Ctrl-C, SIGTERM and SIGHUP while a file is written (hold 1, saved a
 * mask), then let them through (hold 0, the same saved): a signal that
 * comes during the write takes effect once the file is whole or gone. */
void ag_cli_hold_signals(int hold, sigset_t *saved);

/* Stopping a long run (run.c): between ag_cli_stop_begin and
 * ag_cli_stop_end, SIGINT (Ctrl-C), SIGTERM (kill, timeout) and SIGHUP (the
 * terminal went away) only record themselves; ag_cli_stop_requested returns
 * the signal (0 when none), which the run checks between steps, then saves
 * and exits 128 + it. */
typedef struct ag_cli_stop {
    struct sigaction old_int, old_term, old_hup; /* restored by ag_cli_stop_end */
    int active;
} ag_cli_stop;
void ag_cli_stop_begin(ag_cli_stop *s);
void ag_cli_stop_end(ag_cli_stop *s); /* does nothing unless begun */
int ag_cli_stop_requested(void);
/* "interrupted", "stopped by SIGTERM" or "stopped by SIGHUP". */
const char *ag_cli_stop_reason(int sig);

#endif /* AG_CLI_SIGNALS_H */
