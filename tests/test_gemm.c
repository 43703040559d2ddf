/*
 * test_gemm.c - ag_gemm against a naive double-precision reference, for
 * every kernel this CPU can run (generic, avx2, avx512 in tiles of 8 rows
 * and of 12), every transpose
 * combination, odd sizes around the micro-tiles and cache blocks, alpha and
 * beta cases and padded leading dimensions; the batched entry point; the
 * thread pool, whose results must equal one thread's bit for bit; and the
 * batched matmul and matmul_bt ops built on them, forward and backward.
 */
#include "test_util.h"

#include "kernels/gemm.h"
#include "kernels/threads.h"

#include <float.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef AG_REAL_DOUBLE
#define EPS DBL_EPSILON
#else
#define EPS FLT_EPSILON
#endif

/* "avx512" is one of its two tile heights, the one that suits this core:
 * both are tested, whichever it is */
static const char *const kernels[] = {"generic", "avx2", "avx512", "avx512-8", "avx512-12"};
#define N_KERNELS (sizeof(kernels) / sizeof(kernels[0]))

/* One product's layout: op(A) is (m x k), op(B) is (k x n); stored matrices
 * get `pad` extra columns so that the leading dimension exceeds the width. */
typedef struct shape {
    size_t m, n, k;
} shape;

static ag_real *random_matrix(ag_rng *rng, size_t rows, size_t cols)
{
    ag_real *x = malloc((rows * cols + 1) * sizeof(*x));
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < rows * cols; i++)
        x[i] = (ag_real)(2 * ag_rng_uniform(rng) - 1);
    return x;
}

/* A new copy of the n reals at x: the same C for a second product. */
static ag_real *copy_of(const ag_real *x, size_t n)
{
    ag_real *y = malloc(n * sizeof(*y));
    ck_assert_ptr_nonnull(y);
    memcpy(y, x, n * sizeof(*y));
    return y;
}

/* Compare ag_gemm with the reference, the error bounded by the classic dot
 * product bound (k + 4) eps sum |a||b| (plus the beta term). */
static void check_one(ag_rng *rng, int ta, int tb, shape s, size_t pad, double alpha, double beta)
{
    size_t m = s.m, n = s.n, k = s.k;
    size_t a_rows = ta ? k : m, a_cols = ta ? m : k, lda = a_cols + pad;
    size_t b_rows = tb ? n : k, b_cols = tb ? k : n, ldb = b_cols + pad;
    size_t ldc = n + pad;
    ag_real *A = random_matrix(rng, a_rows, lda);
    ag_real *B = random_matrix(rng, b_rows, ldb);
    ag_real *C = random_matrix(rng, m, ldc);
    ag_real *C0 = malloc(m * ldc * sizeof(*C0) + 1);
    ck_assert_ptr_nonnull(C0);
    if (beta == 0) /* C must only be written: garbage in it must not leak out */
        for (size_t i = 0; i < m * ldc; i++)
            C[i] = (ag_real)NAN;
    memcpy(C0, C, m * ldc * sizeof(*C));

    ag_gemm(ta, tb, m, n, k, (ag_real)alpha, A, lda, B, ldb, (ag_real)beta, C, ldc);

    /* find the worst element, then assert once (Check records every passing
     * assertion, which would dominate the run time) */
    int padding_written = 0;
    double worst = 0, worst_got = 0, worst_want = 0, worst_tol = 0;
    size_t wi = 0, wj = 0;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < ldc; j++) {
            if (j >= n) { /* padding is never touched */
                padding_written |= memcmp(&C[i * ldc + j], &C0[i * ldc + j], sizeof(ag_real)) != 0;
                continue;
            }
            double got = C[i * ldc + j], sum = 0, mag = 0;
            for (size_t p = 0; p < k; p++) {
                double a = ta ? A[p * lda + i] : A[i * lda + p];
                double b = tb ? B[j * ldb + p] : B[p * ldb + j];
                sum += a * b;
                mag += fabs(a * b);
            }
            double want = alpha * sum, bound = fabs(alpha) * mag;
            if (beta != 0) {
                want += beta * C0[i * ldc + j];
                bound += fabs(beta * C0[i * ldc + j]);
            }
            double tol = (double)(k + 4) * EPS * bound + 1e-30;
            double excess = isnan(got) ? INFINITY : fabs(got - want) / tol;
            if (excess > worst || (i == 0 && j == 0)) {
                worst = excess;
                worst_got = got;
                worst_want = want;
                worst_tol = tol;
                wi = i;
                wj = j;
            }
        }
    }
    ck_assert_msg(!padding_written, "%s ta=%d tb=%d %zux%zux%zu: padding of C was written",
                  ag_gemm_kernel_name(), ta, tb, m, n, k);
    ck_assert_msg(worst <= 1,
                  "%s ta=%d tb=%d m=%zu n=%zu k=%zu pad=%zu alpha=%g beta=%g: "
                  "C[%zu,%zu] = %.9g, want %.9g (tol %.3g)",
                  ag_gemm_kernel_name(), ta, tb, m, n, k, pad, alpha, beta, wi, wj, worst_got,
                  worst_want, worst_tol);
    free(A);
    free(B);
    free(C);
    free(C0);
}

