/*
 * choice.c - which kernels compute the ops: the fast ones (src/kernels:
 * blocked products, vector rows, attention tiles, threads) or the plain
 * reference loops (ref_*.c in this folder), for the whole process. The
 * environment variable AG_KERNELS sets it when first asked; a build without
 * fast kernels for its machine still has both (make PORTABLE=1 makes the
 * fast ones plain C).
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int use_reference;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    const char *env = getenv("AG_KERNELS");
    if (env && strcmp(env, "reference") == 0)
        atomic_store(&use_reference, 1);
}

int ag_reference_kernels(void)
{
    pthread_once(&env_once, read_env);
    return atomic_load_explicit(&use_reference, memory_order_relaxed);
}

ag_status ag_set_kernels(const char *name)
{
    pthread_once(&env_once, read_env);
    if (!name || (strcmp(name, "fast") != 0 && strcmp(name, "reference") != 0))
        return AG_ERR_ARG;
    atomic_store(&use_reference, strcmp(name, "reference") == 0);
    return AG_OK;
}

const char *ag_kernels_name(void)
{
    return ag_reference_kernels() ? "reference" : "fast";
}
