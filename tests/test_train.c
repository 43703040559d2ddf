/*
 * test_train.c - `attograd train` as a program: it learns (the loss goes
 * down), it is deterministic (same flags and seed, byte-identical logs),
 * its last stdout line is the result line, a missing gnuplot costs only the
 * plot, a run that blows up to NaN stops naming the step and the op and
 * saves nothing, Ctrl-C stops cleanly with status 130 and a checkpoint, and
 * resuming a checkpoint (saved at the end or at Ctrl-C) continues exactly
 * as the run that never stopped. No test measures time.
 */
#include "run.h"
#include "test_util.h"

#include <regex.h>
#include <signal.h>

/* ---- logs ---- */

/* The rows of a --log file (header first), split in place; n rows. */
typedef struct csv_rows {
    char *text;
    char *line[4096];
    int n;
} csv_rows;

static void read_rows(const char *path, csv_rows *r)
{
    r->text = file_read(path, NULL);
    ck_assert_msg(r->text != NULL, "cannot read %s", path);
    r->n = 0;
    for (char *s = strtok(r->text, "\n"); s; s = strtok(NULL, "\n")) {
        ck_assert_int_lt(r->n, 4096);
        r->line[r->n++] = s;
    }
    ck_assert_int_ge(r->n, 1);
    ck_assert_str_eq(r->line[0], "step,loss,eval_loss,accuracy");
}

/* The row for a step, or NULL. */
static const char *row_at(const csv_rows *r, long step)
{
    for (int i = 1; i < r->n; i++)
        if (atol(r->line[i]) == step)
            return r->line[i];
    return NULL;
}

/* Every row of part (after its header) equals the row of whole with the
 * same step number; returns the rows compared. The last row of a part a
 * signal stopped may lack its evaluation (the signal cut it short): then
 * its step and loss match. */
static int assert_rows_match(const csv_rows *part, const csv_rows *whole, const char *what)
{
    for (int i = 1; i < part->n; i++) {
        long step = atol(part->line[i]);
        const char *want = row_at(whole, step), *got = part->line[i];
        ck_assert_msg(want != NULL, "%s: step %ld is not in the uninterrupted log", what, step);
        size_t n = strlen(got);
        if (i == part->n - 1 && n > 2 && strcmp(got + n - 2, ",,") == 0)
            n -= 2; /* "step,loss,," against "step,loss,eval_loss,accuracy" */
        ck_assert_msg(strncmp(got, want, n) == 0 && (want[n] == '\0' || want[n] == ','),
                      "%s: step %ld differs:\n  %s\n  %s", what, step, got, want);
    }
    return part->n - 1;
}

static long checkpoint_step(const char *path)
{
    ag_st_file *f;
    char err[256];
    ck_assert_msg(ag_st_load(path, &f, err, sizeof(err)) == AG_OK, "%s", err);
    const char *s = ag_st_meta(f, "step");
    ck_assert_ptr_nonnull(s);
    long step = atol(s);
    ag_st_free(f);
    return step;
}

/* The result line: "result: task=T steps=N loss=L accuracy=A seconds=S". */
static void assert_result_line_in(const char *out, const char *task, long steps, int stopped)
{
    char last[512];
    text_last_line(out, last, sizeof(last));
    /* stopped before its first evaluation ended, a run has no loss to report */
    if (stopped && strstr(last, " loss=nan accuracy=nan ")) {
        char want[128];
        snprintf(want, sizeof(want),
                 "result: task=%s steps=%ld loss=nan accuracy=nan seconds=", task, steps);
        ck_assert_msg(strncmp(last, want, strlen(want)) == 0, "'%s' is not '%s...'", last, want);
        return;
    }
    regex_t re;
    ck_assert_int_eq(regcomp(&re,
                             "^result: task=([a-z0-9]+) steps=([0-9]+) loss=([0-9.]+) "
                             "accuracy=([0-9.]+) seconds=([0-9.]+)$",
                             REG_EXTENDED),
                     0);
    regmatch_t m[6];
    int rc = regexec(&re, last, 6, m, 0);
    regfree(&re);
    ck_assert_msg(rc == 0, "the last line is not the result line: '%s'", last);
    ck_assert_int_eq((int)(m[1].rm_eo - m[1].rm_so), (int)strlen(task));
    ck_assert(strncmp(last + m[1].rm_so, task, strlen(task)) == 0);
    ck_assert_int_eq(atol(last + m[2].rm_so), steps);
    double acc = atof(last + m[4].rm_so);
    ck_assert_msg(acc >= 0 && acc <= 1, "accuracy %g is not in [0, 1]", acc);
    ck_assert(isfinite(atof(last + m[3].rm_so)));
}

