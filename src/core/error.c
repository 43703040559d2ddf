/*
 * error.c - the library's errors: status names, the tape's sticky error
 * (the first failure is kept, later ops see it and return NULL), and the
 * one formatter of messages into a caller's buffer.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const status_names[] = {
    "ok", "shape", "argument", "nomem", "io", "format", "numeric", "stopped",
};

const char *ag_status_name(ag_status status)
{
    if ((unsigned)status >= sizeof(status_names) / sizeof(status_names[0]))
        return "unknown";
    return status_names[status];
}

ag_status ag_tape_fail(ag_tape *tape, ag_status status, const char *fmt, ...)
{
    if (!tape)
        return AG_ERR_ARG;
    if (tape->status == AG_OK && status != AG_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tape->error, sizeof(tape->error), fmt, ap);
        va_end(ap);
        tape->status = status;
    }
    return tape->status;
}

ag_status ag_err(ag_status status, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}
