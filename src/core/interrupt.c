/*
 * interrupt.c - stopping long work from outside, and hearing how it goes.
 *
 * A signal handler (the command's Ctrl-C) calls ag_interrupt(). From then
 * on every op about to run, every backward pass between two entries and
 * every long loop of the library (reading a text, a validation pass,
 * sampling) fails with AG_ERR_STOPPED, leaving what it had finished as it
 * was, until ag_interrupt_clear(). A step stopped this way has not updated
 * a single weight.
 *
 * The same long loops tell a progress hook (ag_progress_set) how far they
 * are, so a program can show it. Both are process-wide, like the thread
 * count: one program, one user who may press Ctrl-C.
 */
#include "internal.h"

#include <signal.h>

static volatile sig_atomic_t interrupted;
static ag_progress_fn progress_fn;
static void *progress_ctx;

void ag_interrupt(void)
{
    interrupted = 1; /* async-signal-safe: a store to a sig_atomic_t */
}

int ag_interrupted(void)
{
    return interrupted != 0;
}

void ag_interrupt_clear(void)
{
    interrupted = 0;
}

void ag_progress_set(ag_progress_fn fn, void *ctx)
{
    progress_fn = fn;
    progress_ctx = ctx;
}

ag_status ag_progress_report(const char *what, double done, double total)
{
    if (progress_fn)
        progress_fn(progress_ctx, what, done, total);
    return interrupted ? AG_ERR_STOPPED : AG_OK;
}
