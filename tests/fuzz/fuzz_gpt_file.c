/*
 * fuzz_gpt_file.c - libFuzzer target for GPT checkpoints, read the way
 * `sample`, `eval` and `train --load` read them: every input is parsed as a
 * checkpoint (ag_gpt_file_parse: the safetensors file, the metadata, the
 * tensors against what the settings call for); one that is accepted has
 * its memory estimated, and when it is small (as the command's limit would
 * let it through) its model is made, sampled from, evaluated on a text of
 * its own vocabulary and, for a trainer's checkpoint, resumed and stepped.
 * Checked on the way:
 *
 *   - a refusal leaves *out NULL and a message naming the file;
 *   - an accepted file agrees with itself: its vocabulary has vocab_size
 *     characters, its settings make a model, the model has exactly the
 *     weights the estimate counts, and every file tensor the settings call
 *     for is there (a model that loads has every weight finite);
 *   - sampling, the validation loss and a resumed step end in AG_OK or a
 *     named failure (NaN logits, a non-finite loss), never a crash;
 *   - a step stopped by ag_interrupt changes nothing it saved.
 *
 * Build and run with `make fuzz-run-gpt` (see docs/fuzzing.md).
 */
#include "attograd.h"
#include "nn/gpt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_gpt_file: %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* What this target lets through to the allocating parts: a small model, as
 * a small AG_MAX_MEMORY would. */
#define MAX_BYTES (8.0 * 1024 * 1024)
#define MAX_SEQ 64

/* A text of the model's own characters, long enough for windows of seq in
 * both parts: each character in turn, then a pattern of them. */
static ag_text *text_of(const ag_vocab *v, int seq)
{
    int V = ag_vocab_size(v);
    size_t n = (size_t)(seq + 2) * 12 + (size_t)V;
    char *s = malloc(4 * n + 1), buf[8];
    CHECK(s);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int id = i < (size_t)V ? (int)i : (int)((i * 7 + i / 3) % (size_t)V);
        size_t k = ag_vocab_utf8(v, id, buf);
        memcpy(s + len, buf, k);
        len += k;
    }
    ag_text *t = NULL;
    char err[256];
    ag_status st = ag_text_parse(s, len, "text", v, &t, err, sizeof(err));
    free(s);
    CHECK(st == AG_OK);
    return t;
}

static int emit(int id, void *ctx)
{
    CHECK(id >= 0 && id < *(const int *)ctx);
    return 0;
}

/* sample: the cache, a prompt, a few characters. */
static void sample(ag_gpt *g)
{
    char err[256];
    ag_gpt_cache *c = ag_gpt_cache_new(g, err, sizeof(err));
    CHECK(c);
    int V = ag_gpt_get_config(g)->vocab, prompt[2] = {0, V - 1};
    ag_rng rng = ag_rng_new(1);
    ag_status st = ag_gpt_generate(c, prompt, 2, 6, 1.0, 3, &rng, emit, &V, err, sizeof(err));
    CHECK(st == AG_OK || (st == AG_ERR_NUMERIC && strstr(err, "logits")));
    ag_gpt_cache_free(c);
}

/* eval: the full validation loss. */
static void evaluate(ag_gpt *g, const ag_text *text)
{
    double loss = -1;
    size_t windows = 0;
    char err[256];
    ag_status st = ag_gpt_val_loss(g, text, &loss, &windows, err, sizeof(err));
    CHECK(st == AG_OK || st == AG_ERR_NUMERIC);
    if (st == AG_OK)
        CHECK(isfinite(loss) && loss >= 0 && windows == ag_text_windows(text, g->cfg.seq));
}

/* train --load: restore the run, stop a step halfway (nothing changes),
 * take one. */
static void resume(ag_gpt *g, const ag_text *text, const ag_gpt_file *f)
{
    ag_gpt_train_config tc;
    long steps;
    CHECK(ag_gpt_file_train(f, &tc, &steps));
    if (tc.batch > 4)
        tc.batch = 4; /* --batch given on purpose */
    if (tc.min_lr > tc.lr)
        tc.min_lr = tc.lr; /* the command refuses it; --min-lr given */
    char err[256];
    ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &tc, err, sizeof(err));
    CHECK(t);
    ag_status st = ag_gpt_trainer_restore(t, f, err, sizeof(err));
    if (st != AG_OK) { /* optimizer state that is not finite, or a negative v: named */
        CHECK(strncmp(err, "fuzz.st: ", 9) == 0);
        ag_gpt_trainer_free(t);
        return;
    }
    CHECK(ag_gpt_trainer_steps(t) == steps);
    ag_rng before = t->data_rng;
    double loss;
    ag_interrupt();
    st = ag_gpt_trainer_step(t, &loss, err, sizeof(err));
    ag_interrupt_clear();
    /* stopped, or refused at the limit a checkpoint holds */
    CHECK(st == (steps >= AG_TRAIN_MAX_STEP ? AG_ERR_ARG : AG_ERR_STOPPED));
    CHECK(ag_gpt_trainer_steps(t) == steps && t->data_rng.state == before.state);
    st = ag_gpt_trainer_step(t, &loss, err, sizeof(err));
    CHECK(st == AG_OK || st == AG_ERR_NUMERIC || (st == AG_ERR_ARG && steps >= AG_TRAIN_MAX_STEP));
    CHECK(ag_gpt_trainer_steps(t) == steps + (st == AG_OK));
    ag_gpt_trainer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ag_gpt_file *f = NULL;
    char err[600] = "";
    ag_status st = ag_gpt_file_parse(data, size, "fuzz.st", &f, err, sizeof(err));
    if (st != AG_OK) {
        CHECK(f == NULL);
        CHECK(strncmp(err, "fuzz.st: ", 9) == 0); /* every message names the file */
        return 0;
    }
    const ag_gpt_config *c = ag_gpt_file_config(f);
    CHECK(ag_vocab_size(ag_gpt_file_vocab(f)) == c->vocab);
    CHECK(c->dim % c->heads == 0 && c->seq >= 1 && c->layers >= 0);
    ag_gpt_train_config tc;
    long steps = -1;
    int trained = ag_gpt_file_train(f, &tc, &steps);
    CHECK(!trained || (steps >= 0 && steps <= AG_TRAIN_MAX_STEP));
    ag_memory m;
    ag_gpt_memory(c, &(ag_gpt_run){.batch = trained ? 4 : 0, .validate = 1, .sample = 1}, &m);
    CHECK(m.total > 0 && isfinite(m.total));
    if (m.total - 40.0 * 1024 * 1024 > MAX_BYTES || c->seq > MAX_SEQ) {
        ag_gpt_file_free(f);
        return 0; /* the command would refuse it (or it is too slow to fuzz) */
    }
    ag_gpt *g = ag_gpt_file_model(f, err, sizeof(err));
    if (!g) { /* a weight that is not finite: named */
        CHECK(strncmp(err, "fuzz.st: ", 9) == 0);
        ag_gpt_file_free(f);
        return 0;
    }
    CHECK((double)ag_gpt_n_weights(g) == ag_gpt_config_weights(c));
    sample(g);
    ag_text *text = text_of(ag_gpt_file_vocab(f), c->seq);
    evaluate(g, text);
    if (trained)
        resume(g, text, f);
    ag_text_free(text);
    ag_gpt_free(g);
    ag_gpt_file_free(f);
    return 0;
}
