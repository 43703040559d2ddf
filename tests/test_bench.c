/*
 * test_bench.c - `attograd bench`: the result line's format, and bad usage
 * exits 2 naming the flag. Runs the binary named by AG_BIN (set by
 * `make check`). Never asserts a speed.
 */
#include "test_util.h"
#include "run.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

#include <limits.h>

/* Run `attograd ARGS` (words split at spaces); returns the exit status. A
 * success says its piece on stdout alone, a failure on stderr alone: that
 * stream goes to out (cut to len), and the other must be empty. */
static int run_cli(const char *args, char *out, size_t len)
{
    run_proc p = run_words(args);
    ck_assert_msg(p.signal == 0, "'%s': killed by signal %d", args, p.signal);
    const char *said = p.status == 0 ? p.out : p.err, *other = p.status == 0 ? p.err : p.out;
    ck_assert_msg(*other == '\0', "'%s' exited %d and also wrote on std%s:\n%s", args, p.status,
                  p.status == 0 ? "err" : "out", other);
    snprintf(out, len, "%s", said);
    int status = p.status;
    run_free(&p);
    return status;
}

START_TEST(test_bench_matmul_line)
{
    char out[4096];
    int rc = run_cli("bench matmul --n 17 --threads 2 --reps 1", out, sizeof(out));
    ck_assert_int_eq(rc, 0);
    double gflops = -1;
    char tail = 0;
    char kernels[16] = "", gemm[16] = "";
    int got = sscanf(
        out, "bench: op=matmul n=17 threads=2 gflops=%lf kernels=%15[a-z] gemm=%15[a-z0-9]%c",
        &gflops, kernels, gemm, &tail);
    ck_assert_msg(got == 4 && tail == '\n' && gflops > 0, "unexpected output: %s", out);
    /* the line says which kernels ran */
    ck_assert_str_eq(kernels, ag_kernels_name());
    ck_assert_str_eq(gemm, strcmp(kernels, "fast") == 0 ? ag_gemm_kernel_name() : "reference");
    ck_assert_ptr_null(strchr(strchr(out, '\n') + 1, '\n')); /* exactly one line */
}
END_TEST

START_TEST(test_bench_attention_line)
{
    char out[4096];
    int rc = run_cli("bench attention --batch 2 --seq 5 --dim 6 --heads 3 --steps 3 --causal", out,
                     sizeof(out));
    ck_assert_int_eq(rc, 0);
    double us = -1, cpu = -1, gflops = -1, peak = -1, model = -1, allocs = -1;
    char form[8] = "", tail = 0;
    int got = sscanf(out,
                     "bench: op=attention B=2 T=5 d=6 H=3 threads=1 us_per_step=%lf "
                     "cpu_us_per_step=%lf gflops=%lf peak_bytes=%lf model_bytes=%lf "
                     "allocs_per_step=%lf form=%7[a-z] kernels=%*[a-z] gemm=%*[a-z0-9]%c",
                     &us, &cpu, &gflops, &peak, &model, &allocs, form, &tail);
    ck_assert_msg(got == 8 && tail == '\n', "unexpected output: %s", out);
    ck_assert_str_eq(form, "fused");
    ck_assert_msg(allocs == 0, "a steady step allocates: %s", out);
    ck_assert_msg(us > 0 && cpu >= 0 && gflops > 0, "unexpected output: %s", out);
    /* model: 16 d^2 reals of state + (6 B T d + B H T) of activations */
    ck_assert_double_eq(model, (double)((16 * 36 + 6 * 60 + 2 * 3 * 5) * sizeof(ag_real)));
    ck_assert_msg(peak >= model, "peak %g < model %g", peak, model);
    ck_assert_ptr_null(strchr(strchr(out, '\n') + 1, '\n')); /* exactly one line */
}
END_TEST

/* The two forms of the layer side by side: the same line, and the fused op
 * keeps less than the op-by-op form (no (B,H,T,T) buffer instead of six),
 * a property of the arena's high-water mark, not of timing. */
