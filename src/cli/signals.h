/*
 * signals.h - the command and the signals that stop it: a long run is only
 * asked to stop (it finishes its step, saves, and exits 128 + the signal),
 * and a file being written is finished or removed before a signal takes
 * effect, so no temporary file is left behind.
 */
#ifndef AG_CLI_SIGNALS_H
#define AG_CLI_SIGNALS_H

#include "cli.h"

#include <signal.h>

/* Hold Ctrl-C, SIGTERM and SIGHUP while a file is written (hold 1, saved a
 * mask), then let them through (hold 0, the same saved): a signal that
 * comes during the write takes effect once the file is whole or gone. */
void ag_cli_hold_signals(int hold, sigset_t *saved);

/* Stopping a long run (run.c): between ag_cli_stop_begin and
 * ag_cli_stop_end, SIGINT (Ctrl-C), SIGTERM (kill, timeout) and SIGHUP (the
 * terminal went away) record themselves and ask the library to stop
 * (ag_interrupt: its work fails with AG_ERR_STOPPED at the next op);
 * ag_cli_stop_requested returns the signal (0 when none), which the run
 * checks between its phases, then saves what it has and exits 128 + it. A
 * second signal ends the process at once (128 + it), after removing the
 * temporary files being written (ag_atomic_remove_all): no target is
 * touched. ag_cli_stop_resume lets the library work again after the first
 * (to save), the signal still recorded. */
typedef struct ag_cli_stop {
    struct sigaction old_int, old_term, old_hup; /* restored by ag_cli_stop_end */
    int active;
} ag_cli_stop;
void ag_cli_stop_begin(ag_cli_stop *s);
void ag_cli_stop_end(ag_cli_stop *s); /* does nothing unless begun */
int ag_cli_stop_requested(void);
void ag_cli_stop_resume(void);
/* "interrupted", "stopped by SIGTERM" or "stopped by SIGHUP". */
const char *ag_cli_stop_reason(int sig);

/* The line a training run ends with when a signal stopped it, saying what
 * was saved (save: the --save file or NULL; saved: it was written, at
 * step): before any step (trained 0) "interrupted while reading the text;
 * nothing was saved"; after the steps "interrupted after step 12; saved
 * ck.st (step 12)"; in a later phase "interrupted during the validation
 * after step 12; ck.st (step 12) was saved before it". Returns 128 + the
 * signal, the exit status. */
int ag_cli_say_stopped(const ag_command *cmd, const char *phase, int trained, const char *save,
                       int saved, long step);
/* The line after a failed step's own message: what was saved (the step
 * before, at step), or that nothing was (broken: the update made a weight
 * non-finite; or no --save), and what to change before trying again, by
 * why the step failed (a NaN: the learning rate or the clip; out of
 * memory: the memory or the batch). */
void ag_cli_say_failed(const ag_command *cmd, ag_status why, int broken, const char *save,
                       int saved, long step);

#endif /* AG_CLI_SIGNALS_H */