/* Sizes: ones, K = 1, thin and odd shapes around the micro-tiles (4x8, 6x16,
 * 12x32 floats; half as wide for doubles), narrow ones for the direct kernel
 * (N <= 16/64 floats) and wide ones for the packed path, past the cache
 * blocks too (kc = 256 or 512, mc = 96 to 144), so every edge and multi-pass
 * path runs. */
static const shape shapes[] = {
    {1, 1, 1},
    {1, 1, 7},
    {3, 2, 2},
    {1, 17, 3},
    {17, 1, 3},
    {7, 7, 1},
    {33, 65, 1},
    {3, 7, 17},
    {17, 33, 7},
    {33, 17, 65},
    {65, 33, 17},
    {12, 32, 16},
    {6, 16, 8},
    {13, 33, 9},
    {65, 65, 65},
    {129, 7, 33},
    {7, 129, 65},
    {129, 129, 17},
    {33, 65, 129},
    {24, 64, 300},
    {150, 40, 20},
    {17, 129, 513},
    {150, 100, 40},
    {200, 70, 300},
    {100, 100, 600},
    /* the direct kernel's row tiles (16 or 8 rows when one vector wide, then
     * 8, 4, 2, 1) and attention's small products at (32,8,16) */
    {15, 16, 16},
    {23, 9, 5},
    {31, 40, 3},
    {11, 50, 2},
    {8, 8, 8},
    {8, 8, 16},
    {256, 16, 16},
    {16, 16, 256},
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void check_kernel_layouts(const char *name)
{
    if (!ag_gemm_use(name))
        return; /* this CPU cannot run it: nothing to test */
    ag_rng rng = ag_rng_new(42);
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < N_SHAPES; i++)
            check_one(&rng, t & 1, t >> 1, shapes[i], 0, 1, 0);
    ck_assert(ag_gemm_use("auto"));
}

static void check_kernel_scalars(const char *name)
{
    if (!ag_gemm_use(name))
        return;
    ag_rng rng = ag_rng_new(7);
    static const double ab[][2] = {{1, 1}, {-1.5, 0}, {0.5, -2}, {2, 0.25}, {0, 0}, {0, 3}};
    static const shape few[] = {{1, 1, 1}, {7, 17, 3}, {23, 13, 5}, {33, 65, 17}, {70, 40, 270}};
    for (size_t c = 0; c < sizeof(ab) / sizeof(ab[0]); c++)
        for (size_t i = 0; i < sizeof(few) / sizeof(few[0]); i++)
            for (int t = 0; t < 4; t++)
                for (size_t pad = 0; pad <= 5; pad += 5)
                    check_one(&rng, t & 1, t >> 1, few[i], pad, ab[c][0], ab[c][1]);
    ck_assert(ag_gemm_use("auto"));
}

