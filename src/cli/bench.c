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
#include "limits.h"
#include "../kernels/gemm.h" /* ag_gemm_use */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ag_command ag_cmd_bench_info = {
    .name = "bench",
    .run = ag_cmd_bench,
    .usage = "attograd bench <matmul|attention|gpt> [options]",
    .summary =
        "timings: bench matmul (the matrix-multiply kernel), bench attention and bench gpt (a "
        "training step)",
};

/* Which kernels a benchmark ran, as the last fields of its line:
 * "kernels=fast gemm=avx512", or "kernels=reference gemm=reference". */
const char *ag_cli_kernels(void)
{
    static char buf[64];
    int ref = strcmp(ag_kernels_name(), "reference") == 0;
    snprintf(buf, sizeof(buf), "kernels=%s gemm=%s", ag_kernels_name(),
             ref ? "reference" : ag_gemm_kernel_name());
    return buf;
}

/* ---- bench matmul ---- */

typedef struct matmul_opts {
    int n, threads, reps;
} matmul_opts;

static const ag_option matmul_options[] = {
    AG_INT(matmul_opts, "--n", n, 1, 8192, 512, "N", "matrix size (default %D, %R)"),
    AG_INT(matmul_opts, "--threads", threads, 1, 256, 1, "N",
           "threads for ag_set_threads (default %D, %R)"),
    AG_INT(matmul_opts, "--reps", reps, 1, 1000, 10, "R", "timed repetitions (default %D, %R)"),
};

static const ag_command bench_matmul_info = {
    .name = "bench matmul",
    .usage = "attograd bench matmul [--n N] [--threads N] [--reps R]",
    .summary = "GFLOPS of C = A B for (n x n) matrices",
    .options = matmul_options,
    .n_options = AG_CLI_COUNT(matmul_options),
    .help_width = 16,
};

static int run_matmul(const matmul_opts *o)
{
    int n = o->n, reps = o->reps;
    size_t nn = (size_t)n * (size_t)n;
    ag_real *a = malloc(nn * sizeof(*a)), *b = malloc(nn * sizeof(*b)),
            *c = malloc(nn * sizeof(*c));
    double *rates = malloc((size_t)reps * sizeof(*rates));
    if (!a || !b || !c || !rates) {
        ag_cli_error(&bench_matmul_info, "out of memory for n=%d", n);
        free(a), free(b), free(c), free(rates);
        return AG_EXIT_FAIL;
    }
    ag_rng rng = ag_rng_new(1);
    for (size_t i = 0; i < nn; i++) {
        a[i] = (ag_real)(ag_rng_uniform(&rng) - 0.5);
        b[i] = (ag_real)(ag_rng_uniform(&rng) - 0.5);
    }
    ag_set_threads(o->threads);
    /* The library took AG_GEMM's kernel at its first product if that kernel
     * runs here; asked again, it says whether it does (a name is not enough:
     * "avx512-8" runs as "avx512") */
    const char *want = getenv("AG_GEMM");
    if (want && *want && !ag_gemm_use(want))
        ag_cli_error(&bench_matmul_info, "AG_GEMM=%s cannot run here; using %s", want,
                     ag_gemm_kernel_name());

    /* Warm up (pool, packing buffers, caches), then size each repetition to
     * last about 50 ms so small n is not lost in the clock's resolution. */
    /* the product every matmul runs: the fast kernel, or with
     * AG_KERNELS=reference the reference one */
    void (*gemm)(int, int, size_t, size_t, size_t, ag_real, const ag_real *, size_t,
                 const ag_real *, size_t, ag_real, ag_real *, size_t) =
        strcmp(ag_kernels_name(), "reference") == 0 ? ag_ref_gemm : ag_gemm;
    double t0 = ag_cli_now();
    gemm(0, 0, (size_t)n, (size_t)n, (size_t)n, 1, a, (size_t)n, b, (size_t)n, 0, c, (size_t)n);
    double once = ag_cli_now() - t0;
    long calls = once > 0 ? (long)(0.05 / once) : 1000;
    if (calls < 1)
        calls = 1;
    if (calls > 100000)
        calls = 100000;
    double flops = 2.0 * n * n * n;
    for (int r = 0; r < reps; r++) {
        t0 = ag_cli_now();
        for (long k = 0; k < calls; k++)
            gemm(0, 0, (size_t)n, (size_t)n, (size_t)n, 1, a, (size_t)n, b, (size_t)n, 0, c,
                 (size_t)n);
        double dt = ag_cli_now() - t0;
        rates[r] = dt > 0 ? flops * (double)calls / dt / 1e9 : 0;
    }
    double median = ag_median(rates, (size_t)reps);
    printf("bench: op=matmul n=%d threads=%d gflops=%.1f %s\n", n, o->threads, median,
           ag_cli_kernels());
    ag_set_threads(1);
    free(a), free(b), free(c), free(rates);
    return AG_EXIT_OK;
}

