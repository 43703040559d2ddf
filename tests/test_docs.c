/*
 * test_docs.c - every command a doc shows is run again, and its output must
 * still be what the doc says. The convention (also in docs/README.md):
 *
 * - A fenced block whose info string starts with `console` and whose first
 *   line starts with `$ attograd` is a doc test. Every line that starts with
 *   `$ ` is a command; the lines after it, up to the next `$ ` line or the
 *   end of the block, are its expected output.
 * - A command runs with /bin/sh in a new directory, empty but for a link
 *   `examples` to the repository's examples/ (its texts), with the attograd
 *   under test (AG_BIN) first on PATH, stdout and stderr together. The shell
 *   must exit 0: show a failure as `attograd ... ; echo "exit status $?"`.
 * - A line that is exactly `...` matches any number of lines (an excerpt).
 * - Trailing spaces are ignored. Timings are masked: the number in
 *   `seconds=N` (and `val_seconds=N`), the number after `steps/s`, and
 *   `Ns left`.
 * - The docs show what the float build prints with its fast kernels on a
 *   CPU with AVX-512. In the double build, with the reference kernels
 *   (AG_KERNELS=reference), in a portable build (make PORTABLE=1) and with
 *   the AVX2 kernels (a CPU without AVX-512, or AG_CPU=avx2), which round
 *   differently, every line is compared with its numbers and the words
 *   float/double masked, and a block whose info string has the word
 *   `float-only` is run but not compared. `masked` in the info string masks
 *   the numbers with a point or an exponent in every build (rounding
 *   noise, such as a gradient check's errors); whole numbers (counts,
 *   shapes) must still match.
 * - `long` in the info string: a training run of several seconds, not run
 *   in a sanitizer build (where it takes ten times as long).
 * - `needs-PROGRAM` in the info string (`needs-dot`, `needs-gnuplot`): the
 *   block draws a picture with an optional program; where it is not on PATH
 *   the block's commands are not run.
 *
 * AG_DOCS names the directory of markdown files (default: docs).
 */
#include "test_util.h"
#include "run.h"
#include "kernels/cpu.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- lines ---- */

typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

/* Out of memory in a test program (also while the suite is being built,
 * outside any test, where ck_assert cannot report): say so and stop. */
static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "test_docs: out of memory\n");
        exit(EXIT_FAILURE);
    }
    return p;
}

static void lines_push(lines *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--; /* trailing spaces never count */
    char *c = xrealloc(NULL, len + 1);
    memcpy(c, s, len);
    c[len] = '\0';
    l->v[l->n++] = c;
}

