/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors reader: every
 * input is parsed as a file; a file that parses is put through every query,
 * then written back with the writer and parsed again, and must come back
 * the same. Anything else (a crash, a sanitizer report, a broken invariant)
 * is a bug. Build and run with `make fuzz-run` (see docs/fuzzing.md).
 */
#include "attograd.h"
#include "io/io.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_safetensors: %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static size_t elements(int ndim, const int *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i]; /* the data is in the input, so this cannot overflow */
    return n;
}

static int same_value(ag_real a, ag_real b)
{
    return a == b || (isnan(a) && isnan(b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ag_st_file *f = NULL, *g = NULL;
    char err[256] = "";
    ag_status st = ag_st_parse(data, size, "fuzz", &f, err, sizeof(err));
    if (st != AG_OK) {
        CHECK(f == NULL);
        CHECK(strncmp(err, "fuzz: ", 6) == 0); /* every message names the file */
        return 0;
    }

    size_t n = ag_st_count(f);
    ag_real **vals = calloc(n ? n : 1, sizeof(*vals));
    CHECK(vals);
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    CHECK(w);
    CHECK(ag_st_name(f, n) == NULL);
    for (size_t i = 0; i < n; i++) {
        const char *name = ag_st_name(f, i);
        CHECK(name);
        CHECK(i == 0 || strcmp(ag_st_name(f, i - 1), name) < 0); /* name order */
        const char *dt = ag_st_dtype(f, name);
        CHECK(dt && (strcmp(dt, "F32") == 0 || strcmp(dt, "F64") == 0));
        int nd, shape[AG_MAX_DIMS];
        st = ag_st_shape(f, name, &nd, shape, err, sizeof(err));
        if (st != AG_OK) {
            CHECK(st == AG_ERR_SHAPE);
            continue; /* more dims than an ag_tensor, or a dim beyond INT_MAX */
        }
        size_t count = elements(nd, shape);
        vals[i] = malloc((count ? count : 1) * sizeof(ag_real));
        CHECK(vals[i]);
        st = ag_st_get(f, name, nd, shape, vals[i], err, sizeof(err));
        if (st != AG_OK) {
            CHECK(st == AG_ERR_NUMERIC); /* an F64 beyond float in a float build */
            free(vals[i]);
            vals[i] = NULL;
            continue;
        }
        /* a wrong shape is refused */
        int other[AG_MAX_DIMS] = {1, 1, 1, 1};
        other[0] = nd > 0 && shape[0] == 1 ? 2 : 1;
        CHECK(ag_st_get(f, name, nd > 0 ? nd : 1, other, vals[i], err, sizeof(err)) ==
              AG_ERR_SHAPE);
        CHECK(ag_st_add(w, name, nd, shape, vals[i]) == AG_OK);
    }
    size_t m = ag_st_meta_count(f);
    CHECK(ag_st_meta_key(f, m) == NULL);
    for (size_t i = 0; i < m; i++) {
        const char *key = ag_st_meta_key(f, i);
        const char *value = ag_st_meta(f, key);
        CHECK(key && value);
        CHECK(ag_st_add_meta(w, key, value) == AG_OK);
    }
    CHECK(ag_st_get(f, "\x01missing", 1, (int[]){1}, NULL, err, sizeof(err)) == AG_ERR_FORMAT ||
          ag_st_dtype(f, "\x01missing"));

    /* write back what we could read, parse it again: it must be the same */
    unsigned char *buf;
    size_t len;
    st = ag_st_encode(w, &buf, &len, err, sizeof(err));
#ifdef AG_REAL_DOUBLE
    CHECK(st == AG_OK || st == AG_ERR_NUMERIC);
#else
    CHECK(st == AG_OK);
#endif
    if (st == AG_OK) {
        st = ag_st_parse(buf, len, "again", &g, err, sizeof(err));
        if (st != AG_OK)
            fprintf(stderr, "fuzz_safetensors: round trip: %s\n", err);
        CHECK(st == AG_OK);
        CHECK(ag_st_meta_count(g) == m);
        for (size_t i = 0; i < m; i++)
            CHECK(strcmp(ag_st_meta(g, ag_st_meta_key(f, i)),
                         ag_st_meta(f, ag_st_meta_key(f, i))) == 0);
        for (size_t i = 0; i < n; i++) {
            if (!vals[i])
                continue;
            const char *name = ag_st_name(f, i);
            int nd, shape[AG_MAX_DIMS];
            CHECK(ag_st_shape(g, name, &nd, shape, err, sizeof(err)) == AG_OK);
            size_t count = elements(nd, shape);
            ag_real *again = malloc((count ? count : 1) * sizeof(ag_real));
            CHECK(again);
            CHECK(ag_st_get(g, name, nd, shape, again, err, sizeof(err)) == AG_OK);
            for (size_t k = 0; k < count; k++)
                CHECK(same_value(again[k], vals[i][k]));
            free(again);
        }
        free(buf);
        ag_st_free(g);
    }
    ag_st_writer_free(w);
    for (size_t i = 0; i < n; i++)
        free(vals[i]);
    free(vals);
    ag_st_free(f);
    return 0;
}
