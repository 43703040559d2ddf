/*
 * tasks.c - the toy tasks attograd trains on, generated on the fly from a
 * seed. Each position of a sequence carries two token ids (slot 0 and slot
 * 1, each embedded by its own table and summed), and some positions carry
 * answers: class ids the model must predict there.
 *
 *   lookup   the soft hash table. Positions 0..T-2 hold (key, value) pairs
 *            with distinct keys; the last holds (query key, QUERY). The
 *            answer at the last position is the query's value.
 *   lookup2  why multi-head. Like lookup, but the last position holds two
 *            query keys (q1, q2); its answers are both values, in order.
 *            One softmax can only blend; two heads can each look one up.
 *   reverse  why positional encoding. Positions hold (token, PAD); the
 *            answer at position i is the token at position T-1-i. Without
 *            positions, attention cannot tell where anything is.
 */
#include "../core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOOKUP_KEYS 8
#define LOOKUP_VALUES 8
#define REVERSE_SYMBOLS 8

static const char *const task_names[AG_TASK_COUNT] = {"lookup", "lookup2", "reverse"};
static const char *const task_help[AG_TASK_COUNT] = {
    "the soft hash table: (key, value) pairs and a query key; answer the query's value",
    "why multi-head: the query names two keys; answer both values (needs --heads 2)",
    "why positional encoding: output position i gives the token at T-1-i (needs --posenc)",
};

const char *ag_task_name(ag_task_kind kind)
{
    return (unsigned)kind < AG_TASK_COUNT ? task_names[kind] : "unknown";
}

const char *ag_task_help(ag_task_kind kind)
{
    return (unsigned)kind < AG_TASK_COUNT ? task_help[kind] : "";
}

int ag_task_parse(const char *name, ag_task_kind *kind)
{
    for (int k = 0; k < AG_TASK_COUNT; k++) {
        if (strcmp(name, task_names[k]) == 0) {
            *kind = (ag_task_kind)k;
            return 1;
        }
    }
    return 0;
}

/* Token ids: keys, then values, then markers. Reverse uses symbols and PAD. */
enum {
    TOK_KEY0 = 0,
    TOK_VALUE0 = TOK_KEY0 + LOOKUP_KEYS,
    TOK_QUERY = TOK_VALUE0 + LOOKUP_VALUES,
    TOK_PAD,
    TOK_COUNT
};

int ag_task_vocab(ag_task_kind kind)
{
    (void)kind;
    return TOK_COUNT;
}

int ag_task_classes(ag_task_kind kind)
{
    return kind == AG_TASK_REVERSE ? REVERSE_SYMBOLS : LOOKUP_VALUES;
}

int ag_task_answers(ag_task_kind kind)
{
    return kind == AG_TASK_LOOKUP2 ? 2 : 1;
}

int ag_task_min_seq(ag_task_kind kind)
{
    /* lookup2 needs two pairs to ask about, lookup one; reverse two
     * tokens (one is its own reverse) */
    return kind == AG_TASK_LOOKUP2 ? 3 : 2;
}

int ag_task_max_seq(ag_task_kind kind)
{
    /* keys are distinct within a sequence */
    return kind == AG_TASK_REVERSE ? 4096 : LOOKUP_KEYS + 1;
}

ag_batch *ag_batch_new(ag_task_kind kind, int batch, int seq)
{
    if ((unsigned)kind >= AG_TASK_COUNT || batch < 1 || seq < ag_task_min_seq(kind) ||
        seq > ag_task_max_seq(kind))
        return NULL;
    size_t n = (size_t)batch * (size_t)seq, na;
    if (!ag_mul_size(n, (size_t)ag_task_answers(kind), &na) || na > SIZE_MAX / sizeof(int) / 4)
        return NULL;
    ag_batch *b = ag_calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->kind = kind;
    b->batch = batch;
    b->seq = seq;
    b->answers = ag_task_answers(kind);
    b->tok0 = ag_malloc(n * sizeof(int));
    b->tok1 = ag_malloc(n * sizeof(int));
    b->targets = ag_malloc(na * sizeof(int));
    if (!b->tok0 || !b->tok1 || !b->targets) {
        ag_batch_free(b);
        return NULL;
    }
    return b;
}

