/*
 * inspect.c - read-only views of the tape's entries, so a program (such as
 * `attograd explain attention`) can print or draw a step without knowing
 * the tape's private layout: one entry at a time (ag_tape_entry_info), or
 * the whole step as a Graphviz drawing with values and gradients
 * (ag_tape_dot). Both only read the tape.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(AG_ENTRY_MAX_INPUTS == AG_MAX_INPUTS, "ag_entry_info holds every input");

ag_status ag_tape_entry_info(const ag_tape *tape, size_t k, ag_entry_info *info)
{
    if (!tape || !info || k >= tape->n_entries)
        return AG_ERR_ARG;
    const ag_entry *e = &tape->entries[k];
    memset(info, 0, sizeof(*info));
    info->op = e->op->name;
    info->n_in = e->n_in;
    for (int i = 0; i < e->n_in; i++)
        info->in[i] = e->in[i];
    info->out = e->out;
    info->arg = e->op->flags & AG_OP_SHOWS_ARG ? e->arg : 0;
    return AG_OK;
}

size_t ag_tape_consumers(const ag_tape *tape, const ag_tensor *t, size_t *entries, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; tape && t && k < tape->n_entries; k++) {
        const ag_entry *e = &tape->entries[k];
        for (int i = 0; i < e->n_in; i++) {
            if (e->in[i] != t)
                continue;
            if (entries && n < max)
                entries[n] = k;
            n++;
            break; /* an entry that takes t twice counts once */
        }
    }
    return n;
}

/* ---- ag_tape_dot ---- */

/* The distinct tensors of a tape, in the order they first appear. */
typedef struct node_list {
    const ag_tensor **t; /* (cap) */
    unsigned char *made; /* (cap) made by an entry (1) or only ever an input (0) */
    size_t n, cap;
} node_list;

static long node_find(const node_list *l, const ag_tensor *t)
{
    for (size_t i = l->n; i-- > 0;) /* recent tensors are the likely ones */
        if (l->t[i] == t)
            return (long)i;
    return -1;
}

static int node_add(node_list *l, const ag_tensor *t, int made)
{
    long i = node_find(l, t);
    if (i >= 0) {
        l->made[i] |= (unsigned char)made;
        return 1;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        if (cap > SIZE_MAX / sizeof(*l->t))
            return 0;
        const ag_tensor **nt = ag_realloc(l->t, cap * sizeof(*nt));
        if (!nt)
            return 0;
        l->t = nt;
        unsigned char *nm = ag_realloc(l->made, cap);
        if (!nm)
            return 0;
        l->made = nm;
        l->cap = cap;
    }
    l->t[l->n] = t;
    l->made[l->n++] = (unsigned char)made;
    return 1;
}

/* s inside a record label: the characters that shape a record are escaped. */
static void put_record_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (strchr("\"\\{}|<> ", *s))
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* The first values of v (t's data or gradient) as left-aligned lines of a
 * record field: up to DOT_ROWS rows of the last axis, DOT_COLS values each. */
enum { DOT_ROWS = 3, DOT_COLS = 4 };
/* v NULL: zeros (a gradient backward has not written yet) */
static void put_values(FILE *f, const ag_tensor *t, const ag_real *v)
{
    size_t cols = (size_t)t->shape[t->ndim - 1], rows = t->size / cols;
    for (size_t i = 0; i < rows && i < DOT_ROWS; i++) {
        for (size_t j = 0; j < cols && j < DOT_COLS; j++) {
            double x = v ? (double)v[i * cols + j] : 0;
            char num[48];
            /* four decimals, as `attograd explain` prints; huge ones as 1.234e+05 */
            snprintf(num, sizeof(num), fabs(x) >= 1e4 && !isinf(x) ? " %.3e" : " %8.4f", x);
            put_record_text(f, num); /* its spaces kept: the columns line up */
        }
        fputs(cols > DOT_COLS ? "\\ ...\\l" : "\\l", f);
    }
    if (rows > DOT_ROWS)
        fputs("\\ ...\\l", f);
}

ag_status ag_tape_dot(const ag_tape *tape, FILE *f, const ag_tensor_name *names, size_t n_names,
                      const char *title)
{
    if (!tape || !f || (n_names && !names))
        return AG_ERR_ARG;
    node_list nodes = {NULL, NULL, 0, 0};
    ag_entry_info e;
    int ok = 1;
    for (size_t k = 0; ok && ag_tape_entry_info(tape, k, &e) == AG_OK; k++) {
        for (int i = 0; ok && i < e.n_in; i++)
            ok = node_add(&nodes, e.in[i], 0);
        ok = ok && node_add(&nodes, e.out, 1);
    }
    if (!ok) {
        free(nodes.t);
        free(nodes.made);
        return AG_ERR_NOMEM;
    }

    fputs("digraph tape {\n  label=\"", f);
    for (const char *s = title ? title : "attograd tape"; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputs("\";\n  labelloc=t;\n  rankdir=TB;\n  fontname=\"Helvetica\";\n"
          "  node [fontname=\"Courier\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9];\n",
          f);
    /* tensors: name and shape, values, gradient (micrograd's drawing, with
     * matrices in place of scalars) */
    for (size_t i = 0; i < nodes.n; i++) {
        const ag_tensor *t = nodes.t[i];
        const char *name = NULL;
        for (size_t j = 0; j < n_names && !name; j++)
            if (names[j].t == t)
                name = names[j].name;
        char label[32], shape[64];
        if (!name) {
            snprintf(label, sizeof(label), "t%zu", i);
            name = label;
        }
        fprintf(f, "  t%zu [shape=record, label=\"{", i);
        put_record_text(f, name);
        fputc(' ', f);
        put_record_text(f, ag_shape_str(t, shape, sizeof(shape)));
        fputs("|{data\\l", f);
        put_values(f, t, t->data);
        if (t->grad) {
            fputs("|grad\\l", f);
            put_values(f, t, ag_grad_is_unset(tape, t) ? NULL : t->grad);
        } else {
            fputs("|no gradient\\l", f);
        }
        fputs("}}\"", f);
        /* parameters (never made by an entry) stand out: they are what learns */
        if (!nodes.made[i])
            fputs(", style=filled, fillcolor=\"#ffe9a8\"", f);
        else if (!t->grad)
            fputs(", style=filled, fillcolor=\"#eeeeee\"", f);
        fputs("];\n", f);
    }
    /* entries: an op node between its inputs and its output; a leaf (data
     * put on the tape) is its tensor alone */
    for (size_t k = 0; ag_tape_entry_info(tape, k, &e) == AG_OK; k++) {
        if (e.n_in == 0)
            continue;
        fprintf(f, "  e%zu [shape=ellipse, fontname=\"Helvetica\", label=\"%s", k, e.op);
        if (e.arg != 0)
            fprintf(f, " %.4g", e.arg);
        fprintf(f, "\"];\n");
        for (int i = 0; i < e.n_in; i++) {
            fprintf(f, "  t%ld -> e%zu", node_find(&nodes, e.in[i]), k);
            if (e.n_in > 1) /* operand order matters: a b != b a */
                fprintf(f, " [label=\"%c\"]", 'a' + i);
            fputs(";\n", f);
        }
        fprintf(f, "  e%zu -> t%ld;\n", k, node_find(&nodes, e.out));
    }
    fputs("}\n", f);
    free(nodes.t);
    free(nodes.made);
    /* flushed first: a stream's buffer holds the last error until it is written */
    return fflush(f) != 0 || ferror(f) ? AG_ERR_IO : AG_OK;
}