static void assert_result_line(const char *out, const char *task, long steps)
{
    assert_result_line_in(out, task, steps, 0);
}

/* ---- learning, determinism, the result line ---- */

START_TEST(test_loss_decreases)
{
    char dir[256], log[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(log, sizeof(log), dir, "l.csv");
    run_proc p =
        run_cmd("train", "--steps", "60", "--eval-every", "20", "--quiet", "--log", log, NULL);
    run_assert_status(&p, 0);
    ck_assert_msg(strchr(p.out, '\n') == p.out + p.out_len - 1, "--quiet printed more:\n%s", p.out);
    assert_result_line(p.out, "lookup", 60);
    csv_rows r;
    read_rows(log, &r);
    ck_assert_int_eq(r.n, 61);
    double first = atof(strchr(r.line[1], ',') + 1), last = atof(strchr(r.line[60], ',') + 1);
    ck_assert_msg(last < 0.5 * first, "loss %g at step 1, %g at step 60: not learning", first,
                  last);
    free(r.text);
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_deterministic_logs)
{
    char dir[256], a[512], b[512], c[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a.csv");
    file_path(b, sizeof(b), dir, "b.csv");
    file_path(c, sizeof(c), dir, "c.csv");
    const char *logs[3] = {a, b, c};
    const char *seeds[3] = {"5", "5", "6"};
    for (int k = 0; k < 3; k++) {
        run_proc p = run_cmd("train", "--task", "reverse", "--steps", "30", "--eval-every", "10",
                             "--seed", seeds[k], "--quiet", "--log", logs[k], NULL);
        run_assert_status(&p, 0);
        assert_result_line(p.out, "reverse", 30);
        run_free(&p);
    }
    size_t la = 0, lb = 0, lc = 0;
    char *ta = file_read(a, &la), *tb = file_read(b, &lb), *tc = file_read(c, &lc);
    ck_assert(ta && tb && tc);
    ck_assert_msg(la == lb && memcmp(ta, tb, la) == 0, "same flags and seed, different logs");
    ck_assert_msg(la != lc || memcmp(ta, tc, la) != 0, "another seed gave the same log");
    free(ta), free(tb), free(tc);
    file_rmdir(dir);
}
END_TEST

/* Not quiet: progress lines, then the result line last. */
START_TEST(test_result_line_last)
{
    run_proc p = run_cmd("train", "--task", "lookup2", "--steps", "20", "--eval-every", "10", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "training lookup2: seq 5, dim 32, heads 2");
    run_assert_has(p.out, "step 10 loss ");
    assert_result_line(p.out, "lookup2", 20);
    ck_assert_uint_eq(p.err_len, 0);
    run_free(&p);
}
END_TEST

/* --plot without gnuplot: one line says so, the run still succeeds. */
START_TEST(test_plot_without_gnuplot)
{
    char dir[256], bin[512], png[512], listing[1024];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin)); /* PATH has no gnuplot */
    file_path(png, sizeof(png), dir, "loss.png");
    const char *args[] = {"train", "--steps", "10", "--quiet", "--plot", png, NULL};
    run_proc p = run_args(args, &(run_opts){.path = bin});
    run_assert_status(&p, 0);
    assert_result_line(p.out, "lookup", 10);
    ck_assert_msg(strchr(p.err, '\n') == p.err + p.err_len - 1, "not one line:\n%s", p.err);
    run_assert_has(p.err, "gnuplot is not installed, so no plot");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* --plot-heads: one heatmap per head with gnuplot; without gnuplot the same
 * one line as --plot, and the run still succeeds. */
START_TEST(test_plot_heads)
{
    char dir[256], bin[512], png[512], listing[1024];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin)); /* PATH has no gnuplot */
    file_path(png, sizeof(png), dir, "heads.png");
    const char *args[] = {"train",   "--task",       "lookup2", "--steps", "10",
                          "--quiet", "--plot-heads", png,       NULL};
    run_proc p = run_args(args, &(run_opts){.path = bin});
    run_assert_status(&p, 0);
    assert_result_line(p.out, "lookup2", 10);
    run_assert_has(p.err, "gnuplot is not installed, so no plot");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin");
    run_free(&p);
    if (run_have("gnuplot")) {
        p = run_cmd("train", "--task", "lookup2", "--steps", "10", "--plot-heads", png, NULL);
        run_assert_picture(&p, "\nplot: ", png, dir, "bin heads.png");
        run_assert_has(p.out, "head 2:"); /* the text heatmaps are there too */
        run_free(&p);
    }
    file_rmdir(dir);
}
END_TEST

