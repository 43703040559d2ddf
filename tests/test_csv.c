/*
 * test_csv.c - CSV training logs: the rows written, the file appearing only
 * on close, and errors that leave the previous log alone.
 */
#include "test_util.h"
#include "run.h"

#include <unistd.h>

/* Assert that the file at path holds exactly want. */
static void assert_contents(const char *path, const char *want)
{
    char *text = file_read(path, NULL);
    ck_assert_str_eq(text, want);
    free(text);
}

START_TEST(test_csv_rows)
{
    char dir[256], path[512], err[768], listing[1024];
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "train.csv");
    ag_csv *log;
    ck_assert_int_eq(ag_csv_open(path, "step,loss,accuracy", &log, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_csv_row(log, (double[]){0, 1.5, 0.25}, 3), AG_OK);
    ck_assert_int_eq(ag_csv_row(log, (double[]){100, 0.0123456789012, 1}, 3), AG_OK);
    /* nothing at path until close: the log is written beside it */
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(ag_csv_close(log, err, sizeof(err)), AG_OK);
    assert_contents(path, "step,loss,accuracy\n0,1.5,0.25\n100,0.0123456789,1\n");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "train.csv");
    file_rmdir(dir);
}
END_TEST

START_TEST(test_csv_errors)
{
    char dir[256], path[512], err[768], want[768], listing[1024];
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "train.csv");
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
    assert_contents(path, "step,loss\n1,2\n");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "train.csv");

    /* discarded with ag_csv_free: old log kept, no temporary file */
    ck_assert_int_eq(ag_csv_open(path, "a", &log, err, sizeof(err)), AG_OK);
    ag_csv_row(log, (double[]){5}, 1);
    ag_csv_free(log);
    ag_csv_free(NULL);
    assert_contents(path, "step,loss\n1,2\n");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "train.csv");

    /* bad headers and paths */
    ck_assert_int_eq(ag_csv_open(path, "a\nb", &log, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_ptr_null(log);
    snprintf(want, sizeof(want), "%s: the CSV header must be one non-empty line", path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ag_csv_open(path, "", &log, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, want);
    snprintf(want, sizeof(want), "%s/no/train.csv", dir);
    ck_assert_int_eq(ag_csv_open(want, "a", &log, err, sizeof(err)), AG_ERR_IO);
    strcat(want, ": cannot write there: directory '");
    strcat(want, dir);
    strcat(want, "/no': No such file or directory");
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ag_csv_close(NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_csv_close: csv is NULL");
    ck_assert_int_eq(ag_csv_row(NULL, (double[]){1}, 1), AG_ERR_ARG);

    file_rmdir(dir);
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