static void lines_free(lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Split text into lines (a final newline does not start another line). */
static lines split_lines(const char *text)
{
    lines l = {NULL, 0, 0};
    while (*text) {
        const char *end = strchr(text, '\n');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        lines_push(&l, text, len);
        text += len + (end != NULL);
    }
    return l;
}

/* ---- comparing ---- */

/* MASK_FRACTIONS masks the numbers with a point or an exponent (rounding
 * noise) and keeps whole numbers (counts, shapes), which must match. */
enum { MASK_NUMBERS = 1, MASK_REAL = 2, MASK_FRACTIONS = 4 };

/* Whether s[0..len) is a number: digits with at most a point and a sign. */
static int is_number(const char *s, size_t len)
{
    size_t i = s[0] == '-' || s[0] == '+', digits = 0;
    for (; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digits++;
        else if (s[i] != '.')
            return 0;
    }
    return digits > 0;
}

/* Copy s into out with every timing replaced by '#': seconds=N (and any
 * key ending in it, val_seconds=N), steps/s N (train's progress lines) and
 * Ns left. Everything else is kept as it is. */
static void mask_timings(const char *s, char *out, size_t len)
{
    size_t o = 0;
    const char *prev = NULL; /* the previous word */
    size_t prev_len = 0;
    while (*s && o + 2 < len) {
        if (*s == ' ') {
            out[o++] = *s++;
            continue;
        }
        size_t n = strcspn(s, " ");
        const char *next = s + n + strspn(s + n, " "); /* the next word */
        size_t next_len = strcspn(next, " ");
        const char *eq = strstr(s, "seconds=");
        size_t key = eq && eq < s + n ? (size_t)(eq - s) : 0; /* "val_" of val_seconds= */
        int keyed = eq && eq < s + n && strspn(s, "abcdefghijklmnopqrstuvwxyz_") >= key;
        if (keyed && is_number(eq + 8, n - key - 8)) {
            o += (size_t)snprintf(out + o, len - o, "%.*sseconds=#", (int)key, s);
        } else if (is_number(s, n) && prev_len == 7 && strncmp(prev, "steps/s", 7) == 0) {
            out[o++] = '#';
        } else if (n > 1 && s[n - 1] == 's' && is_number(s, n - 1) && next_len == 4 &&
                   strncmp(next, "left", 4) == 0) {
            o += (size_t)snprintf(out + o, len - o, "#s");
        } else {
            size_t k = n < len - o - 1 ? n : len - o - 1;
            memcpy(out + o, s, k);
            o += k;
        }
        prev = s;
        prev_len = n;
        s += n;
    }
    out[o < len ? o : len - 1] = '\0';
}

/* Copy s into out with every number (digits, with sign, point and exponent)
 * replaced by '#' (MASK_NUMBERS) or those with a point or an exponent
 * (MASK_FRACTIONS), and with MASK_REAL, the words float and double by "REAL". */
static void mask_line(const char *s, int how, char *out, size_t len)
{
    size_t o = 0;
    while (*s && o + 5 < len) {
        int digit_ahead =
            (s[0] == '-' || s[0] == '+' || s[0] == '.') &&
            ((s[1] >= '0' && s[1] <= '9') || (s[1] == '.' && s[2] >= '0' && s[2] <= '9'));
        if ((how & (MASK_NUMBERS | MASK_FRACTIONS)) && ((*s >= '0' && *s <= '9') || digit_ahead)) {
            const char *start = s;
            int fraction = *s == '.';
            s++;
            while ((*s >= '0' && *s <= '9') || *s == '.' ||
                   ((*s == 'e' || *s == 'E') &&
                    (s[1] == '-' || s[1] == '+' || (s[1] >= '0' && s[1] <= '9')))) {
                fraction |= *s == '.' || *s == 'e' || *s == 'E';
                if (*s == 'e' || *s == 'E')
                    s++; /* the exponent's sign or first digit */
                s++;
            }
            if ((how & MASK_NUMBERS) || fraction) {
                out[o++] = '#';
            } else { /* a whole number: kept, to be compared */
                size_t k = (size_t)(s - start) < len - o - 1 ? (size_t)(s - start) : len - o - 1;
                memcpy(out + o, start, k);
                o += k;
            }
            continue;
        }
        if ((how & MASK_REAL) && (strncmp(s, "float", 5) == 0 || strncmp(s, "double", 6) == 0)) {
            s += s[0] == 'f' ? 5 : 6;
            memcpy(out + o, "REAL", 4);
            o += 4;
            continue;
        }
        out[o++] = *s++;
    }
    out[o] = '\0';
}

static int line_eq(const char *want, const char *got, int how)
{
    char a[4096], b[4096], ma[4096], mb[4096];
    mask_timings(want, a, sizeof(a));
    mask_timings(got, b, sizeof(b));
    if (!how)
        return strcmp(a, b) == 0;
    mask_line(a, how, ma, sizeof(ma));
    mask_line(b, how, mb, sizeof(mb));
    return strcmp(ma, mb) == 0;
}

/* Whether got matches want, where a `...` line in want matches any number of
 * lines (the usual wildcard match, with backtracking to the last `...`). */
static int lines_match(const lines *want, const lines *got, int how)
{
    size_t i = 0, j = 0, star_i = SIZE_MAX, star_j = 0;
    while (j < got->n) {
        if (i < want->n && strcmp(want->v[i], "...") == 0) {
            star_i = i++;
            star_j = j;
        } else if (i < want->n && line_eq(want->v[i], got->v[j], how)) {
            i++;
            j++;
        } else if (star_i != SIZE_MAX) {
            i = star_i + 1;
            j = ++star_j;
        } else {
            return 0;
        }
    }
    while (i < want->n && strcmp(want->v[i], "...") == 0)
        i++;
    return i == want->n;
}

/* ---- the docs ---- */

typedef struct doc_cmd {
    char where[320]; /* "docs/tutorial.md:42" */
    char *cmd;
    lines want;
    int float_only, masked, long_run;
    char needs[64]; /* a program the command needs (needs-PROGRAM), or "" */
} doc_cmd;

static doc_cmd *cmds;
static size_t n_cmds, cap_cmds;
static char docs_error[512];

/* Whether the info string has word as one of its words (so `long` is not
 * found inside some longer word). */
static int info_has(const char *info, const char *word)
{
    size_t n = strlen(word);
    for (const char *w = info; (w = strstr(w, word)) != NULL; w += n) {
        int starts = w == info || w[-1] == ' ' || w[-1] == '\t';
        int ends = w[n] == '\0' || w[n] == ' ' || w[n] == '\t';
        if (starts && ends)
            return 1;
    }
    return 0;
}

/* Append a command. The pointer is valid until the next add. */
static doc_cmd *add_cmd(const char *file, int line, const char *cmd, const char *info)
{
    if (n_cmds == cap_cmds) {
        cap_cmds = cap_cmds ? 2 * cap_cmds : 32;
        cmds = xrealloc(cmds, cap_cmds * sizeof(*cmds));
    }
    doc_cmd *c = &cmds[n_cmds++];
    memset(c, 0, sizeof(*c));
    snprintf(c->where, sizeof(c->where), "%.300s:%d", file, line);
    c->cmd = xrealloc(NULL, strlen(cmd) + 1);
    strcpy(c->cmd, cmd);
    c->float_only = info_has(info, "float-only");
    c->masked = info_has(info, "masked");
    c->long_run = info_has(info, "long");
    const char *needs = strstr(info, "needs-");
    if (needs)
        snprintf(c->needs, sizeof(c->needs), "%.*s", (int)strcspn(needs + 6, " \t"), needs + 6);
    return c;
}

/* Collect the doc tests of one markdown file. */
static void parse_doc(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(docs_error, sizeof(docs_error), "cannot read %.400s", path);
        return;
    }
    char buf[4096], info[256] = "";
    int lineno = 0, in_block = 0, tested = 0, first = 0;
    doc_cmd *cur = NULL;
    while (fgets(buf, sizeof(buf), f)) {
        lineno++;
        buf[strcspn(buf, "\n")] = '\0';
        if (strncmp(buf, "```", 3) == 0) {
            if (!in_block) {
                in_block = 1;
                snprintf(info, sizeof(info), "%.200s", buf + 3);
                tested = 0;
                first = 1;
            } else {
                in_block = 0;
            }
            cur = NULL;
            continue;
        }
        if (!in_block)
            continue;
        if (first) {
            first = 0;
            tested = strncmp(info, "console", 7) == 0 && strncmp(buf, "$ attograd", 10) == 0;
        }
        if (!tested)
            continue;
        if (strncmp(buf, "$ ", 2) == 0) {
            cur = add_cmd(path, lineno, buf + 2, info);
        } else if (cur) {
            lines_push(&cur->want, buf, strlen(buf));
        }
    }
    fclose(f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_docs(void)
{
    const char *dir = getenv("AG_DOCS");
    if (!dir || !*dir)
        dir = "docs";
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(docs_error, sizeof(docs_error),
                 "cannot open the docs directory '%s' "
                 "(run from the repository root, or set AG_DOCS)",
                 dir);
        return;
    }
    char *names[256];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".md") == 0)
            names[n++] = strcpy(xrealloc(NULL, len + 1), e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str); /* the same order every run */
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        parse_doc(path);
        free(names[i]);
    }
}

