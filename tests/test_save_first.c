/*
 * test_save_first.c - never losing a training run, as a program, by class
 * (each rule is in docs/robustness.md), several variants each:
 *
 *   signals   SIGINT, SIGTERM or SIGHUP while the text is read, the model
 *             made, the steps run, the checkpoint written, the validation
 *             runs: exit 128 + it, a line on what was saved, no temporary
 *             file left; a checkpoint interrupted and resumed is, byte for
 *             byte, the one of a run that never stopped; a second signal
 *             ends the run at once, leaving every target as it was
 *   memory    a run that would need more than AG_MAX_MEMORY is refused
 *             before anything is allocated: exit 2 for flags, 1 for a file;
 *             a run that fits stays within its estimate (peak RSS)
 *   counters  a checkpoint's step and optimizer step may not pass the limit
 *   nan       a non-finite loss names the step and the op, and says what
 *             was saved: the step before
 *   messages  a value from a file names the file, exit 1; sampling refuses
 *             logits that are not finite; eval reads the vocabulary only
 *             where it evaluates
 *   progress  long phases show progress on stderr, none with --quiet
 *
 * Texts are made here, in scratch directories. Progress lines are made to
 * show at once (AG_PROGRESS_SECONDS=0), so that a test can send its signal
 * in the phase it names, by what the run says, never by a clock.
 */
#include "run.h"
#include "st_edit.h"
#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define PREV "previous content\n"

/* ---- scratch ---- */

typedef struct scratch {
    char dir[256];
    char path[8][512];
    int n;
} scratch;

static const char *at(scratch *s, const char *name)
{
    ck_assert_int_lt(s->n, 8);
    return file_path(s->path[s->n++], sizeof(s->path[0]), s->dir, name);
}

/* Whether dir holds a temporary file of an atomic write. */
static int tmp_left(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        found |= strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return found;
}

/* A play of about `bytes` bytes: lines drawn from a few. */
static void write_play(const char *path, size_t bytes, uint64_t seed)
{
    static const char *const speech[] = {
        "ANNA:\nThe river runs, the wheel goes round.\n",
        "BEN:\nAnd bread comes out of what we ground.\n",
        "ANNA:\nWho knocks so late upon the door?\n",
        "BEN:\nA stranger, and he asks for more.\n",
    };
    ag_rng rng = ag_rng_new(seed);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t n = 0; n < bytes;) {
        const char *s = speech[ag_rng_below(&rng, 4)];
        fputs(s, f);
        n += strlen(s);
    }
    ck_assert_int_eq(fclose(f), 0);
}

static long checkpoint_step(const char *path)
{
    ag_gpt_file *f;
    char err[600];
    ck_assert_msg(ag_gpt_file_load(path, &f, err, sizeof(err)) == AG_OK, "%s", err);
    long step = -1;
    ck_assert_int_eq(ag_gpt_file_train(f, NULL, &step), 1);
    ag_gpt_file_free(f);
    return step;
}

/* Start `attograd args`, wait until its stderr (err) or stdout shows
 * `until`, then send each of sigs (0-ended), and wait for the end. With
 * stopped, the signals are sent while it is stopped (SIGSTOP), so that two
 * of them arrive together. */
static run_proc interrupt_when(const char *const *args, int err, const char *until, const int *sigs,
                               int stopped)
{
    setenv("AG_PROGRESS_SECONDS", "0", 1);
    run_proc p = run_start_args(args, NULL);
    unsetenv("AG_PROGRESS_SECONDS");
    for (int polls = 0; !strstr(err ? p.err : p.out, until); polls++) {
        if (!run_pump(&p, 100) || polls > 3000) { /* a safety net only, never a measurement */
            kill(p.pid, SIGKILL);
            run_wait(&p);
            ck_abort_msg("the run did not say '%s':\n%s%s", until, p.out, p.err);
        }
    }
    if (stopped)
        ck_assert_int_eq(kill(p.pid, SIGSTOP), 0);
    for (int k = 0; sigs[k]; k++)
        ck_assert_int_eq(kill(p.pid, sigs[k]), 0);
    if (stopped)
        ck_assert_int_eq(kill(p.pid, SIGCONT), 0);
    run_wait(&p);
    return p;
}

#define TINY "--layers", "1", "--dim", "16", "--heads", "2", "--seq", "8", "--batch", "4"

static const int one_sig[3][2] = {{SIGINT, 0}, {SIGTERM, 0}, {SIGHUP, 0}};
static const char *const reasons[3] = {"interrupted", "stopped by SIGTERM", "stopped by SIGHUP"};

/* ---- signals ---- */

/* While the text is read and tokenized (a text of a few MB): nothing to
 * save yet, and nothing written. */
