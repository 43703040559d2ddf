/*
 * test_explain.c - `attograd explain` as a program, its numbers checked
 * against values computed here independently (in double, to 4 decimals):
 * softmax's probabilities, Jacobian and input gradient; the attention
 * story's first forward (the seed's weights), its gradient check with and
 * without the injected bug, and its --dot graph. Also ag_tape_entry_info,
 * the read-only view of the tape the story is told from.
 */
#include "test_util.h"
#include "cmd_run.h"

#include <dirent.h>
#include <unistd.h>

/* "[ 0.0900  0.2447  0.6652]": a row as explain prints it with 4 decimals. */
static void format_row(char *buf, size_t len, const double *v, int n)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%7.4f", i ? " " : "", v[i]);
    snprintf(buf + used, len - used, "]");
}

static void assert_has(const char *out, const char *what, const char *label)
{
    ck_assert_msg(strstr(out, what), "%s: '%s' not in the output:\n%s", label, what, out);
}

/* ---- explain softmax ---- */

START_TEST(test_softmax_numbers)
{
    static const double z[4] = {0.5, -1, 2, 0}, g[4] = {1, 0.5, -2, 0.25};
    enum { n = 4 };
    double s[n], sum = 0, dot = 0, dz[n], row[n];
    for (int i = 0; i < n; i++)
        sum += s[i] = exp(z[i]);
    for (int i = 0; i < n; i++) {
        s[i] /= sum;
        dot += g[i] * s[i];
    }
    for (int i = 0; i < n; i++)
        dz[i] = s[i] * (g[i] - dot);

    int status;
    char *out = cmd_run(&status, "'%s' explain softmax --logits 0.5,-1,2,0 --upstream 1,0.5,-2,0.25",
                        cmd_bin());
    ck_assert_int_eq(status, 0);
    char buf[128], want[160];
    format_row(buf, sizeof(buf), s, n);
    snprintf(want, sizeof(want), "  s            %s\n", buf);
    assert_has(out, want, "probabilities");
    /* the Jacobian, row by row: s_i (delta_ij - s_j) */
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            row[j] = s[i] * ((i == j) - s[j]);
        format_row(buf, sizeof(buf), row, n);
        snprintf(want, sizeof(want), "%s%s%s\n", i ? " " : "[", buf, i == n - 1 ? "]" : "");
        assert_has(out, want, "Jacobian row");
    }
    format_row(buf, sizeof(buf), dz, n);
    snprintf(want, sizeof(want), "  g^T J        %s\n", buf);
    assert_has(out, want, "vector-Jacobian product");
    snprintf(want, sizeof(want), "  s*(g-<g,s>)  %s\n", buf);
    assert_has(out, want, "gradient");
    snprintf(want, sizeof(want), "  attograd     %s\n", buf);
    assert_has(out, want, "library's gradient");
    ck_assert_ptr_null(strstr(out, "DISAGREE"));
    free(out);
}
END_TEST

START_TEST(test_softmax_bad_lists)
{
    static const char *const bad[] = {
        "--logits ''",        "--logits 1,,2",         "--logits 1,2,",   "--logits 1,abc",
        "--logits ' 1'",      "--logits 1e999",        "--logits 1,2 --upstream 1",
        "--logits 1,nan",     "--upstream 1,2",        "--logits",        "--logits 1 --decimals 2",
        "--logits 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int status;
        char *out = cmd_run(&status, "'%s' explain softmax %s 2>&1", cmd_bin(), bad[i]);
        ck_assert_msg(status == 2, "'%s' exited %d:\n%s", bad[i], status, out);
        ck_assert_msg(strstr(out, "usage: attograd explain softmax"), "'%s': no usage line", bad[i]);
        ck_assert_msg(strstr(out, "--logits") || strstr(out, "--upstream") || strstr(out, "--decimals"),
                      "'%s': the message names no flag:\n%s", bad[i], out);
        free(out);
    }
}
END_TEST

/* ---- explain attention ---- */

START_TEST(test_attention_first_forward)
{
    /* the seed: x = [[1,0],[0,1],[1,1]], weights = softmax(x x^T / sqrt(2)) */
    static const double x[3][2] = {{1, 0}, {0, 1}, {1, 1}};
    double w[3][3];
    for (int i = 0; i < 3; i++) {
        double sum = 0;
        for (int j = 0; j < 3; j++)
            sum += w[i][j] = exp((x[i][0] * x[j][0] + x[i][1] * x[j][1]) / sqrt(2.0));
        for (int j = 0; j < 3; j++)
            w[i][j] /= sum;
    }
    ck_assert_double_eq_tol(w[1][0], 0.20, 0.005);   /* the seed's [0.20 0.40 0.40] */

    int status;
    char *out = cmd_run(&status, "'%s' explain attention", cmd_bin());
    ck_assert_int_eq(status, 0);
    const char *fwd = strstr(out, "[6] softmax(scores [3x3]) -> weights [3x3]");
    ck_assert_msg(fwd != NULL, "no softmax entry:\n%s", out);
    for (int i = 0; i < 3; i++) {
        char buf[128], want[160];
        format_row(buf, sizeof(buf), w[i], 3);
        snprintf(want, sizeof(want), "    %s%s%s\n", i ? " " : "[", buf, i == 2 ? "]" : "");
        ck_assert_msg(strstr(fwd, want), "weights row %d '%s' missing after the softmax entry", i, want);
    }
    /* the story's parts, in order */
    static const char *const parts[] = {
        "Forward: each op", "[0] leaf -> x [3x2]", "[9] mse(out [3x2], y [3x2]) -> loss [1]",
        "Backward: ag_backward", "sends dscores = weights * (dweights - <dweights, weights>)",
        "SGD update with lr 1:", "Where sat looks", "sat now looks more at cat", ": PASS\n",
    };
    const char *p = out;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const char *q = strstr(p, parts[i]);
        ck_assert_msg(q, "'%s' missing or out of order", parts[i]);
        p = q;
    }
    free(out);
}
END_TEST