/* ---- running ---- */

/* Run cmd as the docs say; returns the output (caller frees), *status the
 * shell's exit status (-1 when a signal ended it). */
static char *run_doc_cmd(const char *cmd, int *status)
{
    /* its directory goes first on PATH */
    char real[PATH_MAX];
    snprintf(real, sizeof(real), "%s", run_bin());
    char *slash = strrchr(real, '/');
    *slash = '\0';
    char tmp[256];
    file_tmpdir(tmp, sizeof(tmp));
    /* the shipped example texts, as from the repository's root:
     * `attograd train --task text --text examples/mill.txt` */
    char cwd[PATH_MAX], examples[PATH_MAX + 16], link[PATH_MAX];
    if (access("examples", F_OK) == 0 && getcwd(cwd, sizeof(cwd))) {
        snprintf(examples, sizeof(examples), "%s/examples", cwd);
        snprintf(link, sizeof(link), "%s/examples", tmp);
        ck_assert_int_eq(symlink(examples, link), 0);
    }
    ck_assert_msg(!strchr(real, '\''), "AG_BIN's path has a quote: %s", real);
    size_t len = strlen(cmd) + strlen(real) + strlen(tmp) + 64;
    char *sh = malloc(len);
    ck_assert_ptr_nonnull(sh);
    snprintf(sh, len, "cd '%s' && PATH='%s':\"$PATH\" && export PATH && { %s\n} 2>&1", tmp, real,
             cmd);
    run_proc p = run_shell(sh);
    free(sh);
    file_rmdir(tmp);
    /* the command's stderr is in its output: the shell itself says nothing */
    ck_assert_msg(p.err_len == 0, "`%s`: the shell said:\n%s", cmd, p.err);
    *status = p.status;
    char *out = p.out;
    p.out = NULL;
    run_free(&p);
    return out;
}

