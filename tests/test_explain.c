/*
 * test_explain.c - `attograd explain` as a program, its numbers checked
 * against values computed here independently (in double, to 4 decimals):
 * softmax's probabilities, Jacobian and input gradient; the attention
 * story's first forward (the seed's weights), its gradient check with and
 * without the injected bug, its --dot graph and --png picture; softmax with
 * masked (-inf) logits; the positional encodings of `explain posenc`. Also
 * ag_tape_entry_info and ag_tape_dot, the read-only views of the tape the
 * story is told from and drawn with.
 */
#include "test_util.h"
#include "run.h"

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

#define MAX_BAD_ARGS 6

/* Each of bad (n lines of options, each NULL-terminated) after `attograd
 * explain TOPIC` is a usage error: exit status 2, nothing on stdout, and on
 * stderr a first line naming a flag, then the topic's usage. */
static void assert_usage_errors(const char *topic, const char *const (*bad)[MAX_BAD_ARGS], size_t n)
{
    char usage[64];
    snprintf(usage, sizeof(usage), "\nusage: attograd explain %s", topic);
    for (size_t i = 0; i < n; i++) {
        const char *args[MAX_BAD_ARGS + 2] = {"explain", topic};
        for (int k = 0; k < MAX_BAD_ARGS && bad[i][k]; k++)
            args[k + 2] = bad[i][k];
        run_proc p = run_args(args, NULL);
        run_assert_usage(&p, usage);
        const char *flag = strstr(p.err, "--");
        ck_assert_msg(flag && flag < strstr(p.err, usage), "`%s`: the message names no flag:\n%s",
                      p.cmd, p.err);
        run_free(&p);
    }
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

    run_proc p = run_words("explain softmax --logits 0.5,-1,2,0 --upstream 1,0.5,-2,0.25");
    run_assert_status(&p, 0);
    const char *out = p.out;
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
    run_free(&p);
}
END_TEST

/* No --logits: the example of docs/softmax-backprop.md, said first. */
START_TEST(test_softmax_example)
{
    run_proc p = run_cmd("explain", "softmax", NULL);
    run_assert_status(&p, 0);
    static const char note[] = "No --logits given: the example --logits 1,2,3 --upstream "
                               "0.5,-1,0.25 (worked\nthrough by hand in docs/softmax-backprop.md); "
                               "give your own with --logits.\n\n";
    ck_assert_msg(strncmp(p.out, note, strlen(note)) == 0, "%s", p.out);
    run_proc q = run_words("explain softmax --logits 1,2,3 --upstream 0.5,-1,0.25");
    run_assert_status(&q, 0);
    ck_assert_str_eq(p.out + strlen(note), q.out);
    run_free(&q);
    run_free(&p);
    /* --upstream alone goes with the example's logits */
    p = run_cmd("explain", "softmax", "--upstream", "1,0,0", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "No --logits given");
    run_assert_has(p.out, "  g            [ 1.0000  0.0000  0.0000]\n");
    run_free(&p);
}
END_TEST

