/*
 * test_recipe.c - adding an op touches exactly the places the recipe in
 * docs/architecture.md lists, and this test fails when one is missed:
 *
 *   1. src/ops/NAME.c: its descriptor, forward and backward;
 *   2. include/attograd/core.h: its prototype in the ops section, under a
 *      comment with its formula;
 *   3. src/check/cases.c: a row of the gradient-check table that records it
 *      (test_gradcheck_cmd.c checks that; the row then drives
 *      test_conformance.c's checks of it);
 *   4. docs/api.md: its function in the table of ops;
 *   5. its tests: what is special to it, in tests/test_*.c.
 *
 * (`attograd gradcheck --help`'s list of ops, in docs/cli.md, is made from
 * the table, and the doc test reruns it.)
 */
#include "test_util.h"
#include "run.h"

#include <dirent.h>

/* The whole of a file, NUL-terminated (the caller frees it). */
static char *slurp(const char *path)
{
    char *s = file_read(path, NULL);
    ck_assert_msg(s, "cannot read %s (run from the repository root)", path);
    return s;
}

/* The public function of op: ag_NAME, but for the fused attention op,
 * whose public face is the layer's forward. */
static void function_of(const char *op, char *fn, size_t len)
{
    snprintf(fn, len, "%s", strcmp(op, "attention") == 0 ? "ag_attention_forward" : "");
    if (!fn[0])
        snprintf(fn, len, "ag_%s", op);
}

/* Every op descriptor in src/ops, `static const ag_op NAME_op = {"name", ...}`,
 * with the file it is in. */
typedef struct op_def {
    char name[32], file[300];
} op_def;

static size_t ops_defined(op_def *ops, size_t max)
{
    DIR *d = opendir("src/ops");
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0)
            continue;
        char path[300];
        snprintf(path, sizeof(path), "src/ops/%s", e->d_name);
        char *src = slurp(path);
        for (const char *q = src; (q = strstr(q, "static const ag_op ")) != NULL;) {
            const char *name = strstr(q, "= {\"");
            q += 19;
            if (!name || strchr(q, ';') < name)
                continue;
            ck_assert_uint_lt(n, max);
            name += 4;
            size_t k = 0;
            while (name[k] && name[k] != '"' && k < 31)
                k++;
            memcpy(ops[n].name, name, k);
            ops[n].name[k] = '\0';
            snprintf(ops[n].file, sizeof(ops[n].file), "%s", path);
            n++;
        }
        free(src);
    }
    closedir(d);
    return n;
}

START_TEST(test_every_op_is_in_every_place)
{
    op_def ops[64];
    size_t n = ops_defined(ops, 64);
    ck_assert_uint_ge(n, 21);
    char *core = slurp("include/attograd/core.h"), *nn = slurp("include/attograd/nn.h");
    char *api = slurp("docs/api.md");
    const char *ops_section = strstr(core, " * Ops. Each records one tape entry");
    ck_assert_ptr_nonnull(ops_section);
    for (size_t k = 0; k < n; k++) {
        char fn[64], proto[80], quoted[80];
        function_of(ops[k].name, fn, sizeof(fn));
        /* 2: the prototype, in the ops section (or, for the layer, nn.h),
         * right under a comment: its formula */
        snprintf(proto, sizeof(proto), "ag_tensor *%s(", fn);
        const char *at = strstr(ops_section, proto);
        const char *header = at ? core : nn;
        if (!at)
            at = strstr(nn, proto);
        ck_assert_msg(at, "op %s (%s): %s has no prototype in include/attograd/core.h's ops",
                      ops[k].name, ops[k].file, fn);
        /* the line above ends its comment */
        ck_assert_msg(at - header > 3 && strncmp(at - 3, "*/\n", 3) == 0,
                      "op %s: %s's prototype has no comment with its formula above it", ops[k].name,
                      fn);
        /* 4: the table of ops in docs/api.md */
        snprintf(quoted, sizeof(quoted), "`%s`", fn);
        ck_assert_msg(strstr(api, quoted), "op %s: docs/api.md does not name %s", ops[k].name,
                      quoted);
    }
    free(core);
    free(nn);
    free(api);
}
END_TEST

/* What belongs to the fast path only: vector code, threads, CPU checks. */
static void assert_plain(const char *path)
{
    static const char *const fast_only[] = {
        "immintrin",    "__m256",        "__m512",    "_mm",        "pthread",
        "ag_parallel_", "__builtin_cpu", "AG_CLONES", "__x86_64__", "AG_NO_SIMD"};
    char *src = slurp(path);
    for (size_t j = 0; j < sizeof(fast_only) / sizeof(fast_only[0]); j++)
        ck_assert_msg(!strstr(src, fast_only[j]), "%s has %s in it: that belongs in src/kernels",
                      path, fast_only[j]);
    free(src);
}

START_TEST(test_every_op_file_opens_with_its_op)
{
    /* an op file is its op: the fast kernels are called by name */
    op_def ops[64];
    size_t n = ops_defined(ops, 64);
    for (size_t k = 0; k < n; k++)
        assert_plain(ops[k].file);
}
END_TEST

/* The lines of path. */
static size_t lines_of(const char *path)
{
    char *src = slurp(path);
    size_t n = 0;
    for (const char *c = src; *c; c++)
        n += *c == '\n';
    free(src);
    return n;
}

START_TEST(test_reading_path_is_true)
{
    /* docs/architecture.md's reading path: each row of one file has that
     * file's line count, and no file on it has fast-path code */
    char *doc = slurp("docs/architecture.md");
    const char *at = strstr(doc, "## Reading the code");
    ck_assert_ptr_nonnull(at);
    const char *end = strstr(at + 1, "\n## ");
    size_t rows = 0;
    for (const char *line = at; line && (!end || line < end); line = strchr(line + 1, '\n')) {
        char path[128];
        size_t want;
        int k;
        if (sscanf(line, "\n| %d | `%127[^`]` | %zu |", &k, path, &want) != 3)
            continue; /* not a row, or a row of several files */
        ck_assert_msg(lines_of(path) == want,
                      "docs/architecture.md says %s has %zu lines; it has %zu", path, want,
                      lines_of(path));
        assert_plain(path);
        rows++;
    }
    ck_assert_uint_ge(rows, 10);
    free(doc);
}
END_TEST

Suite *suite_recipe(void)
{
    Suite *s = suite_create("recipe");
    TCase *tc = tcase_create("places");
    tcase_add_test(tc, test_every_op_is_in_every_place);
    tcase_add_test(tc, test_every_op_file_opens_with_its_op);
    tcase_add_test(tc, test_reading_path_is_true);
    suite_add_tcase(s, tc);
    return s;
}
