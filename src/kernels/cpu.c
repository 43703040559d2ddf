/*
 * cpu.c - the CPU's features, asked once (cpu.h).
 */
#include "cpu.h"

#include <pthread.h>

static ag_cpu features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void features_init(void)
{
#ifdef AG_X86_KERNELS
    __builtin_cpu_init();
    features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    features.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
    features.avx512dq = features.avx512 && __builtin_cpu_supports("avx512dq");
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