/* Whether this run computes what the docs show: the float build's fast
 * kernels with AVX-512 on x86. The double build, the reference kernels
 * (AG_KERNELS, which the commands inherit), a portable build and the
 * narrower AVX2 kernels (a CPU without AVX-512, AG_CPU=avx2, AG_GEMM=avx2)
 * round differently. */
static int documented_build(void)
{
#if defined(AG_REAL_DOUBLE) || defined(AG_NO_SIMD)
    return 0;
#else
    /* the attention tiles and the rows follow the gemm kernel's width */
    return !ag_reference_kernels() && ag_cpu_get()->avx512dq &&
           strcmp(ag_gemm_kernel_name(), "avx512") == 0;
#endif
}

/* How this build compares a command's output. */
static int compare_mode(const doc_cmd *c, int *skip)
{
    int how = c->masked ? MASK_FRACTIONS : 0;
    *skip = 0;
    if (!documented_build()) {
        how |= MASK_NUMBERS | MASK_REAL;
        *skip = c->float_only;
    }
    return how;
}

static void report_mismatch(const doc_cmd *c, const lines *got, const char *out)
{
    /* the first line that differs, when the doc shows the whole output */
    size_t k = 0;
    while (k < c->want.n && k < got->n && strcmp(c->want.v[k], "...") != 0 &&
           line_eq(c->want.v[k], got->v[k], compare_mode(c, &(int){0})))
        k++;
    fprintf(stderr, "\n%s: `%s` printed:\n%s\n", c->where, c->cmd, out);
    ck_abort_msg("%s: the output of `%s` is not what the doc shows (line %zu of the "
                 "expected output: doc '%s', got '%s'; whole output above, on stderr)",
                 c->where, c->cmd, k + 1, k < c->want.n ? c->want.v[k] : "(end)",
                 k < got->n ? got->v[k] : "(end)");
}

START_TEST(test_doc_command)
{
    ck_assert_msg(n_cmds > 0, "no doc tests found: %s", docs_error[0] ? docs_error : "no blocks");
    const doc_cmd *c = &cmds[_i];
    if (c->needs[0] && !run_have(c->needs))
        return; /* an optional program this machine lacks */
    if (c->long_run && run_sanitized())
        return; /* a long training run: minutes under the sanitizers, whose
                   code other tests run there in fewer steps */
    int status, skip;
    int how = compare_mode(c, &skip);
    char *out = run_doc_cmd(c->cmd, &status);
    ck_assert_msg(status == 0,
                  "%s: `%s` exited with status %d (show a failure with "
                  "`; echo \"exit status $?\"`):\n%s",
                  c->where, c->cmd, status, out);
    if (!skip) {
        lines got = split_lines(out);
        if (!lines_match(&c->want, &got, how))
            report_mismatch(c, &got, out);
        lines_free(&got);
    }
    free(out);
}
END_TEST

