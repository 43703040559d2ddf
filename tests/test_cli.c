/*
 * test_cli.c - the attograd command and the seed example, run as programs:
 * the demo's exact output, the example's identical output, and the exit
 * status contract (0 ok, 2 bad usage with a message naming the problem).
 * `make test` sets AG_BIN (the command) and AG_EXAMPLES (the examples' dir).
 */
#include "test_util.h"
#include "cli_run.h"
#include "cmd_run.h"

static const char seed_output[] = "weights:\n"
                                  "[[0.40 0.20 0.40]\n"
                                  " [0.20 0.40 0.40]\n"
                                  " [0.25 0.25 0.50]]\n"
                                  "output:\n"
                                  "[[0.80 0.60]\n"
                                  " [0.60 0.80]\n"
                                  " [0.75 0.75]]\n";

/* The directory of the built examples (fails the test when AG_EXAMPLES is
 * not set); the command itself is cmd_bin(). */
static const char *examples_dir(void)
{
    const char *v = getenv("AG_EXAMPLES");
    ck_assert_msg(v && *v, "AG_EXAMPLES is not set: run the tests with `make test` or `make check`");
    return v;
}

START_TEST(test_demo_output)
{
    int status;
    char *out = cmd_run(&status, "'%s' demo", cmd_bin());
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(out, seed_output);
    free(out);
}
END_TEST

START_TEST(test_seed_example_output)
{
    int status;
    char *out = cmd_run(&status, "'%s/seed_attention'", examples_dir());
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(out, seed_output);
    free(out);
}
END_TEST

START_TEST(test_demo_full_precision)
{
    int status;
    char *out = cmd_run(&status, "'%s' demo --decimals 6", cmd_bin());
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(out, "weights:\n"
                          "[[0.401112 0.197776 0.401112]\n"
                          " [0.197776 0.401112 0.401112]\n"
                          " [0.248255 0.248255 0.503490]]\n"
                          "output:\n"
                          "[[0.802224 0.598888]\n"
                          " [0.598888 0.802224]\n"
                          " [0.751745 0.751745]]\n");
    free(out);
    /* --decimals=N is the same option */
    out = cmd_run(&status, "'%s' demo --decimals=0", cmd_bin());
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(out, "weights:\n[[0 0 0]\n [0 0 0]\n [0 0 1]]\noutput:\n[[1 1]\n [1 1]\n [1 1]]\n");
    free(out);
}
END_TEST

START_TEST(test_cli_help)
{
    int status;
    char *out = cmd_run(&status, "'%s' --help", cmd_bin());
    ck_assert_int_eq(status, 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: attograd <command> [options]"));
    ck_assert_ptr_nonnull(strstr(out, "demo"));
    free(out);
    out = cmd_run(&status, "'%s' demo --help", cmd_bin());
    ck_assert_int_eq(status, 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: attograd demo [--decimals N]"));
    free(out);
    out = cmd_run(&status, "'%s' --version", cmd_bin());
    ck_assert_int_eq(status, 0);
    ck_assert_ptr_nonnull(strstr(out, "attograd " AG_VERSION));
    free(out);
}
END_TEST

START_TEST(test_cli_usage_errors)
{
    int status;
    /* stderr into the pipe, stdout discarded: the message goes to stderr */
    char *out = cmd_run(&status, "'%s' bogus 2>&1 >/dev/null", cmd_bin());
    ck_assert_int_eq(status, 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown command 'bogus'"));
    free(out);

    out = cmd_run(&status, "'%s' demo --bogus 2>&1 >/dev/null", cmd_bin());
    ck_assert_int_eq(status, 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown option '--bogus'"));
    ck_assert_ptr_nonnull(strstr(out, "usage: attograd demo"));
    free(out);

    out = cmd_run(&status, "'%s' demo --decimals 3x 2>&1 >/dev/null", cmd_bin());
    ck_assert_int_eq(status, 2);
    ck_assert_ptr_nonnull(strstr(out, "--decimals: '3x' is not an integer"));
    free(out);

    out = cmd_run(&status, "'%s' demo --decimals 2>&1 >/dev/null", cmd_bin());
    ck_assert_int_eq(status, 2);
    ck_assert_ptr_nonnull(strstr(out, "--decimals needs a value"));
    free(out);

    out = cmd_run(&status, "'%s' demo --decimals 10 2>&1 >/dev/null", cmd_bin());
    ck_assert_int_eq(status, 2);
    ck_assert_ptr_nonnull(strstr(out, "--decimals: 10 is out of range (0..9)"));
    free(out);

    out = cmd_run(&status, "'%s' 2>/dev/null", cmd_bin());
    ck_assert_int_eq(status, 2);
    ck_assert_str_eq(out, "");   /* no command: help on stderr, nothing on stdout */
    free(out);
}
END_TEST

START_TEST(test_train_lookup_example_learns)
{
    /* the embedding example trains through the library API and must learn;
     * half way it saves a checkpoint, and resuming from it must retrace
     * the second half bit for bit */
    char dir[256], ck[512], want[600];
    cli_tmpdir(dir, sizeof(dir));
    cli_path(ck, sizeof(ck), dir, "lookup.safetensors");
    int status;
    char *out = cmd_run(&status, "%s/train_lookup '%s'", examples_dir(), ck);
    ck_assert_int_eq(status, 0);
    snprintf(want, sizeof(want), "saved %s at step 200\n", ck);
    ck_assert_msg(strstr(out, want) != NULL, "no '%s' in:\n%s", want, out);
    snprintf(want, sizeof(want), "resumed %s at step 200\n", ck);
    ck_assert_msg(strstr(out, want) != NULL, "no '%s' in:\n%s", want, out);
    ck_assert_ptr_nonnull(
        strstr(out, "step 400: the resumed run's loss and weights are identical, bit for bit\n"));
    const char *line = strstr(out, "held-out accuracy: ");
    ck_assert_msg(line != NULL, "no accuracy line in:\n%s", out);
    long correct, total;
    ck_assert_int_eq(sscanf(line, "held-out accuracy: %ld/%ld", &correct, &total), 2);
    ck_assert_int_eq(total, 512);
    ck_assert_msg(correct >= 500, "only %ld/512 right", correct);
    free(out);
    /* the library's checkpoint is the command's: train goes on from it */
    out = cmd_run(&status, "'%s' train --load '%s' --steps 1 --quiet", cmd_bin(), ck);
    ck_assert_int_eq(status, 0);
    ck_assert_msg(strncmp(out, "result: task=lookup steps=201 ", 30) == 0, "%s", out);
    free(out);
    cli_rmdir(dir);
}
END_TEST

Suite *suite_cli(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_demo_output);
    tcase_add_test(tc, test_seed_example_output);
    tcase_add_test(tc, test_demo_full_precision);
    tcase_add_test(tc, test_cli_help);
    tcase_add_test(tc, test_train_lookup_example_learns);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_cli_usage_errors);
    suite_add_tcase(s, tc);
    return s;
}
