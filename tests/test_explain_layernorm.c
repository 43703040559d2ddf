/*
 * test_explain_layernorm.c - `attograd explain layernorm` as a program: its
 * forward steps, Jacobian and input gradient checked against values
 * computed here independently (in double, printed to 4 decimals), the
 * finite-difference check agreeing, and bad usage exiting 2.
 */
#include "test_util.h"
#include "run.h"

/* Assert that out holds "<prefix>[ v0 v1 ...]<suffix>\n" with each value
 * as %7.4f, the way explain prints a row. */
static void expect_row(const char *out, const char *prefix, const double *v, int n,
                       const char *suffix)
{
    char want[256];
    size_t used = (size_t)snprintf(want, sizeof(want), "%s[", prefix);
    for (int i = 0; i < n; i++)
        used +=
            (size_t)snprintf(want + used, sizeof(want) - used, "%s%7.4f", i ? " " : "", v[i] + 0.0);
    snprintf(want + used, sizeof(want) - used, "]%s\n", suffix);
    ck_assert_msg(strstr(out, want), "'%s' not in the output:\n%s", want, out);
}

START_TEST(test_numbers)
{
    static const double x[4] = {0.5, -1, 2, 0}, g[4] = {1, 0.5, -2, 0.25};
    static const double w[4] = {1, 2, 0.5, -1}, b[4] = {0, 0.1, 0, -0.2};
    enum { n = 4 };
    double mean = 0, var = 0, xhat[n], y[n], gw[n], dx[n], row[n], gm = 0, gxm = 0;
    for (int i = 0; i < n; i++)
        mean += x[i] / n;
    for (int i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean) / n;
    double rstd = 1 / sqrt(var + 1e-5);
    for (int i = 0; i < n; i++) {
        xhat[i] = (x[i] - mean) * rstd;
        y[i] = xhat[i] * w[i] + b[i];
        gw[i] = g[i] * w[i];
        gm += gw[i] / n;
        gxm += gw[i] * xhat[i] / n;
    }
    for (int i = 0; i < n; i++)
        dx[i] = rstd * (gw[i] - gm - xhat[i] * gxm);

    run_proc p = run_words("explain layernorm --x 0.5,-1,2,0 --upstream 1,0.5,-2,0.25 "
                           "--weight 1,2,0.5,-1 --bias 0,0.1,0,-0.2");
    run_assert_status(&p, 0);
    const char *out = p.out;
    char want[128];
    snprintf(want, sizeof(want), "1. The mean, %.4f.", mean);
    ck_assert_msg(strstr(out, want), "no '%s':\n%s", want, out);
    snprintf(want, sizeof(want), "(divided by 4, not 3), %.4f.", var);
    ck_assert_msg(strstr(out, want), "no '%s':\n%s", want, out);
    snprintf(want, sizeof(want), "1/std = 1 / sqrt(var + eps) = %.4f.", rstd);
    ck_assert_msg(strstr(out, want), "no '%s':\n%s", want, out);
    expect_row(out, "  xhat         ", xhat, n, "");
    expect_row(out, "  y            ", y, n, "");
    expect_row(out, "  g * w        ", gw, n, "");
    /* the Jacobian, row by row: (1/std) (delta_ij - 1/n - xhat_i xhat_j / n) */
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            row[j] = rstd * ((i == j) - 1.0 / n - xhat[i] * xhat[j] / n);
        expect_row(out, i ? "               " : "  J           [", row, n, i == n - 1 ? "]" : "");
    }
    expect_row(out, "  (g w)^T J    ", dx, n, "");
    expect_row(out, "  formula      ", dx, n, "");
    expect_row(out, "  attograd     ", dx, n, "");
    ck_assert_ptr_nonnull(strstr(out, "dL/dx_3: finite difference"));
    ck_assert_ptr_null(strstr(out, "DISAGREE"));
    run_free(&p);
}
END_TEST

START_TEST(test_defaults_and_edges)
{
    /* no weight or bias: y = xhat; the default upstream is L = y_0. A constant
     * row (var 0: eps keeps 1/std finite) and a single value still agree. */
    static const char *const args[] = {"--x 1,2,3", "--x 2,2,2 --upstream 1,-1,3", "--x 7",
                                       "--x 1000,1000.001,999.999 --decimals 6"};
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
        char words[128];
        snprintf(words, sizeof(words), "explain layernorm %s", args[i]);
        run_proc p = run_words(words);
        run_assert_status(&p, 0);
        ck_assert_msg(strstr(p.out, "  agree\n") && !strstr(p.out, "DISAGREE"), "'%s':\n%s",
                      args[i], p.out);
        run_free(&p);
    }
    run_proc p = run_cmd("explain", "layernorm", "--x", "1,2,3", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "here w = 1 and b = 0");
    run_assert_has(p.out, "  g            [ 1.0000  0.0000  0.0000]\n");
    run_free(&p);
    /* nothing given: the example, said first, then the same story as when given */
    p = run_cmd("explain", "layernorm", NULL);
    run_assert_status(&p, 0);
    static const char note[] = "No --x given: the example --x 1,2,3 --upstream 0.1,0.2,-0.3; give "
                               "your own\nwith --x.\n\n";
    ck_assert_msg(strncmp(p.out, note, strlen(note)) == 0, "%s", p.out);
    run_proc q = run_words("explain layernorm --x 1,2,3 --upstream 0.1,0.2,-0.3");
    run_assert_status(&q, 0);
    ck_assert_str_eq(p.out + strlen(note), q.out);
    run_free(&q);
    run_free(&p);
}
END_TEST

START_TEST(test_bad_usage)
{
    static const char usage[] = "usage: attograd explain layernorm";
    static const char *const bad[] = {
        "--x 1,,2",
        "--x 1,2 --upstream 1",
        "--x 1,2 --weight 1,2,3",
        "--x 1,2 --bias 1",
        "--x 1,nan",
        "--x 1 --decimals 2",
        "--x 1 --logits 1",
        "--x 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
        "--x 1 extra",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char words[128];
        snprintf(words, sizeof(words), "explain layernorm%s%s", *bad[i] ? " " : "", bad[i]);
        run_proc p = run_words(words);
        run_assert_usage(&p, usage);
        run_free(&p);
    }
    run_proc p = run_cmd("explain", "layernorm", "--x", "", NULL);
    run_assert_usage(&p, usage);
    run_free(&p);
    p = run_cmd("explain", "layernorm", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "--weight W1,W2,...");
    run_free(&p);
    p = run_cmd("explain", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "  layernorm  ");
    run_free(&p);
}
END_TEST

Suite *suite_explain_layernorm(void)
{
    Suite *s = suite_create("explain_layernorm");
    TCase *tc = tcase_create("command");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_numbers);
    tcase_add_test(tc, test_defaults_and_edges);
    tcase_add_test(tc, test_bad_usage);
    suite_add_tcase(s, tc);
    return s;
}
