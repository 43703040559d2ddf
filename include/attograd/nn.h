/*
 * attograd/nn.h - what is built from the ops: the attention layer,
 * positional encodings, optimizers, the gradient-check table of every op
 * and layer, the toy tasks and their model and trainer, text as tokens, the
 * GPT and its trainer, and the checkpoints of both models. Included by
 * attograd.h; needs attograd/core.h and attograd/io.h.
 */
#ifndef ATTOGRAD_NN_H
#define ATTOGRAD_NN_H

#include "core.h"
#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The attention layer (multi-head self-attention), as docs/attention-layer.md states it.
 * With d = d_model, H = n_heads, dh = d / H and x of shape (B,T,d):
 *
 *     Q = x wq,  K = x wk,  V = x wv        (B,T,d) @ (d,d) -> (B,T,d)
 *     Q_h, K_h, V_h = columns h*dh .. h*dh+dh-1 of Q, K, V   (B,H,T,dh)
 *     S_h = Q_h K_h^T / sqrt(dh)            (B,H,T,T); row i = query i
 *     causal: S_h[i][j] = -inf for j > i    (a token sees only the past)
 *     P_h = softmax(S_h) over j             (B,H,T,T); rows sum to 1
 *     O_h = P_h V_h                         (B,H,T,dh)
 *     O   = heads concatenated in order     (B,T,d)
 *     out = O wo                            (B,T,d)
 *
 * A typical step:
 *
 *     char err[128];
 *     ag_rng rng = ag_rng_new(seed);
 *     ag_attention *att = ag_attention_new(8, 2, 1, &rng, err, sizeof(err));
 *     if (!att) { fprintf(stderr, "%s\n", err); ... }   // "heads 3 does not divide dim 8"
 *     ag_tensor *p;
 *     ag_tensor *out = ag_attention_forward(tape, att, x, &p);
 *     ag_backward(tape, ag_mse(tape, out, y));   // fills wq..wo's ->grad (and x's)
 * ------------------------------------------------------------------------ */
typedef struct ag_attention ag_attention;

/* Make a layer with four (d_model, d_model) weights, Glorot-uniform
 * initialised from rng in the order wq, wk, wv, wo (rng NULL leaves them zero,
 * for weights that will be loaded). causal is a flag (0 or non-zero). On
 * failure returns NULL and writes a one-line message without a prefix into
 * err (when err is not NULL): "heads 3 does not divide dim 8", "dim 0 must be
 * at least 1", "heads 0 must be at least 1", "out of memory". The caller owns
 * the layer and its weights; free with ag_attention_free. */
ag_attention *ag_attention_new(int d_model, int n_heads, int causal, ag_rng *rng, char *err,
                               size_t errlen);
void ag_attention_free(ag_attention *layer); /* frees the weights too; NULL does nothing */

/* Record the layer's forward on the tape. x is (B,T,d_model), a tape tensor
 * or a parameter (borrowed; give it a gradient with ag_requires_grad to get
 * dL/dx). Returns out (B,T,d_model), a tape tensor, or NULL with the tape's
 * error set. When attn_out is not NULL it receives the softmax weights P
 * (B,H,T,T), also a tape tensor (NULL on error); P[b][h][i][j] is how much
 * query i of head h takes from key j. In the fused form (the default) P is
 * made only because it was asked for (backward recomputes what it needs)
 * and has no gradient. */
ag_tensor *ag_attention_forward(ag_tape *tape, ag_attention *layer, const ag_tensor *x,
                                ag_tensor **attn_out);

/* How the forward is recorded. Fused (the default): one tape entry, "attention",
 * computed tile by tile, that keeps no (B,H,T,T) tensor (memory grows with T,
 * not T^2) and skips the tiles a causal mask hides; the fast form, for training. Op by op (fused = 0): matmul,
 * split_heads, matmul_bt, scale, causal_mask, softmax, matmul, merge_heads,
 * matmul, each a tape tensor with its own gradient, for a learner or a
 * debugger who wants to see every step. Same math, same results to
 * rounding; set it before a forward. */
void ag_attention_set_fused(ag_attention *layer, int fused);
int ag_attention_is_fused(const ag_attention *layer); /* 1 or 0 */

int ag_attention_dim(const ag_attention *layer);    /* d_model */
int ag_attention_heads(const ag_attention *layer);  /* n_heads */
int ag_attention_causal(const ag_attention *layer); /* 1 or 0 */
/* A weight by name, "wq", "wk", "wv" or "wo" (NULL for any other name). The
 * layer keeps ownership; the caller may write its data (to load weights). */
ag_tensor *ag_attention_param(ag_attention *layer, const char *name);
/* The weights in the order wq, wk, wv, wo: fills params[i] and names[i] for
 * i < max (either array may be NULL) and returns how many there are (4).
 * Borrowed: they live as long as the layer. Hand them to an optimizer. */
size_t ag_attention_params(ag_attention *layer, ag_tensor **params, const char **names, size_t max);

/* Glorot/Xavier uniform: every element uniform in [-limit, limit] with
 * limit = sqrt(6 / (fan_in + fan_out)), fan_out = the last dim and fan_in the
 * rows (the product of the others): for a (d_in, d_out) weight of y = x W,
 * sqrt(6 / (d_in + d_out)). Does nothing when w or rng is NULL. */
void ag_fill_glorot(ag_tensor *w, ag_rng *rng);

/* An attention layer from a file in `attograd grad`'s model format (the
 * common format for comparing with numpy or PyTorch): tensors wq, wk, wv,
 * wo, each (d, d), and metadata n_heads (a whole number dividing d) and
 * causal ("true" or "false"; absent: false). Every weight must be finite.
 * path is f's name for messages. NULL with a one-line message naming the
 * file and what is wrong ("m.st: metadata 'n_heads' is missing"). The
 * caller owns the layer. */
ag_attention *ag_attention_load(const ag_st_file *f, const char *path, char *err, size_t errlen);
/* An attention layer into w in ag_attention_load's format: metadata
 * n_heads and causal, and the four weights wq, wk, wv, wo; with grads their
 * gradients instead, named grad.wq .. grad.wo (as `attograd grad` writes
 * them). Borrowed until the save; errors are sticky on w, as ag_st_add's (a
 * NULL att is one). Once per writer: weights and gradients both would
 * repeat the metadata, so they go to two files. */
void ag_attention_add(ag_st_writer *w, ag_attention *att, int grads);

/* ------------------------------------------------------------------------
 * Positional encoding: x + PE[0:T], added to the token vectors (not
 * concatenated), broadcast over the batch. Adding keeps the width d, so the
 * attention weights stay (d, d) whatever the choice, and one dot product in
 * Q K^T can then compare content and position together. Without positions
 * (and without the causal mask) attention is permutation-equivariant:
 * permuting the tokens only permutes the outputs.
 *
 *   AG_POSENC_NONE        x itself (nothing is recorded on the tape)
 *   AG_POSENC_SINUSOIDAL  fixed: PE[t,2i] = sin(t / 10000^(2i/d)),
 *                         PE[t,2i+1] = cos(t / 10000^(2i/d))
 *   AG_POSENC_LEARNED     a (max_len, d) parameter "pos", initialised
 *                         normal(0, AG_POSENC_LEARNED_STD) as in GPT-2
 * ------------------------------------------------------------------------ */
typedef enum ag_posenc_kind {
    AG_POSENC_NONE = 0,
    AG_POSENC_SINUSOIDAL,
    AG_POSENC_LEARNED
} ag_posenc_kind;

#define AG_POSENC_LEARNED_STD 0.02

typedef struct ag_posenc ag_posenc;

/* "none", "sinusoidal", "learned" ("unknown" for any other value). */
const char *ag_posenc_kind_name(ag_posenc_kind kind);
/* The kind named by name (exactly one of the three names above): returns 1
 * and sets *kind, or returns 0 and leaves it. */
