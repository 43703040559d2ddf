/*
 * test_memory.c - the memory estimate (src/nn/memory.c) is an upper bound
 * that is actually respected: over models drawn at random (sizes, heads,
 * biases, ablations, dropout, vocabularies, thread counts), what a training
 * step, the validation pass and the toy trainer really put on their tapes
 * (ag_tape_peak_bytes) is within the estimate's part for it, and the
 * estimate is not so loose that it would refuse runs that fit. The number
 * of weights it counts is the model's own.
 */
#include "test_util.h"
#include "kernels/gemm.h"
#include "kernels/threads.h"
#include "nn/gpt.h"

static double part(const ag_memory *m, const char *what)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->part[i].what, what) == 0)
            return m->part[i].bytes;
    return 0;
}

/* A model drawn from rng: small enough for the sanitizer builds. */
static ag_gpt_config draw(ag_rng *rng, int *batch)
{
    ag_gpt_config c = ag_gpt_defaults(2 + (int)ag_rng_below(rng, 300));
    c.heads = 1 + (int)ag_rng_below(rng, 4);
    c.dim = c.heads * (1 + (int)ag_rng_below(rng, 12));
    c.seq = 1 + (int)ag_rng_below(rng, 48);
    c.layers = (int)ag_rng_below(rng, 3);
    c.bias = ag_rng_below(rng, 3) == 0;
    c.no_mlp = ag_rng_below(rng, 4) == 0;
    c.no_layernorm = ag_rng_below(rng, 4) == 0;
    c.no_residual = ag_rng_below(rng, 5) == 0;
    c.no_posenc = ag_rng_below(rng, 4) == 0;
    c.dropout = ag_rng_below(rng, 3) == 0 ? 0.1 : 0;
    *batch = 1 + (int)ag_rng_below(rng, 12);
    return c;
}

START_TEST(test_weights_counted)
{
    ag_rng rng = ag_rng_new(5);
    for (int k = 0; k < 60; k++) {
        int batch;
        ag_gpt_config c = draw(&rng, &batch);
        char err[256];
        ag_gpt *g = ag_gpt_new(&c, NULL, err, sizeof(err));
        ck_assert_msg(g != NULL, "%s", err);
        ck_assert_msg(ag_gpt_config_weights(&c) == (double)ag_gpt_n_weights(g),
                      "model %d: %.0f counted, %zu in the model", k, ag_gpt_config_weights(&c),
                      ag_gpt_n_weights(g));
        ag_gpt_free(g);
    }
}
END_TEST

/* A training step (and an estimate on the same tape), then the validation
 * pass: each tape's peak within its part, the parts within a factor of it. */
START_TEST(test_gpt_within_estimate)
{
    ag_rng rng = ag_rng_new(11 + (uint64_t)_i);
    for (int k = 0; k < 12; k++) {
        int batch;
        ag_gpt_config c = draw(&rng, &batch);
        ag_text *text =
            test_wide_text((size_t)(c.seq + 1) * 360 + (size_t)c.vocab, c.vocab, (uint64_t)k);
        c.vocab = ag_vocab_size(text->vocab);
        char err[256];
        ag_rng init = ag_rng_new(3);
        ag_gpt *g = ag_gpt_new(&c, &init, err, sizeof(err));
        ck_assert_msg(g != NULL, "%s", err);
        ag_gpt_train_config tc = ag_gpt_train_defaults();
        tc.batch = batch;
        int threads = 1 + (int)ag_rng_below(&rng, 2);
        ag_set_threads(threads);
        ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
        ck_assert_msg(t != NULL, "%s", err);
        double loss;
        ck_assert_msg(ag_gpt_trainer_step(t, &loss, err, sizeof(err)) == AG_OK, "%s", err);
        ck_assert_int_eq(ag_gpt_trainer_estimate(t, AG_SPLIT_VAL, 2, &loss, err, sizeof(err)),
                         AG_OK);
        ag_tape *vt[2] = {ag_tape_new(), ag_tape_new()};
        ck_assert_int_eq(ag_gpt_val_loss_on(vt, g, text, &loss, NULL, err, sizeof(err)), AG_OK);
        ag_memory m;
        ag_gpt_memory(&c, &(ag_gpt_run){.batch = batch, .validate = 1, .threads = threads}, &m);
        double step = part(&m, "a training step"), val = part(&m, "the validation");
        double sp = (double)ag_gpt_trainer_peak_bytes(t),
               vp = (double)(ag_tape_peak_bytes(vt[0]) + ag_tape_peak_bytes(vt[1]));
        /* the validation's buffers (the stream, the ids) are outside its tape */
        size_t chunk = ag_gpt_val_chunk(&c), W = ag_text_windows(text, c.seq);
        chunk = chunk < W ? chunk : W;
        vp += (double)(chunk * (size_t)c.seq) * ((double)c.dim * sizeof(ag_real) + 2 * sizeof(int));
        ck_assert_msg(sp <= step,
                      "model %d (B%d T%d C%d H%d L%d V%d bias %d): a step used %.0f "
                      "bytes, estimated %.0f",
                      k, batch, c.seq, c.dim, c.heads, c.layers, c.vocab, c.bias, sp, step);
        ck_assert_msg(vp <= val,
                      "model %d (T%d C%d H%d L%d V%d bias %d): validation used %.0f "
                      "bytes, estimated %.0f",
                      k, c.seq, c.dim, c.heads, c.layers, c.vocab, c.bias, vp, val);
        /* not so loose that it refuses what fits: a few times, and a fixed part */
        ck_assert_msg(step <= 4 * sp + 2e6, "model %d: a step estimated %.0f for %.0f", k, step,
                      sp);
        ck_assert_msg(val <= 4 * vp + 2e6, "model %d: validation estimated %.0f for %.0f", k, val,
                      vp);
        double sum = 0;
        for (int i = 0; i < m.n; i++)
            sum += m.part[i].bytes;
        ck_assert(sum == m.total);
        ck_assert(part(&m, "the weights") == (double)ag_gpt_n_weights(g) * sizeof(ag_real));
        ck_assert(part(&m, "AdamW's state") == 2 * part(&m, "the weights"));
        ag_tape_free(vt[0]);
        ag_tape_free(vt[1]);
        ag_gpt_trainer_free(t);
        ag_set_threads(1);
        ag_gpt_free(g);
        ag_text_free(text);
    }
}
END_TEST

