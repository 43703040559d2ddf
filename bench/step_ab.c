/*
 * step_ab.c - two builds of the library against each other in one process:
 * training steps of the attention layer (zero_grad, forward, mse, backward,
 * Adam, tape reset), one from each build in turn, and the least CPU time
 * each build took for forward, backward and the whole step. On a machine
 * shared with other work a step's time swings by 30% from one second to the
 * next; steps that alternate see the same swings, and the least time of
 * many is the one the other work disturbed least. Not part of the build:
 *
 *   bench/step_ab.sh OLD NEW     # OLD/build/libattograd_ab.so, NEW/build/...
 *   cc -O2 -Iinclude bench/step_ab.c -ldl -o /tmp/step_ab
 *   /tmp/step_ab OLD/build/libattograd_ab.so NEW/build/libattograd_ab.so 1 4096 256 8 1 12
 *
 * Arguments: the two shared objects, then B T d H causal rounds, and
 * optionally REPS: steps per timed sample (default 1), for steps of a
 * microsecond or less, where one reading of the CPU clock costs about as
 * much as the step; the times printed are then per step, and forward and
 * backward are not told apart (all three columns are the whole step).
 * Float builds only (the steps' data is made here as floats).
 *
 * STEP_AB_FTZ=1 in the environment sets the x86 FPU to flush subnormals
 * to zero: a small layer that fits its fixed data exactly ends with Adam's
 * moments decaying into subnormals, whose microcode assists then dominate
 * the step in whichever build got there (bench/README.md, "Subnormals").
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

typedef struct build {
    void *so;
    ag_rng (*rng_new)(uint64_t seed);
    ag_attention *(*attention_new)(int, int, int, ag_rng *, char *, size_t);
    size_t (*attention_params)(ag_attention *, ag_tensor **, const char **, size_t);
    ag_optim *(*adam_new)(ag_tensor *const *, size_t, double, double, double, double, double);
    ag_tape *(*tape_new)(void);
    void (*zero_grad)(ag_tensor *const *, size_t);
    ag_tensor *(*tensor_from)(ag_tape *, int, const int *, const ag_real *);
    ag_tensor *(*mse)(ag_tape *, const ag_tensor *, const ag_tensor *);
    ag_tensor *(*attention_forward)(ag_tape *, ag_attention *, const ag_tensor *, ag_tensor **);
    ag_status (*backward)(ag_tape *, ag_tensor *);
    void (*optim_step)(ag_optim *);
    void (*tape_reset)(ag_tape *);
    ag_attention *att;
    ag_optim *opt;
    ag_tape *tape;
    ag_tensor *params[4];
    double best[3]; /* forward, backward, step: least CPU seconds */
} build;

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* *fn = the symbol name of so, or exit */
static void need(void *so, const char *name, void *fn)
{
    void *p = dlsym(so, name);
    if (!p) {
        fprintf(stderr, "step_ab: no %s: %s\n", name, dlerror());
        exit(1);
    }
    *(void **)fn = p;
}

static void load(build *b, const char *path, int d, int H, int causal)
{
    b->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!b->so) {
        fprintf(stderr, "step_ab: %s\n", dlerror());
        exit(1);
    }
    need(b->so, "ag_rng_new", &b->rng_new);
    need(b->so, "ag_attention_new", &b->attention_new);
    need(b->so, "ag_attention_params", &b->attention_params);
    need(b->so, "ag_adam_new", &b->adam_new);
    need(b->so, "ag_tape_new", &b->tape_new);
    need(b->so, "ag_zero_grad", &b->zero_grad);
    need(b->so, "ag_tensor_from", &b->tensor_from);
    need(b->so, "ag_mse", &b->mse);
    need(b->so, "ag_attention_forward", &b->attention_forward);
    need(b->so, "ag_backward", &b->backward);
    need(b->so, "ag_optim_step", &b->optim_step);
    need(b->so, "ag_tape_reset", &b->tape_reset);
    ag_rng rng = b->rng_new(1);
    b->att = b->attention_new(d, H, causal, &rng, NULL, 0);
    if (!b->att)
        exit(1);
    b->attention_params(b->att, b->params, NULL, 4);
    b->opt = b->adam_new(b->params, 4, 1e-3, 0.9, 0.999, 1e-8, 0);
    b->tape = b->tape_new();
    b->best[0] = b->best[1] = b->best[2] = 1e30;
}