int ag_posenc_parse(const char *name, ag_posenc_kind *kind);

/* Positions 0 .. max_len-1 for vectors of width d. rng initialises a learned
 * table (NULL leaves it zero, for loading); the other kinds ignore it. On
 * failure returns NULL with a one-line message in err, as ag_attention_new.
 * The caller owns the result; free with ag_posenc_free. */
ag_posenc *ag_posenc_new(ag_posenc_kind kind, int max_len, int d, ag_rng *rng, char *err,
                         size_t errlen);
void ag_posenc_free(ag_posenc *pe); /* NULL does nothing */

/* x (..., T, d) with T <= max_len -> x + PE[0:T], a tape tensor (for NONE, x
 * itself). NULL with the tape's error set on a bad shape. */
ag_tensor *ag_posenc_apply(ag_tape *tape, ag_posenc *pe, const ag_tensor *x);

ag_posenc_kind ag_posenc_get_kind(const ag_posenc *pe);
int ag_posenc_max_len(const ag_posenc *pe);
int ag_posenc_dim(const ag_posenc *pe);
/* The (max_len, d) table, row-major, for display; NULL for NONE. Borrowed. */
const ag_real *ag_posenc_values(const ag_posenc *pe);
/* The learned table as a parameter named "pos": as ag_attention_params;
 * returns 1 for LEARNED, 0 otherwise. */
size_t ag_posenc_params(ag_posenc *pe, ag_tensor **params, const char **names, size_t max);
/* The learned table of a safetensors file as a LEARNED encoding of its
 * (T, d), T and d in 1..max_size: "pos" (the toy model saved with a learned
 * encoding) or, without one, "transformer.wpe.weight" (a GPT checkpoint's
 * positions). NULL with a one-line message naming the file when it cannot
 * be read, has neither, has another shape or holds a NaN or Inf. */
ag_posenc *ag_posenc_load(const char *path, int max_size, char *err, size_t errlen);
/* sim (max_len, max_len): the cosine similarity of the table's rows,
 * sim[t][u] = <PE[t], PE[u]> / (|PE[t]| |PE[u]|), 0 where a row is zero;
 * computed in double. AG_ERR_ARG for NONE (no table) or a NULL argument. */
ag_status ag_posenc_similarity(const ag_posenc *pe, double *sim);

/* ------------------------------------------------------------------------
 * Optimizers. An ag_optim updates a fixed array of parameters from their
 * gradients. It borrows the parameters (they must outlive it) and owns its
 * state, allocated once at creation: ag_optim_step never allocates.
 *
 *     ag_tensor *params[4];
 *     ag_attention_params(att, params, NULL, 4);
 *     ag_optim *opt = ag_adam_new(params, 4, 1e-2, 0.9, 0.999, 1e-8, 0);
 *     for (step...) {
 *         ag_zero_grad(params, 4);
 *         ... forward, ag_backward ...
 *         ag_clip_grad_norm(params, 4, 1.0);
 *         ag_optim_step(opt);
 *         ag_tape_reset(tape);
 *     }
 *     ag_optim_free(opt);
 *
 * Constructors return NULL when out of memory or on a bad argument: params
 * NULL, n == 0, a NULL parameter or one without a gradient buffer, lr not
 * finite or < 0, momentum/beta1/beta2 outside [0, 1), eps not > 0,
 * weight_decay < 0. The params array is copied; the tensors are borrowed.
 * ------------------------------------------------------------------------ */
typedef struct ag_optim ag_optim;

/* SGD with momentum (PyTorch's form): v = momentum v + g; p -= lr v.
 * momentum 0 is plain p -= lr g and keeps no state (0 slots). */
ag_optim *ag_sgd_new(ag_tensor *const *params, size_t n, double lr, double momentum);
/* Adam with bias correction; weight_decay > 0 makes it AdamW (decoupled):
 *   t += 1; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *   p -= lr wd p + lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).
 * Usual values: lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8. */
ag_optim *ag_adam_new(ag_tensor *const *params, size_t n, double lr, double beta1, double beta2,
                      double eps, double weight_decay);
void ag_optim_free(ag_optim *opt); /* NULL does nothing; the parameters are untouched */

/* One update of every parameter from its ->grad (which it does not clear). */
void ag_optim_step(ag_optim *opt);
/* Change the learning rate (for a schedule). AG_ERR_ARG (and no change) when
 * lr is not finite or < 0. */
ag_status ag_optim_set_lr(ag_optim *opt, double lr);
double ag_optim_lr(const ag_optim *opt);
const char *ag_optim_name(const ag_optim *opt); /* "sgd" or "adam" */
size_t ag_optim_n_params(const ag_optim *opt);

/* State, for checkpoints. Saving steps and every state buffer and restoring
 * them into an optimizer made with the same parameters and settings
 * continues training exactly as if it had not stopped. */
long ag_optim_steps(const ag_optim *opt); /* steps taken */
/* AG_ERR_ARG when steps < 0 or > AG_TRAIN_MAX_STEP */
ag_status ag_optim_set_steps(ag_optim *opt, long steps);
/* Buffers per parameter: 0 (plain SGD), 1 (SGD momentum: "velocity") or 2
 * (Adam: slot 0 "m", slot 1 "v"). */
int ag_optim_slots(const ag_optim *opt);
const char *ag_optim_slot_name(const ag_optim *opt, int slot); /* NULL when no such slot */
/* The slot's buffer for parameter param_index (in the order given at
 * creation): params[param_index]->size values, owned by the optimizer,
 * writable (to restore). NULL when the index or slot does not exist. */
ag_real *ag_optim_state(ag_optim *opt, size_t param_index, int slot);

/* Global gradient-norm clipping: norm = sqrt(sum of g^2 over every element
 * of every parameter's gradient); when norm > max_norm, every gradient is
 * multiplied by max_norm / norm. Returns the norm before clipping.
 * max_norm <= 0 only measures. NULL entries and parameters without a
 * gradient are skipped. A non-finite norm is returned and nothing scaled. */
double ag_clip_grad_norm(ag_tensor *const *params, size_t n, double max_norm);

/* ------------------------------------------------------------------------
 * The gradient-check table: every op's rows, the losses' and the layers'.
 * ------------------------------------------------------------------------ */
/* The library's own checks (src/check/cases.c, src/nn/cases.c): one row
 * per check of an op's backward, a loss, the attention layer, a transformer
 * block or a whole GPT, as `attograd gradcheck` prints them. Rows are
 * numbered 0 .. ag_gradcheck_case_count() - 1. */
size_t ag_gradcheck_case_count(void);
/* Row i's op (the name its tape entries carry, what `gradcheck --op`
 * selects; "block" and "gpt" for the rows that check those whole) and its
 * label; NULL when i is out of range. */
const char *ag_gradcheck_case_op(size_t i);
const char *ag_gradcheck_case_name(size_t i);

#define AG_CASE_MAX_INPUTS 24 /* a 2-layer GPT's weights, with room */
#define AG_CASE_MAX_IDS 256   /* a GPT row's (B,T) tokens, at its big size too */
/* A row made ready to check: call build(tape, inputs, ctx) and hand
 * inputs to ag_gradcheck. The setup owns its inputs (and, for layer rows,
 * the layer or the GPT); ctx points at the setup itself, so do not copy or
 * move it. */
