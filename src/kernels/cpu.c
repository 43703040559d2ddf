/*
 * cpu.c - the CPU's features, asked once (cpu.h).
 */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static ag_cpu features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#ifdef AG_X86_KERNELS
/* AG_CPU=avx2 or AG_CPU=generic: use no more than that, to compute what a
 * smaller CPU computes (the kernels' arithmetic differs with their width). */
static void cap_features(const char *cap)
{
    if (!cap)
        return;
    if (strcmp(cap, "avx2") == 0 || strcmp(cap, "generic") == 0)
        features.avx512 = features.avx512dq = features.avx512_halves = 0;
    if (strcmp(cap, "generic") == 0)
        features.avx2 = 0;
}

#endif

static void features_init(void)
{
#ifdef AG_X86_KERNELS
    __builtin_cpu_init();
    features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    features.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
    features.avx512dq = features.avx512 && __builtin_cpu_supports("avx512dq");
    /* AMD's family 19h is Zen 3 and Zen 4, and of the two only Zen 4 has
     * AVX-512, in two 256-bit halves */
    features.avx512_halves = features.avx512 && __builtin_cpu_is("amdfam19h");
    cap_features(getenv("AG_CPU"));
#endif
}

const ag_cpu *ag_cpu_get(void)
{
    pthread_once(&features_once, features_init);
    return &features;
}

int ag_cpu_row_level(void)
{
#ifdef AG_REAL_DOUBLE
    return 0;
#else
    const ag_cpu *c = ag_cpu_get();
    return c->avx512 ? 2 : c->avx2 ? 1 : 0;
#endif
}