/* Larger models, one each: long contexts, wide streams, many heads with
 * biases (the (T, T) weights made), a large vocabulary. */
START_TEST(test_gpt_within_estimate_large)
{
    static const int cases[][7] = {
        /* B, T, C, H, L, V, bias */
        {12, 64, 128, 4, 2, 65, 0}, {2, 512, 32, 4, 1, 30, 0}, {2, 256, 32, 16, 1, 30, 1},
        {4, 32, 8, 2, 1, 1500, 0},  {1, 1024, 8, 1, 1, 10, 0},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const int *q = cases[k];
        ag_text *text = test_wide_text((size_t)(q[1] + 1) * 40 + (size_t)q[5], q[5], k);
        ag_gpt_config c = ag_gpt_defaults(ag_vocab_size(text->vocab));
        c.seq = q[1], c.dim = q[2], c.heads = q[3], c.layers = q[4], c.bias = q[6];
        char err[256];
        ag_rng init = ag_rng_new(3);
        ag_gpt *g = ag_gpt_new(&c, &init, err, sizeof(err));
        ag_gpt_train_config tc = ag_gpt_train_defaults();
        tc.batch = q[0];
        ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
        ck_assert_msg(t != NULL, "%s", err);
        double loss;
        ck_assert_msg(ag_gpt_trainer_step(t, &loss, err, sizeof(err)) == AG_OK, "%s", err);
        ag_tape *vt[2] = {ag_tape_new(), ag_tape_new()};
        ck_assert_int_eq(ag_gpt_val_loss_on(vt, g, text, &loss, NULL, err, sizeof(err)), AG_OK);
        ag_memory m;
        ag_gpt_memory(&c, &(ag_gpt_run){.batch = q[0], .validate = 1}, &m);
        double sp = (double)ag_gpt_trainer_peak_bytes(t),
               vp = (double)(ag_tape_peak_bytes(vt[0]) + ag_tape_peak_bytes(vt[1]));
        ck_assert_msg(sp <= part(&m, "a training step"), "case %zu: step %.0f > %.0f", k, sp,
                      part(&m, "a training step"));
        ck_assert_msg(vp <= part(&m, "the validation"), "case %zu: validation %.0f > %.0f", k, vp,
                      part(&m, "the validation"));
        ck_assert(part(&m, "a training step") <= 3 * sp + 2e6);
        ag_tape_free(vt[0]);
        ag_tape_free(vt[1]);
        ag_gpt_trainer_free(t);
        ag_gpt_free(g);
        ag_text_free(text);
    }
}
END_TEST

