/*
 * tape_file.c - a tape's Graphviz drawing (ag_tape_dot) saved to a file the
 * way every file here is written: a temporary file beside it, fsync and
 * rename, so a failure never leaves half a graph.
 */
#include "io.h"

#include <errno.h>
#include <string.h>

ag_status ag_tape_dot_save(const ag_tape *tape, const char *path, const ag_tensor_name *names,
                           size_t n_names, const char *title, char *err, size_t errlen)
{
    ag_atomic file;
    ag_status st = ag_atomic_open(&file, path, err, errlen);
    if (st != AG_OK)
        return st;
    st = ag_tape_dot(tape, file.f, names, n_names, title);
    int e = errno; /* the write's (ag_tape_dot flushes), as every writer says it */
    if (st != AG_OK) {
        ag_atomic_abort(&file);
        if (st == AG_ERR_IO)
            return ag_err(st, err, errlen, "%s: cannot write: %s", path, strerror(e));
        return ag_err(st, err, errlen, "%s: %s", path,
                      st == AG_ERR_NOMEM ? "out of memory" : "cannot write the graph");
    }
    return ag_atomic_commit(&file, err, errlen);
}
