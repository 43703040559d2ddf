/*
 * csv.c - training logs as CSV: a header row, then rows of numbers. The log
 * is written to a temporary file beside its path and renamed into place by
 * ag_csv_close, so nobody ever reads half a log and a failed run leaves the
 * previous log as it was.
 */
#include "io.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ag_csv {
    ag_atomic file;   /* the temporary file and its target, owned */
    size_t cols;      /* columns in the header */
    size_t rows;      /* rows written so far */
    ag_status status; /* the first error, sticky */
    char error[AG_IO_SHOW_LEN + 256];
};

ag_status ag_csv_open(const char *path, const char *header, ag_csv **out, char *err, size_t errlen)
{
    if (!out)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_csv_open: out is NULL");
    *out = NULL;
    if (!path || !header)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_csv_open: %s is NULL", path ? "header" : "path");
    char shown[AG_IO_SHOW_LEN];
    ag_io_show(path, shown, sizeof(shown));
    if (!*header || strpbrk(header, "\r\n"))
        return ag_err(AG_ERR_ARG, err, errlen, "%s: the CSV header must be one non-empty line",
                      shown);
    ag_csv *csv = calloc(1, sizeof(*csv));
    if (!csv)
        return ag_err(AG_ERR_NOMEM, err, errlen, "%s: out of memory", shown);
    csv->cols = 1;
    for (const char *c = header; *c; c++)
        csv->cols += *c == ',';
    ag_status st = ag_atomic_open(&csv->file, path, err, errlen);
    if (st != AG_OK) {
        free(csv);
        return st;
    }
    if (fprintf(csv->file.f, "%s\n", header) < 0) {
        st = ag_err(AG_ERR_IO, err, errlen, "%s: cannot write: %s", shown, strerror(errno));
        ag_csv_free(csv);
        return st;
    }
    *out = csv;
    return AG_OK;
}

ag_status ag_csv_row(ag_csv *csv, const double *values, size_t n)
{
    if (!csv)
        return AG_ERR_ARG;
    if (csv->status != AG_OK)
        return csv->status;
    const char *path = csv->file.shown;
    if (n != csv->cols || (n > 0 && !values)) {
        csv->status = AG_ERR_ARG;
        snprintf(csv->error, sizeof(csv->error),
                 "%s: row %zu has %zu values, the header has %zu columns", path, csv->rows + 1,
                 values ? n : 0, csv->cols);
        return csv->status;
    }
    for (size_t i = 0; i < n; i++) {
        /* NaN marks a value this row does not have: an empty field */
        int rc = isnan(values[i])
                     ? fputs(i + 1 < n ? "," : "\n", csv->file.f)
                     : fprintf(csv->file.f, i + 1 < n ? "%.10g," : "%.10g\n", values[i]);
        if (rc < 0) {
            csv->status = AG_ERR_IO;
            snprintf(csv->error, sizeof(csv->error), "%s: cannot write: %s", path, strerror(errno));
            return csv->status;
        }
    }
    csv->rows++;
    return AG_OK;
}

ag_status ag_csv_close(ag_csv *csv, char *err, size_t errlen)
{
    if (!csv)
        return ag_err(AG_ERR_ARG, err, errlen, "ag_csv_close: csv is NULL");
    ag_status st;
    if (csv->status != AG_OK) {
        st = ag_err(csv->status, err, errlen, "%s", csv->error);
        ag_atomic_abort(&csv->file);
    } else {
        st = ag_atomic_commit(&csv->file, err, errlen);
    }
    free(csv);
    return st;
}

void ag_csv_free(ag_csv *csv)
{
    if (!csv)
        return;
    ag_atomic_abort(&csv->file);
    free(csv);
}
