/*
 * test_valgrind.c - the command under valgrind: `attograd train` and
 * `attograd grad` (on files made here) must run with no memory error and no
 * leak, on their successful paths and on their failure paths (a bad file, a
 * run that blows up), whose cleanup is easy to get wrong.
 *
 * Skipped, with a note, when valgrind is not installed (.ci/run installs it,
 * so CI always runs this) and in sanitizer builds (AG_SANITIZE set by the
 * Makefile): valgrind cannot run AddressSanitizer's binaries. It runs in the
 * float build only: valgrind is slow, the code paths are the same, and the
 * double build is covered by `make check SANITIZE=address,undefined`, whose
 * AddressSanitizer finds the same errors and leaks.
 */
#include "run.h"
#include "test_util.h"

/* valgrind's status for a memory error or a definite/indirect leak. The
 * successful runs use 1, as the CI contract says; the runs expected to fail
 * with 1 use another, so that the two cannot be confused. */
#define VG_ERROR_ON_FAILURE_PATH 99
#define VG_MAX_ARGS 32

static char valgrind[4096]; /* its path, found by skip() */

static int skip(void)
{
#ifdef AG_REAL_DOUBLE
    printf("valgrind: run in the float build only\n");
    return 1;
#endif
    if (run_sanitized()) {
        printf("valgrind: skipped in a sanitizer build (SANITIZE=%s)\n", getenv("AG_SANITIZE"));
        return 1;
    }
    if (run_which("valgrind", valgrind, sizeof(valgrind)))
        return 0;
    printf("valgrind: not installed, so the valgrind tests are skipped "
           "(apt-get install valgrind)\n");
    return 1;
}

/* Run `valgrind ... attograd ARGS` and expect the command's status want. */
static void vg_run(int want, const char *const *args)
{
    char code[32];
    snprintf(code, sizeof(code), "--error-exitcode=%d", want == 0 ? 1 : VG_ERROR_ON_FAILURE_PATH);
    const char *argv[VG_MAX_ARGS + 8];
    int n = 0;
    argv[n++] = valgrind;
    argv[n++] = "-q";
    argv[n++] = code;
    argv[n++] = "--leak-check=full";
    argv[n++] = "--errors-for-leak-kinds=definite,indirect";
    argv[n++] = run_bin();
    for (int k = 0; args[k]; k++) {
        ck_assert_int_lt(k, VG_MAX_ARGS);
        argv[n++] = args[k];
    }
    argv[n] = NULL;
    run_proc p = run_exec(argv, NULL);
    ck_assert_msg(p.status == want && p.signal == 0,
                  "%s %s: status %d (signal %d), want %d\n--- stderr:\n%s", args[0], args[1],
                  p.status, p.signal, want, p.err);
    /* -q: valgrind prints nothing unless it found something */
    ck_assert_msg(!strstr(p.err, "=="), "valgrind reported:\n%s", p.err);
    run_free(&p);
}

START_TEST(test_valgrind_train)
{
    if (skip())
        return;
    char dir[256], ck[512], log[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    file_path(log, sizeof(log), dir, "l.csv");
    /* with saving and logging; then loading, a failing load and a blow-up.
     * A small model: the code paths are the same, and valgrind runs each
     * step some 50 times slower (dim 12 = one 8-wide vector and a tail) */
    const char *plain[] = {"train",   "--steps", "20", "--dim", "12", "--batch", "4",
                           "--quiet", "--save",  ck,   "--log", log,  NULL};
    vg_run(0, plain);
    const char *load[] = {"train", "--load", ck, "--steps", "2", "--quiet", NULL};
    vg_run(0, load);
    const char *bad_load[] = {"train", "--load", log, NULL};
    vg_run(1, bad_load);
    const char *nan[] = {"train", "--optimizer", "sgd",   "--lr",    "1000", "--clip",
                         "0",     "--dim",       "12",    "--batch", "4",    "--steps",
                         "50",    "--quiet",     "--log", log,       NULL};
    vg_run(1, nan);
    file_rmdir(dir);
}
END_TEST

static void save_tensors(const char *path, const char *const *names, int n, int ndim,
                         const int *shape, const char *heads)
{
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ck_assert_ptr_nonnull(w);
    ag_tensor *t = ag_param_new(ndim, shape);
    ck_assert_ptr_nonnull(t);
    ag_rng rng = ag_rng_new(3);
    ag_fill_uniform(t, &rng, -1, 1);
    for (int i = 0; i < n; i++)
        ag_st_add_tensor(w, names[i], t);
    if (heads)
        ag_st_add_meta(w, "n_heads", heads);
    char err[256];
    ck_assert_msg(ag_st_save(w, path, err, sizeof(err)) == AG_OK, "%s", err);
    ag_st_writer_free(w);
    ag_param_free(t);
}

START_TEST(test_valgrind_grad)
{
    if (skip())
        return;
    char dir[256], m[512], b[512], out[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(m, sizeof(m), dir, "m.safetensors");
    file_path(b, sizeof(b), dir, "b.safetensors");
    file_path(out, sizeof(out), dir, "out.safetensors");
    static const char *const w[] = {"wq", "wk", "wv", "wo"}, *const xy[] = {"x", "y"};
    save_tensors(m, w, 4, 2, (int[]){6, 6}, "2");
    save_tensors(b, xy, 2, 3, (int[]){2, 5, 6}, NULL);
    const char *good[] = {"grad", "--model", m, "--batch", b, "--out", out, NULL};
    vg_run(0, good);
    /* a batch whose x does not fit the model: the failure's cleanup */
    save_tensors(b, xy, 2, 3, (int[]){2, 5, 4}, NULL);
    vg_run(1, good);
    file_rmdir(dir);
}
END_TEST

Suite *suite_valgrind(void)
{
    Suite *s = suite_create("valgrind");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 600); /* valgrind is slow; nothing here is timed */
    tcase_add_test(tc, test_valgrind_train);
    tcase_add_test(tc, test_valgrind_grad);
    suite_add_tcase(s, tc);
    return s;
}
