/*
 * model.c - the toy sequence model the tasks train: one attention layer
 * between token embeddings and a linear readout, nothing else, so that what
 * it learns is the attention itself.
 *
 *   x      = emb0[tok0] + emb1[tok1]           (B,T,d)   two token slots
 *   x      = x + PE[0:T]                       (B,T,d)   when positions are on
 *   h      = attention(x)                      (B,T,d)   the attention layer
 *   logits = h readout                         (B,T,A,C) A answers of C classes
 *   loss   = cross_entropy(logits, targets)    mean over the answers present
 */
#include "nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_MAX_PARAMS 8

struct ag_model {
    ag_model_config cfg;
    ag_tensor *emb0, *emb1; /* (vocab, d) token tables for slots 0 and 1 */
    ag_posenc *pe;          /* positions 0..seq-1 */
    ag_attention *att;      /* wq, wk, wv, wo: (d, d) */
    ag_tensor *readout;     /* (d, answers * classes) */
    ag_tensor *params[MODEL_MAX_PARAMS];
    const char *names[MODEL_MAX_PARAMS];
    size_t n_params;
};

ag_model_field ag_model_config_check(const ag_model_config *cfg, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!cfg || (unsigned)cfg->task >= AG_TASK_COUNT) {
        ag_err(AG_ERR_ARG, err, errlen, "unknown task");
        return AG_MODEL_TASK;
    }
    int lo = ag_task_min_seq(cfg->task), hi = ag_task_max_seq(cfg->task);
    if (cfg->seq < lo || cfg->seq > hi) {
        ag_err(AG_ERR_ARG, err, errlen, "seq %d is out of range for task %s (%d..%d)", cfg->seq,
               ag_task_name(cfg->task), lo, hi);
        return AG_MODEL_SEQ;
    }
    if (!ag_nn_check_heads(cfg->dim, cfg->heads, err, errlen))
        return cfg->dim < 1 ? AG_MODEL_DIM : AG_MODEL_HEADS;
    if ((unsigned)cfg->posenc > AG_POSENC_LEARNED) {
        ag_err(AG_ERR_ARG, err, errlen, "unknown positional encoding %d", (int)cfg->posenc);
        return AG_MODEL_POSENC;
    }
    return AG_MODEL_OK;
}

