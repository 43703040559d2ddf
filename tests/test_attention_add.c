/*
 * test_attention_add.c - ag_attention_add: a layer written in the model
 * format loads back with ag_attention_load (weights, heads, causal), and
 * with grads the file holds its gradients as grad.wq .. grad.wo.
 */
#include "test_util.h"
#include "run.h"

#include <stdio.h>
#include <unistd.h>

START_TEST(test_round_trip)
{
    char dir[256], path[320], err[256] = "";
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "m.safetensors");
    ag_rng rng = ag_rng_new(3);
    ag_attention *att = ag_attention_new(6, 3, 1, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(att);
    ag_tensor *wk = ag_attention_param(att, "wk");
    for (size_t i = 0; i < wk->size; i++)
        wk->grad[i] = (ag_real)i;
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ag_attention_add(w, att, 0);
    ck_assert_msg(ag_st_save(w, path, err, sizeof(err)) == AG_OK, "%s", err);
    ag_st_writer_free(w);
    ag_st_file *f;
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    ag_attention *back = ag_attention_load(f, path, err, sizeof(err));
    ck_assert_msg(back != NULL, "%s", err);
    ck_assert_int_eq(ag_attention_dim(back), 6);
    ck_assert_int_eq(ag_attention_heads(back), 3);
    ck_assert_int_eq(ag_attention_causal(back), 1);
    const char *names[4] = {"wq", "wk", "wv", "wo"};
    for (int k = 0; k < 4; k++) {
        ag_tensor *a = ag_attention_param(att, names[k]), *b = ag_attention_param(back, names[k]);
        for (size_t i = 0; i < a->size; i++)
            ck_assert(a->data[i] == b->data[i]);
    }
    ck_assert_ptr_null(ag_st_dtype(f, "grad.wk"));
    ag_attention_free(back);
    ag_st_free(f);
    /* with grads: the gradients, under grad.* */
    w = ag_st_writer_new(AG_ST_REAL);
    ag_attention_add(w, att, 1);
    ag_attention_add(NULL, att, 1); /* nothing */
    ck_assert_int_eq(ag_st_save(w, path, err, sizeof(err)), AG_OK);
    ag_st_writer_free(w);
    /* a NULL layer is an error, sticky on the writer: nothing is saved */
    char other[320];
    w = ag_st_writer_new(AG_ST_REAL);
    ag_attention_add(w, NULL, 1);
    ag_attention_add(w, att, 1);
    ck_assert_int_eq(
        ag_st_save(w, file_path(other, sizeof(other), dir, "other.st"), err, sizeof(err)),
        AG_ERR_ARG);
    ck_assert_msg(strstr(err, "ag_attention_add: the layer is NULL") != NULL, "%s", err);
    ck_assert_int_ne(access(other, F_OK), 0);
    ag_st_writer_free(w);
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    ck_assert_ptr_null(ag_st_dtype(f, "wk"));
    ag_real got[36];
    ck_assert_int_eq(ag_st_get(f, "grad.wk", 2, (int[]){6, 6}, got, err, sizeof(err)), AG_OK);
    for (int i = 0; i < 36; i++)
        if (got[i] != (ag_real)i)
            ck_abort_msg("grad.wk[%d] = %g, want %d", i, (double)got[i], i);
    ck_assert_str_eq(ag_st_meta(f, "n_heads"), "3");
    ck_assert_str_eq(ag_st_meta(f, "causal"), "true");
    ag_st_free(f);
    ag_attention_free(att);
    file_rmdir(dir);
}
END_TEST

Suite *suite_attention_add(void)
{
    Suite *s = suite_create("attention_add");
    TCase *tc = tcase_create("add");
    tcase_add_test(tc, test_round_trip);
    suite_add_tcase(s, tc);
    return s;
}