START_TEST(test_layouts)
{
    check_kernel_layouts(kernels[_i]);
}
END_TEST

START_TEST(test_alpha_beta_ld)
{
    check_kernel_scalars(kernels[_i]);
}
END_TEST

START_TEST(test_k_zero)
{
    /* K = 0: C = beta C, and with beta = 0 garbage becomes zeros */
    ag_real C[6] = {NAN, NAN, NAN, 1, 2, 3};
    ag_gemm(0, 0, 1, 3, 0, 1, NULL, 1, NULL, 3, 0, C, 3);
    ag_gemm(0, 0, 1, 3, 0, 1, NULL, 1, NULL, 3, 2, C + 3, 3);
    ag_real want[6] = {0, 0, 0, 2, 4, 6};
    for (int i = 0; i < 6; i++)
        ck_assert_double_eq(C[i], want[i]);
    /* M = 0 or N = 0: nothing is touched */
    ag_gemm(0, 0, 0, 3, 2, 1, NULL, 2, NULL, 3, 0, NULL, 3);
    ag_gemm(0, 0, 3, 0, 2, 1, NULL, 2, NULL, 0, 0, NULL, 0);
}
END_TEST

START_TEST(test_kernel_choice)
{
    ck_assert_int_eq(ag_gemm_use("no-such-kernel"), 0);
    ck_assert_int_eq(ag_gemm_use(NULL), 0);
    ck_assert(ag_gemm_use("generic"));
    ck_assert_str_eq(ag_gemm_kernel_name(), "generic");
    ck_assert_int_eq(ag_gemm_use("bogus"), 0);
    ck_assert_str_eq(ag_gemm_kernel_name(), "generic"); /* unchanged */
    ck_assert(ag_gemm_use("auto"));
    const char *name = ag_gemm_kernel_name();
    ck_assert(strcmp(name, "generic") == 0 || strcmp(name, "avx2") == 0 ||
              strcmp(name, "avx512") == 0);
}
END_TEST

/* A^T B (a weight gradient's layout) reads both operands in place while
 * their rows are at most 2 KB apart (AVX-512's kernels; the others pack
 * both either way), and packs them past that: the same
 * products in the same order either way, so the same bits. Each shape is
 * made twice, once from operands whose rows are wide enough to be packed
 * (the same values, padded), with edges that are whole micro-tiles and
 * ragged ones, K in one kc block and in two, and beta 0 and 1. */
static void check_in_place_bits(const char *name)
{
    if (!ag_gemm_use(name))
        return;
    ag_rng rng = ag_rng_new(5);
    static const shape sizes[] = {{12, 32, 40},  {128, 128, 300}, {128, 64, 768},
                                  {37, 75, 600}, {96, 100, 130},  {13, 33, 1100}};
    const size_t wide = 4096 / sizeof(ag_real) + 3; /* rows 4 KB apart: packed */
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t m = sizes[s].m, n = sizes[s].n, k = sizes[s].k;
        ag_real *A = random_matrix(&rng, k, m), *B = random_matrix(&rng, k, n);
        ag_real *Aw = random_matrix(&rng, k, wide), *Bw = random_matrix(&rng, k, wide);
        for (size_t p = 0; p < k; p++) {
            memcpy(Aw + p * wide, A + p * m, m * sizeof(ag_real));
            memcpy(Bw + p * wide, B + p * n, n * sizeof(ag_real));
        }
        for (int beta = 0; beta <= 1; beta++) {
            ag_real *C = random_matrix(&rng, m, n), *Cw = copy_of(C, m * n);
            ag_gemm(1, 0, m, n, k, 0.5, A, m, B, n, beta, C, n);
            ag_gemm(1, 0, m, n, k, 0.5, Aw, wide, Bw, wide, beta, Cw, n);
            ck_assert_msg(memcmp(C, Cw, m * n * sizeof(ag_real)) == 0,
                          "%s %zux%zux%zu beta %d: in place differs from packed", name, m, n, k,
                          beta);
            free(C);
            free(Cw);
        }
        free(A);
        free(B);
        free(Aw);
        free(Bw);
    }
    ck_assert(ag_gemm_use("auto"));
}

