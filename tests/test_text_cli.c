/*
 * test_text_cli.c - the text task as a program: `train --task text` ends
 * with its result line and `eval` prints the same validation loss; runs are
 * deterministic for a seed and any thread count; a run saved halfway and
 * resumed writes the same log and the same checkpoint, byte for byte, as
 * one that never stopped; Ctrl-C saves; `sample` writes the prompt and the
 * new characters and nothing else, the same for the same seed; and every
 * mistake is a clear message with the right exit status. The texts are
 * made here.
 */
#include "run.h"
#include "test_util.h"

#include <regex.h>
#include <signal.h>

/* A small play: lines drawn from a few, so there is something to learn. */
static void write_play(const char *path, int lines, uint64_t seed)
{
    static const char *const speech[] = {
        "ANNA:\nThe river runs, the wheel goes round.\n",
        "BEN:\nAnd bread comes out of what we ground.\n",
        "ANNA:\nWho knocks so late upon the door?\n",
        "BEN:\nA stranger, and he asks for more.\n",
        "CARL:\nI walked all night; the road was long.\n",
        "ANNA:\nThen sit, and eat, and sing your song.\n",
    };
    ag_rng rng = ag_rng_new(seed);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < lines; i++)
        fputs(speech[ag_rng_below(&rng, 6)], f);
    ck_assert_int_eq(fclose(f), 0);
}

/* The flags of a tiny, quick model. */
#define TINY                                                                                       \
    "--layers", "1", "--dim", "16", "--heads", "2", "--seq", "8", "--batch", "4", "--eval-iters",  \
        "2"

/* The numbers of "result: task=text steps=N loss=L val_loss=V seconds=S
 * val_seconds=W" (a run a signal stopped has no val_loss: nan). */
static void parse_result(const char *out, long steps, char *val, size_t len)
{
    char last[512];
    text_last_line(out, last, sizeof(last));
    regex_t re;
    ck_assert_int_eq(regcomp(&re,
                             "^result: task=text steps=([0-9]+) loss=([0-9.]+|nan) "
                             "val_loss=([0-9.]+|nan) seconds=([0-9.]+) val_seconds=([0-9.]+)$",
                             REG_EXTENDED),
                     0);
    regmatch_t m[6];
    int rc = regexec(&re, last, 6, m, 0);
    regfree(&re);
    ck_assert_msg(rc == 0, "the last line is not the result line: '%s'", last);
    ck_assert_int_eq(atol(last + m[1].rm_so), steps);
    snprintf(val, len, "%.*s", (int)(m[3].rm_eo - m[3].rm_so), last + m[3].rm_so);
}

START_TEST(test_train_and_eval)
{
    char dir[256], text[512], ck[512], log[512], listing[1024], val[64], want[128];
    file_tmpdir(dir, sizeof(dir));
    file_path(text, sizeof(text), dir, "play.txt");
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    file_path(log, sizeof(log), dir, "l.csv");
    write_play(text, 60, 1);
    run_proc p = run_cmd("train", "--task", "text", "--text", text, TINY, "--steps", "12",
                         "--eval-every", "4", "--save", ck, "--log", log, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "training text: ");
    run_assert_has(p.out, "\nstep 4 train_loss ");
    run_assert_has(p.out, "\nstep 12 train_loss ");
    ck_assert_str_eq(p.err, "");
    parse_result(p.out, 12, val, sizeof(val));
    run_free(&p);
    /* the log: a header and a row per step, the estimates every 4 */
    char *csv = file_read(log, NULL);
    ck_assert_ptr_nonnull(csv);
    static const char *const header =
        "step,loss,train_loss,val_loss,lr,grad_norm.0,resid_rms.0\n1,";
    ck_assert_msg(strncmp(csv, header, strlen(header)) == 0, "%s", csv);
    int rows = 0;
    for (char *s = csv; *s; s++)
        rows += *s == '\n';
    ck_assert_int_eq(rows, 13);
    /* the gradient flow at each estimate, and only there */
    const char *row = strstr(csv, "\n4,"), *row3 = strstr(csv, "\n3,");
    ck_assert_ptr_nonnull(row);
    double v[7];
    ck_assert_int_eq(sscanf(row + 1, "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6]),
                     7);
    ck_assert(v[5] > 0 && v[6] > 0 && isfinite(v[5]) && isfinite(v[6]));
    ck_assert(strncmp(strchr(row3 + 1, '\n') - 2, ",,", 2) == 0);
    free(csv);
    /* eval prints the same full validation loss */
    p = run_cmd("eval", "--load", ck, "--text", text, NULL);
    run_assert_status(&p, 0);
    snprintf(want, sizeof(want), "eval: val_loss=%s windows=", val);
    ck_assert_msg(strncmp(p.out, want, strlen(want)) == 0, "%s vs %s", p.out, want);
    run_free(&p);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "c.safetensors l.csv play.txt");
    file_rmdir(dir);
}
END_TEST

