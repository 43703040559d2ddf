/*
 * train_gpt.c - a character-level GPT from C: read a text, train, measure
 * the full validation loss, save a checkpoint PyTorch can load, and write
 * a few lines in the text's style. What `attograd train --task text` and
 * `attograd sample` do, in one page.
 *
 *     build/float/examples/train_gpt examples/mill.txt 300
 */
#include <attograd.h>

#include <stdio.h>
#include <stdlib.h>

static int print_char(int id, void *vocab)
{
    char buf[8];
    ag_vocab_utf8(vocab, id, buf);
    fputs(buf, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s TEXT [STEPS]\n", argv[0]);
        return 2;
    }
    long steps = argc > 2 ? atol(argv[2]) : 300;
    char err[512];
    /* a small model: 2 blocks of dim 32, a context of 32 characters; the
     * vocabulary comes from the text */
    ag_gpt_config cfg = ag_gpt_defaults(0);
    cfg.layers = 2, cfg.heads = 2, cfg.dim = 32, cfg.seq = 32;
    ag_gpt_train_config tc = ag_gpt_train_defaults();
    tc.lr = 3e-3, tc.warmup = 30, tc.decay_steps = steps;
    ag_gpt_trainer *t = ag_gpt_trainer_open(argv[1], &cfg, &tc, NULL, err, sizeof(err));
    if (!t) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (long s = 0; s < steps; s++) {
        double loss;
        if (ag_gpt_trainer_step(t, &loss, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        if ((s + 1) % 100 == 0)
            printf("step %ld: batch loss %.4f\n", s + 1, loss);
    }
    double val;
    size_t windows;
    if (ag_gpt_trainer_val_loss(t, &val, &windows, err, sizeof(err)) != AG_OK ||
        ag_gpt_trainer_save(t, "train_gpt.safetensors", err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("full validation loss %.4f over %zu windows; saved train_gpt.safetensors\n", val,
           windows);
    /* write 200 characters after a newline */
    const ag_text *text = ag_gpt_trainer_text(t);
    ag_gpt_cache *cache = ag_gpt_cache_new(ag_gpt_trainer_model(t), err, sizeof(err));
    int *start = NULL; /* an empty prompt: where a text starts anew (after a newline) */
    size_t n_start = 0;
    ag_rng rng = ag_rng_new(1);
    if (!cache ||
        ag_vocab_prompt(text->vocab, "", 0, &start, &n_start, err, sizeof(err)) != AG_OK ||
        ag_gpt_generate(cache, start, n_start, 200, 0.8, 0, &rng, print_char, text->vocab, err,
                        sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("\n");
    free(start);
    ag_gpt_cache_free(cache);
    ag_gpt_trainer_free(t); /* and the model and the text it owns */
    return 0;
}
