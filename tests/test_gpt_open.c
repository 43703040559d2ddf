/*
 * test_gpt_open.c - ag_gpt_trainer_open: a trainer that owns its text and
 * model. Fresh, it trains exactly as the pieces put together by hand; from
 * a checkpoint, it continues bit for bit; a text too short for the windows
 * names the file; bad arguments are refused with a message.
 */
#include "test_util.h"
#include "run.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct files {
    char dir[256], text[320], ck[320];
} files;

/* A text of n letters from a small alphabet, in a fresh directory. */
static void make_files(files *f, size_t n)
{
    file_tmpdir(f->dir, sizeof(f->dir));
    file_path(f->text, sizeof(f->text), f->dir, "text.txt");
    file_path(f->ck, sizeof(f->ck), f->dir, "run.safetensors");
    char *letters = malloc(n);
    ck_assert_ptr_nonnull(letters);
    ag_rng rng = ag_rng_new(5);
    for (size_t i = 0; i < n; i++)
        letters[i] = (char)('a' + (int)ag_rng_below(&rng, 7));
    file_write(f->text, letters, n);
    free(letters);
}

static ag_gpt_config model_config(void)
{
    ag_gpt_config c = ag_gpt_defaults(0);
    c.layers = 1, c.heads = 2, c.dim = 8, c.seq = 6;
    return c;
}

static ag_gpt_train_config train_config(void)
{
    ag_gpt_train_config c = ag_gpt_train_defaults();
    c.batch = 3, c.warmup = 2, c.decay_steps = 20, c.seed = 9;
    return c;
}

static void run_steps(ag_gpt_trainer *t, int n, double *loss)
{
    char err[256];
    for (int i = 0; i < n; i++)
        ck_assert_msg(ag_gpt_trainer_step(t, loss, err, sizeof(err)) == AG_OK, "%s", err);
}

START_TEST(test_open_matches_the_pieces)
{
    files f;
    make_files(&f, 600);
    char err[256] = "";
    ag_gpt_config mc = model_config();
    ag_gpt_train_config tc = train_config();
    ag_gpt_trainer *a = ag_gpt_trainer_open(f.text, &mc, &tc, NULL, err, sizeof(err));
    ck_assert_msg(a != NULL, "%s", err);
    /* by hand: the text, a model seeded from the training seed, a trainer */
    ag_text *text;
    ck_assert_int_eq(ag_text_load(f.text, NULL, &text, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(ag_gpt_trainer_text(a)->len, text->len);
    mc.vocab = ag_vocab_size(text->vocab);
    ag_rng init = ag_rng_new(tc.seed);
    ag_gpt *g = ag_gpt_new(&mc, &init, err, sizeof(err));
    ag_gpt_trainer *b = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(ag_gpt_get_config(ag_gpt_trainer_model(a))->vocab, mc.vocab);
    double la, lb, va, vb;
    run_steps(a, 5, &la);
    run_steps(b, 5, &lb);
    ck_assert(la == lb);
    size_t wa, wb;
    ck_assert_int_eq(ag_gpt_trainer_val_loss(a, &va, &wa, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_val_loss(g, text, &vb, &wb, err, sizeof(err)), AG_OK);
    ck_assert(va == vb);
    ck_assert_uint_eq(wa, wb);
    ag_gpt_trainer_free(a); /* frees its text and model: the sanitizer run checks */
    ag_gpt_trainer_free(b);
    ag_gpt_free(g);
    ag_text_free(text);
    file_rmdir(f.dir);
}
END_TEST

START_TEST(test_open_resumes_bit_for_bit)
{
    files f;
    make_files(&f, 600);
    char err[256] = "";
    ag_gpt_config mc = model_config();
    mc.dropout = 0.1;
    ag_gpt_train_config tc = train_config();
    ag_gpt_trainer *whole = ag_gpt_trainer_open(f.text, &mc, &tc, NULL, err, sizeof(err));
    ag_gpt_trainer *first = ag_gpt_trainer_open(f.text, &mc, &tc, NULL, err, sizeof(err));
    ck_assert_msg(whole && first, "%s", err);
    double lw, lr;
    run_steps(whole, 8, &lw);
    run_steps(first, 3, &lr);
    ck_assert_int_eq(ag_gpt_trainer_save(first, f.ck, err, sizeof(err)), AG_OK);
    ag_gpt_trainer_free(first);
    ag_gpt_file *file;
    ck_assert_int_eq(ag_gpt_file_load(f.ck, &file, err, sizeof(err)), AG_OK);
    ag_gpt_train_config saved;
    ck_assert_int_eq(ag_gpt_file_train(file, &saved, NULL), 1);
    /* the model's configuration may be left out: the file has it, dropout too */
    ag_gpt_trainer *rest = ag_gpt_trainer_open(f.text, NULL, &saved, file, err, sizeof(err));
    ag_gpt_file_free(file);
    ck_assert_msg(rest != NULL, "%s", err);
    ck_assert_int_eq(ag_gpt_trainer_steps(rest), 3);
    ck_assert(ag_gpt_get_config(ag_gpt_trainer_model(rest))->dropout == 0.1);
    run_steps(rest, 5, &lr);
    ck_assert(lw == lr);
    double vw, vr;
    ck_assert_int_eq(ag_gpt_trainer_val_loss(whole, &vw, NULL, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_trainer_val_loss(rest, &vr, NULL, err, sizeof(err)), AG_OK);
    ck_assert(vw == vr);
    ag_gpt_trainer_free(whole);
    ag_gpt_trainer_free(rest);
    file_rmdir(f.dir);
}
END_TEST

START_TEST(test_open_errors)
{
    files f;
    make_files(&f, 40); /* 36 to train, 4 to validate: too short for windows of 6 */
    char err[512] = "", want[512];
    ag_gpt_config mc = model_config();
    ag_gpt_train_config tc = train_config();
    ck_assert_ptr_null(ag_gpt_trainer_open(f.text, &mc, &tc, NULL, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s: a text of 40 characters is too short for windows of 6",
             f.text);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    file_rmdir(f.dir);
    ck_assert_ptr_null(ag_gpt_trainer_open("/nonexistent/t.txt", &mc, &tc, NULL, err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/t.txt"));
    ck_assert_ptr_null(ag_gpt_trainer_open(NULL, &mc, &tc, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: the text's path is NULL");
    ck_assert_ptr_null(ag_gpt_trainer_open("x", NULL, &tc, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: the model's configuration is NULL");
    ck_assert_ptr_null(ag_gpt_trainer_model(NULL));
    ck_assert_ptr_null(ag_gpt_trainer_text(NULL));
    double v;
    ck_assert_int_eq(ag_gpt_trainer_val_loss(NULL, &v, NULL, err, sizeof(err)), AG_ERR_ARG);
}
END_TEST

Suite *suite_gpt_open(void)
{
    Suite *s = suite_create("gpt_open");
    TCase *tc = tcase_create("open");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_open_matches_the_pieces);
    tcase_add_test(tc, test_open_resumes_bit_for_bit);
    tcase_add_test(tc, test_open_errors);
    suite_add_tcase(s, tc);
    return s;
}
