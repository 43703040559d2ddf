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

/* Catch SIGINT (Ctrl-C), SIGTERM (kill, timeout) and SIGHUP (the terminal
 * went away) so that they only ask the run to stop: ag_cli_stop_signal
 * then returns the signal (0 until one comes). ag_cli_release_stop puts
 * back the handlers saved. */
typedef struct ag_cli_stop {
    struct sigaction old_int, old_term, old_hup;
} ag_cli_stop;
void ag_cli_catch_stop(ag_cli_stop *saved);
void ag_cli_release_stop(const ag_cli_stop *saved);
int ag_cli_stop_signal(void);

#endif /* AG_CLI_SIGNALS_H */
