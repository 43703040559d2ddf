/*
 * timing.c - timing a step as `attograd bench` does: warm up, time every
 * step, report the medians (one slow step on a busy machine does not move
 * them) and the library's allocations per step.
 */
#include "internal.h"

#include <stdlib.h>
#include <time.h>

#define WARMUP_STEPS 3

static double seconds_of(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ag_median(double *v, size_t n)
{
    if (!v || n == 0)
        return 0;
    qsort(v, n, sizeof(*v), compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ag_status ag_time_steps(ag_step_fn step, void *ctx, int steps, ag_step_timing *out)
{
    if (!step || !out || steps < 0)
        return AG_ERR_ARG;
    double t0 = seconds_of(CLOCK_MONOTONIC);
    for (int k = 0; k < WARMUP_STEPS; k++)
        if (!step(ctx))
            return AG_ERR_ARG;
    double once = (seconds_of(CLOCK_MONOTONIC) - t0) / WARMUP_STEPS;
    if (steps == 0) { /* about a second's worth */
        double want = once > 0 ? 1.0 / once : 2000;
        steps = want < 5 ? 5 : want > 2000 ? 2000 : (int)want;
    }
    /* not ag_malloc: the buffer is the harness's, not the step's */
    double *times = malloc(2 * (size_t)steps * sizeof(*times));
    if (!times)
        return AG_ERR_NOMEM;
    size_t count = ag_alloc_count();
    for (int k = 0; k < steps; k++) {
        double c0 = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
        t0 = seconds_of(CLOCK_MONOTONIC);
        if (!step(ctx)) {
            free(times);
            return AG_ERR_ARG;
        }
        times[k] = seconds_of(CLOCK_MONOTONIC) - t0;
        times[steps + k] = seconds_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    out->allocs = (double)(ag_alloc_count() - count) / steps;
    out->steps = steps;
    out->seconds = ag_median(times, (size_t)steps);
    out->cpu_seconds = ag_median(times + steps, (size_t)steps);
    free(times);
    return AG_OK;
}
