/*
 * model_print.c - what the toy model does with one example, as text: where
 * each position looks (its attention weights, shaded) and what it answers.
 */
#include "nn.h"

#include <math.h>
#include <stdio.h>

void ag_model_print_attention(FILE *f, const ag_batch *b, const ag_tensor *attn,
                              const ag_tensor *logits)
{
    static const char shades[] = " .:-=+*#%@";
    if (!f || !b || !attn || !logits || attn->ndim != 4)
        return;
    int H = attn->shape[1], T = attn->shape[2], A = b->answers;
    char label[32];
    for (int h = 0; h < H; h++) {
        if (H > 1)
            fprintf(f, "head %d:\n", h + 1);
        fprintf(f, "  %-9s", "");
        for (int j = 0; j < T; j++)
            fprintf(f, " %8s", ag_task_token_label(b, 0, j, label, sizeof(label)));
        fprintf(f, "\n");
        for (int i = 0; i < T; i++) {
            fprintf(f, "  %-9s", ag_task_token_label(b, 0, i, label, sizeof(label)));
            for (int j = 0; j < T; j++) {
                double p = attn->data[(((size_t)h * T) + i) * T + j];
                /* the shade of the weight as printed: a cell that says 0.10 gets '.' */
                long shade = lround(p * 100) / 10;
                fprintf(f, "   %4.2f %c", p, shades[shade < 0 ? 0 : shade > 9 ? 9 : shade]);
            }
            /* what this position answered, where it was asked something */
            const int *y = b->targets + (size_t)i * A;
            for (int a = 0; a < A; a++) {
                if (y[a] < 0)
                    continue;
                int best = ag_model_answer(b, logits, 0, i, a);
                char got[16], want[16];
                fprintf(f, "%s %s (want %s)", a ? "," : "  ->",
                        ag_task_class_label(b->kind, best, got, sizeof(got)),
                        ag_task_class_label(b->kind, y[a], want, sizeof(want)));
            }
            fprintf(f, "\n");
        }
    }
}
