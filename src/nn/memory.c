/*
 * memory.c - what a run needs at most, from its settings alone (nn.h's
 * ag_memory), so that a program can refuse a run that cannot fit before
 * it allocates anything, for settings from flags and from a file alike.
 *
 * Each part is an upper bound of what the library allocates for it. The
 * tape's parts count, per position of a step, the tensors each op makes
 * (data, and with training a gradient of the same size) and the buffers
 * ops save for backward, rounded up; the tests hold them against what the
 * tape really used (ag_tape_peak_bytes) over a range of models. Bytes are
 * doubles, so that settings no machine could hold still compare instead
 * of overflowing.
 */
#include "gpt.h"
#include "../kernels/kernels.h"
#include "../kernels/threads.h"

#include <string.h>

#define REAL ((double)sizeof(ag_real))
#define MB (1024.0 * 1024.0)
#define PROGRAM_BYTES (32 * MB)     /* the program, libc, the tape's entry list */
#define TAPE_LAYER_VALUES 69632.0   /* a block's fixed part: scratch, alignment, nodes */
#define TAPE_FIXED_VALUES 16384.0   /* the same outside the blocks */
#define VOCAB_BITS (0x110000 / 8.0) /* reading a text: one bit per code point */
#define SAVE_LAYER_BYTES 16384.0    /* a checkpoint's entries for a block's tensors */
#define SAVE_FIXED_BYTES 65536.0    /* the rest of them, the header, stdio's buffer */

/* The program with `threads` threads: each has its packing buffer for
 * products, and each but the caller's reserves a stack. Both count in full
 * against ulimit -v, even where their pages stay untouched. */
static double program_bytes(int threads)
{
    double n = threads > 1 ? threads : 1;
    return PROGRAM_BYTES + n * (double)ag_gemm_thread_bytes() +
           (n - 1) * (double)ag_thread_stack_bytes();
}

static void add(ag_memory *m, const char *what, double bytes)
{
    if (bytes <= 0 || m->n >= AG_MEMORY_PARTS)
        return;
    m->part[m->n].what = what;
    m->part[m->n].bytes = bytes;
    m->n++;
    m->total += bytes;
}

double ag_gpt_config_weights(const ag_gpt_config *c)
{
    double V = c->vocab, T = c->seq, C = c->dim, ln = !c->no_layernorm, b = c->bias != 0;
    double norm = ln * C * (1 + b); /* a layer norm's weight and bias */
    double attn = norm + 4 * C * C + b * 4 * C;
    double mlp = c->no_mlp ? 0 : norm + 8 * C * C + b * 5 * C;
    return V * C + (c->no_posenc ? 0 : T * C) + c->layers * (attn + mlp) + norm;
}

/* The fused attention's backward scratch in one block, for B windows of T
 * positions: it goes through the windows a chunk at a time (at most 512
 * positions, at least one window), and its tiles pad T to whole tiles of
 * queries (64 at the most), which is what counts when T is small. A
 * sequence of one tile block may keep its weights from forward, a tile per
 * head: as many as the kernel in use keeps for the GPT's causal heads. */
static double attn_scratch(double B, double T, double C, double H)
{
    double chunk = 512 / T < 1 ? 1 : (double)(long)(512 / T);
    chunk = chunk < B ? chunk : B;
    double tpad = 64 * (double)(long)((T + 63) / 64);
    /* (T is at most 65536 in a model, but the estimate takes any double) */
    size_t t = T <= 65536 ? (size_t)T : 65536, dh = (size_t)(C / H);
    double tile = (double)ag_attn_kept_tile(t, dh, 1);
    double kept = B * H * tile * tile;
    return chunk * tpad * (2 * C + H) + 8 * chunk * T * C + kept;
}

/* The training step's tape for a batch of B windows: per block, per
 * position, the attention half (its layer norm, Q, K, V, the fused op's
 * saved copies and backward scratch, the projection and the residual), the
 * MLP half (4C wide twice), the biases' op-by-op attention with its (T, T)
 * weights, dropout's outputs and masks; then the embeddings, the final
 * norm and the head's logits, their gradient and softmax. In values. */
static double step_values(const ag_gpt_config *c, double B)
{
    double T = c->seq, C = c->dim, H = c->heads, V = c->vocab;
    double btc = B * T * C, bt = B * T, bht = B * H * T;
    double mlp = !c->no_mlp, ln = !c->no_layernorm, bias = c->bias != 0, drop = c->dropout > 0;
    double block = 40 * btc + 4 * bht + 8 * bt + mlp * 22 * btc + ln * 2 * btc * (1 + mlp) +
                   bias * (10 * bht * T + 24 * btc) + drop * 4 * btc * (1 + mlp) +
                   (bias ? 0 : attn_scratch(B, T, C, H)) + TAPE_LAYER_VALUES;
    double head = 12 * btc + 2 * T * C + 4 * bt * V + 16 * bt + TAPE_FIXED_VALUES;
    return c->layers * block + head;
}

