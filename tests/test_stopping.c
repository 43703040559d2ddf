/*
 * test_stopping.c - the library's long work stops when asked (ag_interrupt)
 * and leaves what it finished as it was: a training step stopped halfway
 * changes nothing (a checkpoint saved after it is the one saved before it,
 * byte for byte, and the next step is the step the run would have taken),
 * reading a text, a validation pass, sampling and making a large model all
 * stop with AG_ERR_STOPPED, and each says how far it went on the progress
 * hook. Counters stop at the limit a checkpoint holds; sampling refuses
 * logits that are not finite; a text is checked against a vocabulary only
 * where it is evaluated.
 */
#include "test_util.h"
#include "nn/gpt.h"
#include "optim/optim.h"
#include "run.h"

#include <limits.h>

static ag_text *play(size_t n)
{
    static const char *const words[] = {"the ", "wheel ", "goes ", "round\n", "and ", "bread "};
    char *s = malloc(n + 8);
    size_t len = 0;
    ag_rng rng = ag_rng_new(9);
    while (len < n) {
        const char *w = words[ag_rng_below(&rng, 6)];
        memcpy(s + len, w, strlen(w));
        len += strlen(w);
    }
    ag_text *t;
    char err[256];
    ck_assert_int_eq(ag_text_parse(s, len, "play", NULL, &t, err, sizeof(err)), AG_OK);
    free(s);
    return t;
}

static ag_gpt_config tiny(int vocab)
{
    ag_gpt_config c = ag_gpt_defaults(vocab);
    c.seq = 8, c.layers = 2, c.heads = 2, c.dim = 16, c.dropout = 0.1;
    return c;
}

static ag_gpt_trainer *trainer(ag_gpt **g, const ag_text *text)
{
    ag_gpt_config c = tiny(ag_vocab_size(text->vocab));
    ag_rng init = ag_rng_new(4);
    char err[256];
    *g = ag_gpt_new(&c, &init, err, sizeof(err));
    ck_assert_ptr_nonnull(*g);
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    tc.batch = 3;
    ag_gpt_trainer *t = ag_gpt_trainer_new(*g, text, &tc, err, sizeof(err));
    ck_assert_ptr_nonnull(t);
    return t;
}

/* Interrupted at each op of a step in turn (the progress hook cannot reach
 * inside a step, so the flag is raised before it and each op fails at
 * once; and after k ops, through a tape error on purpose). */