/* ---- blowing up ---- */

/* SGD with a huge step and no clipping overflows within a few steps, the
 * same way every time: the run must stop at that step, name the first op
 * that made a NaN or Inf, exit 1, and write the log and the checkpoint of
 * the step before it, saying so; or, when the update itself made a weight
 * NaN, write neither (files already there keep their content). */
static void blow_up(int detect, int previous)
{
    char dir[256], log[512], save[512], listing[1024];
    file_tmpdir(dir, sizeof(dir));
    file_path(log, sizeof(log), dir, "l.csv");
    file_path(save, sizeof(save), dir, "s.safetensors");
    if (previous) {
        file_write(log, "previous\n", 9);
        file_write(save, "previous\n", 9);
    }
    run_proc p =
        run_cmd("train", "--optimizer", "sgd", "--lr", "1000", "--clip", "0", "--steps", "100",
                "--log", log, "--save", save, detect ? "--detect-anomaly" : NULL, NULL);
    run_assert_status(&p, 1);
    regex_t re;
    ck_assert_int_eq(regcomp(&re,
                             "^attograd train: step [0-9]+: (anomaly: the output of op [a-z_]+ "
                             "\\(tape entry [0-9]+, \\[[0-9x]+\\]\\) is (NaN|Inf) at element "
                             "[0-9]+|the sgd update \\(lr 1000\\) made parameter '[a-z0-9.]+' "
                             "(NaN|Inf))",
                             REG_EXTENDED | REG_NEWLINE),
                     0);
    int rc = regexec(&re, p.err, 0, NULL, 0);
    regfree(&re);
    ck_assert_msg(rc == 0, "no step and op named:\n%s", p.err);
    ck_assert_ptr_null(strstr(p.out, "result:"));
    long bad = atol(strstr(p.err, "step ") + 5);
    if (strstr(p.err, " update (lr 1000) made parameter") == NULL) {
        /* an op's output, from weights still finite: the step before is saved */
        char want[700];
        snprintf(want, sizeof(want),
                 "attograd train: stopped; saved %s at step %ld, the last good one: resume it with "
                 "--load and a smaller --lr or --clip\n",
                 save, bad - 1);
        run_assert_has(p.err, want);
        snprintf(want, sizeof(want), "saved: %s (step %ld)\n", save, bad - 1);
        run_assert_has(p.out, want);
        ck_assert_int_eq(checkpoint_step(save), bad - 1);
        csv_rows r;
        read_rows(log, &r);
        ck_assert_int_eq(r.n - 1, bad - 1);
        free(r.text);
        ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "l.csv s.safetensors");
        run_free(&p);
        file_rmdir(dir);
        return;
    }
    run_assert_has(p.err, "so nothing was saved (files already there keep their content)");
    ck_assert_ptr_null(strstr(p.out, "saved:"));
    if (previous) {
        char *kept = file_read(log, NULL);
        ck_assert_str_eq(kept, "previous\n");
        free(kept);
        kept = file_read(save, NULL);
        ck_assert_str_eq(kept, "previous\n");
        free(kept);
        ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "l.csv s.safetensors");
    } else {
        ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "");
    }
    run_free(&p);
    file_rmdir(dir);
}

