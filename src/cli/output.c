/*
 * output.c - limits of a run: the size limit that keeps a step within
 * memory, and holding signals while a file is written. (The files a
 * command names are checked in outfile.c.)
 */
#include "cli.h"

#include <signal.h>

/* a * b, saturating at UINT64_MAX */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

uint64_t ag_cli_attention_values(uint64_t batch, uint64_t heads, uint64_t seq)
{
    return mul_sat(mul_sat(batch, heads), mul_sat(seq, seq));
}

uint64_t ag_cli_activation_values(uint64_t batch, uint64_t seq, uint64_t dim)
{
    return mul_sat(mul_sat(batch, seq), dim);
}

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
