/*
 * signals.c - holding the signals that stop the command while a file is
 * written (signals.h; catching them for a long run is run.c's).
 */
#include "signals.h"

#include <stddef.h>

void ag_cli_hold_signals(int hold, sigset_t *old)
{
    if (hold) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigprocmask(SIG_BLOCK, &set, old);
    } else {
        sigprocmask(SIG_SETMASK, old, NULL);
    }
}
