/*
 * st_edit.h - a copy of a safetensors file with one change, for tests that
 * break a good file (a checkpoint) in one place: a tensor dropped,
 * reshaped or poisoned, or a metadata value replaced or dropped.
 */
#ifndef AG_TEST_ST_EDIT_H
#define AG_TEST_ST_EDIT_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "attograd.h"

/* A copy of the checkpoint src at dst with one change: a tensor dropped,
 * reshaped, poisoned, one added, or a metadata value replaced (NULL:
 * dropped). */
typedef struct edit {
    const char *drop;    /* a tensor to leave out */
    const char *reshape; /* a tensor to write as (2, size/2) */
    const char *poison;  /* a tensor whose element 0 becomes poison_value */
    double poison_value;
    const char *key, *value; /* metadata to change */
    const char *add;         /* a tensor of 3 zeros to add */
} st_edit;

static inline void st_rewrite(const char *src, const char *dst, const st_edit *e)
{
    ag_st_file *f;
    char err[256];
    ck_assert_msg(ag_st_load(src, &f, err, sizeof(err)) == AG_OK, "%s", err);
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ck_assert_ptr_nonnull(w);
    size_t n = ag_st_count(f);
    ag_real **bufs = calloc(n, sizeof(*bufs));
    ck_assert_ptr_nonnull(bufs);
    for (size_t i = 0; i < n; i++) {
        const char *name = ag_st_name(f, i);
        int nd, shape[AG_MAX_DIMS];
        ck_assert_int_eq(ag_st_shape(f, name, &nd, shape, err, sizeof(err)), AG_OK);
        size_t size = 1;
        for (int k = 0; k < nd; k++)
            size *= (size_t)shape[k];
        bufs[i] = malloc(size * sizeof(ag_real) + 1);
        ck_assert_ptr_nonnull(bufs[i]);
        ck_assert_int_eq(ag_st_get(f, name, nd, shape, bufs[i], err, sizeof(err)), AG_OK);
        if (e->drop && strcmp(name, e->drop) == 0)
            continue;
        if (e->poison && strcmp(name, e->poison) == 0)
            bufs[i][0] = (ag_real)e->poison_value;
        if (e->reshape && strcmp(name, e->reshape) == 0) {
            int two[2] = {2, (int)(size / 2)};
            ag_st_add(w, name, 2, two, bufs[i]);
        } else {
            ag_st_add(w, name, nd, shape, bufs[i]);
        }
    }
    static const ag_real zeros[3] = {0, 0, 0};
    if (e->add)
        ag_st_add(w, e->add, 1, (int[]){3}, zeros);
    for (size_t i = 0; i < ag_st_meta_count(f); i++) {
        const char *key = ag_st_meta_key(f, i);
        if (e->key && strcmp(key, e->key) == 0) {
            if (e->value)
                ag_st_add_meta(w, key, e->value);
        } else {
            ag_st_add_meta(w, key, ag_st_meta(f, key));
        }
    }
    ck_assert_msg(ag_st_save(w, dst, err, sizeof(err)) == AG_OK, "%s", err);
    ag_st_writer_free(w);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    ag_st_free(f);
}

#endif /* AG_TEST_ST_EDIT_H */
