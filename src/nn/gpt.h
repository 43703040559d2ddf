/*
 * gpt.h - the GPT's private structure, shared by gpt.c (the model and its
 * tape forward), gpt_cache.c (sampling without a tape), gpt_train.c (the
 * trainer), gpt_twin.c (the trainer's second model) and gpt_file.c
 * (checkpoints). Not installed.
 */
#ifndef AG_GPT_H
#define AG_GPT_H

#include "nn.h"

/* One block's parameters, in the library's y = x W layout. A part that an
 * ablation removes, and every bias without cfg.bias, is NULL. */
typedef struct ag_gpt_layer {
    ag_tensor *ln1_w, *ln1_b;     /* (C) layer norm before attention */
    ag_attention *attn;           /* wq, wk, wv, wo: (C, C), causal */
    ag_tensor *bq, *bk, *bv, *bo; /* (C) attention biases */
    ag_tensor *ln2_w, *ln2_b;     /* (C) layer norm before the MLP */
    ag_tensor *w_fc, *b_fc;       /* (C, 4C), (4C) */
    ag_tensor *w_proj, *b_proj;   /* (4C, C), (C) */
} ag_gpt_layer;

#define AG_GPT_NAME_MAX 48 /* "h.1023.attn.wq" and the like, with room */

struct ag_gpt {
    ag_gpt_config cfg;
    ag_tensor *wte;           /* (V, C) token vectors, and the output head */
    ag_tensor *wpe;           /* (T, C) position vectors; NULL with no_posenc */
    ag_gpt_layer *h;          /* (layers) */
    ag_tensor *lnf_w, *lnf_b; /* (C) the final layer norm */
    int *positions;           /* (T) 0, 1, ..., T-1: the ids of wpe's lookup */
    size_t n_params;
    ag_tensor **params;             /* (n_params) every parameter, in ag_gpt_params' order */
    char (*names)[AG_GPT_NAME_MAX]; /* (n_params) their names */
    ag_real **stash;                /* (n_params) gradients while they are switched off */
    unsigned char *borrowed;        /* (n_params) 1: owned by an attention layer, not by g */
};

/* A trainer (gpt_train.c); gpt_file.c saves and restores its state. */
struct ag_gpt_trainer {
    ag_gpt *g;           /* borrowed, or own_g */
    const ag_text *text; /* borrowed, or own_text */
    ag_gpt_train_config cfg;
    ag_tape *tape;      /* the batch's first half (see ag_gpt_twin), and estimates */
    ag_gpt *twin;       /* g's twin, for the batch's second half */
    ag_tape *twin_tape; /* and its tape */
    ag_optim *opt[2];   /* AdamW on the 2-D weights, Adam on the rest; NULL when empty */
    int *group;         /* (n_params) which optimizer a parameter is in */
    size_t *index;      /* (n_params) and its index there */
    int *x, *y;         /* (batch, seq) token ids and targets of a step */
    ag_rng data_rng;    /* the training batches */
    ag_rng dropout_rng; /* dropout's masks */
    long step;          /* steps done */
    ag_gpt *own_g;      /* ag_gpt_trainer_open's: freed with the trainer, or NULL */
    ag_text *own_text;
};

/* g's twin (gpt_twin.c): a model whose parameters hold g's values
 * (borrowed: g must outlive it) and gradients of their own, zeroed; freed
 * with ag_gpt_free. NULL when out of memory. ag_gpt_twin_sync copies what
 * may have changed in g since (its configuration, the layers' fused flag). */
ag_gpt *ag_gpt_twin(const ag_gpt *g);
void ag_gpt_twin_sync(ag_gpt *twin, const ag_gpt *g);

/* ---- work in two halves (the training step's batch, validation's chunks) ----
 * n windows go as ag_gpt_halves(n) halves (one when n is 1), the first of
 * ag_gpt_first_half(n) windows. ag_gpt_halves_at_once says whether they
 * run at once on that many threads (two or three: a half each, every op
 * inside on its thread alone, each half on a tape of its own), else they
 * run one after the other, each op shared over the threads, both on one
 * tape: the second half's forward then writes the memory the first's
 * backward has just read, still in cache. ag_gpt_run_halves runs fn(ctx,
 * 0) and fn(ctx, 1) so for the threads set (ag_get_threads). The halves do
 * the same arithmetic either way. */
static inline size_t ag_gpt_halves(size_t n)
{
    return n >= 2 ? 2 : 1;
}
static inline size_t ag_gpt_first_half(size_t n)
{
    return (n + 1) / 2;
}
int ag_gpt_halves_at_once(size_t halves, int threads);
void ag_gpt_run_halves(size_t halves, void (*fn)(void *ctx, size_t half), void *ctx);

/* Evaluation without gradients: switch every parameter's gradient buffer off
 * (so ops record no gradient and save nothing for backward) and back on. */
void ag_gpt_grads_off(ag_gpt *g);
void ag_gpt_grads_on(ag_gpt *g);

/* The summed cross-entropy of the positions of x (B,T) against y, from a
 * forward without dropout on tape (which is reset afterwards), computed in
 * double; gradients must be off. */
ag_status ag_gpt_eval_batch(ag_tape *tape, ag_gpt *g, const int *x, const int *y, int batch,
                            int seq, double *sum, char *err, size_t errlen);

/* The full validation loss goes through the model a chunk of windows at a
 * time, forward only, one block at a time: at most AG_GPT_VAL_WINDOWS
 * windows, and (unless one window is more) at most AG_GPT_VAL_VALUES
 * positions times n_embd (with biases, the op-by-op attention's weights,
 * heads times seq squared, when more), so that its memory depends on the
 * model, not on
 * the text. The head's logits are made AG_GPT_HEAD_VALUES at a time (whole
 * rows, at least one). Fixed by the configuration alone, so the loss is
 * the same on every machine and for any thread count. */
#define AG_GPT_VAL_WINDOWS 32
#define AG_GPT_VAL_VALUES ((size_t)1 << 21)
#define AG_GPT_HEAD_VALUES ((size_t)1 << 21)
size_t ag_gpt_val_chunk(const ag_gpt_config *c); /* windows per chunk */
size_t ag_gpt_head_rows(const ag_gpt_config *c); /* rows of logits at once */
/* ag_gpt_val_loss on the caller's two tapes (reset before and after use;
 * each chunk's first half of windows goes on the first, its second half on
 * the second when the halves run at once, else on the first too), so that
 * their peaks can be read. */
ag_status ag_gpt_val_loss_on(ag_tape *tapes[2], ag_gpt *g, const ag_text *text, double *loss,
                             size_t *windows, char *err, size_t errlen);

#endif /* AG_GPT_H */