START_TEST(test_signal_while_reading)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "big.txt"), *ck = at(&s, "c.st"), *log = at(&s, "l.csv");
    write_play(text, 6u << 20, 1);
    const char *args[] = {"train", "--text", text, TINY, "--save", ck, "--log", log, NULL};
    run_proc p = interrupt_when(args, 1, "tokenizing: ", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    char want[600];
    snprintf(want, sizeof(want), "attograd train: %s while reading the text; nothing was saved\n",
             reasons[_i]);
    run_assert_has(p.err, want);
    ck_assert_ptr_null(strstr(p.out, "result:"));
    ck_assert_int_ne(access(ck, F_OK), 0);
    ck_assert_int_ne(access(log, F_OK), 0);
    ck_assert(!tmp_left(s.dir));
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* While a large model is made: nothing to save. */
START_TEST(test_signal_while_making_the_model)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st");
    write_play(text, 20000, 2);
    const char *args[] = {"train", "--text", text,      "--layers", "24",     "--dim", "32",
                          "--seq", "8",      "--batch", "2",        "--save", ck,      NULL};
    run_proc p = interrupt_when(args, 1, "initialising: ", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    run_assert_has(p.err, "while making the model; nothing was saved\n");
    ck_assert_int_ne(access(ck, F_OK), 0);
    ck_assert(!tmp_left(s.dir));
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* During the steps, at step 3 or later: the checkpoint of the steps done;
 * resumed, it ends at the very bytes of a run that never stopped (with
 * dropout, so the dropout stream is restored too). */
START_TEST(test_signal_during_steps_resumes_exactly)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *whole = at(&s, "whole.st"), *cut = at(&s, "cut.st");
    write_play(text, 30000, 3);
    const char *common[] = {"--dropout", "0.1", "--eval-every", "3", "--eval-iters", "1"};
#define COMMON common[0], common[1], common[2], common[3], common[4], common[5]
    const char *args[] = {"train",   "--text", text,     TINY, COMMON,
                          "--steps", "400",    "--save", cut,  NULL};
    run_proc p = interrupt_when(args, 0, "\nstep 3 ", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    long k = checkpoint_step(cut);
    ck_assert_int_ge(k, 3);
    ck_assert_int_lt(k, 400);
    char want[700];
    snprintf(want, sizeof(want), "attograd train: %s after step %ld; saved %s (step %ld)\n",
             reasons[_i], k, cut, k);
    run_assert_has(p.err, want);
    run_assert_has(p.out, " val_loss=nan ");
    ck_assert(!tmp_left(s.dir));
    run_free(&p);
    char rest[32];
    snprintf(rest, sizeof(rest), "%ld", 400 - k);
    p = run_cmd("train", "--text", text, "--load", cut, "--steps", rest, "--eval-iters", "1",
                "--quiet", "--save", cut, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--text", text, TINY, COMMON, "--steps", "400", "--quiet", "--save", whole,
                NULL);
    run_assert_status(&p, 0);
    run_free(&p);
#undef COMMON
    ck_assert_msg(file_same(whole, cut), "interrupted at step %ld and resumed: not the same bytes",
                  k);
    file_rmdir(s.dir);
}
END_TEST

/* During the full validation (a text with a long validation part): the
 * checkpoint was written before it, the same as a run that validates. */
START_TEST(test_signal_during_validation)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *a = at(&s, "a.st"), *b = at(&s, "b.st");
    const char *log = at(&s, "l.csv");
    write_play(text, 400000, 4);
    const char *args[] = {"train", "--text", text, TINY,    "--steps", "6", "--eval-iters",
                          "1",     "--save", a,    "--log", log,       NULL};
    run_proc p = interrupt_when(args, 1, "validation: ", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    char want[700];
    snprintf(want, sizeof(want),
             "attograd train: %s during the validation after step 6; %s (step 6) was saved before "
             "it\n",
             reasons[_i], a);
    run_assert_has(p.err, want);
    run_assert_has(p.out, "saved: ");
    run_assert_has(p.out, "result: task=text steps=6 loss=");
    run_assert_has(p.out, " val_loss=nan ");
    char *csv = file_read(log, NULL);
    ck_assert_ptr_nonnull(csv);
    int rows = 0;
    for (char *c = csv; *c; c++)
        rows += *c == '\n';
    ck_assert_int_eq(rows, 7);
    free(csv);
    ck_assert(!tmp_left(s.dir));
    run_free(&p);
    p = run_cmd("train", "--text", text, TINY, "--steps", "6", "--eval-iters", "1", "--quiet",
                "--save", b, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    ck_assert(file_same(a, b));
    file_rmdir(s.dir);
}
END_TEST

/* While the checkpoint is written (a model big enough that writing shows
 * progress): the file is finished, whole, and then the run stops. */
START_TEST(test_signal_while_saving)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *a = at(&s, "a.st"), *b = at(&s, "b.st");
    write_play(text, 20000, 5);
    const char *args[] = {"train", "--text",       text, "--layers", "2", "--dim",
                          "256",   "--seq",        "8",  "--batch",  "1", "--steps",
                          "1",     "--eval-iters", "1",  "--save",   a,   NULL};
    run_proc p = interrupt_when(args, 1, "writing: ", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    run_assert_has(p.err, "after step 1; saved ");
    ck_assert(!tmp_left(s.dir));
    ck_assert_int_eq(checkpoint_step(a), 1);
    run_free(&p);
    const char *again[] = {
        "train", "--text",  text, "--layers",     "2", "--dim",   "256",    "--seq", "8", "--batch",
        "1",     "--steps", "1",  "--eval-iters", "1", "--quiet", "--save", b,       NULL};
    p = run_args(again, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    ck_assert(file_same(a, b));
    file_rmdir(s.dir);
}
END_TEST

/* Two signals at once (sent while the run is stopped): it ends at once with
 * the second's status, and leaves every target as it was, the temporary
 * files gone: during the steps (the log being written), the validation,
 * and the save. Both trainers. */
START_TEST(test_second_signal_ends_at_once)
{
    static const int two[3] = {SIGINT, SIGTERM, 0};
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st"), *log = at(&s, "l.csv");
    write_play(text, 400000, 6);
    file_write(ck, PREV, strlen(PREV));
    file_write(log, PREV, strlen(PREV));
    const char *when[3] = {"\nstep 3 ", "validation: ", "writing: "};
    for (int k = 0; k < 3; k++) {
        const char *args[] = {"train",
                              "--text",
                              text,
                              "--layers",
                              k == 2 ? "2" : "1",
                              "--dim",
                              k == 2 ? "256" : "16",
                              "--seq",
                              "8",
                              "--batch",
                              "4",
                              "--steps",
                              k ? "3" : "100000",
                              "--eval-every",
                              "3",
                              "--eval-iters",
                              "1",
                              "--save",
                              ck,
                              "--log",
                              log,
                              NULL};
        run_proc p = interrupt_when(args, k > 0, when[k], two, 1);
        /* either may be handled first; the other ends the run, with its own status */
        ck_assert_msg(p.status == 128 + SIGTERM || p.status == 128 + SIGINT, "status %d\n%s",
                      p.status, p.err);
        run_assert_has(p.err, "attograd: stopped at once (a second signal); files being written "
                              "were left as they were\n");
        ck_assert(!tmp_left(s.dir));
        char *kept = file_read(log, NULL);
        ck_assert_msg(k > 0 || strcmp(kept, PREV) == 0, "the log was replaced");
        free(kept);
        if (k < 2) { /* during the save, the checkpoint is the old one; after it, the new */
            kept = file_read(ck, NULL);
            ck_assert_msg(k == 1 || strcmp(kept, PREV) == 0, "the checkpoint was replaced");
            free(kept);
        }
        run_free(&p);
        file_write(ck, PREV, strlen(PREV));
        file_write(log, PREV, strlen(PREV));
    }
    const char *toy[] = {"train", "--steps", "1000000", "--save", ck, "--log", log, NULL};
    run_proc p = interrupt_when(toy, 0, "\nstep 100 ", two, 1);
    ck_assert(p.status == 128 + SIGTERM || p.status == 128 + SIGINT);
    run_assert_has(p.err, "stopped at once (a second signal)");
    ck_assert(!tmp_left(s.dir));
    char *kept = file_read(log, NULL);
    ck_assert_str_eq(kept, PREV);
    free(kept);
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* eval and sample: a signal stops them too. */
START_TEST(test_signal_eval_sample)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st");
    write_play(text, 400000, 7);
    run_proc p = run_cmd("train", "--text", text, TINY, "--steps", "2", "--eval-iters", "1",
                         "--quiet", "--save", ck, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    const char *eval[] = {"eval", "--load", ck, "--text", text, NULL};
    p = interrupt_when(eval, 1, "validation: ", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    run_assert_has(p.err, "validation: stopped after ");
    ck_assert_ptr_null(strstr(p.out, "eval:"));
    run_free(&p);
    const char *sample[] = {"sample", "--load", ck, "--tokens", "1000000000", NULL};
    p = interrupt_when(sample, 0, "\n", one_sig[_i], 0);
    run_assert_status(&p, 128 + one_sig[_i][0]);
    run_assert_has(p.err, "generate: stopped after ");
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* ---- memory ---- */

/* Settings that cannot fit: refused at once, before any file is made,
 * exit 2 when flags ask for it, 1 (naming the file) when a file does. */
START_TEST(test_memory_refused)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st"), *toy = at(&s, "t.st");
    const char *out = at(&s, "o.st"), *log = at(&s, "o.csv");
    write_play(text, 20000, 8);
    run_proc p = run_cmd("train", "--text", text, TINY, "--steps", "2", "--eval-iters", "1",
                         "--quiet", "--save", ck, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--steps", "2", "--quiet", "--save", toy, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    /* flags: a model no machine holds, and a limit made small */
    p = run_cmd("train", "--text", text, "--layers", "256", "--dim", "4096", "--heads", "1",
                "--seq", "1", "--batch", "1", "--save", out, "--log", log, NULL);
    run_assert_usage(&p, "usage: attograd train");
    run_assert_has(p.err, "the run would need about ");
    run_assert_has(p.err, sizeof(ag_real) == 4 ? "AdamW's state 384.0 GiB, the weights 192.0 GiB, "
                                                 "their gradients 192.0 GiB"
                                               : "AdamW's state 768.0 GiB, the weights 384.0 GiB, "
                                                 "their gradients 384.0 GiB");
    run_assert_has(p.err, "AG_MAX_MEMORY=SIZE sets another");
    run_free(&p);
    setenv("AG_MAX_MEMORY", "20M", 1);
    const char *flags[][12] = {
        {"train", "--text", text, "--save", out, NULL},
        {"train", "--steps", "3", "--dim", "512", "--save", out, NULL},
    };
    for (int k = 0; k < 2; k++) {
        p = run_args(flags[k], NULL);
        run_assert_usage(&p, "usage: attograd train");
        run_assert_has(p.err, "more than the 20.0 MiB it may use (set by AG_MAX_MEMORY)");
        run_free(&p);
    }
    /* a file: its model, or its batch */
    setenv("AG_MAX_MEMORY", "33M", 1); /* the program alone is counted 33-37 MiB */
    const char *files[][12] = {
        {"eval", "--load", ck, "--text", text, NULL},
        {"sample", "--load", ck, NULL},
        {"train", "--text", text, "--load", ck, "--steps", "1", "--save", out, NULL},
        {"train", "--load", toy, "--steps", "1", "--save", out, NULL},
    };
    const char *named[4] = {ck, ck, ck, toy};
    for (int k = 0; k < 4; k++) {
        p = run_args(files[k], NULL);
        run_assert_status(&p, 1);
        char want[600];
        snprintf(want, sizeof(want), ": %s: the run would need about ", named[k]);
        run_assert_has(p.err, want);
        run_assert_has(p.err, "more than the 33.0 MiB it may use (set by AG_MAX_MEMORY)");
        ck_assert_ptr_null(strstr(p.err, "usage:"));
        ck_assert_str_eq(p.out, "");
        run_free(&p);
    }
    /* not sizes: a wrong unit, the forms flags refuse too, less than a byte */
    static const char *const not_sizes[] = {"12x",   "1e3", "0x10", "-5M", "+5M", "0.5",
                                            "1..5M", ".",   "G",    "0",   " 5M"};
    for (size_t k = 0; k < sizeof(not_sizes) / sizeof(not_sizes[0]); k++) {
        setenv("AG_MAX_MEMORY", not_sizes[k], 1);
        p = run_cmd("eval", "--load", ck, "--text", text, NULL);
        run_assert_usage(&p, "usage: attograd eval");
        char want[64];
        snprintf(want, sizeof(want), "AG_MAX_MEMORY: '%s' is not a size", not_sizes[k]);
        run_assert_has(p.err, want);
        run_free(&p);
    }
    setenv("AG_MAX_MEMORY", ".5G", 1); /* a size: half a GiB */
    p = run_cmd("eval", "--load", ck, "--text", text, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    unsetenv("AG_MAX_MEMORY");
    ck_assert_int_ne(access(out, F_OK), 0);
    ck_assert_int_ne(access(log, F_OK), 0);
    file_rmdir(s.dir);
}
END_TEST

/* A text with many distinct characters: the vocabulary, known once the
 * text is read, makes the model too large: refused naming the text. */
START_TEST(test_memory_refused_by_vocabulary)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "wide.txt");
    /* 1500 distinct characters from U+0100, a thousand times */
    FILE *f = fopen(text, "w");
    ck_assert_ptr_nonnull(f);
    for (int r = 0; r < 40; r++)
        for (int i = 0; i < 1500; i++)
            fprintf(f, "%c%c", 0xC0 | ((0x100 + i) >> 6), 0x80 | ((0x100 + i) & 63));
    ck_assert_int_eq(fclose(f), 0);
    /* a limit between what the model needs with 1 character and with 1500 */
    ag_gpt_config c = ag_gpt_defaults(1);
    c.layers = 1, c.dim = 64, c.heads = 2, c.seq = 32;
    ag_gpt_run run = {.batch = 64, .validate = 1, .threads = 1};
    struct stat sb;
    ck_assert_int_eq(stat(text, &sb), 0);
    run.text_bytes = (double)sb.st_size;
    ag_memory lo, hi;
    ag_gpt_memory(&c, &run, &lo);
    c.vocab = 1500;
    ag_gpt_memory(&c, &run, &hi);
    ck_assert(hi.total > lo.total * 1.2);
    char limit[64];
    snprintf(limit, sizeof(limit), "%.0f", (lo.total + hi.total) / 2);
    setenv("AG_MAX_MEMORY", limit, 1);
    run_proc p = run_cmd("train", "--text", text, "--layers", "1", "--dim", "64", "--heads", "2",
                         "--seq", "32", "--batch", "64", NULL);
    unsetenv("AG_MAX_MEMORY");
    run_assert_status(&p, 1);
    char want[600];
    snprintf(want, sizeof(want), "attograd train: %s: the run would need about ", text);
    run_assert_has(p.err, want);
    ck_assert_ptr_null(strstr(p.out, "training text:"));
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* A run that fits stays within its estimate: the child's peak resident
 * memory, against what ag_gpt_memory said (not measurable under the
 * sanitizers, whose shadow memory is the larger part). */
START_TEST(test_memory_within_estimate)
{
    if (run_sanitized())
        return;
    typedef struct sizes {
        int layers, dim, heads, seq, batch, bias;
    } sizes;
    static const sizes runs[] = {
        {2, 128, 4, 64, 16, 0}, {1, 256, 8, 128, 8, 1}, {4, 64, 2, 32, 48, 0}};
    const sizes *r = &runs[_i];
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st");
    write_play(text, 300000, 9);
    char L[16], C[16], H[16], T[16], B[16];
    snprintf(L, sizeof(L), "%d", r->layers), snprintf(C, sizeof(C), "%d", r->dim);
    snprintf(H, sizeof(H), "%d", r->heads), snprintf(T, sizeof(T), "%d", r->seq);
    snprintf(B, sizeof(B), "%d", r->batch);
    const char *args[] = {"train",
                          "--text",
                          text,
                          "--layers",
                          L,
                          "--dim",
                          C,
                          "--heads",
                          H,
                          "--seq",
                          T,
                          "--batch",
                          B,
                          "--steps",
                          "3",
                          "--eval-iters",
                          "2",
                          "--quiet",
                          "--save",
                          ck,
                          r->bias ? "--bias" : NULL,
                          NULL};
    run_proc p = run_args(args, NULL);
    run_assert_status(&p, 0);
    ag_text *t;
    char err[300];
    ck_assert_int_eq(ag_text_load(text, NULL, &t, err, sizeof(err)), AG_OK);
    ag_gpt_config c = ag_gpt_defaults(ag_vocab_size(t->vocab));
    c.layers = r->layers, c.dim = r->dim, c.heads = r->heads, c.seq = r->seq, c.bias = r->bias;
    struct stat sb;
    ck_assert_int_eq(stat(text, &sb), 0);
    ag_memory m;
    ag_gpt_memory(&c,
                  &(ag_gpt_run){.batch = r->batch,
                                .validate = 1,
                                .save = 1,
                                .text_bytes = (double)sb.st_size,
                                .threads = 1},
                  &m);
    ck_assert_int_gt(p.maxrss, 0);
    ck_assert_msg((double)p.maxrss * 1024 <= m.total,
                  "run %d: a peak of %ld KiB, an estimate of %.0f KiB", _i, p.maxrss,
                  m.total / 1024);
    ag_text_free(t);
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* ---- counters ---- */

START_TEST(test_text_counts_at_the_limit)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *good = at(&s, "good.st"), *ck = at(&s, "c.st");
    write_play(text, 20000, 10);
    run_proc p = run_cmd("train", "--text", text, TINY, "--steps", "2", "--eval-iters", "1",
                         "--quiet", "--save", good, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    const char *keys[2] = {"step", "optim_steps"};
    const char *what[2] = {"step", "optimizer step"};
    for (int k = 0; k < 2; k++) {
        st_edit e = {.key = keys[k], .value = "1999999998"};
        st_rewrite(good, ck, &e);
        /* --steps given: a usage error naming it */
        p = run_cmd("train", "--text", text, "--load", ck, "--steps", "3", "--save", ck, NULL);
        run_assert_usage(&p, "usage: attograd train");
        char want[600];
        snprintf(want, sizeof(want),
                 "--steps 3: %s is at %s 1999999998, and a run stops at "
                 "2000000000",
                 ck, what[k]);
        run_assert_has(p.err, want);
        run_free(&p);
        /* the default --steps: the file named, exit 1, and how many would do */
        p = run_cmd("train", "--text", text, "--load", ck, "--save", ck, NULL);
        run_assert_status(&p, 1);
        snprintf(want, sizeof(want),
                 "%s is at %s 1999999998: the default --steps 2000 would take "
                 "it past 2000000000, the most a checkpoint holds; give --steps 2 or fewer",
                 ck, what[k]);
        run_assert_has(p.err, want);
        ck_assert_ptr_null(strstr(p.err, "usage:"));
        run_free(&p);
        /* within it: saved at the limit, and the file loads */
        p = run_cmd("train", "--text", text, "--load", ck, "--steps", "2", "--eval-iters", "1",
                    "--quiet", "--save", ck, NULL);
        run_assert_status(&p, 0);
        run_free(&p);
        p = run_cmd("train", "--text", text, "--load", ck, "--steps", "1", NULL);
        run_assert_usage(&p, "usage: attograd train");
        run_assert_has(p.err, "2000000000, and a run stops at 2000000000");
        run_free(&p);
        p = run_cmd("train", "--text", text, "--load", ck, NULL);
        run_assert_status(&p, 1);
        run_assert_has(p.err, "2000000000, the most a checkpoint holds: it cannot train further");
        run_free(&p);
        p = run_cmd("sample", "--load", ck, "--tokens", "3", NULL);
        run_assert_status(&p, 0);
        run_free(&p);
    }
    file_rmdir(s.dir);
}
END_TEST

/* ---- NaN ---- */

/* Weights so large (finite) that the first step overflows: the run names
 * the step and the op, saves the step before it (the weights it loaded),
 * and says so; without --save it says nothing was saved. */
START_TEST(test_nan_saves_the_step_before)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *good = at(&s, "good.st"), *ck = at(&s, "c.st");
    const char *log = at(&s, "l.csv");
    write_play(text, 20000, 11);
    run_proc p = run_cmd("train", "--text", text, TINY, "--no-layernorm", "--steps", "2",
                         "--eval-iters", "1", "--quiet", "--save", good, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
#ifdef AG_REAL_DOUBLE
    double huge = 1e200;
#else
    double huge = 1e30;
#endif
    /* a token vector huge either way (the tied head goes: it is optional) */
    st_edit edits[2] = {
        {.poison = "transformer.wte.weight", .poison_value = huge, .drop = "lm_head.weight"},
        {.poison = "transformer.wte.weight", .poison_value = -huge, .drop = "lm_head.weight"},
    };
    for (int k = 0; k < 2; k++) {
        st_rewrite(good, ck, &edits[k]);
        p = run_cmd("train", "--text", text, "--load", ck, "--steps", "5", "--save", ck, "--log",
                    log, NULL);
        run_assert_status(&p, 1);
        run_assert_has(p.err, "attograd train: step 3: ");
        ck_assert_msg(strstr(p.err, "is Inf at element ") || strstr(p.err, "is NaN at element ") ||
                          strstr(p.err, "the gradient norm is inf"),
                      "no op or gradient named:\n%s", p.err);
        char want[700];
        snprintf(want, sizeof(want),
                 "attograd train: stopped; saved %s at step 2, the last good one: resume it with "
                 "--load and a smaller --lr or --clip\n",
                 ck);
        run_assert_has(p.err, want);
        ck_assert_ptr_null(strstr(p.out, "result:"));
        ck_assert_int_eq(checkpoint_step(ck), 2);
        char *csv = file_read(log, NULL);
        ck_assert_str_eq(csv, "step,loss,train_loss,val_loss,lr,grad_norm.0,resid_rms.0\n");
        free(csv);
        run_free(&p);
    }
    p = run_cmd("train", "--text", text, "--load", ck, "--steps", "5", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "attograd train: stopped at step 3; nothing was saved (no --save); try "
                          "a smaller --lr or --clip\n");
    run_free(&p);
    /* sampling from it: the logits are not finite, refused */
    p = run_cmd("sample", "--load", ck, "--prompt", "ANNA", "--tokens", "5", NULL);
    run_assert_status(&p, 1);
    run_assert_has(p.err, "attograd sample: generate: the logits for character ");
    run_assert_has(p.err, "the model's weights are too large for its arithmetic\n");
    ck_assert(strncmp(p.out, "ANNA", 4) == 0 && p.out_len < 4 + 5);
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* A checkpoint larger than the disk's free space is refused before any
 * step (exit 1, naming --save, the size and what is free), not found out
 * at the end of the run. AG_MAX_MEMORY lets the memory check pass for a
 * model this size (no machine holds it; it is never made). */
START_TEST(test_disk_checked_before_training)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st"), *log = at(&s, "l.csv");
    write_play(text, 20000, 9);
    struct statvfs vfs;
    double free_bytes = statvfs(s.dir, &vfs) == 0 ? (double)vfs.f_bavail * vfs.f_frsize : 0;
    if (free_bytes > 6e11) { /* a disk of more than the 618 GB this checkpoint takes */
        file_rmdir(s.dir);
        return;
    }
    setenv("AG_MAX_MEMORY", "1000T", 1);
    run_proc p = run_cmd("train", "--text", text, "--layers", "256", "--dim", "4096", "--heads",
                         "4", "--seq", "16", "--batch", "1", "--save", ck, "--log", log, NULL);
    unsetenv("AG_MAX_MEMORY");
    run_assert_status(&p, 1);
    char want[700];
    snprintf(want, sizeof(want), "attograd train: --save %s: the file will take about ", ck);
    run_assert_has(p.err, want);
    run_assert_has(p.err, "is free there\n");
    ck_assert_ptr_null(strstr(p.out, "model:")); /* refused before the model is made */
    ck_assert_int_ne(access(ck, F_OK), 0);
    ck_assert_int_ne(access(log, F_OK), 0);
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* A step that runs out of memory (the address space held below what the
 * run needs, AG_MAX_MEMORY set high so that the check lets it start): the
 * step before is saved, and the advice is about memory, not the learning
 * rate. Not under sanitizers, which reserve terabytes of address space. */
START_TEST(test_out_of_memory_saves_the_step_before)
{
    if (run_sanitized())
        return;
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt");
    write_play(text, 20000, 3);
    /* the model (weights, gradients, AdamW: 60 MB in float) fits in the limit (KB), its
     * first step (120 MB more) not */
#ifdef AG_REAL_DOUBLE
    const int limit = 260000;
#else
    const int limit = 150000;
#endif
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && ulimit -v %d && AG_MAX_MEMORY=100G '%s' train --text play.txt "
             "--layers 4 --dim 256 --heads 4 --seq 64 --steps 5 --eval-iters 1 --quiet %s",
             s.dir, limit, run_bin(), "--save c.st");
    for (int saving = 1; saving >= 0; saving--) {
        if (!saving)
            *strstr(cmd, " --save c.st") = '\0';
        run_proc p = run_shell(cmd);
        run_assert_status(&p, 1);
        run_assert_has(p.err, "attograd train: step 1: arena: out of memory");
        run_assert_has(p.err,
                       saving ? "attograd train: stopped; saved c.st at step 0, the last good one: "
                                "resume it with --load and a smaller --batch (or more free "
                                "memory)\n"
                              : "attograd train: stopped at step 1; nothing was saved (no "
                                "--save); try a smaller --batch (or more free memory)\n");
        run_free(&p);
    }
    char ck[512];
    ck_assert_int_eq(checkpoint_step(file_path(ck, sizeof(ck), s.dir, "c.st")), 0);
    file_rmdir(s.dir);
}
END_TEST

/* ---- messages ---- */

START_TEST(test_values_from_files)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *good = at(&s, "good.st"), *ck = at(&s, "c.st");
    const char *toy = at(&s, "toy.st"), *eval = at(&s, "eval.txt");
    write_play(text, 20000, 12);
    run_proc p = run_cmd("train", "--text", text, TINY, "--steps", "2", "--eval-iters", "1",
                         "--quiet", "--save", good, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    p = run_cmd("train", "--steps", "2", "--dim", "128", "--quiet", "--save", toy, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    char want[700];
    /* a batch from the file too large: the file is named, exit 1; the same as a flag: exit 2 */
    st_edit e = {.key = "batch", .value = "1048576"};
    st_rewrite(good, ck, &e);
    p = run_cmd("train", "--text", text, "--load", ck, "--steps", "1", NULL);
    run_assert_status(&p, 1);
    snprintf(want, sizeof(want),
             "attograd train: %s: its block_size 8 with batch 1048576, n_embd "
             "16 and n_head 2 is too large",
             ck);
    run_assert_has(p.err, want);
    ck_assert_ptr_null(strstr(p.err, "--batch 1048576"));
    run_free(&p);
    p = run_cmd("train", "--text", text, "--load", ck, "--steps", "1", "--batch", "4", "--quiet",
                NULL);
    run_assert_status(&p, 0); /* a smaller --batch fits */
    run_free(&p);
    e = (st_edit){.key = "batch", .value = "65536"};
    st_rewrite(toy, ck, &e);
    e = (st_edit){.key = "seq", .value = "9"};
    st_rewrite(ck, ck, &e);
    p = run_cmd("train", "--load", ck, "--steps", "1", NULL);
    run_assert_status(&p, 1);
    snprintf(want, sizeof(want),
             "attograd train: %s: its seq 9 with batch 65536, dim 128 and "
             "heads 1 is too large",
             ck);
    run_assert_has(p.err, want);
    run_free(&p);
    /* a rate from the file */
    e = (st_edit){.key = "min_lr", .value = "0.5"};
    st_rewrite(good, ck, &e);
    p = run_cmd("train", "--text", text, "--load", ck, "--steps", "1", NULL);
    run_assert_status(&p, 1);
    snprintf(want, sizeof(want), "attograd train: %s: metadata min_lr 0.5 is above lr 0.001", ck);
    run_assert_has(p.err, want);
    run_free(&p);
    p = run_cmd("train", "--text", text, "--load", ck, "--steps", "1", "--min-lr", "0", "--quiet",
                NULL);
    run_assert_status(&p, 0);
    run_free(&p);
    /* eval: characters outside the vocabulary only in the part not evaluated */
    FILE *f = fopen(eval, "w");
    ck_assert_ptr_nonnull(f);
    fputs("\xc3\xa9\xc3\xa9 ZQ~\n", f);
    for (int i = 0; i < 300; i++)
        fputs("ANNA:\nThe river runs.\n", f);
    ck_assert_int_eq(fclose(f), 0);
    p = run_cmd("eval", "--load", good, "--text", eval, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "eval: val_loss=");
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

/* ---- progress ---- */

/* A standard stream the caller closed: the run's files must not take its
 * number, or what is printed there (progress lines, the summary) lands in
 * them. Each variant closes one or more and checks that the checkpoint
 * still loads, the log starts with its header, the graph is a graph, and
 * that a closed stdout is still a failure to write the output (exit 1). */
START_TEST(test_closed_streams)
{
    static const struct {
        const char *redirect;
        int status;
    } cases[] = {{"2>&-", 0}, {">&-", 1}, {"<&- >&- 2>&-", 1}, {"<&- 2>&-", 0}};
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt");
    write_play(text, 20000, 5);
    char cmd[4096];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *r = cases[c].redirect;
        snprintf(cmd, sizeof(cmd),
                 "cd '%s' && rm -f c.st l.csv t.csv t.st g.dot && export AG_PROGRESS_SECONDS=0 && "
                 "'%s' train --text play.txt --layers 1 --dim 16 --heads 2 --seq 8 --batch 4 "
                 "--steps 3 --eval-iters 1 --save c.st --log l.csv %s; a=$?; "
                 "'%s' train --task lookup --steps 20 --save t.st --log t.csv %s; b=$?; "
                 "'%s' explain block --dot g.dot %s; g=$?; echo $a $b $g",
                 s.dir, run_bin(), r, run_bin(), r, run_bin(), r);
        run_proc p = run_shell(cmd);
        char want[16];
        snprintf(want, sizeof(want), "%d %d %d\n", cases[c].status, cases[c].status,
                 cases[c].status);
        ck_assert_msg(p.status == 0 && p.out_len >= strlen(want) &&
                          strcmp(p.out + p.out_len - strlen(want), want) == 0,
                      "%s: exit statuses '%s', not '%s'", r, p.out, want);
        run_free(&p);
        static const char *const starts[][2] = {
            {"l.csv", "step,loss,"}, {"t.csv", "step,loss,"}, {"g.dot", "digraph "}};
        for (size_t k = 0; k < 3; k++) {
            char path[512];
            char *got = file_read(file_path(path, sizeof(path), s.dir, starts[k][0]), NULL);
            int printed = 0; /* lines of stdout or stderr in the file */
            static const char *const said[] = {
                "result: ", "attograd train: ", "saved: ", "forward and backward:"};
            for (size_t m = 0; got && m < sizeof(said) / sizeof(said[0]); m++)
                printed |= strstr(got, said[m]) != NULL;
            ck_assert_msg(got && strncmp(got, starts[k][1], strlen(starts[k][1])) == 0 && !printed,
                          "%s: %s starts '%.60s'", r, starts[k][0], got ? got : "(none)");
            free(got);
        }
        char ck[512];
        file_path(ck, sizeof(ck), s.dir, "c.st");
        p = run_cmd("sample", "--load", ck, "--tokens", "5", NULL);
        run_assert_status(&p, 0);
        run_free(&p);
        file_path(ck, sizeof(ck), s.dir, "t.st");
        p = run_cmd("train", "--task", "lookup", "--load", ck, "--steps", "1", NULL);
        run_assert_status(&p, 0);
        run_free(&p);
    }
    file_rmdir(s.dir);
}
END_TEST

/* The streams held for a closed one are inherited: a program the command
 * starts (Graphviz's dot, here a stand-in that only looks) finds 0, 1 and 2
 * taken, so its own files cannot land there either. */
START_TEST(test_closed_streams_reach_children)
{
    if (access("/proc/self/fd", F_OK) != 0)
        return; /* the stand-in looks through /proc */
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && mkdir bin && printf '%%s\\n' '#!/bin/sh' "
             "'for f in 0 1 2; do [ -e /proc/$$/fd/$f ] && printf $f >> \"$MARK\"; done' "
             "'exit 1' > bin/dot && chmod +x bin/dot && "
             "PATH=\"$PWD/bin:$PATH\" MARK=\"$PWD/mark\" '%s' explain attention --png g.png "
             "<&- >&- 2>&-; cat mark",
             s.dir, run_bin());
    run_proc p = run_shell(cmd);
    ck_assert_msg(p.status == 0 && strcmp(p.out, "012") == 0,
                  "the stand-in for dot found these streams open: '%s' (%s)", p.out, p.err);
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

START_TEST(test_progress_shown)
{
    scratch s = {.n = 0};
    file_tmpdir(s.dir, sizeof(s.dir));
    const char *text = at(&s, "play.txt"), *ck = at(&s, "c.st");
    write_play(text, 3u << 20, 13);
    const char *args[] = {"train", "--text",       text, "--layers", "1", "--dim",
                          "16",    "--seq",        "8",  "--batch",  "2", "--steps",
                          "1",     "--eval-iters", "1",  "--save",   ck,  NULL};
    setenv("AG_PROGRESS_SECONDS", "0", 1);
    run_proc p = run_args(args, NULL);
    run_assert_status(&p, 0);
    static const char *const phases[] = {
        "attograd train: tokenizing: ",
        "attograd train: tokenizing: 3.1 of 3.1 MB (100%), done in ",
        "attograd train: initialising: ",
        "attograd train: validation: ",
        "attograd train: validation: 39321 of 39321 windows (100%), done in ",
    };
    for (size_t k = 0; k < sizeof(phases) / sizeof(phases[0]); k++)
        run_assert_has(p.err, phases[k]);
    ck_assert_ptr_null(strstr(p.out, "tokenizing")); /* stdout keeps its lines */
    run_free(&p);
    const char *quiet[] = {"train", "--text",       text, "--layers", "1", "--dim",
                           "16",    "--seq",        "8",  "--batch",  "2", "--steps",
                           "1",     "--eval-iters", "1",  "--quiet",  NULL};
    p = run_args(quiet, NULL);
    run_assert_status(&p, 0);
    ck_assert_str_eq(p.err, "");
    run_free(&p);
    p = run_cmd("eval", "--load", ck, "--text", text, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.err, "attograd eval: validation: ");
    run_free(&p);
    unsetenv("AG_PROGRESS_SECONDS");
    /* by default a phase shows nothing until it has taken a second: a quick run is silent */
    p = run_cmd("train", "--text", text, TINY, "--steps", "1", "--eval-iters", "1", NULL);
    run_assert_status(&p, 0);
    ck_assert_msg(strstr(p.err, "tokenizing") == NULL || strstr(p.err, "s left") != NULL ||
                      strstr(p.err, "done in") != NULL,
                  "%s", p.err);
    run_free(&p);
    file_rmdir(s.dir);
}
END_TEST

Suite *suite_save_first(void)
{
    Suite *s = suite_create("save_first");
    TCase *tc = tcase_create("signals");
    tcase_set_timeout(tc, 300); /* sanitizer builds are slow; nothing here is timed */
    tcase_add_loop_test(tc, test_signal_while_reading, 0, 3);
    tcase_add_loop_test(tc, test_signal_while_making_the_model, 0, 3);
    tcase_add_loop_test(tc, test_signal_during_steps_resumes_exactly, 0, 3);
    tcase_add_loop_test(tc, test_signal_during_validation, 0, 3);
    tcase_add_loop_test(tc, test_signal_while_saving, 0, 3);
    tcase_add_test(tc, test_second_signal_ends_at_once);
    tcase_add_loop_test(tc, test_signal_eval_sample, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("memory");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_memory_refused);
    tcase_add_test(tc, test_memory_refused_by_vocabulary);
    tcase_add_loop_test(tc, test_memory_within_estimate, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_text_counts_at_the_limit);
    tcase_add_test(tc, test_nan_saves_the_step_before);
    tcase_add_test(tc, test_out_of_memory_saves_the_step_before);
    tcase_add_test(tc, test_disk_checked_before_training);
    tcase_add_test(tc, test_values_from_files);
    tcase_add_test(tc, test_progress_shown);
    tcase_add_test(tc, test_closed_streams);
    tcase_add_test(tc, test_closed_streams_reach_children);
    suite_add_tcase(s, tc);
    return s;
}
