/*
 * gpt_ab.c - two builds of the library against each other in one process,
 * on the GPT's training step at the text task's defaults (gpt_pair.h): one
 * step from each build in turn, so that both see the same swings of a
 * shared machine (which build goes first alternates). Prints, per build,
 * the least and the median wall time of a step, and the median over pairs
 * of B's step over A's in the same pair: the least disturbed before/after
 * on a busy host. Not part of the build:
 *
 *   bench/step_ab.sh OLD NEW     # OLD/build/gpt_pair.so, NEW/build/gpt_pair.so
 *   cc -O2 -Iinclude bench/gpt_ab.c -ldl -o /tmp/gpt_ab
 *   /tmp/gpt_ab OLD/build/gpt_pair.so NEW/build/gpt_pair.so [THREADS [STEPS]]
 *
 * A fifth argument gives B its own thread count: one build at two paths
 * (two copies of the file, so two libraries with their own thread pools)
 * then measures what a second thread gains, in the same pairs:
 *
 *   cp NEW/build/gpt_pair.so /tmp/b.so
 *   /tmp/gpt_ab NEW/build/gpt_pair.so /tmp/b.so 1 100 2
 *
 * Float builds only.
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"
#include "gpt_pair.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct build {
    double (*step)(void);
    double (*median)(double *, size_t);
    double *wall;
} build;

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

static void load(build *b, const char *path, int threads, int steps)
{
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "gpt_ab: %s\n", dlerror());
        exit(1);
    }
    int (*open_gpt)(int, int, int, int, int, int, int);
    need(so, "gpt_pair_open", &open_gpt);
    need(so, "gpt_pair_step", &b->step);
    need(so, "ag_median", &b->median);
    b->wall = malloc((size_t)steps * sizeof(double));
    if (!b->wall || open_gpt(GPT_PAIR_DEFAULTS, threads) != 0)
        exit(1);
}

static double step(build *b)
{
    double t = b->step();
    if (t < 0)
        exit(1);
    return t;
}

int main(int argc, char **argv)
{
    int threads = argc > 3 ? atoi(argv[3]) : 1, steps = argc > 4 ? atoi(argv[4]) : 100;
    int threads_b = argc > 5 ? atoi(argv[5]) : threads;
    if (argc < 3 || argc > 6 || threads < 1 || steps < 1 || threads_b < 1) {
        fprintf(stderr, "usage: gpt_ab A.so B.so [THREADS [STEPS [THREADS_B]]]\n");
        return 2;
    }
    build b[2];
    for (int w = 0; w < 2; w++)
        load(&b[w], argv[1 + w], w ? threads_b : threads, steps);
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
