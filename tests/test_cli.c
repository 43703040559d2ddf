/*
 * test_cli.c - the attograd command and the seed example, run as programs:
 * the demo's exact output, the example's identical output, and the exit
 * status contract (0 ok, 2 bad usage with a message naming the problem).
 * `make test` sets AG_BIN (the command) and AG_EXAMPLES (the examples' dir).
 */
#include "test_util.h"
#include "run.h"

#include <limits.h>

static const char seed_output[] = "weights:\n"
                                  "[[0.40 0.20 0.40]\n"
                                  " [0.20 0.40 0.40]\n"
                                  " [0.25 0.25 0.50]]\n"
                                  "output:\n"
                                  "[[0.80 0.60]\n"
                                  " [0.60 0.80]\n"
                                  " [0.75 0.75]]\n";

/* The directory of the built examples (fails the test when AG_EXAMPLES is
 * not set); the command itself is run_bin(). */
static const char *examples_dir(void)
{
    const char *v = getenv("AG_EXAMPLES");
    ck_assert_msg(v && *v,
                  "AG_EXAMPLES is not set: run the tests with `make test` or `make check`");
    return v;
}

/* p exited 0 and printed exactly want on stdout, nothing on stderr. */
static void assert_prints(run_proc *p, const char *want)
{
    run_assert_status(p, 0);
    ck_assert_str_eq(p->out, want);
    ck_assert_str_eq(p->err, "");
    run_free(p);
}

START_TEST(test_demo_output)
{
    run_proc p = run_cmd("demo", NULL);
    assert_prints(&p, seed_output);
}
END_TEST

START_TEST(test_seed_example_output)
{
    char path[PATH_MAX];
    const char *argv[] = {file_path(path, sizeof(path), examples_dir(), "seed_attention"), NULL};
    run_proc p = run_exec(argv, NULL);
    assert_prints(&p, seed_output);
}
END_TEST

START_TEST(test_demo_full_precision)
{
    run_proc p = run_cmd("demo", "--decimals", "6", NULL);
    assert_prints(&p, "weights:\n"
                      "[[0.401112 0.197776 0.401112]\n"
                      " [0.197776 0.401112 0.401112]\n"
                      " [0.248255 0.248255 0.503490]]\n"
                      "output:\n"
                      "[[0.802224 0.598888]\n"
                      " [0.598888 0.802224]\n"
                      " [0.751745 0.751745]]\n");
    /* --decimals=N is the same option */
    p = run_cmd("demo", "--decimals=0", NULL);
    assert_prints(&p,
                  "weights:\n[[0 0 0]\n [0 0 0]\n [0 0 1]]\noutput:\n[[1 1]\n [1 1]\n [1 1]]\n");
}
END_TEST

START_TEST(test_cli_help)
{
    run_proc p = run_cmd("--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "usage: attograd <command> [options]");
    run_assert_has(p.out, "demo");
    run_free(&p);
    p = run_cmd("demo", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "usage: attograd demo [--decimals N]");
    run_free(&p);
    p = run_cmd("--version", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "attograd " AG_VERSION);
    run_free(&p);
}
END_TEST

/* words are bad usage: the message on stderr names the problem, then usage. */
static void assert_usage(const char *words, const char *message, const char *usage)
{
    run_proc p = run_words(words);
    run_assert_usage(&p, usage);
    run_assert_has(p.err, message);
    run_free(&p);
}

START_TEST(test_cli_usage_errors)
{
    static const char top[] = "usage: attograd <command> [options]",
                      demo[] = "usage: attograd demo";
    assert_usage("bogus", "unknown command 'bogus'", top);
    assert_usage("demo --bogus", "unknown option '--bogus'", demo);
    assert_usage("demo --decimals 3x", "--decimals: '3x' is not an integer", demo);
    assert_usage("demo --decimals", "--decimals needs a value", demo);
    assert_usage("demo --decimals 10", "--decimals: 10 is out of range (0..9)", demo);
    /* no command: help on stderr, nothing on stdout */
    assert_usage("", "\ncommands:\n", top);
}
END_TEST

START_TEST(test_train_lookup_example_learns)
{
    /* the embedding example trains through the library API and must learn;
     * half way it saves a checkpoint, and resuming from it must retrace
     * the second half bit for bit */
    char dir[256], ck[512], want[600], prog[PATH_MAX];
    file_tmpdir(dir, sizeof(dir));
    file_path(ck, sizeof(ck), dir, "lookup.safetensors");
    const char *argv[] = {file_path(prog, sizeof(prog), examples_dir(), "train_lookup"), ck, NULL};
    run_proc p = run_exec(argv, NULL);
    run_assert_status(&p, 0);
    snprintf(want, sizeof(want), "saved %s at step 200\n", ck);
    run_assert_has(p.out, want);
    snprintf(want, sizeof(want), "resumed %s at step 200\n", ck);
    run_assert_has(p.out, want);
    run_assert_has(p.out,
                   "step 400: the resumed run's loss and weights are identical, bit for bit\n");
    const char *line = strstr(p.out, "held-out accuracy: ");
    ck_assert_msg(line != NULL, "no accuracy line in:\n%s", p.out);
    long correct, total;
    ck_assert_int_eq(sscanf(line, "held-out accuracy: %ld/%ld", &correct, &total), 2);
    ck_assert_int_eq(total, 512);
    ck_assert_msg(correct >= 500, "only %ld/512 right", correct);
    run_free(&p);
    /* the library's checkpoint is the command's: train goes on from it */
    p = run_cmd("train", "--load", ck, "--steps", "1", "--quiet", NULL);
    run_assert_status(&p, 0);
    ck_assert_msg(strncmp(p.out, "result: task=lookup steps=201 ", 30) == 0, "%s", p.out);
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

Suite *suite_cli(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("forward");
    tcase_set_timeout(tc, 120); /* train_lookup trains 400 steps: slow under sanitizers */
    tcase_add_test(tc, test_demo_output);
    tcase_add_test(tc, test_seed_example_output);
    tcase_add_test(tc, test_demo_full_precision);
    tcase_add_test(tc, test_cli_help);
    tcase_add_test(tc, test_train_lookup_example_learns);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cli_usage_errors);
    suite_add_tcase(s, tc);
    return s;
}
