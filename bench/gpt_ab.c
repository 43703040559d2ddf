/*
 * gpt_ab.c - two builds of the library against each other in one process,
 * on the GPT's training step (ag_gpt_trainer_step at the text task's
 * defaults, random characters, as bench/gpt_step.c runs it): one step from
 * each build in turn, so that both see the same swings of a shared
 * machine (which build goes first alternates). Prints, per build, the least
 * and the median wall time of a step, and the median over pairs of B's step
 * over A's in the same pair: the least disturbed before/after on a busy
 * host. Not part of the build:
 *
 *   bench/step_ab.sh OLD NEW     # OLD/build/libattograd_ab.so, NEW/build/...
 *   cc -O2 -Iinclude bench/gpt_ab.c -ldl -o /tmp/gpt_ab
 *   /tmp/gpt_ab OLD/build/libattograd_ab.so NEW/build/libattograd_ab.so [THREADS [STEPS]]
 *
 * A fifth argument gives B its own thread count: one build at two paths
 * (two copies of the file, so two libraries with their own thread pools)
 * then measures what a second thread gains, in the same pairs:
 *
 *   cp NEW/build/libattograd_ab.so /tmp/b.so
 *   /tmp/gpt_ab NEW/build/libattograd_ab.so /tmp/b.so 1 100 2
 *
 * Both builds must share include/attograd.h's structs (the configs are
 * made here). Float builds only.
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define VOCAB 65
#define TEXT_CHARS 100000

typedef struct build {
    ag_status (*trainer_step)(ag_gpt_trainer *, double *, char *, size_t);
    double (*median)(double *, size_t);
    ag_gpt_trainer *trainer;
    double *wall;
} build;

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* *fn = the symbol name of so, or exit */
static void need(void *so, const char *name, void *fn)
{
    void *p = dlsym(so, name);
    if (!p) {
        fprintf(stderr, "gpt_ab: no %s: %s\n", name, dlerror());
        exit(1);
    }
    *(void **)fn = p;
}

static void load(build *b, const char *path, const char *chars, int threads, int steps)
{
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "gpt_ab: %s\n", dlerror());
        exit(1);
    }
    ag_rng (*rng_new)(uint64_t);
    ag_status (*text_parse)(const char *, size_t, const char *, const ag_vocab *, ag_text **,
                            char *, size_t);
    ag_gpt_config (*gpt_defaults)(int);
    ag_gpt_train_config (*train_defaults)(void);
    ag_gpt *(*gpt_new)(const ag_gpt_config *, ag_rng *, char *, size_t);
    ag_gpt_trainer *(*trainer_new)(ag_gpt *, const ag_text *, const ag_gpt_train_config *, char *,
                                   size_t);
    void (*set_threads)(int);
    need(so, "ag_rng_new", &rng_new);
    need(so, "ag_text_parse", &text_parse);
    need(so, "ag_gpt_defaults", &gpt_defaults);
    need(so, "ag_gpt_train_defaults", &train_defaults);
    need(so, "ag_gpt_new", &gpt_new);
    need(so, "ag_gpt_trainer_new", &trainer_new);
    need(so, "ag_gpt_trainer_step", &b->trainer_step);
    need(so, "ag_median", &b->median);
    need(so, "ag_set_threads", &set_threads);
    char err[256];
    ag_text *text = NULL;
    ag_gpt *g = NULL;
    ag_gpt_config mc = gpt_defaults(VOCAB);
    ag_gpt_train_config tc = train_defaults();
    ag_rng init = rng_new(1);
    if (text_parse(chars, TEXT_CHARS, "random text", NULL, &text, err, sizeof(err)) != AG_OK ||
        !(g = gpt_new(&mc, &init, err, sizeof(err))) ||
        !(b->trainer = trainer_new(g, text, &tc, err, sizeof(err)))) {
        fprintf(stderr, "gpt_ab: %s: %s\n", path, err);
        exit(1);
    }
    set_threads(threads);
    b->wall = malloc((size_t)steps * sizeof(double));
    if (!b->wall)
        exit(1);
}

static double step(build *b)
{
    char err[256];
    double t0 = wall_now();
    if (b->trainer_step(b->trainer, NULL, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "gpt_ab: %s\n", err);
        exit(1);
    }
    return wall_now() - t0;
}

int main(int argc, char **argv)
{
    int threads = argc > 3 ? atoi(argv[3]) : 1, steps = argc > 4 ? atoi(argv[4]) : 100;
    int threads_b = argc > 5 ? atoi(argv[5]) : threads;
    if (argc < 3 || argc > 6 || threads < 1 || steps < 1 || threads_b < 1) {
        fprintf(stderr, "usage: gpt_ab A.so B.so [THREADS [STEPS [THREADS_B]]]\n");
        return 2;
    }
    static char chars[TEXT_CHARS];
    srand(7);
    for (int i = 0; i < TEXT_CHARS; i++) /* every letter present: the alphabet leads */
        chars[i] = (char)('0' + (i < VOCAB ? i : rand() % VOCAB));
    build b[2];
    for (int w = 0; w < 2; w++)
        load(&b[w], argv[1 + w], chars, w ? threads_b : threads, steps);
    double *ratio = malloc((size_t)steps * sizeof(double));
    if (!ratio)
        return 1;
    for (int s = -3; s < steps; s++) { /* three to warm up */
        int first = s & 1;             /* which build goes first alternates */
        double t[2];
        t[first] = step(&b[first]);
        t[!first] = step(&b[!first]);
        if (s >= 0) {
            b[0].wall[s] = t[0];
            b[1].wall[s] = t[1];
            ratio[s] = t[1] / t[0];
        }
    }
    double r = b[0].median(ratio, (size_t)steps);
    for (int w = 0; w < 2; w++) {
        double median = b[w].median(b[w].wall, (size_t)steps); /* sorts: the least is first */
        printf("%s: least %.2f ms, median %.2f ms\n", argv[1 + w], 1e3 * b[w].wall[0],
               1e3 * median);
    }
    printf("B/A per pair, median: %.3f (threads %d and %d, %d pairs)\n", r, threads, threads_b,
           steps);
    return 0;
}