START_TEST(test_softmax_bad_lists)
{
    static const char *const bad[][MAX_BAD_ARGS] = {
        {"--logits", ""},
        {"--logits", "1,,2"},
        {"--logits", "1,2,"},
        {"--logits", "1,abc"},
        {"--logits", " 1"},
        {"--logits", "1e999"},
        {"--logits", "1,2", "--upstream", "1"},
        {"--logits", "1,nan"},
        {"--upstream", "1,2"},
        {"--logits"},
        {"--logits", "1", "--decimals", "2"},
        {"--logits", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"},
        {"--logits", "1,inf"},
        {"--logits", "1,+inf"},
        {"--logits", "1,-INF"},
        {"--logits", "1,2", "--upstream", "1,-inf"},
    };
    assert_usage_errors("softmax", bad, sizeof(bad) / sizeof(bad[0]));
}
END_TEST

/* Masked logits: weight exactly 0 and gradient exactly 0 there; a fully
 * masked row attends to nothing, without a NaN anywhere. */
START_TEST(test_softmax_masked)
{
    run_proc p = run_words("explain softmax --logits 1,2,-inf --upstream 0.5,-1,0.25");
    run_assert_status(&p, 0);
    const char *out = p.out;
    /* softmax(1, 2) = (0.2689, 0.7311); dL/dz = s * (g - <g, s>) with <g, s> = -0.5966 */
    double s0 = 1 / (1 + exp(1.0)), s1 = 1 - s0, dot = 0.5 * s0 - s1;
    double s[3] = {s0, s1, 0}, dz[3] = {s0 * (0.5 - dot), s1 * (-1 - dot), 0};
    char buf[128], want[160];
    format_row(buf, sizeof(buf), s, 3);
    snprintf(want, sizeof(want), "  s            %s\n", buf);
    assert_has(out, want, "probabilities");
    format_row(buf, sizeof(buf), dz, 3);
    snprintf(want, sizeof(want), "  attograd     %s\n", buf);
    assert_has(out, want, "library's gradient");
    assert_has(out, "exp(-inf) = 0: a masked entry gets weight exactly 0", "masked forward");
    assert_has(out, "no gradient reaches a masked score", "masked backward");
    assert_has(out, "dL/dz_2: finite difference 0.0000, backward 0.0000  agree", "check");
    ck_assert_ptr_null(strstr(out, "nan"));
    ck_assert_ptr_null(strstr(out, "-0.0000"));
    run_free(&p);

    p = run_words("explain softmax --logits -inf,-inf,-inf --upstream 0.5,-1,0.25");
    run_assert_status(&p, 0);
    out = p.out;
    assert_has(out, "the row is fully masked", "explanation");
    assert_has(out, "  s            [ 0.0000  0.0000  0.0000]\n", "zero weights");
    assert_has(out, "  attograd     [ 0.0000  0.0000  0.0000]\n", "zero gradient");
    ck_assert_ptr_null(strstr(out, "nan"));
    run_free(&p);
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
    ck_assert_double_eq_tol(w[1][0], 0.20, 0.005); /* the seed's [0.20 0.40 0.40] */

    run_proc run = run_cmd("explain", "attention", NULL);
    run_assert_status(&run, 0);
    const char *out = run.out;
    const char *fwd = strstr(out, "[6] softmax(scores [3x3]) -> weights [3x3]");
    ck_assert_msg(fwd != NULL, "no softmax entry:\n%s", out);
    for (int i = 0; i < 3; i++) {
        char buf[128], want[160];
        format_row(buf, sizeof(buf), w[i], 3);
        snprintf(want, sizeof(want), "    %s%s%s\n", i ? " " : "[", buf, i == 2 ? "]" : "");
        ck_assert_msg(strstr(fwd, want), "weights row %d '%s' missing after the softmax entry", i,
                      want);
    }
    /* the story's parts, in order */
    static const char *const parts[] = {
        "Forward: each op",
        "[0] leaf -> x [3x2]",
        "[9] mse(out [3x2], y [3x2]) -> loss [1]",
        "Backward: ag_backward",
        "sends dscores = weights * (dweights - <dweights, weights>)",
        "SGD update with lr 1:",
        "Where sat looks",
        "sat now looks more at cat",
        ": PASS\n",
    };
    const char *p = out;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const char *q = strstr(p, parts[i]);
        ck_assert_msg(q, "'%s' missing or out of order", parts[i]);
        p = q;
    }
    run_free(&run);
}
END_TEST

START_TEST(test_attention_injected_bug)
{
    run_proc p = run_cmd("explain", "attention", "--inject-bug", "softmax", NULL);
    run_assert_status(&p, 1);
    assert_has(p.out, ": FAIL\n", "verdict");
    assert_has(p.out, "The check caught the wrong backward", "explanation");
    /* the story itself is unchanged: the step used the correct backward */
    assert_has(p.out, "sat now looks more at cat", "story");
    run_free(&p);
}
END_TEST

START_TEST(test_attention_dot)
{
    char dir[256], path[300];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "tape.dot");
    run_proc p = run_cmd("explain", "attention", "--dot", path, NULL);
    run_assert_status(&p, 0);
    assert_has(p.out, path, "the file is named");
    run_free(&p);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char text[8192];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    ck_assert_msg(strncmp(text, "digraph", 7) == 0, "does not start with digraph:\n%s", text);
    ck_assert_msg(n >= 2 && strcmp(text + n - 2, "}\n") == 0, "unfinished graph");
    /* a parameter: its name, shape, values and gradient, highlighted */
    assert_has(text, "label=\"{wq [2x2]|{data\\l\\ \\ \\ 1.0000", "a parameter node");
    assert_has(text, "fillcolor=\"#ffe9a8\"", "parameters highlighted");
    assert_has(text, "label=\"softmax\"];", "an op node");
    assert_has(text, "|grad\\l", "gradients drawn");
    assert_has(text, "|no gradient\\l", "data without a gradient");
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

