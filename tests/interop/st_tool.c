/*
 * st_tool.c - a small helper for interop_numpy.py: `st_tool dump FILE`
 * prints every tensor and metadata entry of a safetensors file as attograd
 * reads it; `st_tool write FILE [F32|F64]` writes a known file for numpy to
 * read. Not part of the library or of `make check`.
 */
#include "attograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dump(const char *path)
{
    ag_st_file *f;
    char err[256];
    if (ag_st_load(path, &f, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (size_t i = 0; i < ag_st_meta_count(f); i++)
        printf("meta %s=%s\n", ag_st_meta_key(f, i), ag_st_meta(f, ag_st_meta_key(f, i)));
    for (size_t i = 0; i < ag_st_count(f); i++) {
        const char *name = ag_st_name(f, i);
        int nd, shape[AG_MAX_DIMS];
        if (ag_st_shape(f, name, &nd, shape, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "%s\n", err);
            ag_st_free(f);
            return 1;
        }
        size_t n = 1;
        for (int d = 0; d < nd; d++)
            n *= (size_t)shape[d];
        ag_real *v = malloc((n ? n : 1) * sizeof(ag_real));
        if (!v || ag_st_get(f, name, nd, shape, v, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "%s\n", v ? err : "out of memory");
            free(v);
            ag_st_free(f);
            return 1;
        }
        printf("tensor %s %s [", name, ag_st_dtype(f, name));
        for (int d = 0; d < nd; d++)
            printf(d ? ",%d" : "%d", shape[d]);
        printf("]");
        for (size_t k = 0; k < n; k++)
            printf(" %.17g", (double)v[k]);
        printf("\n");
        free(v);
    }
    ag_st_free(f);
    return 0;
}

/* The known file: "a" (2,3) = i/4 - 1, "b" (4) = powers of ten, "scalar" ()
 * = 2.5, "empty" (0,2), metadata n_heads=2, note with escapes. */
static int write(const char *path, ag_st_type dtype)
{
    ag_real a[6], b[4] = {(ag_real)1e-3, 1, 1000, (ag_real)-1e6}, s = (ag_real)2.5;
    for (int i = 0; i < 6; i++)
        a[i] = (ag_real)(i / 4.0 - 1);
    char err[256];
    ag_st_writer *w = ag_st_writer_new(dtype);
    ag_st_add(w, "a", 2, (int[]){2, 3}, a);
    ag_st_add(w, "b", 1, (int[]){4}, b);
    ag_st_add(w, "scalar", 0, NULL, &s);
    ag_st_add(w, "empty", 2, (int[]){0, 2}, NULL);
    ag_st_add(w, "caf\xc3\xa9", 1, (int[]){1}, &s);
    ag_st_add_meta(w, "n_heads", "2");
    ag_st_add_meta(w, "note", "tab\there \"quoted\" back\\slash");
    ag_status st = ag_st_save(w, path, err, sizeof(err));
    ag_st_writer_free(w);
    if (st != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "write") == 0)
        return write(argv[2], argc == 4 && strcmp(argv[3], "F64") == 0 ? AG_ST_F64 : AG_ST_F32);
    fprintf(stderr, "usage: st_tool dump FILE | st_tool write FILE [F32|F64]\n");
    return 2;
}
