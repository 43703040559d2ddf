/*
 * bench.c - `attograd bench <benchmark> [options]`: timings, one result line
 * per run, `bench: key=value ...`. Benchmarks live in the table below; each
 * parses its own options.
 *
 *   attograd bench matmul --n 512 --threads 1 --reps 10
 *   bench: op=matmul n=512 threads=1 gflops=150.3
 *   attograd bench attention --batch 8 --seq 256 --dim 256 --heads 8
 *   bench: op=attention B=8 T=256 d=256 H=8 threads=1 us_per_step=... ...
 *
 * The reported time or rate is the median over the repetitions, so one slow
 * rep on a busy machine does not move it.
 */
#include "cli.h"

#include "../core/gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const ag_command ag_cmd_bench_info = {
    "bench", ag_cmd_bench, "attograd bench <matmul|attention|gpt> [options]",
    "timings: bench matmul (the matrix-multiply kernel), bench attention (a training step)",
};

static double clock_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_seconds(void)
{
    return clock_seconds(CLOCK_MONOTONIC);
}

/* CPU time of the whole process, all threads together. */
static double cpu_seconds(void)
{
    return clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1 (sorts v). */
static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
        int got;
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
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--n", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--n", v, 1, 8192, &n))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--threads", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--threads", v, 1, 256, &threads))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--reps", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--reps", v, 1, 1000, &reps))
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
    double median = median_of(rates, (size_t)reps);
    printf("bench: op=matmul n=%d threads=%d gflops=%.1f\n", n, threads, median);
    ag_set_threads(1);
    free(a), free(b), free(c), free(rates);
    return AG_EXIT_OK;
}

/* ---- bench attention ---- */

static const ag_command bench_attention_info = {
    "bench attention", NULL,
    "attograd bench attention [--batch B] [--seq T] [--dim d] [--heads H] [--steps N] "
    "[--threads N] [--causal] [--op-by-op]",
    "one training step of the attention layer (forward, mse, backward, Adam)",
};

/* What one step of the benchmark holds. */
typedef struct att_bench {
    ag_tape *tape;
    ag_attention *att;
    ag_optim *opt;
    ag_tensor *params[4];
    ag_real *x, *y;          /* (B,T,d) each, the same batch every step */
    int shape[3];
} att_bench;

/* One training step: zero_grad, forward, mse, backward, Adam, tape reset. */
static int att_step(att_bench *b)
{
    ag_zero_grad(b->params, 4);
    ag_tensor *x = ag_tensor_from(b->tape, 3, b->shape, b->x);
    ag_tensor *y = ag_tensor_from(b->tape, 3, b->shape, b->y);
    ag_tensor *loss = ag_mse(b->tape, ag_attention_forward(b->tape, b->att, x, NULL), y);
    if (ag_backward(b->tape, loss) != AG_OK)
        return 0;
    ag_optim_step(b->opt);
    ag_tape_reset(b->tape);
    return 1;
}

