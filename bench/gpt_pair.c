/*
 * gpt_pair.c - the GPT's training step (ag_gpt_trainer_step on random
 * characters, as bench/gpt_step.c runs it) behind two functions, for
 * compare_gpt.py --paired to call through ctypes from the process that runs
 * PyTorch's step: the programs' steps then alternate on the same core, step
 * by step, and see the same swings of a shared machine. Linked with the
 * library itself, so two copies of the file are two libraries, each with
 * its own thread pool (one on one thread, one on two: switching one pool
 * between them would restart its worker every turn). Not part of the build;
 * compare_gpt.py builds it against the position-independent archive that
 * bench/step_ab.sh makes:
 *
 *   bench/step_ab.sh .
 *   cc -O2 -shared -fPIC -Iinclude bench/gpt_pair.c build/ab/float/libattograd.a \
 *      -lm -lpthread -o build/gpt_pair.so
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"

#include <stdio.h>
#include <time.h>

#define TEXT_CHARS 100000

static ag_gpt_trainer *trainer;

/* Make the trainer for a GPT of this shape (vocabulary, layers, dim,
 * heads, seq, batch; the rest at the text task's defaults) on threads
 * threads: 0 on success, else -1 with the reason on stderr. */
int gpt_pair_open(int vocab, int layers, int dim, int heads, int seq, int batch, int threads)
{
    static char chars[TEXT_CHARS];
    if (vocab < 1 || vocab > 94) {
        fprintf(stderr, "gpt_pair: vocabulary %d: 1 to 94 printable characters\n", vocab);
        return -1;
    }
    ag_rng rng = ag_rng_new(7);
    for (int i = 0; i < TEXT_CHARS; i++) /* every character present: the alphabet leads */
        chars[i] = (char)('!' + (i < vocab ? i : (int)(ag_rng_uniform(&rng) * vocab)));
    char err[256];
    ag_text *text = NULL;
    ag_gpt *g = NULL;
    ag_gpt_config mc = ag_gpt_defaults(vocab);
    mc.layers = layers;
    mc.dim = dim;
    mc.heads = heads;
    mc.seq = seq;
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    tc.batch = batch;
    ag_rng init = ag_rng_new(1);
    if (ag_text_parse(chars, TEXT_CHARS, "random text", NULL, &text, err, sizeof(err)) != AG_OK ||
        !(g = ag_gpt_new(&mc, &init, err, sizeof(err))) ||
        !(trainer = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err)))) {
        fprintf(stderr, "gpt_pair: %s\n", err);
        return -1;
    }
    ag_set_threads(threads);
    return 0;
}

/* One training step: its wall time in seconds, or -1 with the reason on
 * stderr. */
double gpt_pair_step(void)
{
    char err[256];
    struct timespec t0, t1;
    if (!trainer) {
        fprintf(stderr, "gpt_pair: gpt_pair_open first\n");
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (ag_gpt_trainer_step(trainer, NULL, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "gpt_pair: %s\n", err);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}
