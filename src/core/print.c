/*
 * print.c - tensors printed in the numpy style:
 * [[0.40 0.20 0.40]
 *  [0.20 0.40 0.40]]
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>

static int value_width(ag_real v, int decimals)
{
    char s[64];
    return snprintf(s, sizeof(s), "%.*f", decimals, (double)v);
}

static void print_values(FILE *f, const ag_tensor *t, const ag_real *v, int decimals)
{
    int width = 1;
    for (size_t i = 0; i < t->size; i++) {
        int w = value_width(v[i], decimals);
        if (w > width)
            width = w;
    }
    /* span[d]: elements inside one bracket of axis d. A bracket of axis d
     * opens before element i when i % span[d] == 0 and closes after it when
     * (i + 1) % span[d] == 0. */
    size_t span[AG_MAX_DIMS];
    span[t->ndim - 1] = (size_t)t->shape[t->ndim - 1];
    for (int d = t->ndim - 2; d >= 0; d--)
        span[d] = span[d + 1] * (size_t)t->shape[d];
    size_t cols = span[t->ndim - 1];
    for (size_t i = 0; i < t->size; i++) {
        if (i % cols == 0) {
            int open = 0;
            for (int d = 0; d < t->ndim; d++)
                open += i % span[d] == 0;
            if (i > 0) {
                /* one newline per row, a blank line between 2-D blocks */
                for (int k = 0; k < open; k++)
                    fputc('\n', f);
                for (int k = 0; k < t->ndim - open; k++)
                    fputc(' ', f);
            }
            for (int k = 0; k < open; k++)
                fputc('[', f);
        } else {
            fputc(' ', f);
        }
        fprintf(f, "%*.*f", width, decimals, (double)v[i]);
        for (int d = 0; d < t->ndim; d++)
            if ((i + 1) % span[d] == 0)
                fputc(']', f);
    }
    fputc('\n', f);
}

void ag_tensor_print(FILE *f, const ag_tensor *t, int decimals)
{
    if (!t) {
        fprintf(f, "NULL\n");
        return;
    }
    print_values(f, t, t->data, decimals < 0 ? 4 : decimals);
}

void ag_tensor_print_grad(FILE *f, const ag_tensor *t, int decimals)
{
    if (!t || !t->grad) {
        fprintf(f, "None\n");
        return;
    }
    print_values(f, t, t->grad, decimals < 0 ? 4 : decimals);
}
