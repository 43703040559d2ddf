/*
 * dot.h - a tape drawn as a Graphviz graph (dot.c).
 */
#ifndef AG_CLI_DOT_H
#define AG_CLI_DOT_H

#include "attograd.h"

/* A name to show for a tensor (borrowed pointers). */
typedef struct ag_cli_name {
    const ag_tensor *t;
    const char *name;
} ag_cli_name;

/* Write the tape as a Graphviz digraph to path, atomically: nodes are
 * tensors (named from names, else "tN", with their shapes; parameters
 * highlighted), edges are ops. Returns 1, or 0 with err set. */
int ag_cli_write_dot(const char *path, const ag_tape *tape, const ag_cli_name *names,
                     size_t n_names, const char *title, char *err, size_t errlen);

#endif /* AG_CLI_DOT_H */