START_TEST(test_bench_attention_forms)
{
    double peak[2];
    for (int ops = 0; ops < 2; ops++) {
        char out[4096], cmd[160], form[8] = "";
        snprintf(cmd, sizeof(cmd),
                 "bench attention --batch 2 --seq 32 --dim 16 --heads 2 --steps 3%s",
                 ops ? " --op-by-op" : "");
        int rc = run_cli(cmd, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        double us, cpu, gflops, model, allocs;
        int got = sscanf(out,
                         "bench: op=attention B=2 T=32 d=16 H=2 threads=1 us_per_step=%lf "
                         "cpu_us_per_step=%lf gflops=%lf peak_bytes=%lf model_bytes=%lf "
                         "allocs_per_step=%lf form=%7s",
                         &us, &cpu, &gflops, &peak[ops], &model, &allocs, form);
        ck_assert_msg(got == 7, "unexpected output: %s", out);
        ck_assert_str_eq(form, ops ? "ops" : "fused");
        ck_assert_msg(allocs == 0, "a steady step allocates: %s", out);
    }
    ck_assert_msg(peak[0] < peak[1], "fused peak %g, op by op %g", peak[0], peak[1]);
}
END_TEST

START_TEST(test_bench_gpt_line)
{
    char out[4096];
    int rc =
        run_cli("bench gpt --layers 2 --dim 8 --heads 2 --seq 6 --batch 3 --steps 3 --threads 2",
                out, sizeof(out));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    double us, gflops, peak, allocs;
    char tail;
    int got = sscanf(out,
                     "bench: op=gpt layers=2 dim=8 heads=2 seq=6 batch=3 threads=2 us_per_step=%lf "
                     "gflops=%lf peak_bytes=%lf allocs_per_step=%lf kernels=%*[a-z] "
                     "gemm=%*[a-z0-9]%c",
                     &us, &gflops, &peak, &allocs, &tail);
    ck_assert_msg(got == 5 && tail == '\n', "line: %s", out);
    ck_assert(us > 0 && gflops > 0 && peak > 0);
    ck_assert_msg(allocs == 0, "a steady step allocated: %s", out);
}
END_TEST

/* AG_CPU caps the kernels at a smaller CPU's: the gemm kernel the line names
 * is the widest one left (AG_GEMM unset, which would force one). */
START_TEST(test_bench_cpu_cap)
{
    /* this CPU runs the AVX2 kernels: asked of the CPU itself, since
     * ag_cpu_get() obeys this process's own AG_CPU, which may be generic */
    int avx2 = 0;
#ifdef AG_X86_KERNELS
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    static const char *const caps[] = {"generic", "avx2"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[PATH_MAX + 128], gemm[16] = "";
        snprintf(cmd, sizeof(cmd), "unset AG_GEMM; AG_CPU=%s '%s' bench matmul --n 9 --reps 1",
                 caps[i], run_bin());
        run_proc p = run_shell(cmd);
        const char *at = strstr(p.out, " gemm=");
        ck_assert_msg(p.status == 0 && at && sscanf(at, " gemm=%15[a-z0-9]", gemm) == 1,
                      "`%s` exited %d: %s%s", cmd, p.status, p.out, p.err);
        const char *want = ag_reference_kernels() ? "reference"
                           : i == 1 && avx2       ? "avx2"
                                                  : "generic";
        ck_assert_msg(strcmp(gemm, want) == 0, "AG_CPU=%s ran gemm=%s, not %s", caps[i], gemm,
                      want);
        run_free(&p);
    }
}
END_TEST

/* AG_GEMM forces a kernel: bench matmul warns, and still runs, exactly
 * when the library cannot run the one named here. Its aliases ("avx512-8"
 * runs under the name "avx512") are not warned about. */
START_TEST(test_bench_gemm_warning)
{
    static const char *const names[] = {"generic",   "avx2", "avx512", "avx512-8",
                                        "avx512-12", "auto", "nosuch"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int runs = ag_gemm_use(names[i]); /* this process has the child's AG_CPU */
        char cmd[PATH_MAX + 128];
        snprintf(cmd, sizeof(cmd), "AG_GEMM=%s '%s' bench matmul --n 9 --reps 1", names[i],
                 run_bin());
        run_proc p = run_shell(cmd);
        ck_assert_msg(p.status == 0 && strstr(p.out, "bench: op=matmul"), "`%s` exited %d: %s%s",
                      cmd, p.status, p.out, p.err);
        int warned = strstr(p.err, "cannot run here") != NULL;
        ck_assert_msg(warned == !runs && (warned || *p.err == '\0'),
                      "AG_GEMM=%s (runs here: %d) wrote on stderr: '%s'", names[i], runs, p.err);
        run_free(&p);
    }
    ck_assert(ag_gemm_use("auto"));
}
END_TEST

START_TEST(test_bench_usage)
{
    static const struct {
        const char *args, *says;
    } bad[] = {
        {"bench", "which benchmark"},
        {"bench nosuch", "unknown benchmark 'nosuch'"},
        {"bench matmul --n 0", "--n"},
        {"bench matmul --n 12x", "--n"},
        {"bench matmul --threads", "--threads"},
        {"bench matmul --reps -1", "--reps"},
        {"bench matmul --fast", "--fast"},
        {"bench attention --batch 0", "--batch"},
        {"bench attention --seq x", "--seq"},
        {"bench attention --dim", "--dim"},
        {"bench attention --heads 3 --dim 8", "--heads 3 does not divide --dim 8"},
        {"bench attention --seq 1048577", "--seq"},
        {"bench attention --batch 1 --seq 1048576 --dim 64",
         "--seq 1048576 with --batch 1, --dim 64 and --heads 4 is too large: a step would hold "
         "67108864 values in one tensor (at most 33554432)"},
        {"bench attention --batch 1 --seq 4096 --dim 64 --op-by-op",
         "--seq 4096 with --batch 1, --dim 64 and --heads 4 is too large op by op: a step would "
         "hold 67108864 values in one tensor (at most 33554432)"},
        {"bench attention --steps 0", "--steps"},
        {"bench attention --threads 999", "--threads"},
        {"bench attention --causal=1", "--causal=1"},
        {"bench attention --op-by-op=1", "--op-by-op=1"},
        {"bench matmul 512", "unexpected argument '512' (options start with --)"},
        {"bench attention --seq 0", "--seq: 0 is out of range (1..1048576)"},
        {"bench gpt --layers 0", "--layers"},
        {"bench gpt --heads 3", "--heads 3 does not divide --dim 128"},
        {"bench gpt --steps", "--steps"},
        {"bench gpt --text x", "--text"},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = run_cli(bad[i].args, out, sizeof(out));
        ck_assert_msg(rc == 2, "'%s' exited %d", bad[i].args, rc);
        ck_assert_msg(strstr(out, bad[i].says), "'%s' said: %s", bad[i].args, out);
        ck_assert_msg(strstr(out, "usage: "), "'%s' gave no usage line: %s", bad[i].args, out);
    }
    ck_assert_int_eq(run_cli("bench matmul --help", out, sizeof(out)), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: attograd bench matmul"));
    ck_assert_int_eq(run_cli("bench attention --help", out, sizeof(out)), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: attograd bench attention"));
    ck_assert_int_eq(run_cli("bench gpt --help", out, sizeof(out)), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: attograd bench gpt"));
}
END_TEST

Suite *suite_bench(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bench_matmul_line);
    tcase_add_test(tc, test_bench_attention_line);
    tcase_add_test(tc, test_bench_attention_forms);
    tcase_add_test(tc, test_bench_gpt_line);
    tcase_add_test(tc, test_bench_cpu_cap);
    tcase_add_test(tc, test_bench_gemm_warning);
    tcase_add_test(tc, test_bench_usage);
    suite_add_tcase(s, tc);
    return s;
}
