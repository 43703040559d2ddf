/*
 * gpt_step.c - the GPT's training step (ag_gpt_trainer_step at the text
 * task's defaults, random characters, as `attograd bench gpt` runs it),
 * each step timed twice: by the calling thread's CPU clock, which leaves
 * out the time a busy machine gave the core to other work, and by the wall
 * clock. Prints the fastest and the median step of each. With one thread
 * the CPU figure is the step's cost; with more it counts the calling thread
 * alone, so compare wall times there. Not part of the build; from the
 * repository root:
 *
 *   make
 *   cc -O2 -Iinclude bench/gpt_step.c bench/gpt_pair.c build/float/libattograd.a -lm -lpthread \
 *      -o build/gpt_step
 *   build/gpt_step [THREADS [STEPS]]     # default 1 thread, 40 steps
 *
 * Linked against two builds and run in turns, it gives a before/after that
 * a shared machine's load disturbs less than bench gpt's wall time:
 *   bench: op=gpt_step threads=1 cpu_min_ms=.. cpu_median_ms=.. wall_min_ms=.. wall_median_ms=..
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, whatever -std says */

#include "attograd.h"
#include "gpt_pair.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1, steps = argc > 2 ? atoi(argv[2]) : 40;
    if (threads < 1 || steps < 1) {
        fprintf(stderr, "usage: %s [THREADS [STEPS]]\n", argv[0]);
        return 2;
    }
    double *cpu = malloc((size_t)steps * sizeof(double));
    double *wall = malloc((size_t)steps * sizeof(double));
    if (!cpu || !wall) {
        fprintf(stderr, "gpt_step: out of memory\n");
        return 1;
    }
    if (gpt_pair_open(GPT_PAIR_DEFAULTS, threads) != 0)
        return 1;
    for (int s = -3; s < steps; s++) { /* three to warm up */
        double c0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID), w0 = clock_seconds(CLOCK_MONOTONIC);
        if (gpt_pair_step() < 0)
            return 1;
        if (s >= 0) {
            cpu[s] = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
            wall[s] = clock_seconds(CLOCK_MONOTONIC) - w0;
        }
    }
    /* ag_median sorts: the least is then first */
    double cpu_median = ag_median(cpu, (size_t)steps), wall_median = ag_median(wall, (size_t)steps);
    printf("bench: op=gpt_step threads=%d cpu_min_ms=%.2f cpu_median_ms=%.2f wall_min_ms=%.2f "
           "wall_median_ms=%.2f\n",
           threads, cpu[0] * 1e3, cpu_median * 1e3, wall[0] * 1e3, wall_median * 1e3);
    free(cpu);
    free(wall);
    return 0;
}