START_TEST(test_blow_up_stops)
{
    blow_up(0, 0);
}
END_TEST

START_TEST(test_blow_up_detect_anomaly_keeps_files)
{
    blow_up(1, 1);
}
END_TEST

/* ---- Ctrl-C and resuming ---- */

START_TEST(test_ctrl_c_saves)
{
    char dir[256], ck[512], log[512], listing[1024], want[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    file_path(log, sizeof(log), dir, "l.csv");
    const char *args[] = {"train", "--steps", "1000000", "--save", ck, "--log", log, NULL};
    run_proc p = run_interrupt(args, "\n", SIGINT); /* its first line */
    run_assert_status(&p, 130);
    long step = checkpoint_step(ck);
    snprintf(want, sizeof(want),
             "attograd train: interrupted after step %ld; saved %s (step %ld)\n", step, ck, step);
    run_assert_has(p.err, want);
    snprintf(want, sizeof(want), "saved: %s (step %ld)\n", ck, step);
    run_assert_has(p.out, want);
    assert_result_line_in(p.out, "lookup", step, 1);
    /* the log has a row per step done, and the checkpoint loads and runs */
    csv_rows r;
    read_rows(log, &r);
    ck_assert_int_eq(r.n - 1, step);
    free(r.text);
    run_free(&p);
    p = run_cmd("train", "--load", ck, "--steps", "1", "--quiet", NULL);
    run_assert_status(&p, 0);
    assert_result_line(p.out, "lookup", step + 1);
    run_free(&p);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "c.safetensors l.csv");
    file_rmdir(dir);
}
END_TEST

/* SIGTERM (kill, timeout) and SIGHUP (the terminal went away) stop a run
 * the same way, with status 128 + the signal. */
START_TEST(test_sigterm_saves)
{
    static const int sigs[2] = {SIGTERM, SIGHUP};
    static const char *const names[2] = {"stopped by SIGTERM after step",
                                         "stopped by SIGHUP after step"};
    char dir[256], ck[512], listing[1024];
    file_tmpdir(dir, sizeof(dir));
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    const char *args[] = {"train", "--steps", "1000000", "--eval-every", "5", "--save", ck, NULL};
    run_proc p = run_interrupt(args, "\nstep 5 ", sigs[_i]);
    run_assert_status(&p, 128 + sigs[_i]);
    run_assert_has(p.err, names[_i]);
    long step = checkpoint_step(ck);
    ck_assert_int_ge(step, 5);
    assert_result_line_in(p.out, "lookup", step, 1);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "c.safetensors");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* 50 steps, save, load, 50 more: the same log rows, bit for bit, as 100. */
