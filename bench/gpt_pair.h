/*
 * gpt_pair.h - the GPT's training step behind two functions (gpt_pair.c):
 * what bench/gpt_step.c links in, and what bench/gpt_ab.c and
 * compare_gpt.py --paired load from shared objects with the library in
 * them (bench/step_ab.sh makes DIR/build/gpt_pair.so).
 */
#ifndef GPT_PAIR_H
#define GPT_PAIR_H

/* Make the trainer for a GPT of this shape (vocabulary, layers, dim,
 * heads, seq, batch; the rest at the text task's defaults) on random
 * characters, on threads threads: 0 on success, else -1 with the reason
 * on stderr. */
int gpt_pair_open(int vocab, int layers, int dim, int heads, int seq, int batch, int threads);

/* One training step: its wall time in seconds, or -1 with the reason on
 * stderr. */
double gpt_pair_step(void);

/* The text task's defaults, as `attograd bench gpt` and compare_gpt.py run
 * them: gpt_pair_open(GPT_PAIR_DEFAULTS, threads). */
#define GPT_PAIR_DEFAULTS 65, AG_GPT_LAYERS, AG_GPT_DIM, AG_GPT_HEADS, AG_GPT_SEQ, AG_GPT_BATCH

#endif /* GPT_PAIR_H */
