/*
 * gemm_shapes.c - time ag_gemm on the shapes attention produces (and any
 * given as M N K triples), in all four layouts: nanoseconds per call and
 * GFLOPS, the best of many short samples (the least disturbed on a shared
 * machine). Not part of the build; from the repository root:
 *
 *   make
 *   cc -O2 -Iinclude -Isrc bench/gemm_shapes.c build/float/libattograd.a -lm -lpthread \
 *      -o build/gemm_shapes
 *   build/gemm_shapes                # the default shapes
 *   build/gemm_shapes 256 16 16      # M N K triples
 *   AG_GEMM=generic build/gemm_shapes
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, whatever -std says */

#include "kernels/gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_SHAPES 64

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    /* (B,T,d) = (1,3,2): x wq is 3x2x2, Q K^T 3x3x2; (32,8,16) with 2 heads:
     * x wq 256x16x16, dW = x^T dQ 16x16x256, per head Q K^T / P V 8x8x8;
     * then square sizes; the list ends at the first row of zeros */
    static size_t shapes[MAX_SHAPES][3] = {
        {3, 2, 2},    {3, 3, 2},       {8, 8, 8},       {8, 8, 16},
        {16, 16, 16}, {256, 16, 16},   {16, 16, 256},   {32, 32, 32},
        {64, 64, 64}, {128, 128, 128}, {256, 256, 256}, {512, 512, 512},
    };
    size_t n_shapes = 0;
    while (n_shapes < MAX_SHAPES && shapes[n_shapes][0])
        n_shapes++;
    if (argc > 1) {
        if ((argc - 1) % 3 != 0 || argc - 1 > 3 * MAX_SHAPES) {
            fprintf(stderr, "usage: %s [M N K]...\n", argv[0]);
            return 2;
        }
        n_shapes = (size_t)(argc - 1) / 3;
        for (size_t s = 0; s < n_shapes; s++)
            for (int d = 0; d < 3; d++) {
                char *end;
                unsigned long v = strtoul(argv[1 + 3 * s + (size_t)d], &end, 10);
                if (*end || v < 1 || v > 8192) {
                    fprintf(stderr, "%s: '%s' is not a size in 1..8192\n", argv[0],
                            argv[1 + 3 * s + (size_t)d]);
                    return 2;
                }
                shapes[s][d] = v;
            }
    }
    size_t most = 0;
    for (size_t s = 0; s < n_shapes; s++)
        for (int d = 0; d < 3; d++) {
            size_t e = shapes[s][d] * shapes[s][(d + 1) % 3];
            most = e > most ? e : most;
        }
    ag_real *a = malloc(most * sizeof(*a)), *b = malloc(most * sizeof(*b)),
            *c = malloc(most * sizeof(*c));
    if (!a || !b || !c) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (size_t i = 0; i < most; i++) {
        a[i] = (ag_real)((int)(i % 7) - 3);
        b[i] = (ag_real)((int)(i % 5) - 2);
    }
    printf("kernel %s; per layout (ta tb): ns per call, GFLOPS\n", ag_gemm_kernel_name());
    for (size_t s = 0; s < n_shapes; s++) {
        size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        printf("%4zu x %4zu x %4zu", M, N, K);
        for (int t = 0; t < 4; t++) {
            int ta = t & 1, tb = t >> 1;
            long calls = (long)(1e6 / ((double)M * N * K + 200)) + 1;
            double best = 1e30;
            for (int r = 0; r < 41; r++) {
                double t0 = now_seconds();
                for (long i = 0; i < calls; i++)
                    ag_gemm(ta, tb, M, N, K, 1, a, ta ? M : K, b, tb ? K : N, 0, c, N);
                double dt = (now_seconds() - t0) / (double)calls;
                best = dt < best ? dt : best;
            }
            printf("  %d%d %8.0f ns %5.0f", ta, tb, best * 1e9, 2.0 * M * N * K / best / 1e9);
        }
        printf("\n");
    }
    free(a);
    free(b);
    free(c);
    return 0;
}
