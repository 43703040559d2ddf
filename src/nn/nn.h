/*
 * nn.h - private helpers shared by the modules in src/nn/. Not installed.
 */
#ifndef AG_NN_H
#define AG_NN_H

#include "../core/internal.h"

#include <stdio.h>

/* The attention layer's shape rule (attention.c): dim and heads at least 1,
 * heads dividing dim. Returns 1, or 0 with a one-line message in err, e.g.
 * "heads 3 does not divide dim 16". */
int ag_nn_check_heads(int dim, int heads, char *err, size_t errlen);

/* The heads' part of the op-by-op attention, shared by the attention layer
 * and the GPT's biased attention: q, k, v (B,T,d) -> O (B,T,d), the heads'
 * softmax(Q_h K_h^T / sqrt(dh)) V_h concatenated, with the causal mask when
 * causal. *p_out (may be NULL) gets P (B,H,T,T). NULL with the tape's error. */
ag_tensor *ag_nn_attend(ag_tape *tape, const ag_tensor *q, const ag_tensor *k, const ag_tensor *v,
                        int heads, int causal, ag_tensor **p_out);

/* A layer with layer's settings whose weights are twins of its own
 * (ag_param_twin: the same values, gradients of their own); freed with
 * ag_attention_free. NULL when out of memory. */
ag_attention *ag_attention_twin(const ag_attention *layer);

/* The toy model's parameters for cfg (checked by ag_model_config_check),
 * in ag_model_params' order, without making it: names[i] (static strings)
 * and shape[i] (rows, cols). Returns the count, at most AG_MODEL_MAX_PARAMS. */
#define AG_MODEL_MAX_PARAMS 8
size_t ag_model_layout(const ag_model_config *cfg, const char **names, int (*shape)[2]);

/* The toy trainer's settings beyond the model's, which ag_model_new does
 * not check (checkpoint.c): batch, lr, momentum, weight_decay and clip in
 * their AG_TRAIN_* ranges. 1, or 0 with "trainer: lr must be in 1e-12..1000"
 * in err. The trainer and the checkpoint writer both hold to it. */
int ag_train_config_check(const ag_train_config *c, char *err, size_t errlen);

/* The bytes of a text's token id for a vocabulary of n characters (text.c):
 * 1 up to 256, else 2. */
int ag_text_id_size(int n);

#endif /* AG_NN_H */