START_TEST(test_in_place_same_bits)
{
    check_in_place_bits(kernels[_i]);
}
END_TEST

/* AVX-512's two tile heights make every element with the same products in
 * the same order, so the same bits: which one a core gets changes nothing
 * but the speed. Every layout, shapes around both heights and the blocks. */
START_TEST(test_tile_heights_same_bits)
{
    if (!ag_gemm_use("avx512-8"))
        return; /* no AVX-512 here */
    ag_rng rng = ag_rng_new(9);
    static const shape sizes[] = {{8, 32, 16},    {12, 32, 16},   {23, 47, 130},
                                  {128, 65, 768}, {200, 70, 600}, {97, 410, 530}};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (int t = 0; t < 4; t++) {
            size_t m = sizes[s].m, n = sizes[s].n, k = sizes[s].k;
            int ta = t & 1, tb = t >> 1;
            ag_real *A = random_matrix(&rng, m, k), *B = random_matrix(&rng, k, n);
            ag_real *C8 = random_matrix(&rng, m, n), *C12 = copy_of(C8, m * n);
            ck_assert(ag_gemm_use("avx512-8"));
            ag_gemm(ta, tb, m, n, k, 0.5, A, ta ? m : k, B, tb ? k : n, 1, C8, n);
            ck_assert(ag_gemm_use("avx512-12"));
            ag_gemm(ta, tb, m, n, k, 0.5, A, ta ? m : k, B, tb ? k : n, 1, C12, n);
            ck_assert_msg(memcmp(C8, C12, m * n * sizeof(ag_real)) == 0,
                          "ta=%d tb=%d %zux%zux%zu: 8-row tiles differ from 12-row", ta, tb, m, n,
                          k);
            free(A);
            free(B);
            free(C8);
            free(C12);
        }
    ck_assert(ag_gemm_use("auto"));
}
END_TEST

/* ---- batched ---- */

START_TEST(test_batched_equals_loop)
{
    ag_rng rng = ag_rng_new(3);
    size_t batch = 5, m = 9, n = 13, k = 11;
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        size_t lda = ta ? m : k, ldb = tb ? k : n;
        ag_real *A = random_matrix(&rng, batch * m, k);
        ag_real *B = random_matrix(&rng, batch * k, n);
        ag_real *C1 = random_matrix(&rng, batch * m, n);
        ag_real *C2 = malloc(batch * m * n * sizeof(*C2));
        ck_assert_ptr_nonnull(C2);
        memcpy(C2, C1, batch * m * n * sizeof(*C1));
        /* own A, shared B (stride 0), beta 1 */
        ag_gemm_batched(ta, tb, batch, m, n, k, 0.5, A, lda, m * k, B, ldb, 0, 1, C1, n, m * n);
        for (size_t b = 0; b < batch; b++)
            ag_gemm(ta, tb, m, n, k, 0.5, A + b * m * k, lda, B, ldb, 1, C2 + b * m * n, n);
        ck_assert(memcmp(C1, C2, batch * m * n * sizeof(*C1)) == 0);
        /* stride_c 0: every product adds into one C, beta applied once */
        ag_gemm_batched(ta, tb, batch, m, n, k, 1, A, lda, m * k, B, ldb, k * n, 0.5, C1, n, 0);
        ag_gemm(ta, tb, m, n, k, 1, A, lda, B, ldb, 0.5, C2, n);
        for (size_t b = 1; b < batch; b++)
            ag_gemm(ta, tb, m, n, k, 1, A + b * m * k, lda, B + b * k * n, ldb, 1, C2, n);
        ck_assert(memcmp(C1, C2, m * n * sizeof(*C1)) == 0);
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
}
END_TEST

/* ---- threads ---- */

