/*
 * test_posenc_view.c - looking at a positional encoding: the learned table
 * of a saved file read back (ag_posenc_load) and the cosine similarity of
 * a table's rows (ag_posenc_similarity), with their errors.
 */
#include "test_util.h"
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file in a fresh directory (its path into dir, dirlen bytes) holding
 * `pos` (rows x cols) = 0.1 * (i + 1), plus a tensor "other"; the file's
 * path into buf. */
static void write_pos(char *dir, size_t dirlen, char *buf, size_t len, int rows, int cols,
                      double poison)
{
    char err[256];
    file_tmpdir(dir, dirlen);
    file_path(buf, len, dir, "pos.safetensors");
    ag_tensor *pos = ag_param_new(2, (int[]){rows, cols});
    ag_tensor *other = ag_param_new(1, (int[]){3});
    for (int i = 0; i < rows * cols; i++)
        pos->data[i] = (ag_real)(0.1 * (i + 1));
    pos->data[0] = (ag_real)(pos->data[0] + poison);
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ag_st_add_tensor(w, "pos", pos);
    ag_st_add_tensor(w, "other", other);
    ck_assert_msg(ag_st_save(w, buf, err, sizeof(err)) == AG_OK, "%s", err);
    ag_st_writer_free(w);
    ag_param_free(pos);
    ag_param_free(other);
}

START_TEST(test_load_reads_the_table)
{
    char dir[256], path[512], err[256] = "";
    write_pos(dir, sizeof(dir), path, sizeof(path), 4, 3, 0);
    ag_posenc *pe = ag_posenc_load(path, 8, err, sizeof(err));
    ck_assert_msg(pe != NULL, "%s", err);
    ck_assert_int_eq(ag_posenc_get_kind(pe), AG_POSENC_LEARNED);
    ck_assert_int_eq(ag_posenc_max_len(pe), 4);
    ck_assert_int_eq(ag_posenc_dim(pe), 3);
    const ag_real *v = ag_posenc_values(pe);
    for (int i = 0; i < 12; i++)
        ck_assert_double_eq_tol(v[i], 0.1 * (i + 1), 1e-6);
    ag_posenc_free(pe);
    /* larger than max_size, in either dimension */
    ck_assert_ptr_null(ag_posenc_load(path, 3, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "tensor 'pos' must be (T, d) with T and d in 1..3"));
    file_rmdir(dir);
}
END_TEST

START_TEST(test_load_errors)
{
    char dir[256], path[512], err[256] = "";
    write_pos(dir, sizeof(dir), path, sizeof(path), 2, 2, NAN);
    ck_assert_ptr_null(ag_posenc_load(path, 8, err, sizeof(err)));
    ck_assert_msg(strstr(err, "tensor 'pos' holds NaN at element 0") != NULL, "%s", err);
    file_rmdir(dir);

    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "nopos.safetensors");
    ag_tensor *x = ag_param_new(1, (int[]){2});
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ag_st_add_tensor(w, "x", x);
    ck_assert(ag_st_save(w, path, err, sizeof(err)) == AG_OK);
    ag_st_writer_free(w);
    ag_param_free(x);
    ck_assert_ptr_null(ag_posenc_load(path, 8, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "has no tensor 'pos'"));
    file_rmdir(dir);

    ck_assert_ptr_null(ag_posenc_load("/nonexistent/pos.safetensors", 8, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/pos.safetensors"));
    ck_assert_ptr_null(ag_posenc_load(NULL, 8, err, sizeof(err)));
    ck_assert_ptr_null(ag_posenc_load("x", 0, err, sizeof(err)));
}
END_TEST

START_TEST(test_similarity)
{
    enum { T = 7, d = 6 };
    ag_posenc *pe = ag_posenc_new(AG_POSENC_SINUSOIDAL, T, d, NULL, NULL, 0);
    ck_assert_ptr_nonnull(pe);
    double sim[T * T];
    ck_assert_int_eq(ag_posenc_similarity(pe, sim), AG_OK);
    const ag_real *v = ag_posenc_values(pe);
    for (int t = 0; t < T; t++) {
        ck_assert_double_eq_tol(sim[t * T + t], 1.0, 1e-6); /* a row is like itself */
        for (int u = 0; u < T; u++) {
            double dot = 0, nt = 0, nu = 0;
            for (int c = 0; c < d; c++) {
                dot += (double)v[t * d + c] * v[u * d + c];
                nt += (double)v[t * d + c] * v[t * d + c];
                nu += (double)v[u * d + c] * v[u * d + c];
            }
            ck_assert_double_eq_tol(sim[t * T + u], dot / sqrt(nt * nu), 1e-12);
            ck_assert_double_eq(sim[t * T + u], sim[u * T + t]);
        }
    }
    /* sinusoidal: every diagonal is constant (it depends on t - u only) */
    for (int t = 1; t < T; t++)
        ck_assert_double_eq_tol(sim[t * T + t - 1], sim[T], 1e-5);
    ag_posenc_free(pe);
    /* a zero row (a fresh learned table) is 0 against everything */
    pe = ag_posenc_new(AG_POSENC_LEARNED, 2, 3, NULL, NULL, 0);
    double z[4] = {9, 9, 9, 9};
    ck_assert_int_eq(ag_posenc_similarity(pe, z), AG_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq(z[i], 0);
    ag_posenc_free(pe);
    pe = ag_posenc_new(AG_POSENC_NONE, 2, 3, NULL, NULL, 0);
    ck_assert_int_eq(ag_posenc_similarity(pe, z), AG_ERR_ARG); /* no table */
    ck_assert_int_eq(ag_posenc_similarity(NULL, z), AG_ERR_ARG);
    ag_posenc_free(pe);
}
END_TEST

Suite *suite_posenc_view(void)
{
    Suite *s = suite_create("posenc_view");
    TCase *tc = tcase_create("view");
    tcase_add_test(tc, test_load_reads_the_table);
    tcase_add_test(tc, test_load_errors);
    tcase_add_test(tc, test_similarity);
    suite_add_tcase(s, tc);
    return s;
}
