/*
 * test_gradcheck_cmd.c - `attograd gradcheck` as a program: every op defined
 * in src/ops has a row and passes; --inject-bug softmax fails the rows through
 * softmax (and only those) with exit status 1; --op, --sweep and --plot; bad
 * usage exits 2.
 */
#include "test_util.h"
#include "run.h"

#include <dirent.h>
#include <unistd.h>

/* The op names defined in src/ops: each op file declares its descriptor
 * as `static const ag_op NAME_op = {"name", ...}`. Returns how many. */
static size_t ops_in_sources(char names[][32], size_t max)
{
    DIR *d = opendir("src/ops");
    ck_assert_msg(d, "cannot open src/ops (run from the repository root)");
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0)
            continue;
        char path[300], line[512];
        snprintf(path, sizeof(path), "src/ops/%s", e->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f, "cannot read %s", path);
        while (fgets(line, sizeof(line), f)) {
            const char *q = strstr(line, "static const ag_op ");
            q = q ? strstr(q, "= {\"") : NULL;
            if (!q)
                continue;
            ck_assert_uint_lt(n, max);
            q += 4;
            size_t k = 0;
            while (q[k] && q[k] != '"' && k < 31) {
                names[n][k] = q[k];
                k++;
            }
            names[n++][k] = '\0';
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Whether case row i's build puts an entry of op on the tape. */
static int row_records(size_t i, const char *op)
{
    ag_case_setup s;
    char err[256] = "";
    ck_assert_msg(ag_gradcheck_case_setup(i, 1, &s, err, sizeof(err)) == AG_OK, "%s", err);
    ag_tape *tape = ag_tape_new();
    ck_assert_ptr_nonnull(s.build(tape, s.inputs, s.ctx));
    int seen = 0;
    for (size_t k = 0; k < ag_tape_size(tape) && !seen; k++) {
        ag_entry_info info;
        ck_assert_int_eq(ag_tape_entry_info(tape, k, &info), AG_OK);
        seen = strcmp(info.op, op) == 0;
    }
    ag_tape_free(tape);
    ag_gradcheck_case_free(&s);
    return seen;
}

START_TEST(test_every_op_has_a_case)
{
    /* adding an op means its file, its prototype, its row in
     * src/check/cases.c and its tests: this catches a missing row */
    char names[64][32];
    size_t n = ops_in_sources(names, 64);
    ck_assert_uint_ge(n, 17);
    for (size_t k = 0; k < n; k++) {
        int found = 0;
        for (size_t i = 0; i < ag_gradcheck_case_count() && !found; i++)
            found = strcmp(ag_gradcheck_case_op(i), names[k]) == 0 && row_records(i, names[k]);
        ck_assert_msg(found, "op %s (src/ops) has no row in src/check/cases.c that records it",
                      names[k]);
    }
}
END_TEST

START_TEST(test_all_rows_pass)
{
    run_proc p = run_cmd("gradcheck", NULL);
    run_assert_status(&p, 0);
    const char *out = p.out;
    /* every op of the library's case table is checked on a row of its own name */
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%s ", ag_gradcheck_case_op(i));
        ck_assert_msg(text_line(out, prefix), "no row for op %s:\n%s", prefix, out);
    }
    static const char *const rows[] = {
        "matmul 2-D ",
        "matmul shared b ",
        "matmul batched ",
        "scale by ",
        "softmax ",
        "causal_mask + softmax ",
        "mse loss ",
        "cross_entropy loss ",
        "attention H=1 ",
        "attention H=2 causal ",
        "attention H=1 sinusoidal ",
        "attention H=2 causal learned ",
        "attention H=2 op by op ",
        "attention H=2 causal op by op ",
        "block pre-norm, H=2 ",
        "gpt 2 layers, cross-entropy ",
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *line = text_line(out, rows[i]);
        ck_assert_msg(line, "no row '%s'", rows[i]);
        const char *end = strchr(line, '\n');
        ck_assert_msg(end && end - line > 4 && strncmp(end - 4, "PASS", 4) == 0,
                      "row '%s' does not pass", rows[i]);
    }
    ck_assert_ptr_null(strstr(out, "FAIL"));
    ck_assert_ptr_nonnull(strstr(out, "max_samples")); /* the output says it samples */
    ck_assert_ptr_nonnull(strstr(out, " 256/320 "));   /* and a row shows it */
    ck_assert_ptr_nonnull(strstr(out, " passed, 0 failed."));
    run_free(&p);
}
END_TEST

