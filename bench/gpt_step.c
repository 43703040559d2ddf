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
 *   cc -O2 -Iinclude bench/gpt_step.c build/float/libattograd.a -lm -lpthread -o build/gpt_step
 *   build/gpt_step [THREADS [STEPS]]     # default 1 thread, 40 steps
 *
 * Linked against two builds and run in turns, it gives a before/after that
 * a shared machine's load disturbs less than bench gpt's wall time:
 *   bench: op=gpt_step threads=1 cpu_min_ms=.. cpu_median_ms=.. wall_min_ms=.. wall_median_ms=..
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, whatever -std says */

#include "attograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define VOCAB 65
#define TEXT_CHARS 100000

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
    static char chars[TEXT_CHARS];
    ag_rng rng = ag_rng_new(7);
    for (int i = 0; i < TEXT_CHARS; i++) /* every letter present: the alphabet leads */
        chars[i] = (char)('0' + (i < VOCAB ? i : (int)(ag_rng_uniform(&rng) * VOCAB) % VOCAB));
    char err[256];
    ag_text *text = NULL;
    ag_gpt *g = NULL;
    ag_gpt_trainer *t = NULL;
    ag_gpt_config mc = ag_gpt_defaults(VOCAB);
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    ag_rng init = ag_rng_new(1);
    double *cpu = malloc((size_t)steps * sizeof(double));
    double *wall = malloc((size_t)steps * sizeof(double));
    if (!cpu || !wall ||
        ag_text_parse(chars, TEXT_CHARS, "random text", NULL, &text, err, sizeof(err)) != AG_OK ||
        !(g = ag_gpt_new(&mc, &init, err, sizeof(err))) ||
        !(t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err)))) {
        fprintf(stderr, "gpt_step: %s\n", cpu && wall ? err : "out of memory");
        return 1;
    }
    ag_set_threads(threads);
    for (int s = -3; s < steps; s++) { /* three to warm up */
        double c0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID), w0 = clock_seconds(CLOCK_MONOTONIC);
        if (ag_gpt_trainer_step(t, NULL, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "gpt_step: %s\n", err);
            return 1;
        }
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
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
    free(cpu);
    free(wall);
    return 0;
}
