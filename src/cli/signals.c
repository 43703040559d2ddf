/*
 * signals.c - holding and catching the signals that stop the command
 * (signals.h).
 */
#include "signals.h"

#include <string.h>

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

/* The signal that asked the run to stop, or 0. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

void ag_cli_catch_stop(ag_cli_stop *saved)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &saved->old_int);
    sigaction(SIGTERM, &sa, &saved->old_term);
    sigaction(SIGHUP, &sa, &saved->old_hup);
}

void ag_cli_release_stop(const ag_cli_stop *saved)
{
    sigaction(SIGINT, &saved->old_int, NULL);
    sigaction(SIGTERM, &saved->old_term, NULL);
    sigaction(SIGHUP, &saved->old_hup, NULL);
}

int ag_cli_stop_signal(void)
{
    return stop_signal;
}
