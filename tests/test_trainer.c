/*
 * test_trainer.c - the toy model's training run (src/nn/trainer.c): it
 * learns, a seed fixes it bit for bit, a checkpoint resumes it exactly, a
 * NaN stops it naming the step, a steady step allocates nothing, and bad
 * settings are refused with a message.
 */
#include "test_util.h"
#include "nn/nn.h"
#include "run.h"

#include <math.h>
#include <unistd.h>

static ag_train_config lookup_config(void)
{
    ag_train_config c = {.model = {.task = AG_TASK_LOOKUP,
                                   .seq = 5,
                                   .dim = 32,
                                   .heads = 1,
                                   .posenc = AG_POSENC_NONE},
                         .optimizer_adam = 1,
                         .lr = 3e-3,
                         .clip = 1,
                         .batch = 32,
                         .seed = 7};
    return c;
}

static ag_trainer *new_trainer(const ag_train_config *c)
{
    char err[256] = "";
    ag_trainer *t = ag_trainer_new(c, NULL, NULL, err, sizeof(err));
    ck_assert_msg(t != NULL, "%s", err);
    return t;
}

static void steps(ag_trainer *t, long n, double *loss)
{
    char err[256];
    for (long k = 0; k < n; k++)
        ck_assert_msg(ag_trainer_step(t, loss, err, sizeof(err)) == AG_OK, "%s", err);
}

static int same_weights(ag_trainer *a, ag_trainer *b)
{
    ag_tensor *pa[8], *pb[8];
    size_t n = ag_model_params(ag_trainer_model(a), pa, NULL, 8);
    if (n != ag_model_params(ag_trainer_model(b), pb, NULL, 8))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(pa[i]->data, pb[i]->data, pa[i]->size * sizeof(ag_real)) != 0)
            return 0;
    return 1;
}

START_TEST(test_trainer_learns_lookup)
{
    ag_train_config c = lookup_config();
    ag_trainer *t = new_trainer(&c);
    double loss = 0, eval_loss = 0, acc = 0, first = 0;
    char err[256];
    ck_assert_int_eq(ag_trainer_evaluate(t, &first, &acc, err, sizeof(err)), AG_OK);
    steps(t, 300, &loss);
    ck_assert_int_eq(ag_trainer_steps(t), 300);
    ck_assert_int_eq(ag_trainer_evaluate(t, &eval_loss, &acc, err, sizeof(err)), AG_OK);
    ck_assert_msg(eval_loss < first / 10, "held-out loss %g from %g", eval_loss, first);
    ck_assert_msg(acc > 0.95, "held-out accuracy %g", acc);
    ck_assert_int_eq(ag_trainer_held_out(t)->batch, AG_TRAINER_HELD_OUT);
    ck_assert_int_eq(ag_trainer_config(t)->batch, 32);
    ag_trainer_free(t);
    ag_trainer_free(NULL);
}
END_TEST

