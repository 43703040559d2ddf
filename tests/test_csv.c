/*
 * test_csv.c - CSV training logs: the rows written, the file appearing only
 * on close, and errors that leave the previous log alone.
 */
#include "test_util.h"
#include "test_files.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file's text (at most 4095 bytes) in buf. */
static const char *contents(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(test_csv_rows)
{
    char dir[64], path[128], err[256], text[4096];
    snprintf(path, sizeof(path), "%s/train.csv", test_mkdir(dir));
    ag_csv *log;
    ck_assert_int_eq(ag_csv_open(path, "step,loss,accuracy", &log, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_csv_row(log, (double[]){0, 1.5, 0.25}, 3), AG_OK);
    ck_assert_int_eq(ag_csv_row(log, (double[]){100, 0.0123456789012, 1}, 3), AG_OK);
    /* nothing at path until close: the log is written beside it */
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(ag_csv_close(log, err, sizeof(err)), AG_OK);
    ck_assert_str_eq(contents(path, text, sizeof(text)),
                     "step,loss,accuracy\n0,1.5,0.25\n100,0.0123456789,1\n");
    ck_assert_int_eq(test_count_entries(dir), 1);
    test_rmdir(dir);
}
END_TEST

START_TEST(test_csv_errors)
{
    char dir[64], path[128], err[256], want[300], text[4096];
    snprintf(path, sizeof(path), "%s/train.csv", test_mkdir(dir));
    ag_csv *log = NULL;

    /* a first, good log */
    ck_assert_int_eq(ag_csv_open(path, "step,loss", &log, err, sizeof(err)), AG_OK);
    ag_csv_row(log, (double[]){1, 2}, 2);
    ck_assert_int_eq(ag_csv_close(log, err, sizeof(err)), AG_OK);

    /* a row of the wrong width: sticky, reported at close, old log kept */
    ck_assert_int_eq(ag_csv_open(path, "step,loss", &log, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_csv_row(log, (double[]){1, 2}, 2), AG_OK);
    ck_assert_int_eq(ag_csv_row(log, (double[]){1, 2, 3}, 3), AG_ERR_ARG);
    ck_assert_int_eq(ag_csv_row(log, (double[]){1, 2}, 2), AG_ERR_ARG);
    ck_assert_int_eq(ag_csv_close(log, err, sizeof(err)), AG_ERR_ARG);
    snprintf(want, sizeof(want), "%s: row 2 has 3 values, the header has 2 columns", path);
    ck_assert_str_eq(err, want);
    ck_assert_str_eq(contents(path, text, sizeof(text)), "step,loss\n1,2\n");
    ck_assert_int_eq(test_count_entries(dir), 1);

    /* discarded with ag_csv_free: old log kept, no temporary file */
    ck_assert_int_eq(ag_csv_open(path, "a", &log, err, sizeof(err)), AG_OK);
    ag_csv_row(log, (double[]){5}, 1);
    ag_csv_free(log);
    ag_csv_free(NULL);
    ck_assert_str_eq(contents(path, text, sizeof(text)), "step,loss\n1,2\n");
    ck_assert_int_eq(test_count_entries(dir), 1);

    /* bad headers and paths */
    ck_assert_int_eq(ag_csv_open(path, "a\nb", &log, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_ptr_null(log);
    snprintf(want, sizeof(want), "%s: the CSV header must be one non-empty line", path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ag_csv_open(path, "", &log, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, want);
    snprintf(want, sizeof(want), "%s/no/train.csv", dir);
    ck_assert_int_eq(ag_csv_open(want, "a", &log, err, sizeof(err)), AG_ERR_IO);
    strcat(want, ": cannot create a temporary file beside it: No such file or directory");
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ag_csv_close(NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_csv_close: csv is NULL");
    ck_assert_int_eq(ag_csv_row(NULL, (double[]){1}, 1), AG_ERR_ARG);

    test_rmdir(dir);
}
END_TEST

Suite *suite_csv(void)
{
    Suite *s = suite_create("csv");
    TCase *tc = tcase_create("log");
    tcase_add_test(tc, test_csv_rows);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_csv_errors);
    suite_add_tcase(s, tc);
    return s;
}