static int bench_matmul(int argc, char **argv)
{
    const ag_command *cmd = &bench_matmul_info;
    matmul_opts o;
    int r = ag_cli_parse(cmd, argc, argv, &o, NULL);
    if (r == AG_CLI_HELP) {
        printf("usage: %s\n\n"
               "Times ag_gemm, the kernel behind every matmul forward and backward, on\n"
               "C = A B with (n x n) matrices of random numbers, and prints one line:\n"
               "  bench: op=matmul n=N threads=T gflops=G kernels=K gemm=NAME\n"
               "where G is 2 n^3 / seconds / 1e9, the median over the repetitions, K\n"
               "the kernels in use (fast, or reference with AG_KERNELS=reference,\n"
               "which times ag_ref_gemm) and NAME the gemm micro-kernel that ran.\n"
               "AG_GEMM=generic|avx2|avx512 in the environment forces a kernel;\n"
               "AG_CPU=avx2|generic keeps every kernel to that much of the CPU.\n\n",
               cmd->usage);
        ag_cli_print_options(cmd);
        return AG_EXIT_OK;
    }
    return r != AG_CLI_GO ? r : run_matmul(&o);
}

/* ---- bench attention ---- */

typedef struct attention_opts {
    int batch, seq, dim, heads;
    int steps; /* 0: about a second's worth */
    int threads, causal, op_by_op;
} attention_opts;

#define INT(...) AG_INT(attention_opts, __VA_ARGS__)
static const ag_option attention_options[] = {
    INT("--batch", batch, 1, 4096, 8, "B", "sequences per step (default %D, %R)"),
    INT("--seq", seq, 1, 1 << 20, 64, "T", "positions per sequence (default %D, %R)"),
    INT("--dim", dim, 1, 4096, 64, "d", "model width (default %D, %R)"),
    INT("--heads", heads, 1, 4096, 4, "H", "attention heads, dividing d (default %D)"),
    INT("--steps", steps, 1, 100000, 0, "N",
        "timed steps, %R (default: about a second's worth,\nat least 5 and at most 2000)"),
    INT("--threads", threads, 1, 256, 1, "N", "threads for ag_set_threads (default %D, %R)"),
    AG_SWITCH(attention_opts, "--causal", causal, "mask keys after the query"),
    AG_SWITCH(attention_opts, "--op-by-op", op_by_op,
              "record the layer op by op instead of as the fused op,\nto see what fusing saves"),
};
#undef INT

static const ag_command bench_attention_info = {
    .name = "bench attention",
    .usage = "attograd bench attention [--batch B] [--seq T] [--dim d] [--heads H] [--steps N] "
             "[--threads N] [--causal] [--op-by-op]",
    .summary = "one training step of the attention layer (forward, mse, backward, Adam)",
    .options = attention_options,
    .n_options = AG_CLI_COUNT(attention_options),
    .help_width = 16,
};

static void print_attention_help(const ag_command *cmd)
{
    printf("usage: %s\n\n"
           "Times a full training step of the attention layer, with its four (d, d)\n"
           "projections Glorot-initialised from a fixed seed, on a fixed random batch x,\n"
           "y of shape (B,T,d): zero_grad, forward, mse loss, backward, Adam step over\n"
           "wq, wk, wv, wo, tape reset. After a few warm-up steps it prints one line:\n"
           "  bench: op=attention B=.. T=.. d=.. H=.. threads=.. us_per_step=US\n"
           "         cpu_us_per_step=C gflops=G peak_bytes=P model_bytes=M\n"
           "         allocs_per_step=A form=F kernels=K gemm=NAME\n"
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
           "F is how the layer was recorded, fused (one op, the default) or ops;\n"
           "K and NAME the kernels that ran, as bench matmul says.\n"
           "A step may hold at most %llu values in one tensor: B T d, and op by\n"
           "op also B H T^2 (the fused op keeps no (T,T) tensor).\n\n",
           cmd->usage, (unsigned long long)AG_CLI_MAX_VALUES);
    ag_cli_print_options(cmd);
}

/* What one step of the benchmark holds. */
typedef struct att_bench {
    ag_tape *tape;
    ag_attention *att;
    ag_optim *opt;
    ag_tensor *params[4];
    ag_real *x, *y; /* (B,T,d) each, the same batch every step */
    int shape[3];
} att_bench;

static void att_free(att_bench *b)
{
    free(b->x);
    free(b->y);
    ag_tape_free(b->tape);
    ag_optim_free(b->opt);
    ag_attention_free(b->att);
}

