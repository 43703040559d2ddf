/*
 * gpt_pair.c - the GPT's training step (ag_gpt_trainer_step on random
 * characters) behind the two functions of gpt_pair.h. Linked into a shared
 * object with the library (bench/step_ab.sh), two copies of it are two
 * libraries, each with its own thread pool: compare_gpt.py --paired runs
 * one on one thread and one on two from the process that runs PyTorch's
 * step, and bench/gpt_ab.c runs two builds' against each other. Linked
 * into bench/gpt_step.c it times one build's step. Not part of the build.
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"
#include "gpt_pair.h"

#include <stdio.h>
#include <time.h>

#define TEXT_CHARS 100000

static ag_gpt_trainer *trainer;

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