typedef struct ag_case_setup {
    int n_inputs;
    ag_tensor *inputs[AG_CASE_MAX_INPUTS]; /* parameters, drawn from N(0, 1) (a GPT's at
                                            * scales of their own) */
    const char *names[AG_CASE_MAX_INPUTS]; /* "a", "b", "x", "wq", ... (static, or the GPT's) */
    ag_build_fn build;
    void *ctx;
    int ids[AG_CASE_MAX_IDS], targets[AG_CASE_MAX_IDS]; /* GPT rows: tokens and next tokens */
    int n_ids;                                          /* (B T) of them */
    double rtol; /* 0, or the least tolerance the row needs (ag_gradcheck_case_run uses the
                  * larger of it and the options'): a whole block in float rounds more */
    /* owned, released by ag_gradcheck_case_free */
    struct ag_attention *att; /* layer rows, else NULL */
    struct ag_posenc *pe;     /* layer rows, else NULL */
    struct ag_gpt *gpt;       /* block and GPT rows, else NULL */
    ag_tensor *own[3];        /* inputs made here (the rest are att's or gpt's) */
} ag_case_setup;
/* Make row i's inputs from seed (the same seed gives the same inputs).
 * Returns AG_OK, or an error with a one-line message in err and s zeroed. */
ag_status ag_gradcheck_case_setup(size_t i, uint64_t seed, ag_case_setup *s, char *err,
                                  size_t errlen);
/* Release what the setup owns; s is zeroed. NULL does nothing. */
void ag_gradcheck_case_free(ag_case_setup *s);
/* The setup's inputs as a table row shows them, "a[3x4] b[4x5]"; inputs
 * of one shape share it: "a,b[2x3]", "wq..wo[4x4]"; a list longer than
 * AG_CASE_INPUTS_WIDTH characters ends with how many are not shown,
 * "wte[5x4] wpe[3x4] +17 more". Writes buf (cut at len bytes) and returns
 * it. */
#define AG_CASE_INPUTS_WIDTH 30
const char *ag_gradcheck_case_inputs(const ag_case_setup *s, char *buf, size_t len);
/* Set row i up from seed into *s and check it (ag_gradcheck with opts).
 * AG_OK: *result filled, *s kept (free it with ag_gradcheck_case_free) to
 * look at the inputs and their gradients. Otherwise *s is released and err
 * says "<row name>: <why>". */
ag_status ag_gradcheck_case_run(size_t i, uint64_t seed, const ag_gradcheck_opts *opts,
                                ag_gradcheck_result *result, ag_case_setup *s, char *err,
                                size_t errlen);
/* How row i's check depends on the step: for each of the n step sizes
 * eps[k] (the other options from opts, the inputs from seed each time),
 * the largest abs and rel error into abs_err[k] and rel_err[k] (inf where
 * x + eps rounds back to x). Errors as ag_gradcheck_case_run. */