START_TEST(test_threads_setting)
{
    ck_assert_int_eq(ag_get_threads(), 1); /* the default */
    ag_set_threads(0);
    ck_assert_int_eq(ag_get_threads(), 1);
    ag_set_threads(-3);
    ck_assert_int_eq(ag_get_threads(), 1);
    ag_set_threads(3);
    ck_assert_int_eq(ag_get_threads(), 3);
    ag_set_threads(100000);
    ck_assert_int_eq(ag_get_threads(), 256);
    ag_set_threads(1);
    ck_assert_int_eq(ag_get_threads(), 1);
}
END_TEST

typedef struct pf_ctx {
    size_t *out;
    int nested;
} pf_ctx;

static void square_task(void *ctx, size_t i)
{
    pf_ctx *c = ctx;
    c->out[i] = i * i;
}

static void nesting_task(void *ctx, size_t i)
{
    pf_ctx *c = ctx;
    /* a nested call runs on this thread, in order: no deadlock */
    size_t inner[4] = {0};
    pf_ctx in = {inner, 0};
    ag_parallel_for(4, square_task, &in);
    c->out[i] = i + inner[3];
}

static void count_task(void *ctx, size_t i)
{
    _Atomic size_t *runs = ctx;
    atomic_fetch_add(&runs[i], 1);
}

START_TEST(test_parallel_for_each_task_once)
{
    /* each thread first claims its own share of the tasks, then helps with
     * the others': every task must still run exactly once, whether there
     * are fewer tasks than threads, as many, or a number that does not
     * divide evenly */
    static const size_t counts[] = {1, 2, 3, 4, 5, 7, 37, 1000};
    _Atomic size_t runs[1000];
    for (int threads = 1; threads <= 4; threads++) {
        ag_set_threads(threads);
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            size_t n = counts[c];
            for (size_t i = 0; i < n; i++)
                atomic_init(&runs[i], 0);
            ag_parallel_for(n, count_task, runs);
            size_t bad = n;
            for (size_t i = 0; i < n && bad == n; i++)
                if (atomic_load(&runs[i]) != 1)
                    bad = i;
            ck_assert_msg(bad == n, "threads %d, %zu tasks: task %zu ran %zu times", threads, n,
                          bad, bad < n ? (size_t)atomic_load(&runs[bad]) : (size_t)0);
        }
    }
    ag_set_threads(1);
}
END_TEST

START_TEST(test_parallel_for)
{
    size_t out[37];
    for (int threads = 1; threads <= 3; threads++) {
        ag_set_threads(threads);
        memset(out, 0, sizeof(out));
        pf_ctx c = {out, 0};
        ag_parallel_for(37, square_task, &c);
        for (size_t i = 0; i < 37; i++)
            ck_assert_uint_eq(out[i], i * i);
        ag_parallel_for(37, nesting_task, &c);
        for (size_t i = 0; i < 37; i++)
            ck_assert_uint_eq(out[i], i + 9);
        ag_parallel_for(0, square_task, &c); /* nothing to do */
    }
    ag_set_threads(1);
}
END_TEST

START_TEST(test_fork_child)
{
    /* a child of fork() has none of its parent's workers: its parallel calls
     * must start its own (or run serially), never wait for the parent's */
    size_t out[16];
    pf_ctx c = {out, 0};
    ag_set_threads(2);
    ag_parallel_for(16, square_task, &c);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(30); /* a hang becomes a failure */
        size_t mine[16] = {0};
        pf_ctx cc = {mine, 0};
        ag_parallel_for(16, square_task, &cc);
        int ok = mine[15] == 225;
        /* report through exec, not exit: under valgrind the child's own leak
         * check would count glibc's copies of the parent's thread stacks */
        execl(ok ? "/bin/true" : "/bin/false", ok ? "true" : "false", (char *)NULL);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the forked child failed (status %d)", st);
    ag_set_threads(1);
}
END_TEST

/* A product big enough to be split, computed with 1, 2 and 3 threads (and
 * every kernel): the bytes must match exactly. Each is computed right after
 * another product of the same shape on the same pool, so a thread that kept
 * the other's packed operand would be caught. */