/* The step without timing */
static void bare_step(build *b, const int *shape, const ag_real *x, const ag_real *y)
{
    b->zero_grad(b->params, 4);
    ag_tensor *xt = b->tensor_from(b->tape, 3, shape, x),
              *yt = b->tensor_from(b->tape, 3, shape, y);
    ag_tensor *loss = b->mse(b->tape, b->attention_forward(b->tape, b->att, xt, NULL), yt);
    if (b->backward(b->tape, loss) != AG_OK) {
        fprintf(stderr, "step_ab: the step failed\n");
        exit(1);
    }
    b->optim_step(b->opt);
    b->tape_reset(b->tape);
}

/* reps steps timed together; after the first (warm-up) round, the least kept */
static void steps(build *b, const int *shape, const ag_real *x, const ag_real *y, int keep,
                  int reps)
{
    double t0 = cpu_now();
    for (int i = 0; i < reps; i++)
        bare_step(b, shape, x, y);
    double t = (cpu_now() - t0) / reps;
    for (int i = 0; keep && i < 3; i++)
        if (t < b->best[i])
            b->best[i] = t;
}

/* One step; after the first (warm-up) round, the least times kept. */
static void step(build *b, const int *shape, const ag_real *x, const ag_real *y, int keep)
{
    double t0 = cpu_now();
    b->zero_grad(b->params, 4);
    ag_tensor *xt = b->tensor_from(b->tape, 3, shape, x),
              *yt = b->tensor_from(b->tape, 3, shape, y);
    ag_tensor *loss = b->mse(b->tape, b->attention_forward(b->tape, b->att, xt, NULL), yt);
    double t1 = cpu_now();
    if (b->backward(b->tape, loss) != AG_OK) {
        fprintf(stderr, "step_ab: the step failed\n");
        exit(1);
    }
    double t2 = cpu_now();
    b->optim_step(b->opt);
    b->tape_reset(b->tape);
    double t3 = cpu_now(), t[3] = {t1 - t0, t2 - t1, t3 - t0};
    for (int i = 0; keep && i < 3; i++)
        if (t[i] < b->best[i])
            b->best[i] = t[i];
}

int main(int argc, char **argv)
{
    if (argc != 9 && argc != 10) {
        fprintf(stderr, "usage: step_ab A.so B.so B T d H causal rounds [reps]\n");
        return 2;
    }
    int shape[3] = {atoi(argv[3]), atoi(argv[4]), atoi(argv[5])};
    int H = atoi(argv[6]), causal = atoi(argv[7]), rounds = atoi(argv[8]);
    int reps = argc > 9 ? atoi(argv[9]) : 1;
    size_t n = (size_t)shape[0] * (size_t)shape[1] * (size_t)shape[2];
    ag_real *x = malloc(n * sizeof(ag_real)), *y = malloc(n * sizeof(ag_real));
    if (!x || !y || shape[0] < 1 || shape[1] < 1 || shape[2] < 1 || H < 1 || rounds < 1 || reps < 1)
        return 2;
    const char *ftz = getenv("STEP_AB_FTZ");
    if (ftz && strcmp(ftz, "1") == 0) {
#if defined(__x86_64__) || defined(__i386__)
        _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ and DAZ */
#else
        fprintf(stderr, "step_ab: STEP_AB_FTZ is for x86 only\n");
        return 2;
#endif
    }
    srand(1);
    for (size_t i = 0; i < n; i++) {
        x[i] = (ag_real)(2.0 * rand() / RAND_MAX - 1);
        y[i] = (ag_real)(2.0 * rand() / RAND_MAX - 1);
    }
    build b[2];
    for (int w = 0; w < 2; w++)
        load(&b[w], argv[1 + w], shape[2], H, causal);
    for (int r = 0; r <= rounds; r++)
        for (int w = 0; w < 2; w++)
            if (reps > 1)
                steps(&b[w], shape, x, y, r > 0, reps);
            else
                step(&b[w], shape, x, y, r > 0);
    for (int w = 0; w < 2; w++)
        printf("%s: fwd %.3f bwd %.3f step %.3f us\n", argv[1 + w], 1e6 * b[w].best[0],
               1e6 * b[w].best[1], 1e6 * b[w].best[2]);
    printf("B/A: fwd %.3f bwd %.3f step %.3f\n", b[1].best[0] / b[0].best[0],
           b[1].best[1] / b[0].best[1], b[1].best[2] / b[0].best[2]);
    free(x);
    free(y);
    return 0;
}
