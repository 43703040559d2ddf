/*
 * dot.c - draw a tape as a Graphviz digraph: one node per tensor (its name
 * and shape), one edge per input of every op, labelled with the op. Render
 * it with `dot -Tpng FILE -o tape.png`; Graphviz is not needed to write it.
 */
#include "dot.h"
#include "../io/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The distinct tensors of a tape, in the order they first appear. */
typedef struct node_list {
    const ag_tensor **t;
    int *is_output;          /* made by an entry (1) or only ever an input (0) */
    size_t n, cap;
} node_list;

static long node_find(const node_list *l, const ag_tensor *t)
{
    for (size_t i = 0; i < l->n; i++)   /* linear: explain's tapes have a dozen tensors */
        if (l->t[i] == t)
            return (long)i;
    return -1;
}

static int node_add(node_list *l, const ag_tensor *t, int is_output)
{
    long i = node_find(l, t);
    if (i >= 0) {
        l->is_output[i] |= is_output;
        return 1;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        const ag_tensor **nt = realloc(l->t, cap * sizeof(*nt));
        if (!nt)
            return 0;
        l->t = nt;
        int *no = realloc(l->is_output, cap * sizeof(*no));
        if (!no)
            return 0;
        l->is_output = no;
        l->cap = cap;
    }
    l->t[l->n] = t;
    l->is_output[l->n++] = is_output;
    return 1;
}

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static const char *name_of(const ag_tensor *t, const ag_cli_name *names, size_t n_names)
{
    for (size_t i = 0; i < n_names; i++)
        if (names[i].t == t)
            return names[i].name;
    return NULL;
}

int ag_cli_write_dot(const char *path, const ag_tape *tape, const ag_cli_name *names,
                     size_t n_names, const char *title, char *err, size_t errlen)
{
    node_list nodes = {NULL, NULL, 0, 0};
    ag_entry_info e;
    int ok = 1;
    for (size_t k = 0; ok && ag_tape_entry_info(tape, k, &e) == AG_OK; k++) {
        for (int i = 0; ok && i < e.n_in; i++)
            ok = node_add(&nodes, e.in[i], 0);
        ok = ok && node_add(&nodes, e.out, 1);
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        free(nodes.t);
        free(nodes.is_output);
        return 0;
    }

    ag_atomic file;   /* the file layer's temp + fsync + rename */
    if (ag_atomic_open(&file, path, err, errlen) == AG_OK) {
        FILE *f = file.f;
        fprintf(f, "digraph tape {\n  label=\"");
        put_escaped(f, title ? title : "attograd tape");
        fprintf(f, "\";\n  labelloc=t;\n  rankdir=TB;\n  fontname=\"Helvetica\";\n"
                   "  node [fontname=\"Helvetica\", fontsize=11];\n"
                   "  edge [fontname=\"Helvetica\", fontsize=10];\n");
        for (size_t i = 0; i < nodes.n; i++) {
            const ag_tensor *t = nodes.t[i];
            const char *name = name_of(t, names, n_names);
            char shape[64];
            fprintf(f, "  t%zu [label=\"", i);
            if (name)
                put_escaped(f, name);
            else
                fprintf(f, "t%zu", i);
            fprintf(f, "\\n%s\"", ag_shape_str(t, shape, sizeof(shape)));
            /* parameters (never made by an entry) stand out: they are what learns */
            if (!nodes.is_output[i])
                fprintf(f, ", shape=box, style=filled, fillcolor=\"#ffe9a8\"");
            else if (!t->grad)
                fprintf(f, ", shape=box");
            else
                fprintf(f, ", shape=ellipse");
            fprintf(f, "];\n");
        }
        for (size_t k = 0; ag_tape_entry_info(tape, k, &e) == AG_OK; k++) {
            long out = node_find(&nodes, e.out);
            for (int i = 0; i < e.n_in; i++) {
                fprintf(f, "  t%ld -> t%ld [label=\"%s", node_find(&nodes, e.in[i]), out, e.op);
                if (e.n_in > 1)
                    fprintf(f, " (%c)", 'a' + i);   /* operand order matters: a b != b a */
                fprintf(f, "\"];\n");
            }
        }
        fprintf(f, "}\n");
        ok = ag_atomic_commit(&file, err, errlen) == AG_OK;
    } else {
        ok = 0;
    }
    free(nodes.t);
    free(nodes.is_output);
    return ok;
}