START_TEST(test_step_stopped_changes_nothing)
{
    char dir[256], a[512], b[512], c[512], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a.st");
    file_path(b, sizeof(b), dir, "b.st");
    file_path(c, sizeof(c), dir, "c.st");
    ag_text *text = play(3000);
    ag_gpt *g1, *g2;
    ag_gpt_trainer *t1 = trainer(&g1, text), *t2 = trainer(&g2, text);
    double loss;
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(ag_gpt_trainer_step(t1, &loss, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(ag_gpt_trainer_step(t2, &loss, err, sizeof(err)), AG_OK);
    }
    ck_assert_int_eq(ag_gpt_trainer_save(t1, a, err, sizeof(err)), AG_OK);
    /* stopped before its first op, then (a second trainer) several times */
    for (int k = 0; k < 3; k++) {
        ag_interrupt();
        ck_assert_int_eq(ag_gpt_trainer_step(t2, &loss, err, sizeof(err)), AG_ERR_STOPPED);
        run_assert_has(err, "step 3: ");
        run_assert_has(err, "stopped (interrupted)");
        ag_interrupt_clear();
        ck_assert_int_eq(ag_gpt_trainer_steps(t2), 2);
    }
    ck_assert_int_eq(ag_gpt_trainer_save(t2, b, err, sizeof(err)), AG_OK);
    ck_assert_msg(file_same(a, b), "a stopped step changed the checkpoint");
    /* and the step after it is the step the other run takes */
    ck_assert_int_eq(ag_gpt_trainer_step(t1, &loss, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_trainer_step(t2, &loss, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_trainer_save(t1, a, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_gpt_trainer_save(t2, c, err, sizeof(err)), AG_OK);
    ck_assert(file_same(a, c));
    ag_gpt_trainer_free(t1), ag_gpt_trainer_free(t2);
    ag_gpt_free(g1), ag_gpt_free(g2);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

/* The toy trainer too: a stopped step leaves its data stream. */
START_TEST(test_toy_step_stopped_changes_nothing)
{
    char dir[256], a[512], b[512], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a.st");
    file_path(b, sizeof(b), dir, "b.st");
    ag_train_config c = {.model = {.task = AG_TASK_LOOKUP, .seq = 5, .dim = 8, .heads = 1},
                         .optimizer_adam = 1,
                         .lr = 3e-3,
                         .clip = 1,
                         .batch = 4,
                         .seed = 2};
    ag_trainer *t = ag_trainer_new(&c, NULL, NULL, err, sizeof(err));
    double loss;
    ck_assert_int_eq(ag_trainer_step(t, &loss, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_trainer_save(t, a, err, sizeof(err)), AG_OK);
    ag_interrupt();
    ck_assert_int_eq(ag_trainer_step(t, &loss, err, sizeof(err)), AG_ERR_STOPPED);
    ag_interrupt_clear();
    ck_assert_int_eq(ag_trainer_save(t, b, err, sizeof(err)), AG_OK);
    ck_assert(file_same(a, b));
    ag_trainer_free(t);
    file_rmdir(dir);
}
END_TEST

/* A run at the limit: the step is refused, and so is a save past it. */
START_TEST(test_counters_at_the_limit)
{
    char dir[256], path[512], err[300];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "x.st");
    ag_text *text = play(3000);
    ag_gpt *g;
    ag_gpt_trainer *t = trainer(&g, text);
    double loss;
    t->step = AG_TRAIN_MAX_STEP;
    ck_assert_int_eq(ag_gpt_trainer_step(t, &loss, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "step 2000000001: a run stops at 2000000000 steps, the most a "
                          "checkpoint holds");
    ck_assert_int_eq(ag_gpt_trainer_save(t, path, err, sizeof(err)), AG_OK); /* at it: fine */
    t->step = AG_TRAIN_MAX_STEP + 1;
    ck_assert_int_eq(ag_gpt_trainer_save(t, path, err, sizeof(err)), AG_ERR_ARG);
    run_assert_has(err, "x.st: not saved: the step count 2000000001 is beyond 2000000000, the "
                        "most a checkpoint holds");
    t->step = 5;
    /* the optimizer refuses such a count itself; set behind its back, the save refuses it */
    ck_assert_int_eq(ag_optim_set_steps(t->opt[0], AG_TRAIN_MAX_STEP + 1), AG_ERR_ARG);
    ck_assert_int_eq(ag_optim_set_steps(t->opt[0], LONG_MAX), AG_ERR_ARG);
    ck_assert_int_eq(ag_optim_set_steps(t->opt[0], AG_TRAIN_MAX_STEP), AG_OK);
    t->opt[0]->steps = AG_TRAIN_MAX_STEP + 1;
    ck_assert_int_eq(ag_gpt_trainer_save(t, path, err, sizeof(err)), AG_ERR_ARG);
    run_assert_has(err, "the optimizer step count 2000000001 is beyond");
    ag_gpt_file *f; /* the file at the limit is the one left, and it loads */
    ck_assert_msg(ag_gpt_file_load(path, &f, err, sizeof(err)) == AG_OK, "%s", err);
    long steps;
    ag_gpt_file_train(f, NULL, &steps);
    ck_assert_int_eq(steps, AG_TRAIN_MAX_STEP);
    ag_gpt_file_free(f);
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_validation_stops)
{
    ag_text *text = play(20000);
    ag_gpt *g;
    ag_gpt_trainer *t = trainer(&g, text);
    double loss = -1;
    size_t windows;
    char err[256];
    /* a report as each chunk of 32 windows starts, then, on one thread, after each
     * of its two halves' 2 blocks and head: 7 a chunk */
    test_heard h = {.stop_at = 15};
    ag_progress_set(test_hear, &h);
    ck_assert_int_eq(ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err)), AG_ERR_STOPPED);
    ag_interrupt_clear();
    ck_assert_str_eq(h.what, "validation");
    ck_assert_str_eq(err, "validation: stopped after 64 of 250 windows (interrupted)");
    ck_assert(loss == -1);
    /* not stopped: the hook hears it from 0 to the whole */
    h = (test_heard){0};
    ck_assert_int_eq(ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(h.calls, 8 * 7 + 1); /* 8 chunks, and the end */
    ck_assert(h.done == 250 && h.total == 250);
    ag_progress_set(NULL, NULL);
    /* the gradients are on again after a stopped pass: a step trains */
    ag_interrupt();
    ck_assert_int_eq(ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err)), AG_ERR_STOPPED);
    ag_interrupt_clear();
    ck_assert_int_eq(ag_gpt_trainer_step(t, &loss, err, sizeof(err)), AG_OK);
    ck_assert_ptr_nonnull(ag_gpt_param(g, "wte")->grad);
    ag_gpt_trainer_free(t);
    ag_gpt_free(g);
    ag_text_free(text);
}
END_TEST

/* Reading a long text (over a million characters), making a large model,
 * sampling: each stops. */
START_TEST(test_long_work_stops)
{
    size_t n = 3u << 20;
    char *s = malloc(n);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + i % 7);
    ag_text *text = NULL;
    char err[256];
    test_heard h = {.stop_at = 2};
    ag_progress_set(test_hear, &h);
    ck_assert_int_eq(ag_text_parse(s, n, "long.txt", NULL, &text, err, sizeof(err)),
                     AG_ERR_STOPPED);
    ck_assert_str_eq(err, "long.txt: stopped while tokenizing (interrupted)");
    ck_assert_ptr_null(text);
    ag_interrupt_clear();
    h = (test_heard){.stop_at = 1};
    ck_assert_int_eq(ag_text_parse(s, n, "long.txt", NULL, &text, err, sizeof(err)),
                     AG_ERR_STOPPED);
    ag_interrupt_clear();
    h = (test_heard){0};
    ck_assert_int_eq(ag_text_parse(s, n, "long.txt", NULL, &text, err, sizeof(err)), AG_OK);
    ck_assert_str_eq(h.what, "tokenizing");
    free(s);
    ag_gpt_config c = tiny(7);
    c.layers = 4;
    ag_rng rng = ag_rng_new(1);
    h = (test_heard){.stop_at = 2};
    ck_assert_ptr_null(ag_gpt_new(&c, &rng, err, sizeof(err)));
    ck_assert_str_eq(err, "gpt: stopped while initialising (interrupted)");
    ag_interrupt_clear();
    ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(g);
    ag_gpt_cache *cache = ag_gpt_cache_new(g, err, sizeof(err));
    int prompt = 0;
    h = (test_heard){.stop_at = 5};
    ck_assert_int_eq(
        ag_gpt_generate(cache, &prompt, 1, 100, 1, 0, &rng, NULL, NULL, err, sizeof(err)),
        AG_ERR_STOPPED);
    ck_assert_str_eq(err, "generate: stopped after 4 characters (interrupted)");
    ag_interrupt_clear();
    ag_progress_set(NULL, NULL);
    ag_gpt_cache_free(cache);
    ag_gpt_free(g);
    ag_text_free(text);
}
END_TEST

/* Finite weights so large that the logits overflow: refused, whatever the
 * temperature, not read as token 0. */
START_TEST(test_sampling_refuses_nonfinite_logits)
{
    static const double temperatures[3] = {0, 1, 0.5};
    for (int k = 0; k < 3; k++) {
        ag_gpt_config c = tiny(5);
        c.layers = 1, c.no_layernorm = 1;
        ag_rng rng = ag_rng_new(3);
        char err[256];
        ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
        ag_tensor *wte = ag_gpt_param(g, "wte");
        /* finite, and so large that products of two overflow, in either build */
        double huge = sizeof(ag_real) == 4 ? 3e30 : 1e200;
        for (size_t i = 0; i < wte->size; i++)
            wte->data[i] = (ag_real)((k == 2 ? -huge : huge) * (i % 2 ? 1 : -1));
        ag_gpt_cache *cache = ag_gpt_cache_new(g, err, sizeof(err));
        int prompt = 1;
        ck_assert_int_eq(ag_gpt_generate(cache, &prompt, 1, 10, temperatures[k], 0, &rng, NULL,
                                         NULL, err, sizeof(err)),
                         AG_ERR_NUMERIC);
        run_assert_has(err, "generate: the logits for character 1 are ");
        run_assert_has(err, "the model's weights are too large for its arithmetic");
        ag_gpt_cache_free(cache);
        ag_gpt_free(g);
    }
}
END_TEST

/* eval's text: only the validation part must be in the vocabulary. */
START_TEST(test_eval_text_vocabulary)
{
    char dir[256], path[512], err[300];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "t.txt");
    ag_vocab *v = ag_vocab_from_chars("\nab", err, sizeof(err));
    /* 100 characters: an unknown one in the first 90 is fine, in the last 10 not */
    char s[101];
    for (int i = 0; i < 100; i++)
        s[i] = i % 9 == 8 ? '\n' : "ab"[i % 2];
    s[100] = '\0';
    s[3] = 'Z', s[89] = 'Q';
    file_write(path, s, 100);
    ag_text *t;
    ck_assert_msg(ag_text_load_eval(path, v, &t, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert_uint_eq(t->len, 100);
    ck_assert_uint_eq(t->n_train, 90);
    ck_assert_int_eq(ag_text_id(t, 3), 0);
    ck_assert_int_eq(ag_text_id(t, 90), ag_vocab_id(v, (uint32_t)s[90]));
    ag_text_free(t);
    ck_assert_int_eq(ag_text_load(path, v, &t, err, sizeof(err)), AG_ERR_ARG); /* training: all */
    run_assert_has(err, "character 'Z' (U+005A) on line 1 is not in the vocabulary");
    s[95] = 'Q';
    file_write(path, s, 100);
    ck_assert_int_eq(ag_text_load_eval(path, v, &t, err, sizeof(err)), AG_ERR_ARG);
    run_assert_has(err, "t.txt: character 'Q' (U+0051) on line 10 (in the validation part, the "
                        "last 10%) is not in the vocabulary");
    /* multi-byte characters count as one: the split is by characters */
    char wide[21];
    for (int i = 0; i < 9; i++)
        wide[2 * i] = '\xc3', wide[2 * i + 1] = '\xa9'; /* U+00E9, not in the vocabulary */
    memcpy(wide + 18, "ab", 3);
    file_write(path, wide, 20);
    ck_assert_msg(ag_text_load_eval(path, v, &t, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert_uint_eq(t->len, 11);
    ck_assert_uint_eq(t->n_train, 9);
    ag_text_free(t);
    ck_assert_int_eq(ag_text_load_eval(path, NULL, &t, err, sizeof(err)), AG_ERR_ARG);
    ag_vocab_free(v);
    file_rmdir(dir);
}
END_TEST

Suite *suite_stopping(void)
{
    Suite *s = suite_create("stopping");
    TCase *tc = tcase_create("library");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_step_stopped_changes_nothing);
    tcase_add_test(tc, test_toy_step_stopped_changes_nothing);
    tcase_add_test(tc, test_counters_at_the_limit);
    tcase_add_test(tc, test_validation_stops);
    tcase_add_test(tc, test_long_work_stops);
    tcase_add_test(tc, test_sampling_refuses_nonfinite_logits);
    tcase_add_test(tc, test_eval_text_vocabulary);
    suite_add_tcase(s, tc);
    return s;
}