ag_model *ag_model_new(const ag_model_config *cfg, ag_rng *rng, char *err, size_t errlen)
{
    if (ag_model_config_check(cfg, err, errlen) != AG_MODEL_OK)
        return NULL;
    ag_model *m = ag_calloc(1, sizeof(*m));
    if (!m) {
        ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->att = ag_attention_new(cfg->dim, cfg->heads, cfg->causal, rng, err, errlen);
    if (!m->att)
        goto fail;
    m->pe = ag_posenc_new(cfg->posenc, cfg->seq, cfg->dim, rng, err, errlen);
    if (!m->pe)
        goto fail;
    int vocab = ag_task_vocab(cfg->task);
    int outputs = ag_task_answers(cfg->task) * ag_task_classes(cfg->task);
    m->emb0 = ag_param_new(2, (int[]){vocab, cfg->dim});
    m->emb1 = ag_param_new(2, (int[]){vocab, cfg->dim});
    m->readout = ag_param_new(2, (int[]){cfg->dim, outputs});
    if (!m->emb0 || !m->emb1 || !m->readout) {
        ag_err(AG_ERR_NOMEM, err, errlen, "out of memory");
        goto fail;
    }
    if (rng) {
        /* token vectors of unit scale, like the sinusoids they are added to */
        ag_fill_normal(m->emb0, rng, 0, 1);
        ag_fill_normal(m->emb1, rng, 0, 1);
        ag_fill_glorot(m->readout, rng);
    }
    /* The parameter list, in a fixed order (checkpoints use these names). */
    m->params[0] = m->emb0, m->names[0] = "emb0";
    m->params[1] = m->emb1, m->names[1] = "emb1";
    m->n_params = 2;
    m->n_params += ag_posenc_params(m->pe, m->params + m->n_params, m->names + m->n_params,
                                    MODEL_MAX_PARAMS - m->n_params);
    m->n_params += ag_attention_params(m->att, m->params + m->n_params, m->names + m->n_params,
                                       MODEL_MAX_PARAMS - m->n_params);
    m->params[m->n_params] = m->readout, m->names[m->n_params] = "readout";
    m->n_params++;
    return m;
fail:
    ag_model_free(m);
    return NULL;
}

size_t ag_model_layout(const ag_model_config *cfg, const char **names, int (*shape)[2])
{
    static const char *const attn[4] = {"wq", "wk", "wv", "wo"}; /* ag_attention_params' */
    int d = cfg->dim, vocab = ag_task_vocab(cfg->task);
    size_t n = 0;
#define PARAM(name, rows, cols) (names[n] = (name), shape[n][0] = (rows), shape[n][1] = (cols), n++)
    PARAM("emb0", vocab, d);
    PARAM("emb1", vocab, d);
    if (cfg->posenc == AG_POSENC_LEARNED)
        PARAM("pos", cfg->seq, d); /* ag_posenc_params' */
    for (int k = 0; k < 4; k++)
        PARAM(attn[k], d, d);
    PARAM("readout", d, ag_task_answers(cfg->task) * ag_task_classes(cfg->task));
#undef PARAM
    return n;
}

void ag_model_free(ag_model *m)
{
    if (!m)
        return;
    ag_attention_free(m->att);
    ag_posenc_free(m->pe);
    ag_param_free(m->emb0);
    ag_param_free(m->emb1);
    ag_param_free(m->readout);
    free(m);
}

const ag_model_config *ag_model_get_config(const ag_model *m)
{
    return m ? &m->cfg : NULL;
}

size_t ag_model_params(ag_model *m, ag_tensor **params, const char **names, size_t max)
{
    if (!m)
        return 0;
    for (size_t i = 0; i < m->n_params && i < max; i++) {
        if (params)
            params[i] = m->params[i];
        if (names)
            names[i] = m->names[i];
    }
    return m->n_params;
}

ag_tensor *ag_model_param(ag_model *m, const char *name)
{
    for (size_t i = 0; m && name && i < m->n_params; i++)
        if (strcmp(m->names[i], name) == 0)
            return m->params[i];
    return NULL;
}

ag_attention *ag_model_attention(ag_model *m)
{
    return m->att;
}

ag_tensor *ag_model_forward(ag_tape *tape, ag_model *m, const ag_batch *b, ag_tensor **logits_out,
                            ag_tensor **attn_out)
{
    if (logits_out)
        *logits_out = NULL;
    if (attn_out)
        *attn_out = NULL;
    if (!tape || ag_tape_status(tape) != AG_OK)
        return NULL;
    if (!m || !b || b->kind != m->cfg.task || b->seq != m->cfg.seq) {
        ag_tape_fail(tape, AG_ERR_ARG, "model: the batch does not fit the model (task %s, seq %d)",
                     m ? ag_task_name(m->cfg.task) : "?", m ? m->cfg.seq : 0);
        return NULL;
    }
    int B = b->batch, T = b->seq, A = b->answers, C = ag_task_classes(b->kind);
    int ids_shape[2] = {B, T};
    ag_tensor *x = ag_add(tape, ag_embedding(tape, m->emb0, b->tok0, 2, ids_shape),
                          ag_embedding(tape, m->emb1, b->tok1, 2, ids_shape));
    x = ag_posenc_apply(tape, m->pe, x);
    ag_tensor *h = ag_attention_forward(tape, m->att, x, attn_out);
    ag_tensor *logits = ag_reshape(tape, ag_matmul(tape, h, m->readout), 4, (int[]){B, T, A, C});
    if (logits_out)
        *logits_out = logits;
    return ag_cross_entropy(tape, logits, b->targets, (size_t)B * T * A);
}

int ag_model_answer(const ag_batch *b, const ag_tensor *logits, int ex, int t, int a)
{
    int C = ag_task_classes(b->kind), A = b->answers;
    size_t p = (size_t)ex * (size_t)b->seq + (size_t)t;
    const ag_real *z = logits->data + (p * A + a) * C;
    int best = 0;
    for (int c = 1; c < C; c++)
        if (z[c] > z[best])
            best = c;
    return best;
}

void ag_model_score(const ag_batch *b, const ag_tensor *logits, long *correct, long *total)
{
    int A = b->answers;
    size_t positions = (size_t)b->batch * (size_t)b->seq;
    for (size_t p = 0; p < positions; p++) {
        const int *y = b->targets + p * A;
        int asked = 0, right = 1;
        for (int a = 0; a < A; a++) {
            if (y[a] < 0)
                continue;
            asked = 1;
            right &= ag_model_answer(b, logits, (int)(p / (size_t)b->seq),
                                     (int)(p % (size_t)b->seq), a) == y[a];
        }
        if (asked) {
            *total += 1;
            *correct += right;
        }
    }
}