static void check_threads_identical(const char *name)
{
    if (!ag_gemm_use(name))
        return;
    ag_rng rng = ag_rng_new(11);
    /* packed (split by rows, each thread packing B once; by columns, A^T
     * likewise), direct (narrow, split by rows), K in several kc blocks, a
     * B too long to keep packed, which every stripe packs for itself, and
     * A^T B cut in two halves of K (the first (all kernels) and the second
     * (AVX-512's kc); and the last two, with the generic kernel only, whose
     * second half finds no room in a thread's buffer, for its size or for
     * N past nc, and goes into C after the first, as one thread makes it) */
    static const shape big[] = {{301, 203, 300}, {97, 410, 530},   {2001, 13, 90},
                                {1500, 40, 100}, {300, 120, 1100}, {40, 12, 40000},
                                {600, 600, 300}, {128, 1100, 512}};
    const size_t no_room = 6; /* big[no_room] on */
    for (size_t s = 0; s < sizeof(big) / sizeof(big[0]); s++) {
        size_t m = big[s].m, n = big[s].n, k = big[s].k;
        if (s >= no_room && strcmp(name, "generic") != 0)
            continue;
        for (int t = 0; t < 4; t++) {
            int ta = t & 1, tb = t >> 1;
            if (s >= no_room && !ta)
                continue;
            ag_real *A = random_matrix(&rng, m, k), *B = random_matrix(&rng, k, n);
            ag_real *C0 = random_matrix(&rng, m, n);
            ag_real *A2 = random_matrix(&rng, m, k), *B2 = random_matrix(&rng, k, n);
            ag_real *D = random_matrix(&rng, m, n);
            ag_real *C[3];
            for (int th = 0; th < 3; th++) {
                C[th] = copy_of(C0, m * n);
                ag_set_threads(th + 1);
                ag_gemm(ta, tb, m, n, k, 1, A2, ta ? m : k, B2, tb ? k : n, 0, D, n);
                ag_gemm(ta, tb, m, n, k, 0.75, A, ta ? m : k, B, tb ? k : n, 0.5, C[th], n);
            }
            ag_set_threads(1);
            ck_assert_msg(memcmp(C[0], C[1], m * n * sizeof(ag_real)) == 0,
                          "%s ta=%d tb=%d: 2 threads differ from 1", name, ta, tb);
            ck_assert_msg(memcmp(C[0], C[2], m * n * sizeof(ag_real)) == 0,
                          "%s ta=%d tb=%d: 3 threads differ from 1", name, ta, tb);
            for (int th = 0; th < 3; th++)
                free(C[th]);
            free(A);
            free(B);
            free(C0);
            free(A2);
            free(B2);
            free(D);
        }
    }
    ck_assert(ag_gemm_use("auto"));
}

START_TEST(test_threads_identical)
{
    check_threads_identical(kernels[_i]);
}
END_TEST

START_TEST(test_batched_threads_identical)
{
    /* many small products shared out over the pool */
    ag_rng rng = ag_rng_new(5);
    size_t batch = 64, m = 24, n = 24, k = 16;
    ag_real *A = random_matrix(&rng, batch * m, k), *B = random_matrix(&rng, batch * k, n);
    ag_real *C1 = malloc(batch * m * n * sizeof(ag_real)),
            *C2 = malloc(batch * m * n * sizeof(ag_real));
    ck_assert(C1 && C2);
    ag_gemm_batched(0, 1, batch, m, n, k, 1, A, k, m * k, B, k, k * n, 0, C1, n, m * n);
    ag_set_threads(2);
    ag_gemm_batched(0, 1, batch, m, n, k, 1, A, k, m * k, B, k, k * n, 0, C2, n, m * n);
    ag_set_threads(1);
    ck_assert(memcmp(C1, C2, batch * m * n * sizeof(ag_real)) == 0);
    free(A);
    free(B);
    free(C1);
    free(C2);
}
END_TEST

/* ---- the ops on top: batched matmul and matmul_bt ---- */

