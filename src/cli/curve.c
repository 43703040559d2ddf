/*
 * curve.c - a training run's numbers kept for a plot: at most cap rows of
 * (step, values), allocated once so that adding one never allocates, and
 * thinned to every stride-th step so that a long run keeps its shape.
 */
#include "curve.h"
#include "../core/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

ag_status ag_curve_init(ag_curve *c, int width, size_t cap, long stride)
{
    if (!c)
        return AG_ERR_ARG;
    memset(c, 0, sizeof(*c));
    if (width < 1 || cap < 1 || stride < 1 || cap > SIZE_MAX / sizeof(double) / ((size_t)width + 1))
        return AG_ERR_ARG;
    c->rows = ag_calloc(cap * ((size_t)width + 1), sizeof(double));
    if (!c->rows)
        return AG_ERR_NOMEM;
    c->cap = cap;
    c->width = width;
    c->stride = stride;
    return AG_OK;
}

ag_status ag_curve_init_thinned(ag_curve *c, int width, long steps, size_t max_points)
{
    if (steps < 1 || max_points < 1) {
        if (c)
            memset(c, 0, sizeof(*c));
        return AG_ERR_ARG;
    }
    size_t cap = (unsigned long)steps < max_points ? (size_t)steps : max_points;
    long stride = (long)(((unsigned long)steps - 1) / cap + 1); /* ceil, without overflow */
    return ag_curve_init(c, width, cap, stride);
}

int ag_curve_add(ag_curve *c, long step, const double *values)
{
    if (!c || !c->rows || !values || (step - 1) % c->stride != 0 || c->n == c->cap)
        return 0;
    double *row = c->rows + c->n++ * ((size_t)c->width + 1);
    row[0] = (double)step;
    memcpy(row + 1, values, (size_t)c->width * sizeof(double));
    return 1;
}

void ag_curve_write(const ag_curve *c, FILE *f)
{
    if (!c || !f)
        return;
    for (size_t i = 0; i < c->n; i++) {
        const double *row = c->rows + i * ((size_t)c->width + 1);
        fprintf(f, "%.0f", row[0]);
        for (int k = 1; k <= c->width; k++)
            fprintf(f, " %.9g", row[k]);
        fprintf(f, "\n");
    }
}

void ag_curve_free(ag_curve *c)
{
    if (!c)
        return;
    free(c->rows);
    memset(c, 0, sizeof(*c));
}