START_TEST(test_attention_injected_bug)
{
    int status;
    char *out = cmd_run(&status, "'%s' explain attention --inject-bug softmax", cmd_bin());
    ck_assert_int_eq(status, 1);
    assert_has(out, ": FAIL\n", "verdict");
    assert_has(out, "The check caught the wrong backward", "explanation");
    /* the story itself is unchanged: the step used the correct backward */
    assert_has(out, "sat now looks more at cat", "story");
    free(out);
}
END_TEST

START_TEST(test_attention_dot)
{
    char dir[] = "/tmp/ag_dot_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/tape.dot", dir);
    int status;
    char *out = cmd_run(&status, "'%s' explain attention --dot '%s'", cmd_bin(), path);
    ck_assert_int_eq(status, 0);
    assert_has(out, path, "the file is named");
    free(out);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char text[8192];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_msg(strncmp(text, "digraph", 7) == 0, "does not start with digraph:\n%s", text);
    ck_assert_msg(n >= 2 && strcmp(text + n - 2, "}\n") == 0, "unfinished graph");
    assert_has(text, "label=\"wq\\n[2x2]\"", "a parameter node");
    assert_has(text, "[label=\"softmax\"]", "an op edge");
    /* only the file itself is left (the temporary was renamed) */
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(entries, 1);
    unlink(path);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_attention_errors)
{
    int status;
    char *out = cmd_run(&status, "'%s' explain attention --dot /nonexistent-dir/t.dot 2>&1", cmd_bin());
    ck_assert_int_eq(status, 1);
    assert_has(out, "/nonexistent-dir/t.dot: cannot write there", "runtime message");
    ck_assert_msg(strncmp(out, "attograd explain:", 17) == 0, "one message, before any story:\n%s", out);
    free(out);
    static const char *const bad[] = {
        "--lr 0", "--lr x", "--lr", "--inject-bug matmul", "--dot ''", "--verbose",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        out = cmd_run(&status, "'%s' explain attention %s 2>&1", cmd_bin(), bad[i]);
        ck_assert_msg(status == 2, "'%s' exited %d", bad[i], status);
        ck_assert_msg(strstr(out, "usage: attograd explain attention"), "'%s': no usage", bad[i]);
        free(out);
    }
    out = cmd_run(&status, "'%s' explain nothing 2>&1", cmd_bin());
    ck_assert_int_eq(status, 2);
    assert_has(out, "unknown topic 'nothing' (softmax, attention)", "topics");
    free(out);
    out = cmd_run(&status, "'%s' explain attention --help", cmd_bin());
    ck_assert_int_eq(status, 0);
    assert_has(out, "--inject-bug softmax", "help");
    free(out);
}
END_TEST

/* ---- ag_tape_entry_info ---- */

START_TEST(test_entry_info)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 2});
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){3, 2}, (ag_real[]){1, 0, 0, 1, 1, 1});
    ag_tensor *s = ag_scale(tape, ag_matmul(tape, x, w), 0.5);
    ag_tensor *p = ag_softmax(tape, s);
    ck_assert_uint_eq(ag_tape_size(tape), 4);
    ag_entry_info e;
    ck_assert_int_eq(ag_tape_entry_info(tape, 0, &e), AG_OK);
    ck_assert_str_eq(e.op, "leaf");
    ck_assert_int_eq(e.n_in, 0);
    ck_assert_ptr_eq(e.out, x);
    ck_assert_int_eq(ag_tape_entry_info(tape, 1, &e), AG_OK);
    ck_assert_str_eq(e.op, "matmul");
    ck_assert_int_eq(e.n_in, 2);
    ck_assert_ptr_eq(e.in[0], x);
    ck_assert_ptr_eq(e.in[1], w);
    ck_assert_ptr_null(e.in[2]);
    ck_assert_int_eq(ag_tape_entry_info(tape, 2, &e), AG_OK);
    ck_assert_str_eq(e.op, "scale");
    ck_assert_double_eq(e.arg, 0.5);
    ck_assert_ptr_eq(e.out, s);
    ck_assert_int_eq(ag_tape_entry_info(tape, 3, &e), AG_OK);
    ck_assert_str_eq(e.op, "softmax");
    ck_assert_double_eq(e.arg, 0);
    ck_assert_ptr_eq(e.out, p);
    /* out of range and NULL: an error, info untouched */
    e.op = "unchanged";
    ck_assert_int_eq(ag_tape_entry_info(tape, 4, &e), AG_ERR_ARG);
    ck_assert_str_eq(e.op, "unchanged");
    ck_assert_int_eq(ag_tape_entry_info(NULL, 0, &e), AG_ERR_ARG);
    ck_assert_int_eq(ag_tape_entry_info(tape, 0, NULL), AG_ERR_ARG);
    ag_tape_reset(tape);
    ck_assert_int_eq(ag_tape_entry_info(tape, 0, &e), AG_ERR_ARG);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

Suite *suite_explain(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("softmax");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_softmax_numbers);
    tcase_add_test(tc, test_softmax_bad_lists);
    suite_add_tcase(s, tc);
    tc = tcase_create("attention");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_attention_first_forward);
    tcase_add_test(tc, test_attention_injected_bug);
    tcase_add_test(tc, test_attention_dot);
    tcase_add_test(tc, test_attention_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("tape view");
    tcase_add_test(tc, test_entry_info);
    suite_add_tcase(s, tc);
    return s;
}
