/*
 * test_explain_block.c - `attograd explain block`: the tiny block's story
 * and a trained model's block, each ending with dx equal to its finite
 * difference; the gradient of each residual add split into its skip and
 * its branch, which add up to what the tape holds; the tape drawn; and
 * every mistake a clear message with the right exit status.
 */
#include "run.h"
#include "test_util.h"

/* The numbers of the matrix printed under the line `title` (the first
 * after `from`), row by row into v; returns how many. "nan" counts. */
static int read_matrix(const char *out, const char *from, const char *title, double *v, int max)
{
    const char *at = strstr(out, from);
    ck_assert_msg(at != NULL, "no '%s' in the output", from);
    at = strstr(at, title);
    ck_assert_msg(at != NULL, "no '%s' after '%s'", title, from);
    at = strchr(at, '\n') + 1;
    int n = 0;
    while (*at == ' ' && n < max) { /* the matrix's lines are indented */
        const char *end = strchr(at, '\n');
        for (const char *p = at; p < end && n < max;) {
            if ((*p >= '0' && *p <= '9') || *p == '-' || *p == 'n') {
                char *next;
                v[n++] = strtod(p, &next);
                p = next;
            } else {
                p++;
            }
        }
        at = end + 1;
    }
    return n;
}

START_TEST(test_tiny_block)
{
    run_proc p = run_cmd("explain", "block", NULL);
    run_assert_status(&p, 0);
    const char *out = p.out;
    /* the story's parts, in order */
    static const char *const parts[] = {
        "A tiny block: x holds T = 3 positions of C = 4 numbers",
        "Forward: each op computes its output and appends an entry to the tape (23",
        "[0] layernorm(x [1x3x4], ln_1 [4]) -> a [1x3x4]",
        "[9] causal_mask(S [1x2x3x3]) -> S_m [1x2x3x3]",
        "[14] add(x [1x3x4], att [1x3x4]) -> h [1x3x4]",
        "[17] gelu(f [1x3x16]) -> u [1x3x16]",
        "[19] add(h [1x3x4], m [1x3x4]) -> out [1x3x4]",
        "Backward: ag_backward sets dL = 1",
        "The second add: h is read twice",
        "The first add: x is read twice",
        "Why the residual keeps gradients alive",
        "Gradient check of dx",
        "The backward pass and the finite differences agree.",
    };
    const char *at = out;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const char *next = strstr(at, parts[i]);
        ck_assert_msg(next != NULL, "'%s' missing or out of order in:\n%s", parts[i], out);
        at = next;
    }
    /* dx: backward and the finite difference agree */
    double bwd[12], fd[12];
    ck_assert_int_eq(read_matrix(out, "Gradient check of dx", "backward:", bwd, 12), 12);
    ck_assert_int_eq(read_matrix(out, "Gradient check of dx", "finite difference:", fd, 12), 12);
    int moved = 0;
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(fabs(bwd[i] - fd[i]) <= 1e-3 * fmax(1, fabs(bwd[i])),
                      "dx element %d: backward %g, finite difference %g", i, bwd[i], fd[i]);
        moved |= fabs(bwd[i]) > 0.1;
    }
    ck_assert(moved);
    /* each add's two shares add up to the gradient the tape holds */
    static const char *const adds[2] = {"The second add", "The first add"};
    for (int k = 0; k < 2; k++) {
        double skip[12], branch[12], sum[12];
        ck_assert_int_eq(read_matrix(out, adds[k], "through the skip", skip, 12), 12);
        ck_assert_int_eq(read_matrix(out, adds[k], "through the branch", branch, 12), 12);
        ck_assert_int_eq(read_matrix(out, adds[k], "their sum", sum, 12), 12);
        double nonzero = 0;
        for (int i = 0; i < 12; i++) {
            ck_assert_msg(fabs(skip[i] + branch[i] - sum[i]) <= 2e-4,
                          "%s element %d: %g + %g != %g", adds[k], i, skip[i], branch[i], sum[i]);
            nonzero += fabs(branch[i]);
        }
        ck_assert(nonzero > 0.01); /* the branch does send something */
    }
    /* the first add's sum is dx, as the check saw it */
    double sum[12];
    read_matrix(out, "The first add", "their sum", sum, 12);
    for (int i = 0; i < 12; i++)
        ck_assert(fabs(sum[i] - bwd[i]) <= 1e-4);
    run_free(&p);
    /* another seed, other numbers, the same agreement */
    p = run_cmd("explain", "block", "--seed", "7", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "drawn from seed 7");
    run_assert_has(p.out, ": PASS\n");
    run_free(&p);
}
END_TEST

/* A checkpoint of a small model for --load (random weights, a vocabulary). */
static void write_model(const char *path, int bias)
{
    char err[256];
    ag_vocab *v = ag_vocab_from_chars("\n :ABDEGNOabdeghinorst", err, sizeof(err));
    ck_assert_msg(v != NULL, "%s", err);
    ag_gpt_config c = ag_gpt_defaults(ag_vocab_size(v));
    c.layers = 2, c.heads = 2, c.dim = 16, c.seq = 12, c.bias = bias;
    ag_rng rng = ag_rng_new(3);
    ag_gpt *g = ag_gpt_new(&c, &rng, err, sizeof(err));
    ck_assert_msg(g != NULL, "%s", err);
    ag_tensor *p[64];
    size_t n = ag_gpt_params(g, p, NULL, 64);
    for (size_t i = 0; i < n; i++)
        if (p[i]->ndim == 2)
            ag_fill_normal(p[i], &rng, 0, 0.3);
    ck_assert_int_eq(ag_gpt_save(g, v, path, err, sizeof(err)), AG_OK);
    ag_gpt_free(g);
    ag_vocab_free(v);
}

