/*
 * gpt_trainer.c - a GPT trainer that owns its text and its model: "train a
 * GPT on this file", fresh or continuing a checkpoint, in one call, and the
 * full validation loss of what it trained.
 */
#include "gpt.h"

ag_gpt_trainer *ag_gpt_trainer_open(const char *text_path, const ag_gpt_config *model,
                                    const ag_gpt_train_config *train, const ag_gpt_file *resume,
                                    char *err, size_t errlen)
{
    if (!text_path || !train || (!model && !resume)) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: %s is NULL",
               !text_path ? "the text's path"
               : !train   ? "the configuration"
                          : "the model's configuration");
        return NULL;
    }
    ag_text *text = NULL;
    if (ag_text_load(text_path, resume ? ag_gpt_file_vocab(resume) : NULL, &text, err, errlen) !=
        AG_OK)
        return NULL;
    return ag_gpt_trainer_open_text(text, text_path, model, train, resume, err, errlen);
}

ag_gpt_trainer *ag_gpt_trainer_open_text(ag_text *text, const char *name,
                                         const ag_gpt_config *model,
                                         const ag_gpt_train_config *train,
                                         const ag_gpt_file *resume, char *err, size_t errlen)
{
    ag_gpt *g = NULL;
    ag_gpt_trainer *t = NULL;
    char why[256];
    if (!text || !train || (!model && !resume)) {
        ag_err(AG_ERR_ARG, err, errlen, "trainer: %s is NULL",
               !text    ? "the text"
               : !train ? "the configuration"
                        : "the model's configuration");
        goto fail;
    }
    name = name ? name : "<text>";
    const ag_gpt_config *shape = resume ? ag_gpt_file_config(resume) : model;
    /* cppcheck-suppress nullPointerRedundantCheck ; model is NULL only with resume (checked above) */
    if (ag_text_check_seq(text, shape->seq, why, sizeof(why)) != AG_OK) {
        ag_err(AG_ERR_ARG, err, errlen, "%s: %s", name, why);
        goto fail;
    }
    if (resume) {
        g = ag_gpt_file_model(resume, err, errlen);
        if (g && model && ag_gpt_set_dropout(g, model->dropout) != AG_OK) {
            ag_err(AG_ERR_ARG, err, errlen, "trainer: dropout %g is not in [0, 1)", model->dropout);
            goto fail;
        }
    } else {
        ag_gpt_config cfg = *shape;
        cfg.vocab = ag_vocab_size(text->vocab);
        ag_rng init = ag_rng_new(train->seed);
        g = ag_gpt_new(&cfg, &init, err, errlen);
    }
    if (!g || !(t = ag_gpt_trainer_new(g, text, train, err, errlen)))
        goto fail;
    t->own_g = g;
    t->own_text = text;
    if (resume && ag_gpt_trainer_restore(t, resume, err, errlen) != AG_OK) {
        ag_gpt_trainer_free(t);
        return NULL;
    }
    return t;
fail:
    ag_gpt_free(g);
    ag_text_free(text);
    return NULL;
}

ag_gpt *ag_gpt_trainer_model(ag_gpt_trainer *t)
{
    return t ? t->g : NULL;
}

const ag_text *ag_gpt_trainer_text(const ag_gpt_trainer *t)
{
    return t ? t->text : NULL;
}

ag_status ag_gpt_trainer_val_loss(ag_gpt_trainer *t, double *loss, size_t *windows, char *err,
                                  size_t errlen)
{
    if (!t) {
        ag_err(AG_ERR_ARG, err, errlen, "val_loss: the trainer is NULL");
        return AG_ERR_ARG;
    }
    return ag_gpt_val_loss(t->g, t->text, loss, windows, err, errlen);
}