START_TEST(test_docs_found)
{
    ck_assert_msg(!docs_error[0], "%s", docs_error);
    ck_assert_msg(n_cmds >= 10, "only %zu doc tests found", n_cmds);
}
END_TEST

/* ---- the convention itself ---- */

static lines make_lines(const char *const *v, size_t n)
{
    lines l = {NULL, 0, 0};
    for (size_t i = 0; i < n; i++)
        lines_push(&l, v[i], strlen(v[i]));
    return l;
}
#define LINES(...)                                                                                 \
    make_lines((const char *const[]){__VA_ARGS__},                                                 \
               sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

START_TEST(test_matcher)
{
    lines got = LINES("a", "b 1.5", "c", "result: loss=0.25 seconds=1.20");
    lines same = LINES("a", "b 1.5", "c", "result: loss=0.25 seconds=9.99");
    lines excerpt = LINES("a", "...", "result: loss=0.25 seconds=0.01");
    lines tail = LINES("...", "c", "...");
    lines edited = LINES("a", "b 1.6", "c", "result: loss=0.25 seconds=1.20");
    lines edited_loss = LINES("a", "...", "result: loss=0.26 seconds=1.20");
    lines missing = LINES("a", "b 1.5", "c");
    lines extra = LINES("a", "b 1.5", "c", "result: loss=0.25 seconds=1.20", "d");
    ck_assert(lines_match(&same, &got, 0)); /* timings are masked */
    ck_assert(lines_match(&excerpt, &got, 0));
    ck_assert(lines_match(&tail, &got, 0));
    ck_assert(!lines_match(&edited, &got, 0));      /* an edited number is caught */
    ck_assert(!lines_match(&edited_loss, &got, 0)); /* ... also on a line with a timing */
    ck_assert(!lines_match(&missing, &got, 0));
    ck_assert(!lines_match(&extra, &got, 0));
    ck_assert(lines_match(&edited, &got, MASK_NUMBERS));
    lines precision = LINES("a", "b 1.5e-02 (float build)", "c", "result: loss=0.25 seconds=1");
    lines dbl = LINES("a", "b 3e-7 (double build)", "c", "result: loss=0.2 seconds=1");
    ck_assert(!lines_match(&precision, &dbl, MASK_NUMBERS));
    ck_assert(lines_match(&precision, &dbl, MASK_NUMBERS | MASK_REAL));
    lines progress = LINES("step 100 loss 0.0033 steps/s 824", "step 5 loss 1.0 3.5s left");
    lines progress2 = LINES("step 100 loss 0.0033 steps/s 1018", "step 5 loss 1.0 0.1s left");
    lines progress3 = LINES("step 100 loss 0.0034 steps/s 824", "step 5 loss 1.0 3.5s left");
    ck_assert(lines_match(&progress, &progress2, 0));
    ck_assert(!lines_match(&progress, &progress3, 0));
    /* masked: rounding noise may change, counts and shapes may not */
    lines counted = LINES("x[2x3] 20/20 1.5e-06 PASS", "44 checks: 25 passed, 19 failed.");
    lines noise = LINES("x[2x3] 20/20 2.5e-06 PASS", "44 checks: 25 passed, 19 failed.");
    lines miscount = LINES("x[2x3] 20/20 1.5e-06 PASS", "43 checks: 25 passed, 19 failed.");
    ck_assert(lines_match(&counted, &noise, MASK_FRACTIONS));
    ck_assert(!lines_match(&counted, &miscount, MASK_FRACTIONS));
    ck_assert(lines_match(&counted, &miscount, MASK_NUMBERS)); /* the double build's rule */
    lines_free(&counted), lines_free(&noise), lines_free(&miscount);
    lines val = LINES("result: loss=0.25 seconds=1.20 val_seconds=0.31");
    lines val2 = LINES("result: loss=0.25 seconds=3.00 val_seconds=12.5");
    lines val3 = LINES("result: loss=0.26 seconds=3.00 val_seconds=12.5");
    lines val4 = LINES("result: loss=0.25 seconds=3.00 val_secondz=12.5");
    ck_assert(lines_match(&val, &val2, 0)); /* both timings are masked */
    ck_assert(!lines_match(&val, &val3, 0));
    ck_assert(!lines_match(&val, &val4, 0));
    lines_free(&val), lines_free(&val2), lines_free(&val3), lines_free(&val4);
    lines words = LINES("PASS", "x");
    lines words2 = LINES("FAIL", "x");
    ck_assert(!lines_match(&words, &words2, MASK_NUMBERS | MASK_REAL));
    lines *all[] = {&got,         &same,    &excerpt,  &tail,      &edited,
                    &edited_loss, &missing, &extra,    &precision, &dbl,
                    &words,       &words2,  &progress, &progress2, &progress3};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        lines_free(all[i]);
}
END_TEST

/* Whether line has a character the edit below changes: a digit where numbers
 * are compared, a lower-case letter where they are masked. */
static int editable(const char *line, int how)
{
    if (strcmp(line, "...") == 0)
        return 0;
    for (; *line; line++)
        if (how ? (*line >= 'a' && *line <= 'z') : (*line >= '0' && *line <= '9'))
            return 1;
    return 0;
}

START_TEST(test_edited_doc_fails)
{
    /* Take the first doc test this build compares exactly (else the first it
     * compares at all), check that it passes, then edit one digit (or, where
     * numbers are masked, one letter) of its expected output, as a careless
     * doc edit would, and check that it no longer matches. */
    ck_assert_msg(n_cmds > 0, "no doc tests found");
    const doc_cmd *c = NULL;
    /* first choice: a block compared exactly (the float build has them) */
    for (int pass = 0; pass < 2 && !c; pass++) {
        for (size_t i = 0; i < n_cmds && !c; i++) {
            int skip, how = compare_mode(&cmds[i], &skip);
            if (skip || (pass == 0 && how != 0))
                continue;
            for (size_t k = 0; k < cmds[i].want.n && !c; k++)
                if (editable(cmds[i].want.v[k], how))
                    c = &cmds[i];
        }
    }
    ck_assert_ptr_nonnull(c);
    int status, skip;
    int how = compare_mode(c, &skip);
    char *out = run_doc_cmd(c->cmd, &status);
    lines got = split_lines(out);
    ck_assert_msg(lines_match(&c->want, &got, how), "%s does not pass to begin with", c->where);
    lines edited = {NULL, 0, 0};
    int done = 0;
    for (size_t i = 0; i < c->want.n; i++) {
        lines_push(&edited, c->want.v[i], strlen(c->want.v[i]));
        if (done || !editable(edited.v[i], how))
            continue;
        for (char *s = edited.v[i]; !done && *s; s++) {
            if (!how && *s >= '0' && *s <= '9') {
                *s = *s == '9' ? '8' : (char)(*s + 1);
                done = 1;
            } else if (how && *s >= 'a' && *s <= 'z') {
                *s = *s == 'z' ? 'y' : (char)(*s + 1);
                done = 1;
            }
        }
    }
    ck_assert_msg(done, "%s: nothing to edit in its expected output", c->where);
    ck_assert_msg(!lines_match(&edited, &got, how), "%s: an edited expected output still matched",
                  c->where);
    lines_free(&edited);
    lines_free(&got);
    free(out);
}
END_TEST

Suite *suite_docs(void)
{
    load_docs();
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("convention");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_matcher);
    tcase_add_test(tc, test_docs_found);
    tcase_add_test(tc, test_edited_doc_fails);
    suite_add_tcase(s, tc);
    tc = tcase_create("commands");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_doc_command, 0, n_cmds ? (int)n_cmds : 1);
    suite_add_tcase(s, tc);
    return s;
}