ag_status ag_gradcheck_case_sweep(size_t i, uint64_t seed, const ag_gradcheck_opts *opts,
                                  const double *eps, int n, double *abs_err, double *rel_err,
                                  char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * Toy tasks, generated on the fly from a seeded generator. Every position
 * carries two token ids (slot 0 and slot 1, embedded separately and summed)
 * and up to `answers` class ids to predict there (-1: nothing to predict).
 * Token ids: keys 0..7, values 8..15 (value class v is token 8 + v), 16 marks
 * a query, 17 is padding; reverse uses tokens 0..7 as its symbols.
 * ------------------------------------------------------------------------ */
typedef enum ag_task_kind {
    AG_TASK_LOOKUP,  /* (key, value) pairs and a query key: answer the query's value */
    AG_TASK_LOOKUP2, /* the query names two keys: answer both values */
    AG_TASK_REVERSE, /* position i answers the token at position T-1-i */
    AG_TASK_COUNT
} ag_task_kind;

typedef struct ag_batch {
    ag_task_kind kind;
    int batch, seq; /* B examples of T positions */
    int answers;    /* answers per position (2 for lookup2, else 1) */
    int *tok0;      /* (B, T) slot-0 token ids, 0..vocab-1 */
    int *tok1;      /* (B, T) slot-1 token ids */
    int *targets;   /* (B, T, answers) class ids, -1 where there is no answer */
} ag_batch;

const char *ag_task_name(ag_task_kind kind);
const char *ag_task_help(ag_task_kind kind);             /* one line */
int ag_task_parse(const char *name, ag_task_kind *kind); /* 1 when known */
int ag_task_vocab(ag_task_kind kind);                    /* token ids per slot */
int ag_task_classes(ag_task_kind kind);                  /* classes per answer */
int ag_task_answers(ag_task_kind kind);
int ag_task_min_seq(ag_task_kind kind); /* valid T range */
int ag_task_max_seq(ag_task_kind kind);
/* A batch of B sequences of length T; NULL when kind is unknown, B < 1, T is
 * out of range or memory runs out. The caller owns it. */
ag_batch *ag_batch_new(ag_task_kind kind, int batch, int seq);
void ag_batch_free(ag_batch *b);
/* Fill b with fresh random examples drawn from rng. */
void ag_task_sample(ag_batch *b, ag_rng *rng);
/* Short labels for showing examples (`attograd train`'s heatmap): position
 * t of example ex as "k3:v5" (key 3 holding value 5), "?k3" (a query for
 * key 3), "?k3,k6" (lookup2's query for keys 3 and 6) or "s4" (reverse's
 * symbol 4); answer class c as "v5" (a value) or "s4" (a symbol). Each
 * writes buf (len bytes; 16 is plenty) and returns it. */
const char *ag_task_token_label(const ag_batch *b, int ex, int t, char *buf, size_t len);
const char *ag_task_class_label(ag_task_kind kind, int c, char *buf, size_t len);

/* ------------------------------------------------------------------------
 * The toy model the tasks train: one attention layer between token
 * embeddings and a linear readout, nothing else, so what it learns is the
 * attention itself.
 *
 *   x      = emb0[tok0] + emb1[tok1] (+ PE)   (B,T,d)
 *   h      = attention(x)                     (B,T,d)
 *   logits = h readout                        (B,T,answers,classes)
 *   loss   = cross_entropy(logits, targets)   over the answers present
 *
 * Parameters, in order: emb0, emb1 (vocab, d); pos (seq, d) with learned
 * positions; wq, wk, wv, wo (d, d); readout (d, answers * classes).
 * ------------------------------------------------------------------------ */
typedef struct ag_model_config {
    ag_task_kind task;
    int seq;    /* T: positions per example */
    int dim;    /* d: width of every vector */
    int heads;  /* attention heads; must divide dim */
    int causal; /* 1: a position sees only itself and earlier ones */
    ag_posenc_kind posenc;
} ag_model_config;

/* Which setting makes no model (ag_model_config_check). */
typedef enum ag_model_field {
    AG_MODEL_OK = 0,
    AG_MODEL_TASK,  /* not an ag_task_kind */
    AG_MODEL_SEQ,   /* outside the task's ag_task_min_seq .. ag_task_max_seq */
    AG_MODEL_DIM,   /* below 1 */
    AG_MODEL_HEADS, /* below 1, or not dividing dim */
    AG_MODEL_POSENC /* not an ag_posenc_kind */
} ag_model_field;

/* Whether cfg makes a model: AG_MODEL_OK, or the first setting at fault with
 * a one-line message in err (when not NULL), e.g. "seq 12 is out of range
 * for task lookup (2..9)" or "heads 3 does not divide dim 16". The one check
 * behind ag_model_new, the checkpoint reader and `attograd train`'s flags. */
ag_model_field ag_model_config_check(const ag_model_config *cfg, char *err, size_t errlen);

typedef struct ag_model ag_model;

/* A model for cfg, initialised from rng (NULL leaves the weights zero, for
 * loading). NULL with a one-line message in err on a bad configuration. The
 * caller owns it. */
ag_model *ag_model_new(const ag_model_config *cfg, ag_rng *rng, char *err, size_t errlen);
void ag_model_free(ag_model *m); /* NULL does nothing */
const ag_model_config *ag_model_get_config(const ag_model *m);
/* Parameters in the order above, as ag_attention_params (borrowed). */
size_t ag_model_params(ag_model *m, ag_tensor **params, const char **names, size_t max);
ag_tensor *ag_model_param(ag_model *m, const char *name); /* NULL when unknown */
ag_attention *ag_model_attention(ag_model *m);            /* borrowed */
/* Record the forward pass of batch b on the tape; returns the loss (1), or
 * NULL with the tape's error set. logits_out and attn_out (either may be
 * NULL) receive the logits (B,T,answers,classes) and the attention weights
 * (B,H,T,T), tape tensors. */
ag_tensor *ag_model_forward(ag_tape *tape, ag_model *m, const ag_batch *b, ag_tensor **logits_out,
                            ag_tensor **attn_out);
/* Add to *correct and *total: a position that asks something counts once,
 * and is correct when the argmax of every answer it asks is right. */
void ag_model_score(const ag_batch *b, const ag_tensor *logits, long *correct, long *total);
/* The class the model answers at position t of example ex, answer a: the
 * argmax of its logits (the first among equals). */
int ag_model_answer(const ag_batch *b, const ag_tensor *logits, int ex, int t, int a);
/* Example 0 of b as text on f: for each head (attn (1,H,T,T), as
 * ag_trainer_example gives it) a heatmap, a row per position with its
 * weights over the positions (each with a shade, " .:-=+*#%@", a step per
 * tenth of the weight as printed: "0.10 ." and "0.09  "), columns
 * and rows named by ag_task_token_label, and after each asked position what
 * the model answered (logits of example 0), e.g. "-> v5 (want v5)". */
void ag_model_print_attention(FILE *f, const ag_batch *b, const ag_tensor *attn,
                              const ag_tensor *logits);

/* ------------------------------------------------------------------------
 * Training runs: their settings, and checkpoints to stop and resume them.
 * A checkpoint is one safetensors file: the model's parameters under their
 * own names, the optimizer's state as "optim.<param>.<slot>", and as
 * metadata the settings, the step and the training stream's position, so a
 * resumed run takes exactly the steps (bit for bit) of one that never
 * stopped, provided it draws its batches from an ag_rng restored to
 * data_rng. Saving is atomic (temporary file, fsync, rename); loading
 * treats the file as hostile (every value parsed strictly and checked
 * against the ranges below, every tensor's shape and values checked).
 *
 *     ag_train_state st = {.config = cfg, .data_rng = data.state, .step = step};
 *     ag_checkpoint_save("run.safetensors", model, opt, &st, err, sizeof(err));
 *     ...
 *     ag_checkpoint *ck;
 *     if (ag_checkpoint_load("run.safetensors", &ck, &st, err, sizeof(err)) != AG_OK) ...
 *     model = ag_model_new(&st.config.model, NULL, err, sizeof(err));
 *     n = ag_model_params(model, params, NULL, 8);
 *     opt = ag_train_optim_new(&st.config, params, n);
 *     if (ag_checkpoint_restore(ck, model, opt, err, sizeof(err)) != AG_OK) ...
 *     ag_checkpoint_free(ck);
 *     data.state = st.data_rng;   // and go on from step st.step
 * ------------------------------------------------------------------------ */
typedef struct ag_train_config {
    ag_model_config model;
    int optimizer_adam; /* 1: Adam (AdamW when weight_decay > 0); 0: SGD */
    double lr, momentum, weight_decay;
    double clip;   /* the global gradient norm's limit; 0: no clipping */
    int batch;     /* examples per step */
    uint64_t seed; /* the run's seed (weights, data and held-out set) */
} ag_train_config;

/* The range of each setting a checkpoint records. The reader refuses a
 * value outside it, so a program that keeps its settings within these
 * ranges can always load what it saved (`attograd train` takes its flags'
 * ranges from here). */
#define AG_TRAIN_MAX_STEP 2000000000L /* steps done, optimizer steps */
#define AG_TRAIN_MAX_SIZE 4096        /* seq, dim, heads */
#define AG_TRAIN_MAX_BATCH 65536
#define AG_TRAIN_LR_MIN 1e-12
#define AG_TRAIN_LR_MAX 1e3
#define AG_TRAIN_MOMENTUM_MAX 0.999999
#define AG_TRAIN_WEIGHT_DECAY_MAX 1e3
#define AG_TRAIN_CLIP_MAX 1e12

/* A run's state beyond its tensors: what a checkpoint's metadata holds. */
typedef struct ag_train_state {
    ag_train_config config;
    uint64_t data_rng; /* the training stream's ag_rng state, to continue it exactly */
    long step;         /* steps done */
    long optim_steps;  /* the optimizer's own count (Adam's bias correction); on save
                              * it is taken from the optimizer itself */
} ag_train_state;

/* The optimizer c names, for params (copied array, borrowed tensors): Adam
 * with betas 0.9, 0.999, eps 1e-8 and c->weight_decay, or SGD with
 * c->momentum, at c->lr. NULL as ag_adam_new / ag_sgd_new. */
ag_optim *ag_train_optim_new(const ag_train_config *c, ag_tensor *const *params, size_t n);

/* Write model, opt (made by ag_train_optim_new from st->config, or the same
 * settings) and st to path, atomically: on failure the previous file is
 * left as it was. Returns AG_OK or the error with a one-line message.
 * Refused (AG_ERR_ARG, "PATH: not saved: ..."), so that every file it writes
 * loads: settings ag_checkpoint_load would refuse (out of their AG_TRAIN_*
 * ranges, or making no model), a model not made with st->config.model, an
 * optimizer other than the one st->config names, a step count beyond
 * AG_TRAIN_MAX_STEP. */
ag_status ag_checkpoint_save(const char *path, ag_model *model, ag_optim *opt,
                             const ag_train_state *st, char *err, size_t errlen);

/* A checkpoint read and checked, ready to restore. */
typedef struct ag_checkpoint ag_checkpoint;

/* Read path and check its metadata: *st gets the settings, the step and
 * the data stream's state, and *out the checkpoint (the caller frees it
 * with ag_checkpoint_free). Make the model and the optimizer from
 * st->config (a different lr, momentum, weight_decay, clip or batch may be
 * chosen on purpose), then ag_checkpoint_restore. On failure *out is NULL
 * and err names the file and what is wrong with it. */
ag_status ag_checkpoint_load(const char *path, ag_checkpoint **out, ag_train_state *st, char *err,
                             size_t errlen);
/* Copy the parameters and the optimizer's state and step count from ck
 * into model and opt, checking each tensor's shape and that every value is
 * finite (and Adam's v not negative). On failure the message names the file
 * and the tensor, and model and opt hold a partial copy: do not use them. */
ag_status ag_checkpoint_restore(const ag_checkpoint *ck, ag_model *model, ag_optim *opt, char *err,
                                size_t errlen);
void ag_checkpoint_free(ag_checkpoint *ck); /* NULL does nothing */

/* ------------------------------------------------------------------------
 * A training run of the toy model, whole: the model, its optimizer
 * (ag_train_optim_new), a tape, a fresh batch of cfg->batch examples per
 * step and a fixed held-out set of AG_TRAINER_HELD_OUT examples, each from
 * its own stream derived from cfg->seed (the weights from the seed itself),
 * so a seed fixes the run, bit for bit, on any thread count. `attograd
 * train` is this plus its progress, log and plots.
 *
 *     ag_trainer *t = ag_trainer_new(&cfg, NULL, NULL, err, sizeof(err));
 *     for (int s = 0; s < 600; s++)
 *         if (ag_trainer_step(t, &loss, err, sizeof(err)) != AG_OK) ...
 *     ag_trainer_evaluate(t, &eval_loss, &accuracy, err, sizeof(err));
 *     ag_trainer_save(t, "run.safetensors", err, sizeof(err));
 *     ag_trainer_free(t);
 *
 * Resuming: ag_checkpoint_load gives ck and st; ag_trainer_new(&st.config,
 * ck, &st, ...) (or a config that changes lr, momentum, weight_decay, clip
 * or batch on purpose) goes on with the steps the saved run would have
 * taken; ck may be freed once it returns.
 * ------------------------------------------------------------------------ */
typedef struct ag_trainer ag_trainer;
#define AG_TRAINER_HELD_OUT 512

/* A run for cfg, with fresh weights; or, with ck and st (from one
 * ag_checkpoint_load), the checkpoint's weights, optimizer state, step and
 * data stream. NULL with a one-line message on a bad setting (the model's,
 * as ag_model_config_check says; batch, lr, momentum, weight_decay and clip
 * within the AG_TRAIN_* ranges), a checkpoint that does not fit, or out of
 * memory. The caller owns it; ck and st are only read. */
ag_trainer *ag_trainer_new(const ag_train_config *cfg, const ag_checkpoint *ck,
                           const ag_train_state *st, char *err, size_t errlen);
void ag_trainer_free(ag_trainer *t); /* NULL does nothing */
/* One step: a fresh batch, forward, backward, the gradients' global norm
 * clipped at cfg->clip, the optimizer's update. *loss (may be NULL) gets
 * the batch's loss. A NaN or Inf stops it with AG_ERR_NUMERIC and a message
 * naming the step and the op that made it ("step 7: anomaly: ..."), or,
 * after the update, the parameter it broke; the weights are then not to be
 * trusted, and the step is not counted. Allocates nothing once the first
 * step has run. */
ag_status ag_trainer_step(ag_trainer *t, double *loss, char *err, size_t errlen);
/* The held-out set's mean loss and accuracy (the share of positions asked
 * something whose every answer is right, as ag_model_score counts). A NaN
 * or Inf: AG_ERR_NUMERIC, "step N (held-out evaluation): ...". */
ag_status ag_trainer_evaluate(ag_trainer *t, double *loss, double *accuracy, char *err,
                              size_t errlen);
/* Held-out example 0 run alone, to show: its logits (1,T,answers,classes)
 * and attention weights (1,H,T,T), tensors of the trainer's tape, valid
 * until the next call on t. */
ag_status ag_trainer_example(ag_trainer *t, const ag_tensor **logits, const ag_tensor **attn,
                             char *err, size_t errlen);
/* The run as a checkpoint (ag_checkpoint_save): settings, steps done, the
 * data stream's position, the model and the optimizer's state. */
ag_status ag_trainer_save(ag_trainer *t, const char *path, char *err, size_t errlen);
long ag_trainer_steps(const ag_trainer *t); /* steps done, a checkpoint's included */
const ag_train_config *ag_trainer_config(const ag_trainer *t);
ag_model *ag_trainer_model(ag_trainer *t); /* borrowed */
ag_tape *ag_trainer_tape(ag_trainer *t);   /* borrowed: e.g. ag_tape_detect_anomaly */
const ag_batch *ag_trainer_held_out(const ag_trainer *t); /* borrowed: labels for an example */

/* ------------------------------------------------------------------------
 * Text: characters as tokens. A vocabulary is a sorted list of distinct
 * Unicode code points; token id i is the i-th of them. Text is UTF-8.
 *
 *     ag_text *text;
 *     char err[256];
 *     if (ag_text_load("play.txt", NULL, &text, err, sizeof(err)) != AG_OK) ...
 *     // text->vocab: the file's distinct characters; ag_text_id(text, i): the
 *     // file's character i as an id; ids [0 .. n_train) train, [n_train .. len) validate
 *     ag_text_free(text);
 * ------------------------------------------------------------------------ */
#define AG_VOCAB_MAX 65536           /* most distinct characters a vocabulary holds */
#define AG_TEXT_MAX_BYTES (1u << 30) /* longest text file read (1 GiB) */

typedef struct ag_vocab ag_vocab;

/* The sorted distinct code points of the len bytes of UTF-8 at s. NULL with
 * a one-line message in err when s is not UTF-8 (invalid, overlong or
 * surrogate sequences), holds a NUL character, is empty, or has more than
 * AG_VOCAB_MAX distinct characters. The caller owns the result. */
ag_vocab *ag_vocab_from_utf8(const char *s, size_t len, char *err, size_t errlen);
/* A vocabulary from its characters written out in order (what
 * ag_vocab_chars gives, and what a checkpoint stores): valid UTF-8, each
 * code point once, strictly increasing. NULL with a message otherwise. */
ag_vocab *ag_vocab_from_chars(const char *chars, char *err, size_t errlen);
void ag_vocab_free(ag_vocab *v);                   /* NULL does nothing */
int ag_vocab_size(const ag_vocab *v);              /* V */
uint32_t ag_vocab_char(const ag_vocab *v, int id); /* the code point; 0 when id is out of range */
int ag_vocab_id(const ag_vocab *v, uint32_t c);    /* the id of code point c, or -1 */
/* Every character in id order as one NUL-terminated UTF-8 string (borrowed from v). */
const char *ag_vocab_chars(const ag_vocab *v);
/* The UTF-8 bytes of token id into buf (room for 5: up to 4 bytes and a
 * NUL); returns the byte count, 0 when id is out of range. */
size_t ag_vocab_utf8(const ag_vocab *v, int id, char *buf);
/* The ids of the len bytes of UTF-8 at s into ids (room for len ids is
 * always enough); *n gets how many. AG_ERR_FORMAT on bytes that are not
 * UTF-8; AG_ERR_ARG on a character that is not in the vocabulary, named in
 * err with its line: "character 'z' (U+007A) on line 2 is not in the
 * vocabulary". */
ag_status ag_vocab_encode(const ag_vocab *v, const char *s, size_t len, int *ids, size_t *n,
                          char *err, size_t errlen);
/* A prompt to generate after: ag_vocab_encode of s into a new array *ids
 * (the caller frees it with free) of *n ids; an empty prompt (len 0) is
 * one id, where a text starts anew: a newline's (0 when the vocabulary has
 * none). On failure *ids is NULL, with ag_vocab_encode's errors or
 * AG_ERR_NOMEM. */
ag_status ag_vocab_prompt(const ag_vocab *v, const char *s, size_t len, int **ids, size_t *n,
                          char *err, size_t errlen);

/* A text as token ids, split for training and validation. The ids take
 * the fewest bytes the vocabulary allows: 1 for up to 256 characters, else
 * 2; read them with ag_text_id or ag_text_ids. The raw text is not kept. */
typedef struct ag_text {
    ag_vocab *vocab; /* owned: the file's characters, or a copy of the one given */
    void *ids;       /* (len) token ids, one per character, id_size bytes each */
    int id_size;     /* 1 (uint8_t ids) or 2 (uint16_t) */
    size_t len;      /* characters */
    size_t n_train;  /* len * 9 / 10: ids [0 .. n_train) train, the rest validate */
} ag_text;

/* Read the UTF-8 text file at path (at most AG_TEXT_MAX_BYTES). With vocab
 * NULL the vocabulary is the file's own distinct characters; otherwise the
 * file is encoded with a copy of vocab, and a character outside it is an
 * error. On failure *out is NULL and err names the file: AG_ERR_IO (cannot
 * read), AG_ERR_FORMAT (empty, not UTF-8, a NUL byte, too many distinct
 * characters), AG_ERR_ARG (a character outside vocab), AG_ERR_NOMEM. */
ag_status ag_text_load(const char *path, const ag_vocab *vocab, ag_text **out, char *err,
                       size_t errlen);
/* ag_text_load for evaluating a model of vocab on the file's validation
 * part (the last 10%): only that part's characters must be in vocab; the
 * training part is not evaluated, and a character of it outside vocab
 * becomes id 0 (so the text is not for training). */
ag_status ag_text_load_eval(const char *path, const ag_vocab *vocab, ag_text **out, char *err,
                            size_t errlen);
/* The same for the len bytes at s (borrowed for the call); name is used in
 * messages. */
ag_status ag_text_parse(const char *s, size_t len, const char *name, const ag_vocab *vocab,
                        ag_text **out, char *err, size_t errlen);
void ag_text_free(ag_text *t); /* NULL does nothing */
/* Token id i of t (i < t->len) */
int ag_text_id(const ag_text *t, size_t i);
/* ids i = from .. from + n - 1 of t as ints into out */
void ag_text_ids(const ag_text *t, size_t from, size_t n, int *out);

enum { AG_SPLIT_TRAIN = 0, AG_SPLIT_VAL = 1 };
/* Whether windows of seq characters fit both parts: training draws
 * windows of seq + 1 characters, and validation needs at least one (so
 * each part needs seq + 1 characters). AG_ERR_ARG with a message naming the
 * part and the lengths otherwise. */
ag_status ag_text_check_seq(const ag_text *t, int seq, char *err, size_t errlen);
/* batch random windows of one part (AG_SPLIT_TRAIN or AG_SPLIT_VAL): for
 * each row, a start i uniform in [0, part length - seq) drawn from rng;
 * x = part[i .. i+seq), y = part[i+1 .. i+seq+1]. x and y are (batch, seq)
 * arrays. The windows must fit (ag_text_check_seq). */
void ag_text_batch(const ag_text *t, int split, int batch, int seq, ag_rng *rng, int *x, int *y);
/* The full validation loss's windows: floor((validation length - 1) / seq),
 * window i being x = val[i*seq .. (i+1)*seq), y = the same shifted by one. */
size_t ag_text_windows(const ag_text *t, int seq);

/* ------------------------------------------------------------------------
 * A GPT: a character language model built from the attention layer. With
 * C = dim, H = heads, V = vocab, T <= seq and ids (B,T):
 *
 *   x = wte[ids] + wpe[0:T]                          (B,T,C) tokens and positions
 *   for each block:                                  pre-norm residual blocks
 *       x = x + attention(ln_1(x))                   causal, H heads; out = O wo
 *       x = x + gelu(ln_2(x) w_fc) w_proj            w_fc (C,4C), w_proj (4C,C)
 *   logits = ln_f(x) wte^T                           (B,T,V) the head is wte (tied)
 *
 * Layer norms normalise over C with eps 1e-5; GELU is the exact (erf) one.
 * Without bias (the default) linears and layer norms have weights only.
 * Initialised as GPT-2: every weight normal(0, 0.02) except the two
 * projections into the residual stream (wo, w_proj) of each block, normal(0,
 * 0.02 / sqrt(2 layers)); layer-norm weights 1, biases 0. Dropout (training
 * forwards only) follows the embeddings and both residual branches.
 *
 * The ablation switches take one part out, to show what it is for: no_residual
 * (x = branch(x), no skip), no_layernorm (every layer norm is the
 * identity), no_mlp (attention-only blocks), no_posenc (no wpe: the model
 * cannot tell where a character is except through the causal mask).
 * ------------------------------------------------------------------------ */
typedef struct ag_gpt_config {
    int vocab;                                        /* V: token ids 0..V-1 */
    int seq;                                          /* T: the longest context (block size) */
    int layers;                                       /* blocks */
    int heads;                                        /* attention heads; divides dim */
    int dim;                                          /* C: the width of the residual stream */
    int bias;                                         /* 1: linears and layer norms have biases */
    double dropout;                                   /* in [0, 1) */
    int no_residual, no_layernorm, no_mlp, no_posenc; /* ablations, 0 normally */
} ag_gpt_config;

/* V = vocab, 4 layers, 4 heads, dim 128, seq 64, no bias, no dropout. */
ag_gpt_config ag_gpt_defaults(int vocab);
#define AG_GPT_LAYERS 4
#define AG_GPT_HEADS 4
#define AG_GPT_DIM 128
#define AG_GPT_SEQ 64

typedef struct ag_gpt ag_gpt;

/* A model for cfg, initialised from rng (NULL leaves every weight zero and
 * layer-norm weights one, for loading). NULL with a one-line message in err
 * on a bad configuration ("heads 3 does not divide dim 128") or out of
 * memory. The caller owns it. */
ag_gpt *ag_gpt_new(const ag_gpt_config *cfg, ag_rng *rng, char *err, size_t errlen);
void ag_gpt_free(ag_gpt *g); /* NULL does nothing */
const ag_gpt_config *ag_gpt_get_config(const ag_gpt *g);
/* Change the dropout probability (in [0, 1); AG_ERR_ARG otherwise). */
ag_status ag_gpt_set_dropout(ag_gpt *g, double p);
/* The parameters in a fixed order, in the library's y = x W layout, named
 * "wte", "wpe", "h.0.ln_1.weight", "h.0.attn.wq", ..., "h.0.mlp.w_proj",
 * ..., "ln_f.weight" (borrowed; hand them to an optimizer). Fills params[i]
 * and names[i] for i < max (either may be NULL); returns the count. */
size_t ag_gpt_params(ag_gpt *g, ag_tensor **params, const char **names, size_t max);
ag_tensor *ag_gpt_param(ag_gpt *g, const char *name); /* NULL when unknown */
size_t ag_gpt_n_weights(const ag_gpt *g);             /* numbers in all parameters */

/* Record the forward pass on the tape: ids is a (batch, seq) array of token
 * ids (seq <= the config's seq), copied. Returns the logits (B,T,V), a
 * tape tensor, or NULL with the tape's error set. dropout_rng NULL is
 * evaluation (no dropout); otherwise dropout draws from it. */
ag_tensor *ag_gpt_forward(ag_tape *tape, ag_gpt *g, const int *ids, int batch, int seq,
                          ag_rng *dropout_rng);
/* ag_gpt_forward and the mean cross-entropy against targets (batch, seq):
 * a (1) tensor. logits_out (may be NULL) receives the logits. */
ag_tensor *ag_gpt_loss(ag_tape *tape, ag_gpt *g, const int *ids, const int *targets, int batch,
                       int seq, ag_rng *dropout_rng, ag_tensor **logits_out);
/* One block, layer 0..layers-1, on x (B,T,C): a tape tensor (B,T,C). */
ag_tensor *ag_gpt_block(ag_tape *tape, ag_gpt *g, int layer, const ag_tensor *x,
                        ag_rng *dropout_rng);

/* What a forward pass shows of its inside. Each array that is not NULL has
 * a slot per block and receives tape tensors (valid until the tape is reset;
 * every slot NULL when the pass fails):
 *   attn[l]   block l's attention weights P (B,H,T,T), the softmax as the
 *             forward computed it: P[b][h][i][j] is how much position i of
 *             head h takes from position j, 0 where j > i (the causal mask).
 *             In the fused form (the default) P is made because it was asked
 *             for and carries no gradient; op by op it is the softmax's output.
 *   resid[l]  the residual stream after block l (B,T,C). */
typedef struct ag_gpt_taps {
    ag_tensor **attn;  /* (layers) or NULL */
    ag_tensor **resid; /* (layers) or NULL */
} ag_gpt_taps;
/* ag_gpt_forward with taps (NULL: ag_gpt_forward itself). */
ag_tensor *ag_gpt_forward_taps(ag_tape *tape, ag_gpt *g, const int *ids, int batch, int seq,
                               ag_rng *dropout_rng, const ag_gpt_taps *taps);
/* The attention weights of one forward pass of ids (seq tokens, 1..the
 * config's seq), without dropout and without touching gradients, into attn
 * (layers, heads, seq, seq), row-major: attn[l][h][i][j] as taps' P. AG_OK,
 * or an error with a one-line message (an id out of range, a bad seq). */
ag_status ag_gpt_attention(ag_gpt *g, const int *ids, int seq, ag_real *attn, char *err,
                           size_t errlen);
/* Record every block's attention as one fused op (1, the default) or op by
 * op (0: every step a tape tensor with its gradient, as
 * ag_attention_set_fused). A model with biases is always op by op. */
void ag_gpt_set_fused(ag_gpt *g, int fused);
/* The full validation loss of text: the mean cross-entropy over every
 * position of every window of ag_text_windows (seq = the config's seq),
 * without dropout. Deterministic, so any implementation can be compared
 * with it. text's vocabulary must have the model's size. Gradients are not
 * touched. *windows (may be NULL) gets the window count. */
ag_status ag_gpt_val_loss(ag_gpt *g, const ag_text *text, double *loss, size_t *windows, char *err,
                          size_t errlen);

/* Sampling with a key/value cache: each new token runs one position
 * through the model (no tape), reusing the keys and values of the earlier
 * ones. Logits equal the tape forward's to rounding. */
typedef struct ag_gpt_cache ag_gpt_cache;

/* A cache for g (borrowed: it must outlive the cache and not change shape). */
ag_gpt_cache *ag_gpt_cache_new(ag_gpt *g, char *err, size_t errlen);
void ag_gpt_cache_free(ag_gpt_cache *c);     /* NULL does nothing */
void ag_gpt_cache_reset(ag_gpt_cache *c);    /* forget every position */
int ag_gpt_cache_len(const ag_gpt_cache *c); /* positions held, 0..seq */
/* Run token id at the next position (ag_gpt_cache_len, which must be <
 * seq). *logits (may be NULL) gets the position's (V) logits, borrowed
 * until the next call. AG_ERR_ARG with a message when the cache is full or
 * id is out of range. */
ag_status ag_gpt_cache_push(ag_gpt_cache *c, int id, const ag_real **logits, char *err,
                            size_t errlen);
/* A token id drawn from logits (V): softmax(logits / temperature) over the
 * top_k largest (top_k <= 0 or >= V: all; ties with the k-th all stay);
 * temperature 0 takes the largest (the first among equals). One uniform
 * number from rng per draw (none at temperature 0), so a seed fixes the
 * text. */
int ag_gpt_cache_pick(ag_gpt_cache *c, const ag_real *logits, double temperature, int top_k,
                      ag_rng *rng);
/* Called with each generated token; return non-zero to stop early. */
typedef int (*ag_gpt_emit_fn)(int id, void *ctx);
/* Feed the prompt (n_prompt >= 1 ids), then generate n_new tokens, handing
 * each to emit as it is made. When the context reaches seq positions the
 * cache keeps its last seq / 2 tokens and runs them again (their positions
 * change), so a token costs about two positions however long the text. */
ag_status ag_gpt_generate(ag_gpt_cache *c, const int *prompt, size_t n_prompt, size_t n_new,
                          double temperature, int top_k, ag_rng *rng, ag_gpt_emit_fn emit,
                          void *ctx, char *err, size_t errlen);

/* Training: AdamW over random windows of a text, the learning rate warmed
 * up linearly and then decayed along a cosine.
 *
 *     ag_gpt_trainer *t = ag_gpt_trainer_new(g, text, &cfg, err, sizeof(err));
 *     for (long s = 0; s < 2000; s++)
 *         if (ag_gpt_trainer_step(t, &loss, err, sizeof(err)) != AG_OK) ...
 *     ag_gpt_val_loss(g, text, &val, NULL, err, sizeof(err));
 */
typedef struct ag_gpt_train_config {
    int batch;         /* windows per step */
    double lr, min_lr; /* peak and final learning rate */
    long warmup;       /* steps of linear warmup */
    long decay_steps;  /* the cosine reaches min_lr at step decay_steps (its last step) */
    double beta1, beta2, eps;
    double weight_decay; /* AdamW's, on the 2-D weights only (not layer norms or biases) */
    double clip;         /* global gradient-norm clip; 0: none */
    uint64_t seed;       /* the batches' and dropout's random streams */
} ag_gpt_train_config;

/* batch 12, lr 1e-3 to min_lr 1e-4, warmup 100, decay_steps 2000, betas
 * 0.9 and 0.99, eps 1e-8, weight decay 0.1, clip 1, seed 1. */
ag_gpt_train_config ag_gpt_train_defaults(void);
#define AG_GPT_BATCH 12
#define AG_GPT_LR 1e-3
#define AG_GPT_MIN_LR 1e-4
#define AG_GPT_WARMUP 100
#define AG_GPT_DECAY_STEPS 2000
#define AG_GPT_WEIGHT_DECAY 0.1
#define AG_GPT_CLIP 1.0
/* The learning rate of step s (0-based): lr (s+1) / (warmup+1) while s <
 * warmup; then min_lr + (lr - min_lr) (1 + cos(pi r)) / 2 with r = (s -
 * warmup) / (decay_steps - 1 - warmup); min_lr from step decay_steps - 1 on. */
double ag_gpt_lr_at(const ag_gpt_train_config *cfg, long step);

typedef struct ag_gpt_trainer ag_gpt_trainer;

/* A trainer for g on text (both borrowed; they must outlive it). text's
 * vocabulary must have g's size and its parts must hold windows of g's seq.
 * NULL with a message on a bad setting or out of memory. */
ag_gpt_trainer *ag_gpt_trainer_new(ag_gpt *g, const ag_text *text, const ag_gpt_train_config *cfg,
                                   char *err, size_t errlen);
/* NULL does nothing. g and text are left alone, unless the trainer came
 * from ag_gpt_trainer_open, which made them: then they are freed too. */
void ag_gpt_trainer_free(ag_gpt_trainer *t);
/* One step: a random training batch, forward, backward, clip, AdamW at
 * ag_gpt_lr_at(step). The batch goes as two halves, at once on two or three
 * threads, their gradients then weighted by their windows element by element:
 * the result is the same bits on any number of threads. *loss (may be NULL)
 * gets the batch's mean loss. A NaN or Inf (in the loss, a gradient or, after
 * the update, a weight) stops it with AG_ERR_NUMERIC and a message naming the
 * op or the parameter; the weights are then not to be trusted. Allocates
 * nothing once the first step has run. */
ag_status ag_gpt_trainer_step(ag_gpt_trainer *t, double *loss, char *err, size_t errlen);
long ag_gpt_trainer_steps(const ag_gpt_trainer *t); /* steps done */
/* The most bytes a step's tapes have held (the step runs its batch as two
 * halves: at once, each on a tape of its own; one after the other, on one
 * tape; their ag_tape_peak_bytes, summed), for measuring a step's memory. */
size_t ag_gpt_trainer_peak_bytes(const ag_gpt_trainer *t);
const ag_gpt_train_config *ag_gpt_trainer_config(const ag_gpt_trainer *t);
/* The mean loss over iters random batches of a part (AG_SPLIT_TRAIN or
 * AG_SPLIT_VAL), without dropout. The batches come from a stream of their
 * own that starts afresh on every call: the same windows every time, and
 * the training stream is untouched. */
ag_status ag_gpt_trainer_estimate(ag_gpt_trainer *t, int split, int iters, double *loss, char *err,
                                  size_t errlen);

/* Checkpoints, in the layout of the common PyTorch GPT (nanoGPT's GPT with
 * bias=False), so that the weights load there with no renaming or
 * transposing: transformer.wte.weight (V,C), transformer.wpe.weight (T,C),
 * transformer.h.{i}.ln_1.weight (C), transformer.h.{i}.attn.c_attn.weight
 * (3C,C) (Q's rows, then K's, then V's), transformer.h.{i}.attn.c_proj.weight
 * (C,C), transformer.h.{i}.ln_2.weight, transformer.h.{i}.mlp.c_fc.weight
 * (4C,C), transformer.h.{i}.mlp.c_proj.weight (C,4C), transformer.ln_f.weight,
 * lm_head.weight (= wte), and the .bias of each with bias. Linear weights are
 * (out, in), PyTorch's layout: the transpose of the library's. The metadata
 * holds the vocabulary ("vocab": its characters in order) and the settings
 * under nanoGPT's names (vocab_size, block_size, n_layer, n_head, n_embd,
 * bias, dropout). A trainer's checkpoint adds its settings, its progress and
 * AdamW's state ("optim.<name>.m", "optim.<name>.v", in the same layout),
 * so a run resumes bit for bit. Files are written atomically. */
ag_status ag_gpt_save(ag_gpt *g, const ag_vocab *vocab, const char *path, char *err, size_t errlen);
ag_status ag_gpt_trainer_save(ag_gpt_trainer *t, const char *path, char *err, size_t errlen);

/* A GPT checkpoint, read and checked completely (as hostile input): every
 * metadata value parsed strictly, and the tensors exactly those its
 * settings call for (each present with its shape, none left over), from
 * the header, before any model is made from it. A file that disagrees with
 * itself is refused (AG_ERR_FORMAT) naming the file, the tensor and both
 * sides: "ck.st: tensor 'transformer.wte.weight' has shape [53x16], but the
 * metadata's vocab_size 53, n_embd 4096 call for [53x4096]", "ck.st: tensor
 * 'transformer.h.1.ln_1.weight' disagrees with the metadata: metadata
 * n_layer is 1, but the file holds block 1". */
typedef struct ag_gpt_file ag_gpt_file;

ag_status ag_gpt_file_load(const char *path, ag_gpt_file **out, char *err, size_t errlen);
/* The same for the len bytes at buf (borrowed for the call), named name in
 * messages (NULL: "<buffer>"). */
ag_status ag_gpt_file_parse(const void *buf, size_t len, const char *name, ag_gpt_file **out,
                            char *err, size_t errlen);
void ag_gpt_file_free(ag_gpt_file *f); /* NULL does nothing */
const ag_gpt_config *ag_gpt_file_config(const ag_gpt_file *f);
const ag_vocab *ag_gpt_file_vocab(const ag_gpt_file *f); /* borrowed from f */
const char *ag_gpt_file_path(const ag_gpt_file *f);      /* as given, borrowed from f */
/* A trainer's checkpoint: its settings and steps done (returns 1); a
 * model's only: returns 0. */
int ag_gpt_file_train(const ag_gpt_file *f, ag_gpt_train_config *cfg, long *steps);
/* A trainer's checkpoint's optimizer step count (0 for a model's only). */
long ag_gpt_file_optim_steps(const ag_gpt_file *f);
/* A new model with the file's configuration and weights (the caller owns
 * it). Every weight must be finite. */
ag_gpt *ag_gpt_file_model(const ag_gpt_file *f, char *err, size_t errlen);
/* Continue the file's run: copy its optimizer state, step count and random
 * streams into t, made for a model from ag_gpt_file_model(f). */
ag_status ag_gpt_trainer_restore(ag_gpt_trainer *t, const ag_gpt_file *f, char *err, size_t errlen);

/* The whole setup in one call: a trainer that owns its text (read from
 * text_path) and its model, and frees them with itself. Fresh (resume
 * NULL): a model of config model, its vocab set to the text's, its weights
 * drawn from train->seed. Continuing (resume from ag_gpt_file_load): the
 * file's model, vocabulary and run (as ag_gpt_trainer_restore), of model
 * (may then be NULL) only the dropout is taken. train is the run's
 * settings (ag_gpt_file_train gives the file's own). The text's parts must
 * hold windows of seq ("FILE: a text of N characters is too short ...").
 * NULL with a one-line message on any failure.
 *
 *     ag_gpt_trainer *t = ag_gpt_trainer_open("play.txt", &cfg, &tc, NULL, err, sizeof(err));
 *     ... ag_gpt_trainer_step, then ag_gpt_trainer_val_loss, ag_gpt_trainer_save ...
 *     ag_gpt_trainer_free(t);   // and the text and the model with it
 */
ag_gpt_trainer *ag_gpt_trainer_open(const char *text_path, const ag_gpt_config *model,
                                    const ag_gpt_train_config *train, const ag_gpt_file *resume,
                                    char *err, size_t errlen);
/* The same with a text already read (taken: freed with the trainer, or on
 * failure), named name in messages: a program can check what the model
 * will need (ag_gpt_memory, with the text's vocabulary) between the two. */
ag_gpt_trainer *ag_gpt_trainer_open_text(ag_text *text, const char *name,
                                         const ag_gpt_config *model,
                                         const ag_gpt_train_config *train,
                                         const ag_gpt_file *resume, char *err, size_t errlen);
ag_gpt *ag_gpt_trainer_model(ag_gpt_trainer *t);             /* borrowed */
const ag_text *ag_gpt_trainer_text(const ag_gpt_trainer *t); /* borrowed */
/* ag_gpt_val_loss of the trainer's model on its text. */
ag_status ag_gpt_trainer_val_loss(ag_gpt_trainer *t, double *loss, size_t *windows, char *err,
                                  size_t errlen);
/* The gradient flow, measured on one fixed batch of the training part (the
 * same windows at every call, drawn from a stream of their own; no
 * dropout): grad_norm[l] is the L2 norm of the loss's gradient over block
 * l's parameters, resid_rms[l] the root mean square of the residual stream
 * after block l (each array has a slot per block). It runs on the trainer's
 * tape and overwrites the parameters' gradients, which the next step zeroes
 * first; the training streams are untouched, so a run that measures takes
 * the same steps as one that does not. */
ag_status ag_gpt_trainer_flow(ag_gpt_trainer *t, double *grad_norm, double *resid_rms, char *err,
                              size_t errlen);

/* ------------------------------------------------------------------------
 * Memory: what a run needs at most, from its settings alone, so that a
 * program refuses a run that cannot fit before it allocates anything, and
 * says what would need how much. Each part is an upper bound of what the
 * library allocates for it (the tests hold them against what runs really
 * use); bytes are doubles, so that settings no machine holds still compare.
 *
 *     ag_memory m;
 *     ag_gpt_memory(&cfg, &(ag_gpt_run){.batch = 12, .validate = 1}, &m);
 *     if (m.total > limit) ... m.part[i].what, m.part[i].bytes ...
 * ------------------------------------------------------------------------ */
#define AG_MEMORY_PARTS 12
typedef struct ag_memory {
    int n;
    struct {
        const char *what; /* "the weights", "a training step", ... (static) */
        double bytes;
    } part[AG_MEMORY_PARTS]; /* (n), the parts that need any */
    double total;
} ag_memory;

/* What a GPT run does. */
typedef struct ag_gpt_run {
    int batch;         /* training with windows of this many per step; 0: none */
    int validate;      /* the full validation loss (ag_gpt_val_loss) */
    int sample;        /* sampling with a key/value cache */
    int save;          /* writing a trainer's checkpoint (a few KB: made as it is written) */
    double text_bytes; /* the size of the text file read, or 0 */
    double file_bytes; /* the size of the checkpoint file read, or 0 */
    int threads;       /* ag_set_threads' count */
} ag_gpt_run;

/* The parts of run for a model of c: its weights, their gradients and
 * AdamW's state (training), a training step's tape, the validation pass,
 * sampling's cache, writing and reading a checkpoint, the text, the
 * program itself. */
void ag_gpt_memory(const ag_gpt_config *c, const ag_gpt_run *run, ag_memory *m);
/* The numbers in a model of c's parameters (ag_gpt_n_weights of it). */
double ag_gpt_config_weights(const ag_gpt_config *c);
/* The same for a toy model's run (ag_trainer): weights, gradients, the
 * optimizer's state, the tape of a step and of the held-out evaluation, a
 * checkpoint of file_bytes read (0: none). */
void ag_train_memory(const ag_train_config *c, int threads, double file_bytes, ag_memory *m);

#ifdef __cplusplus
}
#endif

#endif /* ATTOGRAD_NN_H */