/* --png: drawn by Graphviz's dot when it is installed; without it, one
 * message and exit 1 before anything is written. */
START_TEST(test_attention_png)
{
    char dir[256], bin[512], png[512], dot[512], listing[1024];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin));
    file_path(png, sizeof(png), dir, "tape.png");
    file_path(dot, sizeof(dot), dir, "tape.dot");
    const char *args[] = {"explain", "attention", "--dot", dot, "--png", png, NULL};
    run_proc p = run_args(args, &(run_opts){.path = bin});
    run_assert_status(&p, 1);
    ck_assert_str_eq(p.out, "");
    ck_assert_str_eq(p.err, "attograd explain attention: Graphviz's dot is not installed, so no "
                            "picture (apt-get install graphviz)\n");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin");
    run_free(&p);

    if (run_have("dot")) {
        p = run_cmd("explain", "attention", "--png", png, NULL);
        /* the picture alone is left: no temporary graph or image */
        run_assert_picture(&p, "The tape as a picture: ", png, dir, "bin tape.png");
        run_free(&p);
    }
    file_rmdir(dir);
}
END_TEST

START_TEST(test_attention_errors)
{
    run_proc p = run_cmd("explain", "attention", "--dot", "/nonexistent-dir/t.dot", NULL);
    run_assert_status(&p, 1);
    /* one message, before any story: nothing on stdout */
    ck_assert_str_eq(p.out, "");
    ck_assert_str_eq(p.err, "attograd explain attention: --dot /nonexistent-dir/t.dot: cannot "
                            "write there: directory '/nonexistent-dir': No such file or "
                            "directory\n");
    run_free(&p);
    /* a directory as the picture: refused before any work, the flag named */
    p = run_cmd("explain", "attention", "--png", "/tmp", NULL);
    run_assert_status(&p, 1);
    ck_assert_str_eq(p.out, "");
    ck_assert_str_eq(p.err, "attograd explain attention: --png /tmp: is a directory\n");
    run_free(&p);
    static const char *const bad[][MAX_BAD_ARGS] = {
        {"--lr", "0"},
        {"--lr", "x"},
        {"--lr"},
        {"--inject-bug", "matmul"},
        {"--dot", ""},
        {"--verbose"},
        {"--png", ""},
        {"--png"},
        {"--dot", "a.dot", "--png", "a.dot"},
    };
    assert_usage_errors("attention", bad, sizeof(bad) / sizeof(bad[0]));
    p = run_cmd("explain", "nothing", NULL);
    run_assert_status(&p, 2);
    assert_has(p.err, "unknown topic 'nothing' (softmax, attention, posenc, layernorm, block)",
               "topics");
    run_free(&p);
    p = run_cmd("explain", "attention", "--help", NULL);
    run_assert_status(&p, 0);
    assert_has(p.out, "--inject-bug softmax", "help");
    run_free(&p);
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

/* ---- ag_tape_dot ---- */

START_TEST(test_tape_dot)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 2});
    w->data[0] = 2;
    w->data[3] = -1.5;
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 3});
    ag_tensor *y = ag_scale(tape, ag_matmul(tape, x, w), 0.5);
    ag_tensor *loss = ag_sum(tape, y);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    const ag_tensor_name names[] = {{w, "w"}, {x, "x"}, {loss, "loss"}};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ag_tape_dot(tape, f, names, 3, "a \"quoted\" title"), AG_OK);
    fclose(f);
    ck_assert_msg(strncmp(text, "digraph tape {\n  label=\"a \\\"quoted\\\" title\";", 44) == 0,
                  "title:\n%s", text);
    /* w: named, its values, its gradient x^T * 0.5 = [[0.5 0.5] [1.5 1.5]] */
    assert_has(text,
               "t1 [shape=record, label=\"{w [2x2]|{data\\l\\ \\ \\ 2.0000\\ \\ \\ 0.0000\\l"
               "\\ \\ \\ 0.0000\\ \\ -1.5000\\l|grad\\l\\ \\ \\ 0.5000\\ \\ \\ 0.5000\\l"
               "\\ \\ \\ 1.5000\\ \\ \\ 1.5000\\l}}\", style=filled",
               "w's node");
    assert_has(text, "label=\"{x [1x2]|{data", "x's node");
    assert_has(text, "|no gradient\\l}}\", style=filled, fillcolor=\"#eeeeee\"",
               "x has no gradient");
    assert_has(text, "label=\"{t2 [1x2]|", "an unnamed tensor");
    assert_has(text, "e2 [shape=ellipse, fontname=\"Helvetica\", label=\"scale 0.5\"];",
               "scale's factor");
    assert_has(text, "  t0 -> e1 [label=\"a\"];\n  t1 -> e1 [label=\"b\"];\n  e1 -> t2;\n",
               "matmul's edges");
    assert_has(text, "e3 -> t4;\n}\n", "the end");
    ck_assert_ptr_null(strstr(text, "e0 ")); /* a leaf is its tensor alone */
    free(text);

    /* a big tensor shows its first rows and columns only */
    ag_tensor *big = ag_tensor_new(tape, 2, (int[]){5, 6});
    ag_sum(tape, big);
    text = NULL;
    f = open_memstream(&text, &len);
    ck_assert_int_eq(ag_tape_dot(tape, f, NULL, 0, NULL), AG_OK);
    fclose(f);
    assert_has(text, "label=\"attograd tape\"", "the default title");
    assert_has(text, "\\ ...\\l\\ ...\\l|no gradient", "rows and columns cut");
    free(text);

    /* a stream that cannot take the graph: the error shows once its buffer is flushed */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        ck_assert_int_eq(ag_tape_dot(tape, full, NULL, 0, NULL), AG_ERR_IO);
        fclose(full);
    }
    ck_assert_int_eq(ag_tape_dot(NULL, stdout, NULL, 0, NULL), AG_ERR_ARG);
    ck_assert_int_eq(ag_tape_dot(tape, NULL, NULL, 0, NULL), AG_ERR_ARG);
    ck_assert_int_eq(ag_tape_dot(tape, stdout, NULL, 2, NULL), AG_ERR_ARG);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

