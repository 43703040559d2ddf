/*
 * bench.c - `attograd bench <benchmark> [options]`: timings, one result line
 * per run, `bench: key=value ...`. Benchmarks live in the table below; each
 * parses its own options.
 *
 *   attograd bench matmul --n 512 --threads 1 --reps 10
 *   bench: op=matmul n=512 threads=1 gflops=150.3
 *
 * The reported rate is the median over the repetitions, so one slow rep on a
 * busy machine does not move it.
 */
#include "cli.h"

#include "../core/gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const ag_command ag_cmd_bench_info = {
    "bench", ag_cmd_bench, "attograd bench <matmul> [options]",
    "timings: bench matmul (GFLOPS of the matrix-multiply kernel)",
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- bench matmul ---- */

static const ag_command bench_matmul_info = {
    "bench matmul", NULL, "attograd bench matmul [--n N] [--threads N] [--reps R]",
    "GFLOPS of C = A B for (n x n) matrices",
};

static int bench_matmul(int argc, char **argv)
{
    const ag_command *cmd = &bench_matmul_info;
    int n = 512, threads = 1, reps = 10;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (ag_cli_is_help(argv[i])) {
            printf("usage: %s\n\n"
                   "Times ag_gemm, the kernel behind every matmul forward and backward, on\n"
                   "C = A B with (n x n) matrices of random numbers, and prints one line:\n"
                   "  bench: op=matmul n=N threads=T gflops=G\n"
                   "where G is 2 n^3 / seconds / 1e9, the median over the repetitions.\n"
                   "AG_GEMM=generic|avx2|avx512 in the environment forces a kernel.\n\n"
                   "  --n N         matrix size (default 512, 1..8192)\n"
                   "  --threads N   threads for ag_set_threads (default 1, 1..256)\n"
                   "  --reps R      timed repetitions (default 10, 1..1000)\n",
                   cmd->usage);
            return AG_EXIT_OK;
        } else if (ag_cli_opt(argc, argv, &i, "--n", &v)) {
            if (!v)
                return ag_cli_usage_error(cmd, "--n needs a value");
            if (!ag_cli_int(cmd, "--n", v, 1, 8192, &n))
                return AG_EXIT_USAGE;
        } else if (ag_cli_opt(argc, argv, &i, "--threads", &v)) {
            if (!v)
                return ag_cli_usage_error(cmd, "--threads needs a value");
            if (!ag_cli_int(cmd, "--threads", v, 1, 256, &threads))
                return AG_EXIT_USAGE;
        } else if (ag_cli_opt(argc, argv, &i, "--reps", &v)) {
            if (!v)
                return ag_cli_usage_error(cmd, "--reps needs a value");
            if (!ag_cli_int(cmd, "--reps", v, 1, 1000, &reps))
                return AG_EXIT_USAGE;
        } else {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
    }

    size_t nn = (size_t)n * (size_t)n;
    ag_real *a = malloc(nn * sizeof(*a)), *b = malloc(nn * sizeof(*b)), *c = malloc(nn * sizeof(*c));
    double *rates = malloc((size_t)reps * sizeof(*rates));
    if (!a || !b || !c || !rates) {
        fprintf(stderr, "attograd bench matmul: out of memory for n=%d\n", n);
        free(a), free(b), free(c), free(rates);
        return AG_EXIT_FAIL;
    }
    ag_rng rng = ag_rng_new(1);
    for (size_t i = 0; i < nn; i++) {
        a[i] = (ag_real)(ag_rng_uniform(&rng) - 0.5);
        b[i] = (ag_real)(ag_rng_uniform(&rng) - 0.5);
    }
    ag_set_threads(threads);
    const char *want = getenv("AG_GEMM");
    if (want && *want && strcmp(want, "auto") != 0 && strcmp(want, ag_gemm_kernel_name()) != 0)
        fprintf(stderr, "attograd bench matmul: AG_GEMM=%s cannot run here; using %s\n", want,
                ag_gemm_kernel_name());

    /* Warm up (pool, packing buffers, caches), then size each repetition to
     * last about 50 ms so small n is not lost in the clock's resolution. */
    double t0 = now_seconds();
    ag_gemm(0, 0, (size_t)n, (size_t)n, (size_t)n, 1, a, (size_t)n, b, (size_t)n, 0, c, (size_t)n);
    double once = now_seconds() - t0;
    long calls = once > 0 ? (long)(0.05 / once) : 1000;
    if (calls < 1)
        calls = 1;
    if (calls > 100000)
        calls = 100000;
    double flops = 2.0 * n * n * n;
    for (int r = 0; r < reps; r++) {
        t0 = now_seconds();
        for (long k = 0; k < calls; k++)
            ag_gemm(0, 0, (size_t)n, (size_t)n, (size_t)n, 1, a, (size_t)n, b, (size_t)n, 0, c,
                    (size_t)n);
        double dt = now_seconds() - t0;
        rates[r] = dt > 0 ? flops * (double)calls / dt / 1e9 : 0;
    }
    qsort(rates, (size_t)reps, sizeof(*rates), compare_double);
    double median = reps % 2 ? rates[reps / 2] : 0.5 * (rates[reps / 2 - 1] + rates[reps / 2]);
    printf("bench: op=matmul n=%d threads=%d gflops=%.1f\n", n, threads, median);
    ag_set_threads(1);
    free(a), free(b), free(c), free(rates);
    return AG_EXIT_OK;
}

/* ---- the benchmarks: add `bench attention` (and others) as rows here ---- */

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the benchmark's name */
    const char *summary;
} benchmarks[] = {
    {"matmul", bench_matmul, "GFLOPS of C = A B for (n x n) matrices"},
};
#define N_BENCHMARKS (sizeof(benchmarks) / sizeof(benchmarks[0]))

int ag_cmd_bench(int argc, char **argv)
{
    const ag_command *cmd = &ag_cmd_bench_info;
    if (argc < 2)
        return ag_cli_usage_error(cmd, "which benchmark? (try 'attograd bench --help')");
    if (ag_cli_is_help(argv[1])) {
        printf("usage: %s\n\nPrints one `bench: key=value ...` line per benchmark run.\n\n"
               "benchmarks:\n", cmd->usage);
        for (size_t i = 0; i < N_BENCHMARKS; i++)
            printf("  %-10s %s\n", benchmarks[i].name, benchmarks[i].summary);
        printf("\n'attograd bench <benchmark> --help' lists its options.\n");
        return AG_EXIT_OK;
    }
    for (size_t i = 0; i < N_BENCHMARKS; i++)
        if (strcmp(argv[1], benchmarks[i].name) == 0)
            return benchmarks[i].run(argc - 1, argv + 1);
    fprintf(stderr, "attograd bench: unknown benchmark '%s'\nusage: %s\n", argv[1], cmd->usage);
    return AG_EXIT_USAGE;
}