START_TEST(test_loaded_block)
{
    char dir[256], ckpt[512], biased[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ckpt, sizeof(ckpt), dir, "m.safetensors");
    file_path(biased, sizeof(biased), dir, "b.safetensors");
    write_model(ckpt, 0);
    write_model(biased, 1);
    for (int layer = 0; layer < 2; layer++) {
        char l[4];
        snprintf(l, sizeof(l), "%d", layer);
        run_proc p = run_cmd("explain", "block", "--load", ckpt, "--layer", l, "--prompt",
                             "ANNA:\nGo on", NULL);
        run_assert_status(&p, 0);
        char want[64];
        snprintf(want, sizeof(want), "Block %d of ", layer);
        run_assert_has(p.out, want);
        run_assert_has(p.out, "T = 10 positions, each predicting the next character.");
        run_assert_has(p.out, "ANNA:\xe2\x86\xb5Go\xe2\x90\xa3on"); /* shown safely */
        run_assert_has(p.out, "[0] layernorm(x [1x10x16], ln_1 [16]) -> a [1x10x16]");
        run_assert_has(p.out, "The weights are the checkpoint's (--load).");
        run_assert_has(p.out, "The backward pass and the finite differences agree.");
        run_free(&p);
    }
    /* what it refuses */
    run_proc p = run_cmd("explain", "block", "--load", biased, "--prompt", "ANNA", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "explain block tells the standard block; this model was trained with "
                          "--bias");
    run_free(&p);
    p = run_cmd("explain", "block", "--load", ckpt, "--layer", "2", "--prompt", "ANNA", NULL);
    run_assert_status(&p, 2);
    run_assert_has(p.err, "--layer 2: ");
    run_assert_has(p.err, "has 2 blocks (0..1)");
    run_free(&p);
    p = run_cmd("explain", "block", "--load", ckpt, "--prompt", "ANNA!", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "--prompt: character '!' (U+0021) on line 1 is not in the vocabulary");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_pictures)
{
    char dir[256], bin[512], png[512], dot[512], listing[256];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin));
    file_path(png, sizeof(png), dir, "block.png");
    file_path(dot, sizeof(dot), dir, "block.dot");
    run_proc p = run_cmd("explain", "block", "--dot", dot, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "The tape as a graph: ");
    run_free(&p);
    char *graph = file_read(dot, NULL);
    ck_assert_ptr_nonnull(graph);
    run_assert_has(graph, "digraph");
    run_assert_has(graph, "causal_mask");
    run_assert_has(graph, "w_proj");
    free(graph);
    /* no Graphviz: said before any work, nothing written */
    const char *args[] = {"explain", "block", "--png", png, NULL};
    p = run_args(args, &(run_opts){.path = bin});
    run_assert_status(&p, 1);
    run_assert_has(p.err, "Graphviz's dot is not installed");
    ck_assert_uint_eq(p.out_len, 0);
    run_free(&p);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin block.dot");
    if (run_have("dot")) {
        p = run_cmd("explain", "block", "--png", png, NULL);
        run_assert_picture(&p, "The tape as a picture: ", png, dir, "bin block.dot block.png");
        run_free(&p);
    }
    file_rmdir(dir);
}
END_TEST

START_TEST(test_usage)
{
    static const char usage[] = "usage: attograd explain block";
    static const struct {
        const char *words, *msg;
    } bad[] = {
        {"explain block --layer 1", "--layer goes with --load"},
        {"explain block --prompt AB", "--prompt goes with --load"},
        {"explain block --load m.st", "--load needs --prompt TEXT"},
        {"explain block --load m.st --prompt A", "--prompt needs at least 2 characters"},
        {"explain block --load m.st --prompt AB --seed 2", "--seed makes the tiny block"},
        {"explain block --dot a --png a", "--dot and --png both name 'a'"},
        {"explain block --seed x", "--seed"},
        {"explain block --bogus", "--bogus"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        run_proc p = run_words(bad[i].words);
        run_assert_usage(&p, usage);
        run_assert_has(p.err, bad[i].msg);
        run_free(&p);
    }
    run_proc p = run_cmd("explain", "block", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "One pre-norm GPT block");
    run_assert_has(p.out, "--prompt TEXT");
    run_free(&p);
    p = run_cmd("explain", "--help", NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "  block      one pre-norm GPT block");
    run_free(&p);
}
END_TEST

Suite *suite_explain_block(void)
{
    Suite *s = suite_create("explain_block");
    TCase *tc = tcase_create("explain_block");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_tiny_block);
    tcase_add_test(tc, test_loaded_block);
    tcase_add_test(tc, test_pictures);
    tcase_add_test(tc, test_usage);
    suite_add_tcase(s, tc);
    return s;
}
