/*
 * test_run.c - the tests' own helper for running programs (run.h), on
 * plain system programs: argv arrives exactly, stdout and stderr come back
 * apart, stdin carries bytes both ways without a deadlock, a signal is
 * told from an exit status, stdout can go to a file and PATH be replaced.
 * The command's suites trust all of this.
 */
#include "run.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

START_TEST(test_argv_exact)
{
    char printf_path[256];
    ck_assert_ptr_nonnull(run_which("printf", printf_path, sizeof(printf_path)));
    const char *argv[] = {printf_path, "[%s]", "a b", "", "\t\n", "'q' \"$HOME\" *", NULL};
    run_proc p = run_exec(argv, NULL);
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.out, "[a b][][\t\n]['q' \"$HOME\" *]");
    ck_assert_str_eq(p.err, "");
    run_free(&p);
}
END_TEST

START_TEST(test_streams_apart)
{
    run_proc p = run_shell("echo out; echo err >&2; echo more; exit 3");
    run_assert_status(&p, 3);
    ck_assert_str_eq(p.out, "out\nmore\n");
    ck_assert_str_eq(p.err, "err\n");
    ck_assert_uint_eq(p.out_len, 9);
    run_free(&p);
    p = run_shell("kill -TERM $$");
    ck_assert_int_eq(p.status, -1);
    ck_assert_int_eq(p.signal, SIGTERM);
    run_free(&p);
}
END_TEST

START_TEST(test_stdin)
{
    /* more than a pipe holds each way: reading and writing interleave */
    size_t n = (size_t)1 << 20;
    char *in = malloc(n);
    ck_assert_ptr_nonnull(in);
    for (size_t i = 0; i < n; i++)
        in[i] = (char)(i * 7 + i / 251);
    const char *cat[] = {"/bin/sh", "-c", "cat", NULL};
    run_proc p = run_exec(cat, &(run_opts){.in = in, .in_len = n});
    run_assert_status(&p, 0);
    ck_assert_uint_eq(p.out_len, n);
    ck_assert(memcmp(p.out, in, n) == 0);
    run_free(&p);
    free(in);
    /* a string, an empty stdin, and /dev/null by default */
    p = run_exec(cat, &(run_opts){.in = "one line\n"});
    ck_assert_str_eq(p.out, "one line\n");
    run_free(&p);
    p = run_exec(cat, &(run_opts){.in = ""});
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.out, "");
    run_free(&p);
    p = run_exec(cat, NULL);
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.out, "");
    run_free(&p);
    /* a child that reads none of it still finishes, and so do we */
    const char *head[] = {"/bin/sh", "-c", "exit 4", NULL};
    p = run_exec(head, &(run_opts){.in = "x", .in_len = 1});
    run_assert_status(&p, 4);
    run_free(&p);
}
END_TEST

START_TEST(test_out_file_and_path)
{
    char dir[256], file[300], listing[64];
    file_tmpdir(dir, sizeof(dir));
    file_path(file, sizeof(file), dir, "out.txt");
    file_write(file, "old content, longer\n", 20);
    const char *argv[] = {"/bin/sh", "-c", "echo \"$PATH\"; echo note >&2", NULL};
    run_proc p = run_exec(argv, &(run_opts){.out_file = file, .path = "/nowhere:/either"});
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.out, "");
    ck_assert_str_eq(p.err, "note\n");
    run_free(&p);
    size_t len;
    char *text = file_read(file, &len);
    ck_assert_str_eq(text, "/nowhere:/either\n"); /* truncated, then written */
    ck_assert_uint_eq(len, 17);
    free(text);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "out.txt");
    file_rmdir(dir);
    ck_assert_int_ne(access(dir, F_OK), 0);
    ck_assert_ptr_null(file_read(file, NULL));
}
END_TEST

START_TEST(test_which_and_text)
{
    char buf[256];
    ck_assert_ptr_nonnull(run_which("sh", buf, sizeof(buf)));
    ck_assert_int_eq(access(buf, X_OK), 0);
    ck_assert(run_have("sh"));
    ck_assert(!run_have("attograd-no-such-program"));
    const char *text = "alpha 1\nbeta 2\n  gamma\nbeta 3\n\n";
    ck_assert_ptr_eq(text_line(text, "beta "), text + 8);
    ck_assert_ptr_null(text_line(text, "gamma")); /* only at the start of a line */
    ck_assert_str_eq(text_last_line("a\nb\nlast\n\n", buf, sizeof(buf)), "last");
    ck_assert_str_eq(text_last_line("", buf, sizeof(buf)), "");
}
END_TEST

Suite *suite_run(void)
{
    Suite *s = suite_create("run");
    TCase *tc = tcase_create("helper");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_argv_exact);
    tcase_add_test(tc, test_streams_apart);
    tcase_add_test(tc, test_stdin);
    tcase_add_test(tc, test_out_file_and_path);
    tcase_add_test(tc, test_which_and_text);
    suite_add_tcase(s, tc);
    return s;
}