static int bench_attention(int argc, char **argv)
{
    const ag_command *cmd = &bench_attention_info;
    int B = 8, T = 64, d = 64, H = 4, steps = 0, threads = 1, causal = 0, op_by_op = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int got;
        if (ag_cli_is_help(argv[i])) {
            printf("usage: %s\n\n"
                   "Times a full training step of the attention layer, with its four (d, d)\n"
                   "projections Glorot-initialised from a fixed seed, on a fixed random batch x,\n"
                   "y of shape (B,T,d): zero_grad, forward, mse loss, backward, Adam step over\n"
                   "wq, wk, wv, wo, tape reset. After a few warm-up steps it prints one line:\n"
                   "  bench: op=attention B=.. T=.. d=.. H=.. threads=.. us_per_step=US\n"
                   "         cpu_us_per_step=C gflops=G peak_bytes=P model_bytes=M\n"
                   "         allocs_per_step=A form=F\n"
                   "US is the median step time in microseconds; C the median CPU time of a\n"
                   "step, all threads together (on a busy machine, with one thread, steadier\n"
                   "than US: it leaves out the time other work held the core); G counts\n"
                   "the matmuls of forward and backward, 18 B T d^2 + 12 B T^2 d (x needs\n"
                   "no gradient), with T (T + 1) / 2 for T^2 when causal (the pairs the\n"
                   "mask leaves);\n"
                   "P is the step's memory: the tape's high-water bytes plus parameters,\n"
                   "gradients and Adam's state; M is what a step cannot do without:\n"
                   "parameters, gradients and Adam's state (16 d^2 reals) plus the\n"
                   "activations backward needs (x, Q, K, V, O, out: 6 B T d; the\n"
                   "softmax's log-sum-exp per query: B H T);\n"
                   "A is the library's heap allocations per timed step (ag_alloc_count);\n"
                   "F is how the layer was recorded, fused (one op, the default) or ops.\n"
                   "A step may hold at most %llu values in one tensor: B T d, and op by\n"
                   "op also B H T^2 (the fused op keeps no (T,T) tensor).\n\n"
                   "  --batch B     sequences per step (default 8, 1..4096)\n"
                   "  --seq T       positions per sequence (default 64, 1..1048576)\n"
                   "  --dim d       model width (default 64, 1..4096)\n"
                   "  --heads H     attention heads, dividing d (default 4)\n"
                   "  --steps N     timed steps, 1..100000 (default: about a second's worth,\n"
                   "                at least 5 and at most 2000)\n"
                   "  --threads N   threads for ag_set_threads (default 1, 1..256)\n"
                   "  --causal      mask keys after the query\n"
                   "  --op-by-op    record the layer op by op instead of as the fused op,\n"
                   "                to see what fusing saves\n",
                   cmd->usage, (unsigned long long)AG_CLI_MAX_VALUES);
            return AG_EXIT_OK;
        } else if (ag_cli_switch(argv, i, "--causal")) {
            causal = 1;
        } else if (ag_cli_switch(argv, i, "--op-by-op")) {
            op_by_op = 1;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--batch", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--batch", v, 1, 4096, &B))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--seq", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--seq", v, 1, 1 << 20, &T))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--dim", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--dim", v, 1, 4096, &d))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--heads", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--heads", v, 1, 4096, &H))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--steps", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--steps", v, 1, 100000, &steps))
                return AG_EXIT_USAGE;
        } else if ((got = ag_cli_value(cmd, argc, argv, &i, "--threads", &v)) != 0) {
            if (got < 0 || !ag_cli_int(cmd, "--threads", v, 1, 256, &threads))
                return AG_EXIT_USAGE;
        } else {
            return ag_cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        }
    }
    if (d % H != 0)
        return ag_cli_usage_error(cmd, "--heads %d does not divide --dim %d", H, d);
    /* what would not fit: refused here, not deep in the arena */
    uint64_t act = ag_cli_activation_values((uint64_t)B, (uint64_t)T, (uint64_t)d);
    uint64_t attn = op_by_op ? ag_cli_attention_values((uint64_t)B, (uint64_t)H, (uint64_t)T) : 0;
    if (act > AG_CLI_MAX_VALUES || attn > AG_CLI_MAX_VALUES)
        return ag_cli_usage_error(cmd, "--seq %d with --batch %d, --dim %d and --heads %d is too "
                                  "large%s: a step would hold %llu values in one tensor (at most %llu)",
                                  T, B, d, H, op_by_op ? " op by op" : "",
                                  (unsigned long long)(act > attn ? act : attn),
                                  (unsigned long long)AG_CLI_MAX_VALUES);

    int status = AG_EXIT_FAIL;
    double *times = NULL;
    att_bench b = {0};
    b.shape[0] = B, b.shape[1] = T, b.shape[2] = d;
    size_t n = (size_t)B * (size_t)T * (size_t)d;
    char err[128];
    ag_rng rng = ag_rng_new(1);
    b.att = ag_attention_new(d, H, causal, &rng, err, sizeof(err));
    if (!b.att) {
        fprintf(stderr, "attograd bench attention: %s\n", err);
        return AG_EXIT_FAIL;
    }
    ag_attention_set_fused(b.att, !op_by_op);
    ag_attention_params(b.att, b.params, NULL, 4);
    b.opt = ag_adam_new(b.params, 4, 1e-3, 0.9, 0.999, 1e-8, 0);
    b.tape = ag_tape_new();
    b.x = malloc(n * sizeof(ag_real));
    b.y = malloc(n * sizeof(ag_real));
    if (!b.opt || !b.tape || !b.x || !b.y) {
        fprintf(stderr, "attograd bench attention: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        b.x[i] = (ag_real)ag_rng_normal(&rng);
    for (size_t i = 0; i < n; i++)
        b.y[i] = (ag_real)ag_rng_normal(&rng);
    ag_set_threads(threads);

    /* Warm up: the arena reaches its steady size, the pool and packing
     * buffers start, caches fill. The warm-up time picks the default steps. */
    double t0 = now_seconds();
    for (int k = 0; k < 3; k++)
        if (!att_step(&b))
            goto step_failed;
    double once = (now_seconds() - t0) / 3;
    if (steps == 0) {
        double want = once > 0 ? 1.0 / once : 2000;
        steps = want < 5 ? 5 : want > 2000 ? 2000 : (int)want;
    }
    times = malloc(2 * (size_t)steps * sizeof(*times));   /* wall, then CPU */
    if (!times) {
        fprintf(stderr, "attograd bench attention: out of memory\n");
        goto done;
    }
    size_t allocs = ag_alloc_count();
    for (int k = 0; k < steps; k++) {
        double c0 = cpu_seconds();
        t0 = now_seconds();
        if (!att_step(&b))
            goto step_failed;
        times[k] = now_seconds() - t0;
        times[steps + k] = cpu_seconds() - c0;
    }
    allocs = ag_alloc_count() - allocs;
    double sec = median_of(times, (size_t)steps), cpu = median_of(times + steps, (size_t)steps);
    double Bd = B, Td = T, dd = d, Hd = H, real = sizeof(ag_real);
    double pairs = causal ? Td * (Td + 1) / 2 : Td * Td;   /* (query, key) pairs computed */
    double flops = 18 * Bd * Td * dd * dd + 12 * Bd * pairs * dd;
    double state = 16 * dd * dd * real;   /* wq..wo, their gradients, Adam's m and v */
    double peak = (double)ag_tape_peak_bytes(b.tape) + state;
    double model = state + (6 * Bd * Td * dd + Bd * Hd * Td) * real;
    printf("bench: op=attention B=%d T=%d d=%d H=%d threads=%d us_per_step=%.2f "
           "cpu_us_per_step=%.2f gflops=%.2f peak_bytes=%.0f model_bytes=%.0f allocs_per_step=%g "
           "form=%s\n",
           B, T, d, H, threads, sec * 1e6, cpu * 1e6, sec > 0 ? flops / sec / 1e9 : 0, peak, model,
           (double)allocs / steps, op_by_op ? "ops" : "fused");
    status = AG_EXIT_OK;
    goto done;
step_failed:
    fprintf(stderr, "attograd bench attention: %s\n", ag_tape_error(b.tape));
done:
    ag_set_threads(1);
    free(times);
    free(b.x);
    free(b.y);
    ag_tape_free(b.tape);
    ag_optim_free(b.opt);
    ag_attention_free(b.att);
    return status;
}

/* ---- the benchmarks: one row each ---- */

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the benchmark's name */
    const char *summary;
} benchmarks[] = {
    {"matmul", bench_matmul, "GFLOPS of C = A B for (n x n) matrices"},
    {"attention", bench_attention, "a training step of the attention layer (time, memory)"},
    {"gpt", ag_cli_bench_gpt, "a training step of the text task's GPT (time, memory)"},
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