START_TEST(test_resume_equals_uninterrupted)
{
    char dir[256], a[512], b1[512], b2[512], ck[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a.csv");
    file_path(b1, sizeof(b1), dir, "b1.csv");
    file_path(b2, sizeof(b2), dir, "b2.csv");
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    /* SGD with momentum here (the Ctrl-C test below uses Adam), a small model */
    const char *common[] = {"--optimizer", "sgd",          "--dim", "16",     "--seed",
                            "11",          "--eval-every", "10",    "--quiet"};
#define COMMON                                                                                     \
    common[0], common[1], common[2], common[3], common[4], common[5], common[6], common[7],        \
        common[8]
    run_proc p = run_cmd("train", COMMON, "--steps", "100", "--log", a, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", COMMON, "--steps", "50", "--save", ck, "--log", b1, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--load", ck, "--eval-every", "10", "--quiet", "--steps", "50", "--log",
                b2, NULL);
    run_assert_status(&p, 0);
    assert_result_line(p.out, "lookup", 100);
    run_free(&p);
#undef COMMON
    csv_rows ra, r1, r2;
    read_rows(a, &ra);
    read_rows(b1, &r1);
    read_rows(b2, &r2);
    ck_assert_int_eq(ra.n - 1, 100);
    ck_assert_int_eq(assert_rows_match(&r1, &ra, "first half"), 50);
    ck_assert_int_eq(assert_rows_match(&r2, &ra, "second half"), 50);
    ck_assert_int_eq(atol(r2.line[1]), 51);
    free(ra.text), free(r1.text), free(r2.text);
    file_rmdir(dir);
}
END_TEST

/* Interrupted with Ctrl-C at some step k, resumed for 20 more steps: the
 * rows of both parts equal those of one run of k + 20 steps. */
START_TEST(test_resume_after_ctrl_c)
{
    char dir[256], a[512], b1[512], b2[512], ck[512], steps[32];
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a.csv");
    file_path(b1, sizeof(b1), dir, "b1.csv");
    file_path(b2, sizeof(b2), dir, "b2.csv");
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    const char *args[] = {"train", "--task",  "reverse", "--seed", "4", "--eval-every",
                          "5",     "--steps", "1000000", "--save", ck,  "--log",
                          b1,      NULL};
    run_proc p = run_interrupt(args, "\nstep 5 ", SIGINT);
    run_assert_status(&p, 130);
    run_free(&p);
    long k = checkpoint_step(ck);
    ck_assert_int_ge(k, 5);

    p = run_cmd("train", "--load", ck, "--eval-every", "5", "--steps", "20", "--quiet", "--log", b2,
                NULL);
    run_assert_status(&p, 0);
    assert_result_line(p.out, "reverse", k + 20);
    run_free(&p);
    snprintf(steps, sizeof(steps), "%ld", k + 20);
    p = run_cmd("train", "--task", "reverse", "--seed", "4", "--eval-every", "5", "--steps", steps,
                "--quiet", "--log", a, NULL);
    run_assert_status(&p, 0);
    run_free(&p);

    csv_rows ra, r1, r2;
    read_rows(a, &ra);
    read_rows(b1, &r1);
    read_rows(b2, &r2);
    ck_assert_int_eq(assert_rows_match(&r1, &ra, "before Ctrl-C"), k);
    ck_assert_int_eq(assert_rows_match(&r2, &ra, "after resuming"), 20);
    ck_assert_int_eq(atol(r2.line[1]), k + 1);
    free(ra.text), free(r1.text), free(r2.text);
    file_rmdir(dir);
}
END_TEST

Suite *suite_train(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 300); /* sanitizer builds are slow; nothing here is timed */
    tcase_add_test(tc, test_loss_decreases);
    tcase_add_test(tc, test_deterministic_logs);
    tcase_add_test(tc, test_result_line_last);
    tcase_add_test(tc, test_plot_without_gnuplot);
    tcase_add_test(tc, test_plot_heads);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_blow_up_stops);
    tcase_add_test(tc, test_blow_up_detect_anomaly_keeps_files);
    suite_add_tcase(s, tc);
    tc = tcase_create("resume");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_ctrl_c_saves);
    tcase_add_loop_test(tc, test_sigterm_saves, 0, 2);
    tcase_add_test(tc, test_resume_equals_uninterrupted);
    tcase_add_test(tc, test_resume_after_ctrl_c);
    suite_add_tcase(s, tc);
    return s;
}