void ag_batch_free(ag_batch *b)
{
    if (!b)
        return;
    free(b->tok0);
    free(b->tok1);
    free(b->targets);
    free(b);
}

const char *ag_task_token_label(const ag_batch *b, int ex, int t, char *buf, size_t len)
{
    int t0 = b->tok0[(size_t)ex * b->seq + t], t1 = b->tok1[(size_t)ex * b->seq + t];
    if (b->kind == AG_TASK_REVERSE)
        snprintf(buf, len, "s%d", t0);
    else if (t1 >= TOK_VALUE0 && t1 < TOK_VALUE0 + LOOKUP_VALUES)
        snprintf(buf, len, "k%d:v%d", t0 - TOK_KEY0, t1 - TOK_VALUE0);
    else if (t1 >= TOK_KEY0 && t1 < TOK_KEY0 + LOOKUP_KEYS)
        snprintf(buf, len, "?k%d,k%d", t0 - TOK_KEY0, t1 - TOK_KEY0);
    else
        snprintf(buf, len, "?k%d", t0 - TOK_KEY0);
    return buf;
}

const char *ag_task_class_label(ag_task_kind kind, int c, char *buf, size_t len)
{
    snprintf(buf, len, "%s%d", kind == AG_TASK_REVERSE ? "s" : "v", c);
    return buf;
}

/* Fill keys[0..n-1] with distinct key indices (a partial Fisher-Yates shuffle). */
static void distinct_keys(ag_rng *rng, int *keys, int n)
{
    int all[LOOKUP_KEYS];
    for (int i = 0; i < LOOKUP_KEYS; i++)
        all[i] = i;
    for (int i = 0; i < n; i++) {
        int j = i + (int)ag_rng_below(rng, (uint32_t)(LOOKUP_KEYS - i));
        int tmp = all[i];
        all[i] = all[j];
        all[j] = tmp;
        keys[i] = all[i];
    }
}

static void sample_lookup(ag_batch *b, int ex, ag_rng *rng)
{
    int T = b->seq, A = b->answers;
    int *t0 = b->tok0 + (size_t)ex * T, *t1 = b->tok1 + (size_t)ex * T;
    int *y = b->targets + (size_t)ex * T * A;
    int keys[LOOKUP_KEYS], values[LOOKUP_KEYS];
    distinct_keys(rng, keys, T - 1);
    for (int t = 0; t < T - 1; t++) {
        values[t] = (int)ag_rng_below(rng, LOOKUP_VALUES);
        t0[t] = TOK_KEY0 + keys[t];
        t1[t] = TOK_VALUE0 + values[t];
    }
    for (int i = 0; i < T * A; i++)
        y[i] = -1;
    int q1 = (int)ag_rng_below(rng, (uint32_t)(T - 1));
    if (A == 1) {
        t0[T - 1] = TOK_KEY0 + keys[q1];
        t1[T - 1] = TOK_QUERY;
        y[(T - 1) * A] = values[q1];
    } else {
        /* two different pairs; the second key sits in slot 1 */
        int q2 = (q1 + 1 + (int)ag_rng_below(rng, (uint32_t)(T - 2))) % (T - 1);
        t0[T - 1] = TOK_KEY0 + keys[q1];
        t1[T - 1] = TOK_KEY0 + keys[q2];
        y[(T - 1) * A] = values[q1];
        y[(T - 1) * A + 1] = values[q2];
    }
}

static void sample_reverse(ag_batch *b, int ex, ag_rng *rng)
{
    int T = b->seq;
    int *t0 = b->tok0 + (size_t)ex * T, *t1 = b->tok1 + (size_t)ex * T;
    int *y = b->targets + (size_t)ex * T;
    for (int t = 0; t < T; t++) {
        t0[t] = (int)ag_rng_below(rng, REVERSE_SYMBOLS);
        t1[t] = TOK_PAD;
    }
    for (int t = 0; t < T; t++)
        y[t] = t0[T - 1 - t];
}

void ag_task_sample(ag_batch *b, ag_rng *rng)
{
    for (int ex = 0; b && rng && ex < b->batch; ex++) {
        if (b->kind == AG_TASK_REVERSE)
            sample_reverse(b, ex, rng);
        else
            sample_lookup(b, ex, rng);
    }
}