typedef struct op_case {
    int bt; /* matmul_bt instead of matmul */
    int a_ndim, b_ndim;
    int a_shape[4], b_shape[4];
} op_case;

/* (B,H,m,k) with its own b per (B,H), and (B,m,k) with one shared 2-D b */
static const op_case op_cases[] = {
    {0, 4, 4, {2, 3, 4, 5}, {2, 3, 5, 3}},
    {0, 3, 2, {2, 4, 5}, {5, 3}},
    {1, 4, 4, {2, 3, 4, 5}, {2, 3, 6, 5}},
    {1, 3, 2, {2, 4, 5}, {6, 5}},
};

static ag_tensor *build_op(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    const op_case *c = ctx;
    return c->bt ? ag_matmul_bt(tape, in[0], in[1]) : ag_matmul(tape, in[0], in[1]);
}

START_TEST(test_ops_forward)
{
    const op_case *c = &op_cases[_i];
    ag_rng rng = ag_rng_new(21);
    ag_tensor *a = test_param(&rng, c->a_ndim, c->a_shape);
    ag_tensor *b = test_param(&rng, c->b_ndim, c->b_shape);
    ag_tape *tape = ag_tape_new();
    ag_tensor *out = build_op(tape, (ag_tensor *[]){a, b}, (void *)c);
    ck_assert_ptr_nonnull(out);
    size_t m = (size_t)c->a_shape[c->a_ndim - 2], k = (size_t)c->a_shape[c->a_ndim - 1];
    size_t n = (size_t)c->b_shape[c->b_ndim - (c->bt ? 2 : 1)];
    size_t batch = a->size / (m * k), b_stride = c->b_ndim == 2 ? 0 : k * n;
    for (size_t t = 0; t < batch; t++)
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double want = 0;
                for (size_t p = 0; p < k; p++) {
                    const ag_real *bb = b->data + t * b_stride;
                    want +=
                        a->data[t * m * k + i * k + p] * (c->bt ? bb[j * k + p] : bb[p * n + j]);
                }
                ck_assert_double_eq_tol(out->data[t * m * n + i * n + j], want, 1e3 * AG_TEST_TOL);
            }
    ag_tape_free(tape);
    ag_param_free(a);
    ag_param_free(b);
}
END_TEST

START_TEST(test_ops_backward)
{
    const op_case *c = &op_cases[_i];
    ag_rng rng = ag_rng_new(22);
    ag_tensor *in[2] = {test_param(&rng, c->a_ndim, c->a_shape),
                        test_param(&rng, c->b_ndim, c->b_shape)};
    test_gradcheck(build_op, (void *)c, in, 2);
    ag_param_free(in[0]);
    ag_param_free(in[1]);
}
END_TEST

Suite *suite_gemm(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120); /* sanitizer builds are slow; nothing here is timed */
    tcase_add_loop_test(tc, test_layouts, 0, N_KERNELS);
    tcase_add_loop_test(tc, test_alpha_beta_ld, 0, N_KERNELS);
    tcase_add_test(tc, test_k_zero);
    tcase_add_test(tc, test_kernel_choice);
    tcase_add_test(tc, test_batched_equals_loop);
    tcase_add_loop_test(tc, test_in_place_same_bits, 0, N_KERNELS);
    tcase_add_test(tc, test_tile_heights_same_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_threads_setting);
    tcase_add_test(tc, test_parallel_for);
    tcase_add_test(tc, test_parallel_for_each_task_once);
    tcase_add_test(tc, test_fork_child);
    tcase_add_loop_test(tc, test_threads_identical, 0, N_KERNELS);
    tcase_add_test(tc, test_batched_threads_identical);
    suite_add_tcase(s, tc);
    tc = tcase_create("ops");
    tcase_add_loop_test(tc, test_ops_forward, 0, sizeof(op_cases) / sizeof(op_cases[0]));
    tcase_add_loop_test(tc, test_ops_backward, 0, sizeof(op_cases) / sizeof(op_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}
