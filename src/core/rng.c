/*
 * rng.c - a small seeded generator (splitmix64) so that a seed means the same
 * numbers on every machine, independent of libc's rand().
 */
#include "internal.h"

#include <math.h>

ag_rng ag_rng_new(uint64_t seed)
{
    ag_rng rng = {seed};
    return rng;
}

uint64_t ag_rng_next(ag_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double ag_rng_uniform(ag_rng *rng)
{
    return (double)(ag_rng_next(rng) >> 11) * 0x1.0p-53; /* 53 random bits */
}

double ag_rng_normal(ag_rng *rng)
{
    /* Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]. */
    double u = 1.0 - ag_rng_uniform(rng);
    double v = ag_rng_uniform(rng);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

uint32_t ag_rng_below(ag_rng *rng, uint32_t n)
{
    if (n == 0)
        return 0;
    /* Rejection keeps every value equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do
        r = ag_rng_next(rng);
    while (r >= limit);
    return (uint32_t)(r % n);
}

void ag_fill_normal(ag_tensor *t, ag_rng *rng, double mean, double std)
{
    if (!t || !rng)
        return;
    for (size_t i = 0; i < t->size; i++)
        t->data[i] = (ag_real)(mean + std * ag_rng_normal(rng));
}

void ag_fill_uniform(ag_tensor *t, ag_rng *rng, double lo, double hi)
{
    if (!t || !rng)
        return;
    for (size_t i = 0; i < t->size; i++)
        t->data[i] = (ag_real)(lo + (hi - lo) * ag_rng_uniform(rng));
}