/* The validation's tape and buffers for a chunk of W windows, forward only:
 * one block at a time, then the head AG_GPT_HEAD_VALUES logits at a time. */
static double val_values(const ag_gpt_config *c, double W)
{
    double T = c->seq, C = c->dim, H = c->heads, V = c->vocab;
    double btc = W * T * C, bht = W * H * T;
    double block =
        24 * btc + 4 * bht + 8 * W * T + (c->bias ? 5 * bht * T + 12 * btc : 0) + TAPE_LAYER_VALUES;
    double rows = (double)ag_gpt_head_rows(c);
    rows = rows < W * T ? rows : W * T;
    double head = 4 * btc + rows * (V + C) + 16 * W * T + TAPE_FIXED_VALUES;
    double buffers = btc + 2 * W * T; /* the stream between blocks; the ids (ints) */
    return (c->layers ? block : 0) + head + buffers;
}

void ag_gpt_memory(const ag_gpt_config *c, const ag_gpt_run *run, ag_memory *m)
{
    memset(m, 0, sizeof(*m));
    double W = ag_gpt_config_weights(c) * REAL, T = c->seq, C = c->dim, V = c->vocab;
    add(m, "the weights", W);
    if (run->batch > 0) {
        /* the batch in two halves, the second adding into the model's
         * twin's gradients (gpt_twin.c): at once, each on its own tape;
         * one after the other, on one tape (gpt.h) */
        double B = run->batch, first = (double)ag_gpt_first_half((size_t)run->batch);
        double second = B - first;
        int at_once = ag_gpt_halves_at_once(ag_gpt_halves((size_t)run->batch), run->threads);
        add(m, "their gradients", W * (second > 0 ? 2 : 1));
        add(m, "AdamW's state", 2 * W);
        double tapes = step_values(c, first) + (at_once ? step_values(c, second) : 0);
        add(m, "a training step", tapes * REAL + 2 * B * T * sizeof(int));
        if (run->save) /* the file is made as it is written: its list of tensors */
            add(m, "writing the checkpoint", SAVE_FIXED_BYTES + c->layers * SAVE_LAYER_BYTES);
    }
    if (run->validate) { /* a chunk of windows in two halves, as the step's */
        size_t chunk = ag_gpt_val_chunk(c), first = ag_gpt_first_half(chunk),
               second = chunk - first;
        int at_once = ag_gpt_halves_at_once(ag_gpt_halves(chunk), run->threads);
        double val = val_values(c, (double)first) + (at_once ? val_values(c, (double)second) : 0);
        add(m, "the validation", val * REAL);
    }
    if (run->sample)
        add(m, "sampling", (2 * c->layers * T * C + 9 * C + T + V) * REAL + 8 * V + 4 * T);
    /* the file, whose bytes one-byte ids replace; wider ones are made beside it */
    int id = ag_text_id_size(c->vocab);
    if (run->text_bytes > 0)
        add(m, "the text", run->text_bytes * (id == 1 ? 1 : 1 + id) + VOCAB_BITS);
    if (run->file_bytes > 0) /* the file, and its weights on the way into the model */
        add(m, "the checkpoint read", run->file_bytes + W);
    add(m, "the program", program_bytes(run->threads));
}

void ag_train_memory(const ag_train_config *c, int threads, double file_bytes, ag_memory *m)
{
    memset(m, 0, sizeof(*m));
    const ag_model_config *mc = &c->model;
    const char *names[AG_MODEL_MAX_PARAMS];
    int shape[AG_MODEL_MAX_PARAMS][2];
    size_t n = ag_model_layout(mc, names, shape);
    double W = 0;
    for (size_t i = 0; i < n; i++)
        W += (double)shape[i][0] * (double)shape[i][1];
    W *= REAL;
    int slots = c->optimizer_adam ? 2 : c->momentum > 0 ? 1 : 0;
    add(m, "the weights", W);
    add(m, "their gradients", W);
    add(m, "the optimizer's state", slots * W);
    /* one tape for the steps, the held-out evaluation (AG_TRAINER_HELD_OUT
     * examples, gradients on) and the example shown (its (T, T) weights) */
    double T = mc->seq, d = mc->dim, H = mc->heads;
    double AC = (double)ag_task_answers(mc->task) * ag_task_classes(mc->task);
    double B = c->batch > AG_TRAINER_HELD_OUT ? c->batch : AG_TRAINER_HELD_OUT;
    double row = 24 * d + 5 * AC + 8 * H + 32;
    add(m, "a step and the held-out evaluation",
        (B * T * row + 10 * H * T * T + T * row + attn_scratch(B, T, d, H) +
         2 * TAPE_LAYER_VALUES) *
            REAL);
    add(m, "the batches", (c->batch + AG_TRAINER_HELD_OUT) * T * (3 + AC) * sizeof(int));
    if (file_bytes > 0)
        add(m, "the checkpoint read", file_bytes);
    add(m, "the program", program_bytes(threads));
}
