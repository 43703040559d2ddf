/*
 * test_layers.c - the layer check (tests/lint/layers.sh, run by make lint)
 * can fail: two tiny libraries, compiled here, one whose core calls into
 * nn (a call that runs up) and one whose two files call each other, are
 * refused with the offending call named; the same files the other way
 * round pass.
 */
#include "test_util.h"
#include "run.h"

#include <unistd.h>

/* Compile src/DIR/NAME.c files under dir into dir/build (as the Makefile
 * lays objects out) and run the layer check there; returns the run. */
static run_proc check_tree(const char *dir, const char *files)
{
    char cwd[4096], script[8192];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    snprintf(script, sizeof(script),
             "set -e; cd '%s'; %s\n"
             "for f in src/*/*.c; do mkdir -p build/$(dirname $f);"
             " cc -c -o build/${f%%.c}.o $f; done\n"
             "sh '%s/tests/lint/layers.sh' build",
             dir, files, cwd);
    return run_shell(script);
}

START_TEST(test_a_call_up_is_refused)
{
    char dir[512];
    file_tmpdir(dir, sizeof(dir));
    run_proc p = check_tree(dir, "mkdir -p src/core src/nn;"
                                 " echo 'int ag_top(void) { return 1; }' > src/nn/top.c;"
                                 " echo 'int ag_top(void); int ag_low(void) { return ag_top(); }'"
                                 " > src/core/low.c");
    ck_assert_msg(p.status == 1, "exit %d:\n%s%s", p.status, p.out, p.err);
    run_assert_has(p.out, "src/core/low.c calls ag_top in src/nn/top.c, a layer above it");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_a_cycle_is_refused)
{
    char dir[512];
    file_tmpdir(dir, sizeof(dir));
    run_proc p =
        check_tree(dir, "mkdir -p src/io;"
                        " echo 'int ag_b(void); int ag_a(int n) { return n ? ag_b() : 0; }'"
                        " > src/io/a.c;"
                        " echo 'int ag_a(int); int ag_b(void) { return ag_a(0); }'"
                        " > src/io/b.c");
    ck_assert_msg(p.status == 1, "exit %d:\n%s%s", p.status, p.out, p.err);
    run_assert_has(p.out, "src/io/a.c and src/io/b.c call each other");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_calls_down_pass)
{
    char dir[512];
    file_tmpdir(dir, sizeof(dir));
    run_proc p = check_tree(dir, "mkdir -p src/core src/nn;"
                                 " echo 'int ag_low(void) { return 1; }' > src/core/low.c;"
                                 " echo 'int ag_low(void); int ag_top(void) { return ag_low(); }'"
                                 " > src/nn/top.c");
    run_assert_status(&p, 0);
    run_assert_has(p.out, "layers: no call runs up");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

Suite *suite_layers(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("check");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_a_call_up_is_refused);
    tcase_add_test(tc, test_a_cycle_is_refused);
    tcase_add_test(tc, test_calls_down_pass);
    suite_add_tcase(s, tc);
    return s;
}
