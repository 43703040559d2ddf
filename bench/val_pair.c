/*
 * val_pair.c - the validation pass (ag_gpt_val_loss: forward only, every
 * window of the text's last 10%) of a default-sized GPT, on one thread and
 * on two, in turn in one process, for one or two builds of the library
 * (shared objects made by bench/step_ab.sh): each round times every build
 * at both thread counts, the order reversed every other round, so that all
 * of them see the same swings of a shared machine. Prints each round's
 * seconds and, per build, the median over rounds of one thread's time over
 * two threads' (the speed-up) and, with two builds, of B's time over A's.
 * Not part of the build:
 *
 *   bench/step_ab.sh OLD NEW
 *   cc -O2 -Iinclude bench/val_pair.c -ldl -o /tmp/val_pair
 *   /tmp/val_pair TEXT ROUNDS OLD/build/libattograd_ab.so [NEW/build/libattograd_ab.so]
 *
 * The model is random (seed 1) with the text task's defaults and the text's
 * own vocabulary; only the time matters. Float builds only.
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_ROUNDS 64

typedef struct build {
    const char *path;
    void (*set_threads)(int);
    ag_gpt_config (*defaults)(int);
    ag_gpt *(*gpt_new)(const ag_gpt_config *, ag_rng *, char *, size_t);
    ag_status (*text_load)(const char *, const ag_vocab *, ag_text **, char *, size_t);
    int (*vocab_size)(const ag_vocab *);
    ag_status (*val_loss)(ag_gpt *, const ag_text *, double *, size_t *, char *, size_t);
    ag_gpt *g;
    ag_text *text;
    double sec[MAX_ROUNDS][2]; /* one thread, two threads */
} build;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define SYM(b, field, name) ((*(void **)&(b)->field = dlsym(so, name)) != NULL)

static int open_build(build *b, const char *text)
{
    void *so = dlopen(b->path, RTLD_NOW | RTLD_LOCAL);
    char err[256];
    if (!so) {
        fprintf(stderr, "%s\n", dlerror());
        return -1;
    }
    if (!SYM(b, set_threads, "ag_set_threads") || !SYM(b, defaults, "ag_gpt_defaults") ||
        !SYM(b, gpt_new, "ag_gpt_new") || !SYM(b, text_load, "ag_text_load") ||
        !SYM(b, vocab_size, "ag_vocab_size") || !SYM(b, val_loss, "ag_gpt_val_loss")) {
        fprintf(stderr, "%s: a function is missing\n", b->path);
        return -1;
    }
    if (b->text_load(text, NULL, &b->text, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    ag_gpt_config c = b->defaults(b->vocab_size(b->text->vocab));
    ag_rng (*rng_new)(uint64_t);
    *(void **)&rng_new = dlsym(so, "ag_rng_new");
    if (!rng_new) {
        fprintf(stderr, "%s: ag_rng_new is missing\n", b->path);
        return -1;
    }
    ag_rng rng = rng_new(1);
    if (!(b->g = b->gpt_new(&c, &rng, err, sizeof(err)))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static double time_val(build *b, int threads)
{
    char err[256];
    double loss;
    b->set_threads(threads);
    double t0 = now();
    if (b->val_loss(b->g, b->text, &loss, NULL, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s: %s\n", b->path, err);
        exit(1);
    }
    return now() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_ROUNDS) {
        fprintf(stderr, "usage: %s TEXT ROUNDS(1..%d) A.so [B.so]\n", argv[0], MAX_ROUNDS);
        return 2;
    }
    int rounds = atoi(argv[2]), nb = argc - 3;
    build b[2] = {{.path = argv[3]}, {.path = nb > 1 ? argv[4] : NULL}};
    for (int i = 0; i < nb; i++)
        if (open_build(&b[i], argv[1]) != 0)
            return 1;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2 * nb; k++) {
            int j = r % 2 ? 2 * nb - 1 - k : k; /* (build, threads) in turn, reversed */
            b[j / 2].sec[r][j % 2] = time_val(&b[j / 2], j % 2 + 1);
        }
        printf("round %d:", r + 1);
        for (int i = 0; i < nb; i++)
            printf("  %c one thread %.3f s, two %.3f s (x%.2f)", 'A' + i, b[i].sec[r][0],
                   b[i].sec[r][1], b[i].sec[r][0] / b[i].sec[r][1]);
        printf("\n");
    }
    for (int i = 0; i < nb; i++) {
        double up[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++)
            up[r] = b[i].sec[r][0] / b[i].sec[r][1];
        printf("%c %s: two threads over one, median x%.2f\n", 'A' + i, b[i].path,
               median(up, rounds));
    }
    for (int t = 0; nb > 1 && t < 2; t++) {
        double ratio[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++)
            ratio[r] = b[1].sec[r][t] / b[0].sec[r][t];
        printf("B/A on %d thread%s, median %.3f\n", t + 1, t ? "s" : "", median(ratio, rounds));
    }
    return 0;
}