/* ---- explain posenc ---- */

START_TEST(test_posenc_sinusoidal)
{
    run_proc p = run_words("explain posenc --seq 4 --dim 4");
    run_assert_status(&p, 0);
    const char *out = p.out;
    /* PE[t] = (sin t, cos t, sin(t/100), cos(t/100)) for d = 4 */
    for (int t = 0; t < 4; t++) {
        char want[128];
        snprintf(want, sizeof(want), "\n     %d %6.2f %6.2f %6.2f %6.2f\n", t, sin(t) + 0.0, cos(t),
                 sin(t / 100.0) + 0.0, cos(t / 100.0));
        assert_has(out, want, "a row of PE");
    }
    /* cosine similarity = (cos(t-u) + cos((t-u)/100)) / 2: constant diagonals */
    double s1 = (cos(1.0) + cos(0.01)) / 2, s2 = (cos(2.0) + cos(0.02)) / 2;
    char want[128];
    snprintf(want, sizeof(want), "\n     1  %6.2f %6.2f %6.2f %6.2f\n", s1, 1.0, s1, s2);
    assert_has(out, want, "a row of the similarity");
    assert_has(out, "depends\nonly on the distance t - u", "the point");
    run_free(&p);
    /* wider than is printed: the first 8 columns and 12 positions, then "..." */
    p = run_words("explain posenc --seq 20 --dim 10");
    run_assert_status(&p, 0);
    assert_has(p.out, "columns 0..7 of 10", "columns cut");
    assert_has(p.out, "  ... (8 more)\n", "rows cut");
    run_free(&p);
}
END_TEST

