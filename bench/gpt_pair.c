/*
 * gpt_pair.c - the GPT's training step (ag_gpt_trainer_step at the text
 * task's defaults, random characters, as bench/gpt_step.c runs it) behind
 * two functions, for compare_gpt.py --paired to call through ctypes from the
 * process that runs PyTorch's step: both programs' steps then alternate on
 * the same core, step by step, and see the same swings of a shared machine.
 * Not part of the build; compare_gpt.py builds it against the library that
 * bench/step_ab.sh makes:
 *
 *   bench/step_ab.sh .
 *   cc -O2 -shared -fPIC -Iinclude bench/gpt_pair.c build/libattograd_ab.so \
 *      -Wl,-rpath,$PWD/build -o build/gpt_pair.so
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define VOCAB 65
#define TEXT_CHARS 100000

static ag_gpt_trainer *trainer;

/* Make the trainer: 0 on success, else -1 with the reason on stderr. */
int gpt_pair_open(void)
{
    static char chars[TEXT_CHARS];
    srand(7);
    for (int i = 0; i < TEXT_CHARS; i++) /* every letter present: the alphabet leads */
        chars[i] = (char)('0' + (i < VOCAB ? i : rand() % VOCAB));
    char err[256];
    ag_text *text = NULL;
    ag_gpt *g = NULL;
    ag_gpt_config mc = ag_gpt_defaults(VOCAB);
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    ag_rng init = ag_rng_new(1);
    if (ag_text_parse(chars, TEXT_CHARS, "random text", NULL, &text, err, sizeof(err)) != AG_OK ||
        !(g = ag_gpt_new(&mc, &init, err, sizeof(err))) ||
        !(trainer = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err)))) {
        fprintf(stderr, "gpt_pair: %s\n", err);
        return -1;
    }
    return 0;
}

/* One training step on threads threads: its wall time in seconds, or -1
 * with the reason on stderr. */
double gpt_pair_step(int threads)
{
    char err[256];
    struct timespec t0, t1;
    ag_set_threads(threads);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (ag_gpt_trainer_step(trainer, NULL, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "gpt_pair: %s\n", err);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}