/* The layer, its optimizer and a fixed random batch; 0 after saying why not. */
static int att_setup(att_bench *b, const attention_opts *o)
{
    b->shape[0] = o->batch, b->shape[1] = o->seq, b->shape[2] = o->dim;
    size_t n = (size_t)o->batch * (size_t)o->seq * (size_t)o->dim;
    char err[128];
    ag_rng rng = ag_rng_new(1);
    b->att = ag_attention_new(o->dim, o->heads, o->causal, &rng, err, sizeof(err));
    if (!b->att) {
        ag_cli_error(&bench_attention_info, "%s", err);
        return 0;
    }
    ag_attention_set_fused(b->att, !o->op_by_op);
    ag_attention_params(b->att, b->params, NULL, 4);
    b->opt = ag_adam_new(b->params, 4, 1e-3, 0.9, 0.999, 1e-8, 0);
    b->tape = ag_tape_new();
    b->x = malloc(n * sizeof(ag_real));
    b->y = malloc(n * sizeof(ag_real));
    if (!b->opt || !b->tape || !b->x || !b->y) {
        ag_cli_error(&bench_attention_info, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        b->x[i] = (ag_real)ag_rng_normal(&rng);
    for (size_t i = 0; i < n; i++)
        b->y[i] = (ag_real)ag_rng_normal(&rng);
    return 1;
}

/* One training step: zero_grad, forward, mse, backward, Adam, tape reset. */
static int att_step(void *ctx)
{
    att_bench *b = ctx;
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

static void att_report(att_bench *b, const attention_opts *o, const ag_step_timing *tm)
{
    double sec = tm->seconds, cpu = tm->cpu_seconds;
    double B = o->batch, T = o->seq, d = o->dim, H = o->heads, real = sizeof(ag_real);
    double pairs = o->causal ? T * (T + 1) / 2 : T * T; /* (query, key) pairs computed */
    double flops = 18 * B * T * d * d + 12 * B * pairs * d;
    double state = 16 * d * d * real; /* wq..wo, their gradients, Adam's m and v */
    double peak = (double)ag_tape_peak_bytes(b->tape) + state;
    double model = state + (6 * B * T * d + B * H * T) * real;
    printf("bench: op=attention B=%d T=%d d=%d H=%d threads=%d us_per_step=%.2f "
           "cpu_us_per_step=%.2f gflops=%.2f peak_bytes=%.0f model_bytes=%.0f allocs_per_step=%g "
           "form=%s %s\n",
           o->batch, o->seq, o->dim, o->heads, o->threads, sec * 1e6, cpu * 1e6,
           sec > 0 ? flops / sec / 1e9 : 0, peak, model, tm->allocs, o->op_by_op ? "ops" : "fused",
           ag_cli_kernels());
}

static int run_attention(const attention_opts *o)
{
    att_bench b;
    memset(&b, 0, sizeof(b));
    int status = AG_EXIT_FAIL;
    if (att_setup(&b, o)) {
        ag_set_threads(o->threads);
        ag_step_timing tm;
        ag_status st = ag_time_steps(att_step, &b, o->steps, &tm);
        if (st == AG_OK) {
            att_report(&b, o, &tm);
            status = AG_EXIT_OK;
        } else {
            ag_cli_error(&bench_attention_info, "%s",
                         st == AG_ERR_NOMEM ? "out of memory" : ag_tape_error(b.tape));
        }
        ag_set_threads(1);
    }
    att_free(&b);
    return status;
}

static int bench_attention(int argc, char **argv)
{
    const ag_command *cmd = &bench_attention_info;
    attention_opts o;
    int r = ag_cli_parse(cmd, argc, argv, &o, NULL);
    if (r == AG_CLI_HELP) {
        print_attention_help(cmd);
        return AG_EXIT_OK;
    }
    if (r != AG_CLI_GO)
        return r;
    if (o.dim % o.heads != 0)
        return ag_cli_usage_error(cmd, "--heads %d does not divide --dim %d", o.heads, o.dim);
    /* what would not fit: refused here, not deep in the arena */
    uint64_t act = ag_cli_activation_values((uint64_t)o.batch, (uint64_t)o.seq, (uint64_t)o.dim);
    uint64_t attn =
        o.op_by_op ? ag_cli_attention_values((uint64_t)o.batch, (uint64_t)o.heads, (uint64_t)o.seq)
                   : 0;
    if (act > AG_CLI_MAX_VALUES || attn > AG_CLI_MAX_VALUES)
        return ag_cli_usage_error(cmd,
                                  "--seq %d with --batch %d, --dim %d and --heads %d is too "
                                  "large%s: a step would hold %llu values in one tensor (at most "
                                  "%llu)",
                                  o.seq, o.batch, o.dim, o.heads, o.op_by_op ? " op by op" : "",
                                  (unsigned long long)(act > attn ? act : attn),
                                  (unsigned long long)AG_CLI_MAX_VALUES);
    return run_attention(&o);
}

/* ---- the benchmarks: one row each ---- */

static const struct {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the benchmark's name */
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
               "benchmarks:\n",
               cmd->usage);
        for (size_t i = 0; i < N_BENCHMARKS; i++)
            printf("  %-10s %s\n", benchmarks[i].name, benchmarks[i].summary);
        printf("\n'attograd bench <benchmark> --help' lists its options.\n");
        return AG_EXIT_OK;
    }
    for (size_t i = 0; i < N_BENCHMARKS; i++)
        if (strcmp(argv[1], benchmarks[i].name) == 0)
            return benchmarks[i].run(argc - 1, argv + 1);
    return ag_cli_usage_error(cmd, "unknown benchmark '%s'", argv[1]);
}