START_TEST(test_posenc_learned)
{
    char dir[256], ckpt[512], plain[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ckpt, sizeof(ckpt), dir, "rev.safetensors");
    file_path(plain, sizeof(plain), dir, "sin.safetensors");
    run_proc p = run_cmd("train", "--task", "reverse", "--posenc", "learned", "--steps", "5",
                         "--quiet", "--save", ckpt, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("explain", "posenc", "--load", ckpt, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "The learned positional encoding 'pos' of ");
    run_assert_has(p.out, ": 6 positions of width 32.");
    run_assert_has(p.out, "columns 0..7 of 32");
    run_assert_has(p.out, "\n     5    "); /* the last of 6 rows */
    run_free(&p);
    /* a checkpoint without learned positions, a missing file: exit 1, one line */
    p = run_cmd("train", "--task", "reverse", "--steps", "1", "--quiet", "--save", plain, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("explain", "posenc", "--load", plain, NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "has no tensor 'pos'");
    run_assert_has(p.err, "nor 'transformer.wpe.weight' (a GPT's");
    ck_assert_str_eq(p.out, "");
    run_free(&p);
    file_path(plain, sizeof(plain), dir, "missing.safetensors");
    p = run_cmd("explain", "posenc", "--load", plain, NULL);
    run_assert_status(&p, 1);
    ck_assert_str_eq(p.out, "");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* --plot: drawn by gnuplot when it is installed; without it, exit 1 and a
 * message, nothing written. */
/* A GPT checkpoint: its learned positions, transformer.wpe.weight. */
START_TEST(test_posenc_gpt)
{
    char dir[256], ckpt[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ckpt, sizeof(ckpt), dir, "g.safetensors");
    char err[256];
    ag_vocab *v = ag_vocab_from_chars("abc", err, sizeof(err));
    ag_gpt_config c = ag_gpt_defaults(3);
    c.layers = 1, c.heads = 1, c.dim = 10, c.seq = 7;
    ag_rng rng = ag_rng_new(2);
    ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(g);
    const ag_tensor *wpe = ag_gpt_param(g, "wpe");
    ck_assert_int_eq(ag_gpt_save(g, v, ckpt, err, sizeof(err)), AG_OK);
    run_proc p = run_cmd("explain", "posenc", "--load", ckpt, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "The learned positional encoding 'transformer.wpe.weight' of ");
    run_assert_has(p.out, ": 7 positions of width 10.");
    run_assert_has(p.out, "x[t] = wte[id_t] + wpe[t]");
    /* row 6, its first column, to two decimals */
    char want[64];
    snprintf(want, sizeof(want), "\n     6 %6.2f", (double)wpe->data[6 * 10] + 0.0);
    run_assert_has(p.out, want);
    run_free(&p);
    ag_gpt_free(g);
    ag_vocab_free(v);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_posenc_plot)
{
    char dir[256], bin[512], png[512], listing[1024];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin));
    file_path(png, sizeof(png), dir, "pe.png");
    const char *args[] = {"explain", "posenc", "--plot", png, NULL};
    run_proc p = run_args(args, &(run_opts){.path = bin});
    run_assert_status(&p, 1);
    ck_assert_str_eq(p.out, "");
    run_assert_has(p.err, "gnuplot is not installed, so no plot");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin");
    run_free(&p);
    if (run_have("gnuplot")) {
        p = run_cmd("explain", "posenc", "--seq", "16", "--plot", png, NULL);
        run_assert_picture(&p, "plot: ", png, dir, "bin pe.png");
        run_free(&p);
    }
    file_rmdir(dir);
}
END_TEST

START_TEST(test_posenc_usage)
{
    static const char *const bad[][MAX_BAD_ARGS] = {
        {"--seq", "0"},
        {"--seq", "1025"},
        {"--dim", "0"},
        {"--dim", "x"},
        {"--plot", ""},
        {"--load", ""},
        {"--load", "a", "--seq", "4"},
        {"--load", "a", "--plot", "a"},
        {"--bogus"},
        {"--seq"},
    };
    assert_usage_errors("posenc", bad, sizeof(bad) / sizeof(bad[0]));
    run_proc p = run_cmd("explain", "posenc", "--help", NULL);
    run_assert_status(&p, 0);
    assert_has(p.out, "--plot FILE.png", "help");
    run_free(&p);
}
END_TEST

Suite *suite_explain(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("softmax");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_softmax_numbers);
    tcase_add_test(tc, test_softmax_example);
    tcase_add_test(tc, test_softmax_bad_lists);
    tcase_add_test(tc, test_softmax_masked);
    suite_add_tcase(s, tc);
    tc = tcase_create("attention");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_attention_first_forward);
    tcase_add_test(tc, test_attention_injected_bug);
    tcase_add_test(tc, test_attention_dot);
    tcase_add_test(tc, test_attention_png);
    tcase_add_test(tc, test_attention_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("tape view");
    tcase_add_test(tc, test_entry_info);
    tcase_add_test(tc, test_tape_dot);
    suite_add_tcase(s, tc);
    tc = tcase_create("posenc");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_posenc_sinusoidal);
    tcase_add_test(tc, test_posenc_learned);
    tcase_add_test(tc, test_posenc_gpt);
    tcase_add_test(tc, test_posenc_plot);
    tcase_add_test(tc, test_posenc_usage);
    suite_add_tcase(s, tc);
    return s;
}
