/*
 * dot.h - a tape drawn as a picture by Graphviz (dot.c), from the
 * library's ag_tape_dot.
 */
#ifndef AG_CLI_DOT_H
#define AG_CLI_DOT_H

#include "attograd.h"
#include "../io/io.h"

/* The tape's drawing (ag_tape_dot) rendered to a PNG at png by Graphviz's
 * dot, when it is installed (written beside png and renamed into place once
 * dot has succeeded). Returns 1, or 0 with err set: dot missing or failing. */
int ag_cli_render_dot(const char *png, const ag_tape *tape, const ag_tensor_name *names,
                      size_t n_names, const char *title, char *err, size_t errlen);

#endif /* AG_CLI_DOT_H */