/* The parts a run has depend on what it does. */
START_TEST(test_gpt_parts)
{
    ag_gpt_config c = ag_gpt_defaults(65);
    ag_memory m;
    ag_gpt_memory(&c, &(ag_gpt_run){.sample = 1, .file_bytes = 1e6}, &m);
    ck_assert(part(&m, "sampling") > 0 && part(&m, "the checkpoint read") > 1e6);
    ck_assert(part(&m, "their gradients") == 0 && part(&m, "the validation") == 0);
    /* a text's ids: one byte each in place of its bytes, or two beside them */
    ag_gpt_memory(&c, &(ag_gpt_run){.validate = 1, .text_bytes = 1e8}, &m);
    ck_assert(part(&m, "the text") >= 1e8 && part(&m, "the text") < 1.1e8);
    ag_gpt_config wide = ag_gpt_defaults(300);
    ag_gpt_memory(&wide, &(ag_gpt_run){.validate = 1, .text_bytes = 1e8}, &m);
    ck_assert(part(&m, "the text") >= 3e8);
    ag_gpt_memory(&c, &(ag_gpt_run){.validate = 1, .text_bytes = 1e8}, &m);
    ck_assert(part(&m, "a training step") == 0);
    ag_gpt_memory(&c, &(ag_gpt_run){.batch = 12, .save = 1, .threads = 4}, &m);
    /* made as it is written: no copy of the weights and AdamW's state */
    ck_assert(part(&m, "writing the checkpoint") > 0);
    ck_assert(part(&m, "writing the checkpoint") < part(&m, "the weights") / 10);
    /* each thread's packing buffer, each worker's stack, beside the program's 32 MiB */
    ck_assert(part(&m, "the program") == 32.0 * 1024 * 1024 + 4.0 * (double)ag_gemm_thread_bytes() +
                                             3.0 * (double)ag_thread_stack_bytes());
    /* a model no machine holds: a number, not an overflow */
    c.layers = 1024, c.dim = 65536, c.seq = 65536, c.vocab = AG_VOCAB_MAX;
    ag_gpt_memory(&c, &(ag_gpt_run){.batch = 1 << 20, .validate = 1}, &m);
    ck_assert(isfinite(m.total) && m.total > 1e20);
}
END_TEST

/* The toy trainer: its one tape serves the steps, the held-out evaluation
 * and the example shown. */
START_TEST(test_toy_within_estimate)
{
    ag_rng rng = ag_rng_new(17);
    for (int k = 0; k < 30; k++) {
        ag_train_config c = {0};
        c.model.task = (ag_task_kind)ag_rng_below(&rng, AG_TASK_COUNT);
        int lo = ag_task_min_seq(c.model.task), hi = ag_task_max_seq(c.model.task);
        hi = hi > 40 ? 40 : hi;
        c.model.seq = lo + (int)ag_rng_below(&rng, (uint32_t)(hi - lo + 1));
        c.model.heads = 1 + (int)ag_rng_below(&rng, 4);
        c.model.dim = c.model.heads * (1 + (int)ag_rng_below(&rng, 12));
        c.model.posenc = (ag_posenc_kind)ag_rng_below(&rng, 3);
        c.model.causal = (int)ag_rng_below(&rng, 2);
        c.optimizer_adam = (int)ag_rng_below(&rng, 2);
        c.lr = 1e-3, c.momentum = 0.9, c.clip = 1, c.seed = 1;
        c.batch = 1 + (int)ag_rng_below(&rng, 700);
        char err[256];
        ag_trainer *t = ag_trainer_new(&c, NULL, NULL, err, sizeof(err));
        ck_assert_msg(t != NULL, "%s", err);
        double loss, acc;
        const ag_tensor *z, *a;
        ck_assert_int_eq(ag_trainer_step(t, &loss, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(ag_trainer_evaluate(t, &loss, &acc, err, sizeof(err)), AG_OK);
        ck_assert_int_eq(ag_trainer_example(t, &z, &a, err, sizeof(err)), AG_OK);
        ag_memory m;
        ag_train_memory(&c, 1, 0, &m);
        double used = (double)ag_tape_peak_bytes(ag_trainer_tape(t));
        double est = part(&m, "a step and the held-out evaluation");
        ck_assert_msg(used <= est,
                      "model %d (task %d seq %d dim %d heads %d posenc %d batch %d): %.0f used, "
                      "%.0f estimated",
                      k, c.model.task, c.model.seq, c.model.dim, c.model.heads, c.model.posenc,
                      c.batch, used, est);
        ck_assert_msg(est <= 4 * used + 2e6, "model %d: %.0f estimated for %.0f", k, est, used);
        ag_tensor *params[8];
        size_t n = ag_model_params(ag_trainer_model(t), params, NULL, 8);
        double w = 0;
        for (size_t i = 0; i < n; i++)
            w += (double)params[i]->size * sizeof(ag_real);
        ck_assert(part(&m, "the weights") == w);
        ag_trainer_free(t);
    }
}
END_TEST

Suite *suite_memory(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("estimate");
    tcase_set_timeout(tc, 300); /* sanitizer builds are slow; nothing here is timed */
    tcase_add_test(tc, test_weights_counted);
    tcase_add_loop_test(tc, test_gpt_within_estimate, 0, 3);
    tcase_add_test(tc, test_gpt_within_estimate_large);
    tcase_add_test(tc, test_gpt_parts);
    tcase_add_test(tc, test_toy_within_estimate);
    suite_add_tcase(s, tc);
    return s;
}