/* --plot-heads: every head on the first validation window, one grid; and
 * --plot draws the flow beside the losses. Without gnuplot one line says
 * so and the run succeeds. */
START_TEST(test_plots)
{
    char dir[256], bin[512], text[512], heads[512], loss[512], listing[1024];
    file_tmpdir_nobin(dir, sizeof(dir), bin, sizeof(bin));
    file_path(text, sizeof(text), dir, "play.txt");
    file_path(heads, sizeof(heads), dir, "heads.png");
    file_path(loss, sizeof(loss), dir, "loss.png");
    write_play(text, 60, 4);
    const char *args[] = {"train", "--task",  "text",         "--text", text,     TINY, "--steps",
                          "6",     "--quiet", "--plot-heads", heads,    "--plot", loss, NULL};
    run_proc p = run_args(args, &(run_opts){.path = bin});
    run_assert_status(&p, 0);
    run_assert_has(p.err, "gnuplot is not installed, so no plot");
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "bin play.txt");
    run_free(&p);
    if (run_have("gnuplot")) {
        p = run_cmd("train", "--task", "text", "--text", text, TINY, "--steps", "6", "--plot-heads",
                    heads, NULL);
        run_assert_picture(&p, "\nplot: ", heads, dir, "bin heads.png play.txt");
        run_free(&p);
        p = run_cmd("train", "--task", "text", "--text", text, TINY, "--steps", "6", "--eval-every",
                    "2", "--plot", loss, NULL);
        run_assert_picture(&p, "\nplot: ", loss, dir, "bin heads.png loss.png play.txt");
        run_free(&p);
    }
    p = run_cmd("train", "--task", "text", "--text", text, "--plot-heads", text, NULL);
    run_assert_status(&p, 2);
    run_assert_has(p.err, "--text and --plot-heads both name");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_deterministic)
{
    char dir[256], text[512], a[512], b[512], c[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(text, sizeof(text), dir, "play.txt");
    file_path(a, sizeof(a), dir, "a.csv");
    file_path(b, sizeof(b), dir, "b.csv");
    file_path(c, sizeof(c), dir, "c.csv");
    write_play(text, 60, 2);
    const char *logs[3] = {a, b, c}, *threads[3] = {"1", "1", "2"};
    for (int k = 0; k < 3; k++) {
        run_proc p = run_cmd("train", "--task", "text", "--text", text, TINY, "--steps", "8",
                             "--dropout", "0.1", "--seed", "5", "--threads", threads[k], "--quiet",
                             "--log", logs[k], NULL);
        run_assert_status(&p, 0);
        run_free(&p);
    }
    char *la = file_read(a, NULL), *lb = file_read(b, NULL), *lc = file_read(c, NULL);
    ck_assert_str_eq(la, lb);
    ck_assert_str_eq(la, lc);
    free(la), free(lb), free(lc);
    file_rmdir(dir);
}
END_TEST

/* Whether two log rows agree on every field both have, and both have the
 * step, the loss and the learning rate (fields 0, 1 and 4). */
static int same_fields(const char *a, const char *b)
{
    for (int k = 0; *a || *b; k++) {
        size_t na = strcspn(a, ","), nb = strcspn(b, ",");
        if ((k <= 1 || k == 4) && (!na || !nb))
            return 0;
        if (na && nb && (na != nb || strncmp(a, b, na) != 0))
            return 0;
        a += na + (a[na] == ','), b += nb + (b[nb] == ',');
    }
    return 1;
}

/* 12 steps at once, or 6 (with the schedule of 12), saved, and 6 more:
 * the same log rows and the same checkpoint file. */
START_TEST(test_resume_equals_uninterrupted)
{
    char dir[256], text[512], whole[512], half[512], l1[512], l2[512], l3[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(text, sizeof(text), dir, "play.txt");
    file_path(whole, sizeof(whole), dir, "whole.safetensors");
    file_path(half, sizeof(half), dir, "half.safetensors");
    file_path(l1, sizeof(l1), dir, "whole.csv");
    file_path(l2, sizeof(l2), dir, "first.csv");
    file_path(l3, sizeof(l3), dir, "second.csv");
    write_play(text, 60, 3);
    run_proc p =
        run_cmd("train", "--task", "text", "--text", text, TINY, "--warmup", "3", "--dropout",
                "0.1", "--steps", "12", "--quiet", "--save", whole, "--log", l1, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--task", "text", "--text", text, TINY, "--warmup", "3", "--dropout",
                "0.1", "--steps", "6", "--decay-steps", "12", "--quiet", "--save", half, "--log",
                l2, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--text", text, "--load", half, "--eval-iters", "2", "--steps", "6",
                "--quiet", "--save", half, "--log", l3, NULL);
    run_assert_status(&p, 0);
    char val[64];
    parse_result(p.out, 12, val, sizeof(val));
    run_free(&p);
    size_t na = 0, nb = 1;
    char *fa = file_read(whole, &na), *fb = file_read(half, &nb);
    ck_assert_msg(na == nb && memcmp(fa, fb, na) == 0, "the resumed checkpoint differs");
    free(fa), free(fb);
    /* the logs' rows: the first 6 and the last 6 of the whole (the first
     * part estimates the losses at its last step, which the whole run does
     * not: compare the fields both rows have, which must include the step,
     * the loss and the learning rate) */
    char *w = file_read(l1, NULL), *first = file_read(l2, NULL), *second = file_read(l3, NULL);
    char *wl = strtok(w, "\n"), *lines[13];
    for (int k = 0; k < 13; k++, wl = strtok(NULL, "\n"))
        lines[k] = wl;
    char *parts[2] = {first, second};
    for (int part = 0; part < 2; part++) {
        char *save = NULL, *line = strtok_r(parts[part], "\n", &save);
        ck_assert_str_eq(line, lines[0]);
        for (int k = 1; k <= 6; k++) {
            line = strtok_r(NULL, "\n", &save);
            char *want = lines[part * 6 + k];
            ck_assert_ptr_nonnull(line);
            ck_assert_msg(same_fields(line, want), "part %d row %d: %s vs %s", part + 1, k, line,
                          want);
        }
    }
    free(w), free(first), free(second);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_ctrl_c_saves)
{
    char dir[256], text[512], ck[512], want[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(text, sizeof(text), dir, "play.txt");
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    write_play(text, 60, 4);
    const char *args[] = {"train",    "--task",       "text", "--text", text, TINY, "--steps",
                          "10000000", "--eval-every", "3",    "--save", ck,   NULL};
    run_proc p = run_interrupt(args, "\nstep 3 ", SIGINT);
    run_assert_status(&p, 130);
    run_assert_has(p.err, "attograd train: interrupted after step ");
    ag_gpt_file *f;
    char err[600];
    ck_assert_msg(ag_gpt_file_load(ck, &f, err, sizeof(err)) == AG_OK, "%s", err);
    long step;
    ck_assert_int_eq(ag_gpt_file_train(f, NULL, &step), 1);
    ag_gpt_file_free(f);
    ck_assert_int_ge(step, 3);
    char val[64];
    parse_result(p.out, step, val, sizeof(val));
    snprintf(want, sizeof(want), "saved: %s (step %ld)\n", ck, step);
    run_assert_has(p.out, want);
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_sample)
{
    char dir[256], text[512], ck[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(text, sizeof(text), dir, "play.txt");
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    write_play(text, 60, 5);
    run_proc p = run_cmd("train", "--task", "text", "--text", text, TINY, "--steps", "5", "--quiet",
                         "--save", ck, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    /* the prompt, then exactly --tokens characters; nothing else */
    run_proc a = run_cmd("sample", "--load", ck, "--prompt", "ANNA:\n", "--tokens", "40", "--seed",
                         "3", NULL);
    run_proc b = run_cmd("sample", "--load", ck, "--prompt", "ANNA:\n", "--tokens", "40", "--seed",
                         "3", NULL);
    run_proc c = run_cmd("sample", "--load", ck, "--prompt", "ANNA:\n", "--tokens", "40", "--seed",
                         "4", NULL);
    run_assert_status(&a, 0);
    run_assert_status(&c, 0);
    ck_assert_str_eq(a.err, "");
    ck_assert_uint_eq(a.out_len, 6 + 40); /* the play is ASCII */
    ck_assert(strncmp(a.out, "ANNA:\n", 6) == 0);
    ck_assert_str_eq(a.out, b.out);
    ck_assert_str_ne(a.out, c.out);
    run_free(&a), run_free(&b), run_free(&c);
    /* without a prompt, and past the context (seq 8), and greedy */
    p = run_cmd("sample", "--load", ck, "--tokens", "30", "--temperature", "0", NULL);
    run_assert_status(&p, 0);
    ck_assert_uint_eq(p.out_len, 30);
    run_free(&p);
    p = run_cmd("sample", "--load", ck, "--prompt", "BEN", "--tokens", "0", NULL);
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.out, "BEN");
    run_free(&p);
    /* a character the play never uses */
    p = run_cmd("sample", "--load", ck, "--prompt", "ANNA: \xc3\xa9t\xc3\xa9", NULL);
    run_assert_status(&p, 1);
    ck_assert_str_eq(p.out, "");
    char want[700];
    snprintf(want, sizeof(want),
             "attograd sample: --prompt: character '\xc3\xa9' (U+00E9) on line 1 "
             "is not in the vocabulary of %s\n",
             ck);
    ck_assert_str_eq(p.err, want);
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* ---- mistakes ---- */

typedef struct err_case {
    const char *args[16];
    int status;
    const char *fragment; /* in stderr; "DIR" stands for the scratch directory */
} err_case;

static const err_case cases[] = {
    {{"train", "--task", "text"}, 2, "--text FILE is required"},
    {{"train", "--task", "text", "--text", "DIR/none.txt"}, 1, "DIR/none.txt: cannot open"},
    {{"train", "--text", "DIR/empty.txt"}, 1, "DIR/empty.txt: the text is empty"},
    {{"train", "--text", "DIR/latin1.txt"},
     1,
     "DIR/latin1.txt: not UTF-8 text: invalid byte 0xe9 on line 1"},
    {{"train", "--text", "DIR/short.txt"},
     1,
     "DIR/short.txt: a text of 40 characters is too short for windows of 64"},
    {{"train", "--text", "DIR/play.txt", "--heads", "3"},
     2,
     "--heads: 3 does not divide --dim 128"},
    {{"train", "--text", "DIR/play.txt", "--posenc", "sinusoidal"},
     2,
     "--posenc: unknown kind 'sinusoidal' (learned, none)"},
    {{"train", "--text", "DIR/play.txt", "--dropout", "0.95"},
     2,
     "--dropout: 0.95 is out of range"},
    {{"train", "--text", "DIR/play.txt", "--layers", "0"}, 2, "--layers: 0 is out of range"},
    {{"train", "--text", "DIR/play.txt", "--task", "lookup"}, 2, "unknown option '--text'"},
    {{"train", "--text", "DIR/play.txt", "--optimizer", "sgd"}, 2, "unknown option '--optimizer'"},
    {{"train", "--text", "DIR/play.txt", "--save", "DIR/play.txt"},
     2,
     "--save and --text both name"},
    {{"train", "--text", "DIR/play.txt", "--seq", "4096", "--batch", "64"}, 2, "is too large"},
    {{"train", "--text", "DIR/play.txt", "--load", "DIR/lookup.safetensors"},
     1,
     "DIR/lookup.safetensors: not an attograd GPT checkpoint (format 'attograd-checkpoint'); it "
     "is a toy task's (train --load reads it, without --task text)\n"},
    {{"train", "--load", "DIR/gpt.safetensors"},
     1,
     "DIR/gpt.safetensors: not an attograd checkpoint (format 'attograd-gpt'); it is a GPT's "
     "(train --task text, sample, eval and attend read it)\n"},
    {{"train", "--text", "DIR/play.txt", "--load", "DIR/gpt.safetensors", "--layers", "2"},
     2,
     "--layers 2 conflicts with DIR/gpt.safetensors, made with 1 (--load fixes the model)"},
    {{"train", "--text", "DIR/accents.txt", "--load", "DIR/gpt.safetensors"},
     1,
     "DIR/accents.txt: character '\xc3\xa9' (U+00E9) on line 1 is not in the vocabulary"},
    {{"sample"}, 2, "--load CKPT is required"},
    {{"sample", "--load", "DIR/none.safetensors"}, 1, "DIR/none.safetensors: cannot open"},
    {{"sample", "--load", "DIR/gpt.safetensors", "--temperature", "-1"},
     2,
     "--temperature: -1 is out of range"},
    {{"sample", "--load", "DIR/gpt.safetensors", "--tokens", "x"},
     2,
     "--tokens: 'x' is not an integer"},
    {{"sample", "--load", "DIR/lookup.safetensors"},
     1,
     "not an attograd GPT checkpoint (format 'attograd-checkpoint'); it is a toy task's"},
    {{"sample", "--load", "DIR/gpt.safetensors", "extra"}, 2, "unexpected argument 'extra'"},
    {{"eval", "--load", "DIR/gpt.safetensors"}, 2, "--text FILE is required"},
    {{"eval", "--text", "DIR/play.txt"}, 2, "--load CKPT is required"},
    {{"eval", "--load", "DIR/gpt.safetensors", "--text", "DIR/valaccent.txt"},
     1,
     "DIR/valaccent.txt: character '\xc3\xa9' (U+00E9) on line 41 (in the validation part, the "
     "last 10%) is not in the vocabulary of DIR/gpt.safetensors"},
    {{"eval", "--load", "DIR/gpt.safetensors", "--text", "DIR/accents.txt"},
     1,
     "DIR/accents.txt: its validation part (the last 10%) has 1 characters; a window of 8 (the "
     "block_size of DIR/gpt.safetensors) needs 9"},
    {{"eval", "--load", "DIR/gpt.safetensors", "--text", "DIR/tiny.txt"},
     1,
     "DIR/tiny.txt: its validation part (the last 10%) has 2 characters; a window of 8 (the "
     "block_size of DIR/gpt.safetensors) needs 9"},
    {{"train", "--text", "DIR/play.txt", "--min-lr", "0.5", "--lr", "0.01"},
     2,
     "--min-lr 0.5 is above --lr 0.01: the learning rate would rise as it decays"},
    {{"train", "--text", "DIR/play.txt", "--min-lr", "0.01"},
     2,
     "--min-lr 0.01 is above --lr 0.001: the learning rate would rise as it decays"},
    {{"train", "--text", "DIR/play.txt", "--load", "DIR/gpt.safetensors", "--lr", "1e-5"},
     2,
     "--min-lr 0.0001 is above --lr 1e-05 (the one not given is --load's): the learning rate "
     "would rise"},
    {{"sample", "--load", "DIR/gpt.safetensors", "--prompt", "caf\xe9"},
     2,
     "--prompt: not UTF-8 text"},
    {{"attend", "--load", "DIR/gpt.safetensors", "--prompt", "ab\xff"},
     2,
     "--prompt: not UTF-8 text"},
    {{"explain", "block", "--load", "DIR/gpt.safetensors", "--prompt",
      "\xc0\x80"
      "ab"},
     2,
     "--prompt: not UTF-8 text"},
    {{"attend", "--load", "DIR/gpt.safetensors", "--prompt", "ab\xe2\x82"},
     2,
     "--prompt: not UTF-8 text"},
    {{"train", "--text", "DIR/play.txt", "--layers", "256", "--dim", "4096", "--heads", "1",
      "--seq", "1", "--batch", "1"},
     2,
     "the run would need about "},
};

START_TEST(test_errors)
{
    char dir[256], path[512];
    file_tmpdir(dir, sizeof(dir));
    file_write(file_path(path, sizeof(path), dir, "empty.txt"), "", 0);
    file_write(file_path(path, sizeof(path), dir, "latin1.txt"), "caf\xe9\n", 5);
    file_write(file_path(path, sizeof(path), dir, "short.txt"),
               "To be, or not to be, that is the question", 40);
    file_write(file_path(path, sizeof(path), dir, "accents.txt"), "\xc3\xa9t\xc3\xa9\n", 6);
    file_write(file_path(path, sizeof(path), dir, "tiny.txt"), "ANNA:\nBEN:\nCARL:\n", 16);
    char many[300] = "";
    for (int i = 0; i < 40; i++)
        strcat(many, "ANNA:\n");
    strcat(many, "\xc3\xa9t\xc3\xa9\n"); /* 244 characters, the accents in the last 10% */
    file_write(file_path(path, sizeof(path), dir, "valaccent.txt"), many, strlen(many));
    write_play(file_path(path, sizeof(path), dir, "play.txt"), 60, 6);
    char gpt[512], lookup[512];
    file_path(gpt, sizeof(gpt), dir, "gpt.safetensors");
    file_path(lookup, sizeof(lookup), dir, "lookup.safetensors");
    run_proc p =
        run_cmd("train", "--text", path, TINY, "--steps", "2", "--quiet", "--save", gpt, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--steps", "2", "--quiet", "--save", lookup, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *argv[20];
        char args[16][600], frag[700];
        int n = 0;
        argv[n++] = run_bin();
        for (int i = 0; cases[k].args[i]; i++) {
            const char *a = cases[k].args[i], *d = strstr(a, "DIR");
            if (d)
                snprintf(args[i], sizeof(args[i]), "%.*s%s%s", (int)(d - a), a, dir, d + 3);
            else
                snprintf(args[i], sizeof(args[i]), "%s", a);
            argv[n++] = args[i];
        }
        argv[n] = NULL;
        const char *d = strstr(cases[k].fragment, "DIR");
        if (d)
            snprintf(frag, sizeof(frag), "%.*s%s%s", (int)(d - cases[k].fragment),
                     cases[k].fragment, dir, d + 3);
        else
            snprintf(frag, sizeof(frag), "%s", cases[k].fragment);
        /* a second DIR in the fragment */
        char *d2 = strstr(frag + (d ? (size_t)(d - cases[k].fragment) + strlen(dir) : 0), "DIR");
        if (d2) {
            char tail[700];
            snprintf(tail, sizeof(tail), "%s", d2 + 3);
            snprintf(d2, sizeof(frag) - (size_t)(d2 - frag), "%s%s", dir, tail);
        }
        p = run_exec(argv, NULL);
        ck_assert_msg(p.status == cases[k].status, "case %zu (%s %s): status %d, want %d\n%s", k,
                      cases[k].args[0], cases[k].args[1] ? cases[k].args[1] : "", p.status,
                      cases[k].status, p.err);
        ck_assert_msg(strstr(p.err, frag) != NULL, "case %zu: '%s' not in:\n%s", k, frag, p.err);
        if (cases[k].status == 2)
            run_assert_has(p.err, "usage: attograd ");
        run_free(&p);
    }
    file_rmdir(dir);
}
END_TEST

START_TEST(test_help)
{
    const char *cmds[3][4] = {
        {"train", "--task", "text", "--help"}, {"sample", "--help"}, {"eval", "-h"}};
    const char *usage[3] = {"usage: attograd train --task text --text FILE",
                            "usage: attograd sample --load CKPT",
                            "usage: attograd eval --load CKPT --text FILE"};
    for (int k = 0; k < 3; k++) {
        run_proc p = run_cmd(cmds[k][0], cmds[k][1], cmds[k][2], cmds[k][3], NULL);
        run_assert_status(&p, 0);
        ck_assert(strncmp(p.out, usage[k], strlen(usage[k])) == 0);
        run_free(&p);
    }
    run_proc p = run_cmd("--help", NULL);
    run_assert_has(p.out, "  sample ");
    run_assert_has(p.out, "  eval ");
    run_free(&p);
    p = run_cmd("train", "--help", NULL);
    run_assert_has(p.out, "attograd train --task text --help");
    run_free(&p);
}
END_TEST

Suite *suite_text_cli(void)
{
    Suite *s = suite_create("text_cli");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 300); /* sanitizer builds are slow; nothing here is timed */
    tcase_add_test(tc, test_train_and_eval);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_plots);
    tcase_add_test(tc, test_resume_equals_uninterrupted);
    tcase_add_test(tc, test_ctrl_c_saves);
    tcase_add_test(tc, test_sample);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_help);
    suite_add_tcase(s, tc);
    return s;
}