START_TEST(test_injected_bug_fails)
{
    run_proc p = run_cmd("gradcheck", "--inject-bug", "softmax", NULL);
    run_assert_status(&p, 1);
    const char *out = p.out;
    /* rows that go through softmax fail; the others still pass */
    static const struct {
        const char *row, *want;
    } rows[] = {
        {"softmax ", "FAIL"},
        {"causal_mask + softmax ", "FAIL"},
        {"attention H=1 ", "FAIL"},
        {"attention H=2 causal learned ", "FAIL"},
        {"attention H=2 op by op ", "FAIL"},
        /* a block and a whole GPT: their attention is the fused op */
        {"block pre-norm, H=2 ", "FAIL"},
        {"gpt 2 layers, cross-entropy ", "FAIL"},
        /* a plain sum tests only g = (1, ..., 1), where dL/dz is 0: the bug's
         * s * g is not 0 there, so even this weak loss catches it */
        {"softmax through a plain sum ", "FAIL"},
        {"matmul 2-D ", "PASS"},
        {"cross_entropy loss ", "PASS"},
        {"mse loss ", "PASS"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *line = text_line(out, rows[i].row);
        ck_assert_msg(line, "no row '%s'", rows[i].row);
        const char *end = strchr(line, '\n');
        ck_assert_msg(end && strncmp(end - 4, rows[i].want, 4) == 0, "row '%s' should %s",
                      rows[i].row, rows[i].want);
    }
    ck_assert_ptr_nonnull(strstr(out, "The rows that use ag_softmax's backward"));
    run_free(&p);
}
END_TEST

START_TEST(test_one_op)
{
    run_proc p = run_cmd("gradcheck", "--op", "softmax", "--verbose", NULL);
    run_assert_status(&p, 0);
    ck_assert_ptr_nonnull(text_line(p.out, "softmax "));
    ck_assert_ptr_null(text_line(p.out, "matmul"));
    run_assert_has(p.out, "    worst element z[");
    run_assert_has(p.out, "\n4 checks: 4 passed, 0 failed.");
    run_free(&p);
    p = run_cmd("gradcheck", "--op", "attention", "--inject-bug", "softmax", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.out, "14 checks: 0 passed, 14 failed.");
    run_free(&p);
    /* the block and the GPT, each a row of its own, at their own tolerance */
    static const char *const whole[2][2] = {{"block", "block pre-norm, H=2 "},
                                            {"gpt", "gpt 2 layers, cross-entropy "}};
    for (int k = 0; k < 2; k++) {
        p = run_cmd("gradcheck", "--op", whole[k][0], NULL);
        run_assert_status(&p, 0);
        const char *line = text_line(p.out, whole[k][1]);
        ck_assert_ptr_nonnull(line);
#ifndef AG_REAL_DOUBLE
        ck_assert_ptr_nonnull(strstr(line, " 5.0e-02  PASS"));
#else
        ck_assert_ptr_nonnull(strstr(line, " 1.0e-06  PASS"));
#endif
        run_assert_has(p.out, "\n1 check: 1 passed, 0 failed.");
        run_free(&p);
        p = run_cmd("gradcheck", "--op", whole[k][0], "--inject-bug", "softmax", NULL);
        run_assert_status(&p, 1);
        run_assert_has(p.out, "\n1 check: 0 passed, 1 failed.");
        run_free(&p);
    }
}
END_TEST

START_TEST(test_bad_usage)
{
    static const char usage[] = "usage: attograd gradcheck";
    run_proc p = run_cmd("gradcheck", "--op", "nosuch", NULL);
    run_assert_usage(&p, usage);
    run_assert_has(p.err, "unknown op 'nosuch'");
    run_assert_has(p.err, "matmul_bt"); /* the names are listed */
    run_free(&p);
    static const char *const bad[] = {
        "gradcheck --inject-bug matmul",
        "gradcheck --eps 0",
        "gradcheck --eps abc",
        "gradcheck --seed -1",
        "gradcheck --plot x.png",
        "gradcheck --op",
        "gradcheck --bogus",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p = run_words(bad[i]);
        run_assert_usage(&p, usage);
        run_free(&p);
    }
    p = run_cmd("gradcheck", "--sweep", "--plot", "", NULL);
    run_assert_usage(&p, usage);
    run_free(&p);
    p = run_cmd("gradcheck", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "--inject-bug softmax");
    run_free(&p);
}
END_TEST

/* The eps of the row marked "<- smallest", and whether the error rises after
 * it (round-off); falls before it (truncation) is checked by the caller. */
static double sweep_best(const char *out, int *rises)
{
    const char *best = strstr(out, "<- smallest");
    ck_assert_ptr_nonnull(best);
    const char *line = best;
    while (line > out && line[-1] != '\n')
        line--;
    double eps = 0, err = 0;
    ck_assert_int_eq(sscanf(line, "%lf %lf", &eps, &err), 2);
    /* a later row with a clearly larger (or infinite) error */
    *rises = 0;
    for (const char *p = strchr(best, '\n'); p && p[1] == ' '; p = strchr(p + 1, '\n')) {
        double e2, a2;
        char inf[8];
        if (sscanf(p + 1, "%lf %lf", &e2, &a2) == 2 && a2 > 10 * err)
            *rises = 1;
        else if (sscanf(p + 1, "%lf %7s", &e2, inf) == 2 && strcmp(inf, "inf") == 0)
            *rises = 1;
    }
    return eps;
}

START_TEST(test_sweep)
{
    run_proc p = run_cmd("gradcheck", "--sweep", NULL);
    run_assert_status(&p, 0);
    const char *out = p.out;
    ck_assert_ptr_nonnull(text_line(out, "  1e+00 "));
    for (int k = 1; k <= 10; k++) {
        char eps[16];
        snprintf(eps, sizeof(eps), "  1e-%02d ", k);
        ck_assert_msg(text_line(out, eps), "no row for eps 1e-%d", k);
    }
    int rises;
    double best = sweep_best(out, &rises);
    ck_assert_msg(rises, "the error does not rise again below the best eps:\n%s", out);
    /* and eps = 1 is worse than the best: truncation error is there too */
    double e1, a1;
    ck_assert_int_eq(sscanf(text_line(out, "  1e+00 "), "%lf %lf", &e1, &a1), 2);
    ck_assert_msg(best < 1 && a1 > 0, "eps = 1 is the best:\n%s", out);
#ifdef AG_REAL_DOUBLE
    ck_assert_msg(best <= 1.5e-3, "double's best eps %g: round-off should come late", best);
#else
    ck_assert_msg(best >= 0.9e-3, "float's best eps %g: round-off should come early", best);
#endif
    run_free(&p);
    p = run_cmd("gradcheck", "--sweep", "--op", "matmul", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "sweep for matmul 2-D");
    run_free(&p);
}
END_TEST

START_TEST(test_sweep_plot_without_gnuplot)
{
    char dir[256], png[300];
    file_tmpdir(dir, sizeof(dir));
    file_path(png, sizeof(png), dir, "s.png");
    const char *args[] = {"gradcheck", "--sweep", "--plot", png, NULL};
    run_proc p = run_args(args, &(run_opts){.path = "/nonexistent"});
    run_assert_status(&p, 0);
    run_assert_has(p.err, "gnuplot is not installed");
    run_free(&p);
    ck_assert_int_ne(access(png, F_OK), 0);
    ck_assert_int_eq(rmdir(dir), 0); /* nothing else was left there either */
}
END_TEST

Suite *suite_gradcheck_cmd(void)
{
    Suite *s = suite_create("gradcheck_cmd");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_op_has_a_case);
    tcase_add_test(tc, test_all_rows_pass);
    tcase_add_test(tc, test_injected_bug_fails);
    tcase_add_test(tc, test_one_op);
    tcase_add_test(tc, test_bad_usage);
    suite_add_tcase(s, tc);
    tc = tcase_create("sweep");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sweep);
    tcase_add_test(tc, test_sweep_plot_without_gnuplot);
    suite_add_tcase(s, tc);
    return s;
}