START_TEST(test_trainer_example_shapes)
{
    ag_train_config c = lookup_config();
    c.model.task = AG_TASK_LOOKUP2;
    c.model.heads = 2;
    ag_trainer *t = new_trainer(&c);
    const ag_tensor *logits = NULL, *attn = NULL;
    char err[256];
    steps(t, 3, NULL);
    ck_assert_int_eq(ag_trainer_example(t, &logits, &attn, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(attn->ndim, 4);
    ck_assert_int_eq(attn->shape[0], 1);
    ck_assert_int_eq(attn->shape[1], 2);
    ck_assert_int_eq(attn->shape[2], 5);
    ck_assert_int_eq(logits->shape[0], 1);
    ck_assert_int_eq(logits->shape[2], ag_task_answers(AG_TASK_LOOKUP2));
    for (int r = 0; r < 2 * 5; r++) { /* every row of weights sums to 1 */
        double sum = 0;
        for (int j = 0; j < 5; j++)
            sum += attn->data[r * 5 + j];
        ck_assert_double_eq_tol(sum, 1, 1e-5);
    }
    /* the answer is the argmax of each position's logits */
    const ag_batch *b = ag_trainer_held_out(t);
    int A = b->answers, C = ag_task_classes(b->kind);
    for (int i = 0; i < 5; i++)
        for (int a = 0; a < A; a++) {
            const ag_real *z = logits->data + ((size_t)i * A + a) * C;
            int got = ag_model_answer(b, logits, 0, i, a);
            for (int k = 0; k < C; k++)
                ck_assert(z[k] <= z[got]);
        }
    /* the example's tensors do not disturb the next step */
    steps(t, 1, NULL);
    ck_assert_int_eq(ag_trainer_steps(t), 4);
    ag_trainer_free(t);
}
END_TEST

START_TEST(test_trainer_seed_fixes_run)
{
    ag_train_config c = lookup_config();
    ag_trainer *a = new_trainer(&c), *b = new_trainer(&c);
    double la, lb;
    steps(a, 20, &la);
    steps(b, 20, &lb);
    ck_assert(la == lb);
    ck_assert(same_weights(a, b));
    c.seed = 8;
    ag_trainer *other = new_trainer(&c);
    steps(other, 20, &lb);
    ck_assert(!same_weights(a, other));
    ag_trainer_free(a);
    ag_trainer_free(b);
    ag_trainer_free(other);
}
END_TEST

START_TEST(test_trainer_resume_is_exact)
{
    char dir[256], path[320], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "run.safetensors");
    for (int adam = 0; adam <= 1; adam++) {
        ag_train_config c = lookup_config();
        c.optimizer_adam = adam;
        c.lr = adam ? 3e-3 : 0.1;
        c.momentum = 0.9;
        ag_trainer *a = new_trainer(&c);
        double la, lb;
        steps(a, 10, &la);
        ck_assert_int_eq(ag_trainer_save(a, path, err, sizeof(err)), AG_OK);
        steps(a, 10, &la);
        ag_checkpoint *ck;
        ag_train_state st;
        ck_assert_int_eq(ag_checkpoint_load(path, &ck, &st, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(st.step, 10);
        ag_trainer *b = ag_trainer_new(&st.config, ck, &st, err, sizeof(err));
        ag_checkpoint_free(ck);
        ck_assert_msg(b != NULL, "%s", err);
        ck_assert_int_eq(ag_trainer_steps(b), 10);
        steps(b, 10, &lb);
        ck_assert(la == lb);
        ck_assert(same_weights(a, b));
        ag_trainer_free(a);
        ag_trainer_free(b);
    }
    file_rmdir(dir);
}
END_TEST

START_TEST(test_trainer_steady_step_allocates_nothing)
{
    ag_train_config c = lookup_config();
    ag_trainer *t = new_trainer(&c);
    double loss, acc;
    char err[256];
    steps(t, 1, &loss);
    ck_assert_int_eq(ag_trainer_evaluate(t, &loss, &acc, err, sizeof(err)), AG_OK);
    size_t before = ag_alloc_count();
    steps(t, 50, &loss);
    ck_assert_int_eq(ag_trainer_evaluate(t, &loss, &acc, err, sizeof(err)), AG_OK);
    steps(t, 50, &loss);
    ck_assert_uint_eq(ag_alloc_count() - before, 0);
    ag_trainer_free(t);
}
END_TEST

START_TEST(test_trainer_nan_stops_step)
{
    ag_train_config c = lookup_config();
    c.optimizer_adam = 0;
    c.lr = 100;
    c.clip = 0;
    ag_trainer *t = new_trainer(&c);
    char err[256] = "";
    ag_status st = AG_OK;
    long k = 0;
    while (k < 200 && (st = ag_trainer_step(t, NULL, err, sizeof(err))) == AG_OK)
        k++;
    ck_assert_int_eq(st, AG_ERR_NUMERIC);
    ck_assert_int_eq(ag_trainer_steps(t), k); /* the failed step is not counted */
    char want[32];
    snprintf(want, sizeof(want), "step %ld: ", k + 1);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    ck_assert_msg(strstr(err, "NaN") || strstr(err, "Inf"), "%s", err);
    ag_trainer_free(t);
}
END_TEST

START_TEST(test_trainer_bad_settings)
{
    char err[256];
    ag_train_config c = lookup_config();
    ck_assert_ptr_null(ag_trainer_new(NULL, NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: the configuration is NULL");
    c.batch = 0;
    ck_assert_ptr_null(ag_trainer_new(&c, NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: batch must be in 1..65536");
    c = lookup_config();
    c.lr = NAN;
    ck_assert_ptr_null(ag_trainer_new(&c, NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: lr must be in 1e-12..1000");
    c = lookup_config();
    c.clip = -1;
    ck_assert_ptr_null(ag_trainer_new(&c, NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: clip must be in 0..1e+12");
    c = lookup_config();
    c.weight_decay = 2000;
    ck_assert_ptr_null(ag_trainer_new(&c, NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: weight_decay must be in 0..1000");
    c = lookup_config();
    c.model.seq = 12;
    ck_assert_ptr_null(ag_trainer_new(&c, NULL, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "seq 12 is out of range for task lookup (2..9)");
    /* a checkpoint of another model does not restore into this one */
    char dir[256], path[320];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "run.safetensors");
    c = lookup_config();
    ag_trainer *t = new_trainer(&c);
    ck_assert_int_eq(ag_trainer_save(t, path, err, sizeof(err)), AG_OK);
    ag_trainer_free(t);
    ag_checkpoint *ck;
    ag_train_state st;
    ck_assert_int_eq(ag_checkpoint_load(path, &ck, &st, err, sizeof(err)), AG_OK);
    c.model.dim = 16;
    ck_assert_ptr_null(ag_trainer_new(&c, ck, &st, err, sizeof(err)));
    ck_assert_msg(strstr(err, path) != NULL, "%s", err);
    ck_assert_ptr_null(ag_trainer_new(&st.config, ck, NULL, err, sizeof(err)));
    ck_assert_str_eq(err, "trainer: a checkpoint without its ag_train_state");
    ag_checkpoint_free(ck);
    file_rmdir(dir);
}
END_TEST

/* Whatever ag_checkpoint_save writes, ag_checkpoint_load takes back:
 * settings out of their ranges, a model or an optimizer other than the
 * settings name, are refused at the save ("PATH: not saved: ...") and no
 * file is made; a subnormal weight decay comes back as it went. */
START_TEST(test_checkpoint_save_what_loads)
{
    char dir[256], path[320], err[400];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "run.safetensors");
    ag_train_config c = lookup_config();
    ag_rng rng = ag_rng_new(1);
    ag_model *m = ag_model_new(&c.model, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(m);
    ag_tensor *ps[8];
    size_t n = ag_model_params(m, ps, NULL, 8);
    ag_optim *adam = ag_train_optim_new(&c, ps, n);
    ag_train_config sgd_c = c;
    sgd_c.optimizer_adam = 0;
    ag_optim *sgd = ag_train_optim_new(&sgd_c, ps, n);
    struct {
        const char *field;
        double value;
        ag_optim *opt;
        const char *why;
    } bad[] = {
        {"lr", 0, NULL, "trainer: lr must be in 1e-12..1000"},
        {"clip", NAN, NULL, "trainer: clip must be in 0..1e+12"},
        {"heads", 3, NULL, "heads 3 does not divide dim 32"},
        {"dim", 16, NULL, "the model was not made with the settings given with it"},
        {"lr", 3e-3, sgd, "the optimizer is not the one the settings name (adam)"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        ag_train_state st = {.config = c, .step = 10};
        if (strcmp(bad[k].field, "lr") == 0)
            st.config.lr = bad[k].value;
        else if (strcmp(bad[k].field, "clip") == 0)
            st.config.clip = bad[k].value;
        else if (strcmp(bad[k].field, "heads") == 0)
            st.config.model.heads = (int)bad[k].value;
        else
            st.config.model.dim = (int)bad[k].value;
        ag_optim *opt = bad[k].opt ? bad[k].opt : adam;
        ck_assert_int_eq(ag_checkpoint_save(path, m, opt, &st, err, sizeof(err)), AG_ERR_ARG);
        char want[400];
        snprintf(want, sizeof(want), "%s: not saved: %s", path, bad[k].why);
        ck_assert_str_eq(err, want);
        ck_assert_int_ne(access(path, F_OK), 0);
    }
    ag_train_state st = {.config = c, .step = 10};
    st.config.weight_decay = 5e-324;
    ck_assert_msg(ag_checkpoint_save(path, m, adam, &st, err, sizeof(err)) == AG_OK, "%s", err);
    ag_checkpoint *ck;
    ag_train_state back;
    ck_assert_msg(ag_checkpoint_load(path, &ck, &back, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert(back.config.weight_decay == 5e-324 && back.step == 10);
    ag_checkpoint_free(ck);
    ag_optim_free(adam), ag_optim_free(sgd);
    ag_model_free(m);
    file_rmdir(dir);
}
END_TEST

/* NULL where a model, trainer, checkpoint or state belongs: AG_ERR_ARG with
 * a message (or NULL, or 0, for the functions that return those), never a
 * crash. */
START_TEST(test_null_arguments)
{
    char err[200];
    ag_train_state st;
    ag_checkpoint *ck = (ag_checkpoint *)&st; /* must be set to NULL */
    ck_assert_int_eq(ag_checkpoint_load("x", NULL, &st, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_checkpoint_load("x", &ck, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_ptr_null(ck);
    ck_assert_str_eq(err, "ag_checkpoint_load: st is NULL");
    ck_assert_int_eq(ag_checkpoint_load(NULL, &ck, &st, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_checkpoint_save("x", NULL, NULL, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_checkpoint_save: the model is NULL");
    ck_assert_int_eq(ag_checkpoint_restore(NULL, NULL, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_trainer_step(NULL, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_trainer_step: the trainer is NULL");
    ck_assert_int_eq(ag_trainer_evaluate(NULL, NULL, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_trainer_example(NULL, NULL, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_trainer_save(NULL, "x", err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_trainer_steps(NULL), 0);
    ck_assert_ptr_null(ag_trainer_config(NULL));
    ck_assert_uint_eq(ag_model_params(NULL, NULL, NULL, 0), 0);
    ck_assert_ptr_null(ag_model_param(NULL, "wq"));
    ck_assert_ptr_null(ag_model_get_config(NULL));
    ck_assert_ptr_null(ag_train_optim_new(NULL, NULL, 0));
    ag_task_sample(NULL, NULL);
    ck_assert(ag_gpt_lr_at(NULL, 3) == 0);
    ck_assert_uint_eq(ag_text_windows(NULL, 8), 0);
    ck_assert_int_eq(access("x", F_OK), -1);
}
END_TEST

/* The layout a checkpoint is checked against, made from the settings
 * alone, is the model's own parameter list, for every task and encoding. */
START_TEST(test_model_layout_is_the_model)
{
    for (int task = 0; task < AG_TASK_COUNT; task++)
        for (int pe = AG_POSENC_NONE; pe <= AG_POSENC_LEARNED; pe++) {
            ag_model_config c = {.task = (ag_task_kind)task,
                                 .seq = ag_task_min_seq((ag_task_kind)task) + 1,
                                 .dim = 12,
                                 .heads = 3,
                                 .posenc = (ag_posenc_kind)pe};
            char err[160];
            ag_rng rng = ag_rng_new(3);
            ag_model *m = ag_model_new(&c, &rng, err, sizeof(err));
            ck_assert_msg(m != NULL, "%s", err);
            ag_tensor *params[AG_MODEL_MAX_PARAMS];
            const char *names[AG_MODEL_MAX_PARAMS], *lnames[AG_MODEL_MAX_PARAMS];
            int shape[AG_MODEL_MAX_PARAMS][2];
            size_t n = ag_model_params(m, params, names, AG_MODEL_MAX_PARAMS);
            ck_assert_uint_eq(ag_model_layout(&c, lnames, shape), n);
            for (size_t i = 0; i < n; i++) {
                ck_assert_str_eq(lnames[i], names[i]);
                ck_assert_int_eq(params[i]->ndim, 2);
                ck_assert_int_eq(shape[i][0], params[i]->shape[0]);
                ck_assert_int_eq(shape[i][1], params[i]->shape[1]);
            }
            ag_model_free(m);
        }
}
END_TEST

Suite *suite_trainer(void)
{
    Suite *s = suite_create("trainer");
    TCase *tc = tcase_create("training");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_trainer_learns_lookup);
    tcase_add_test(tc, test_model_layout_is_the_model);
    tcase_add_test(tc, test_trainer_example_shapes);
    tcase_add_test(tc, test_trainer_seed_fixes_run);
    tcase_add_test(tc, test_trainer_resume_is_exact);
    tcase_add_test(tc, test_trainer_steady_step_allocates_nothing);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_trainer_nan_stops_step);
    tcase_add_test(tc, test_trainer_bad_settings);
    tcase_add_test(tc, test_checkpoint_save_what_loads);
    tcase_add_test(tc, test_null_arguments);
    suite_add_tcase(s, tc);
    return s;
}
