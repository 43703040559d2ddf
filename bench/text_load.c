/*
 * text_load.c - how fast ag_text_load reads and tokenizes a text, and the
 * memory it peaks at (the process's maximum resident set, which includes
 * the file's bytes while they are tokenized). Not part of the build:
 *
 *   cc -O2 -Iinclude bench/text_load.c build/float/libattograd.a -lm -lpthread \
 *       -o build/text_load
 *   build/text_load BIG.txt [ROUNDS]
 *
 * Prints, per round, the wall time and MB/s of reading plus tokenizing,
 * then the least time, the ids' width and the peak RSS.
 */
#define _POSIX_C_SOURCE 200809L
#include "attograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: text_load FILE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    double best = 1e30;
    size_t bytes = 0, chars = 0;
    int id_size = 0, vocab = 0;
    for (int r = 0; r < rounds; r++) {
        ag_text *t;
        char err[512];
        double t0 = now();
        if (ag_text_load(argv[1], NULL, &t, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "text_load: %s\n", err);
            return 1;
        }
        double dt = now() - t0;
        chars = t->len;
        id_size = t->id_size;
        vocab = ag_vocab_size(t->vocab);
        ag_text_free(t);
        FILE *f = fopen(argv[1], "rb");
        if (f && fseek(f, 0, SEEK_END) == 0)
            bytes = (size_t)ftell(f);
        if (f)
            fclose(f);
        printf("round %d: %.3f s, %.1f MB/s\n", r + 1, dt, 1e-6 * (double)bytes / dt);
        best = dt < best ? dt : best;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%zu bytes, %zu characters, %d distinct, ids of %d byte(s): least %.3f s (%.1f MB/s), "
           "peak RSS %.1f MB\n",
           bytes, chars, vocab, id_size, best, 1e-6 * (double)bytes / best,
           (double)ru.ru_maxrss / 1024.0);
    return 0;
}
