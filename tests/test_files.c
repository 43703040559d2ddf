/*
 * test_files.c - the file layer's public rules for a program's own files
 * (src/io/outputs.c): outputs checked and written whole, temporary names for
 * files another program writes, two names of one file recognised; and
 * tensors read from a file checked before they are trusted.
 */
#include "test_util.h"
#include "io/io.h"
#include "run.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[96]; /* the test's scratch directory (file_tmpdir) */

/* path holds exactly want */
static void assert_contents(const char *path, const char *want)
{
    char *got = file_read(path, NULL);
    ck_assert_msg(got != NULL, "%s: cannot read", path);
    ck_assert_str_eq(got, want);
    free(got);
}

/* dir holds exactly the files named in want (temporary files left behind would show) */
static void assert_listing(const char *want)
{
    char names[256];
    ck_assert_str_eq(file_listing(dir, names, sizeof(names)), want);
}

START_TEST(test_file_write)
{
    char path[128], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "out.txt");
    ck_assert_int_eq(ag_file_write(path, "first", 5, err, sizeof(err)), AG_OK);
    assert_contents(path, "first");
    ck_assert_int_eq(ag_file_write(path, "second", 6, err, sizeof(err)), AG_OK);
    assert_contents(path, "second");
    assert_listing("out.txt"); /* no temporary file left */
    ck_assert_int_eq(ag_file_write("/dev/null", "x", 1, err, sizeof(err)), AG_OK);
    /* a directory is refused, by name, and nothing is made */
    ck_assert_int_ne(ag_file_write(dir, "x", 1, err, sizeof(err)), AG_OK);
    ck_assert_msg(strstr(err, dir) != NULL && strstr(err, "directory") != NULL, "%s", err);
    ck_assert_int_ne(ag_file_check_output(dir, err, sizeof(err)), AG_OK);
    ck_assert_msg(strstr(err, dir) != NULL, "%s", err);
    file_path(path, sizeof(path), dir, "no/such/dir/out.txt");
    ck_assert_int_ne(ag_file_check_output(path, err, sizeof(err)), AG_OK);
    file_path(path, sizeof(path), dir, "new.txt");
    ck_assert_int_eq(ag_file_check_output(path, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(access(path, F_OK), -1); /* checked, not made */
    assert_listing("out.txt");
    file_rmdir(dir);
}
END_TEST

START_TEST(test_file_tmp_name)
{
    char path[128], tmp[512], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "pic.png");
    ck_assert_int_eq(ag_file_tmp_name(path, tmp, sizeof(tmp), err, sizeof(err)), AG_OK);
    ck_assert_msg(strncmp(tmp, path, strlen(path)) == 0, "%s is not beside %s", tmp, path);
    ck_assert_int_eq(access(tmp, F_OK), 0); /* made, empty, for the other program */
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fputs("picture", f);
    fclose(f);
    ck_assert_int_eq(ag_file_tmp_commit(tmp, path, err, sizeof(err)), AG_OK);
    assert_contents(path, "picture");
    ck_assert_int_eq(access(tmp, F_OK), -1);
    /* through a device: the temporary file waits elsewhere and is removed */
    ck_assert_int_eq(ag_file_tmp_name("/dev/null", tmp, sizeof(tmp), err, sizeof(err)), AG_OK);
    ck_assert_int_eq(access(tmp, F_OK), 0);
    ck_assert_int_eq(ag_file_tmp_commit(tmp, "/dev/null", err, sizeof(err)), AG_OK);
    ck_assert_int_eq(access(tmp, F_OK), -1);
    /* refused like any output; a name that does not fit is said */
    ck_assert_int_ne(ag_file_tmp_name(dir, tmp, sizeof(tmp), err, sizeof(err)), AG_OK);
    ck_assert_int_ne(ag_file_tmp_name(path, tmp, 8, err, sizeof(err)), AG_OK);
    ck_assert_msg(strstr(err, "too long") != NULL, "%s", err);
    assert_listing("pic.png");
    file_rmdir(dir);
}
END_TEST

START_TEST(test_file_same)
{
    char a[128], b[128], c[128], soft[128], hard[128], dotted[256], err[256];
    int device = -1;
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a");
    file_path(b, sizeof(b), dir, "b");
    file_path(c, sizeof(c), dir, "new");
    ck_assert_int_eq(ag_file_write(a, "a", 1, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_file_write(b, "b", 1, err, sizeof(err)), AG_OK);
    file_path(soft, sizeof(soft), dir, "soft");
    file_path(hard, sizeof(hard), dir, "hard");
    ck_assert_int_eq(symlink(a, soft), 0);
    ck_assert_int_eq(link(a, hard), 0);
    snprintf(dotted, sizeof(dotted), "%s/../%s/./a", dir, strrchr(dir, '/') + 1);
    ck_assert(ag_file_same(a, a, &device));
    ck_assert_int_eq(device, 0);
    ck_assert(ag_file_same(a, soft, NULL));
    ck_assert(ag_file_same(hard, a, NULL));
    ck_assert(ag_file_same(dotted, a, NULL));
    ck_assert(!ag_file_same(a, b, &device));
    ck_assert_int_eq(device, 0);
    /* a new name: by its directory */
    snprintf(dotted, sizeof(dotted), "%s/../%s/new", dir, strrchr(dir, '/') + 1);
    ck_assert(ag_file_same(c, dotted, NULL));
    ck_assert(!ag_file_same(c, a, NULL));
    ck_assert(ag_file_same("/dev/null", "/dev/null", &device));
    ck_assert_int_eq(device, 1);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_file_is_fd)
{
    char a[128], b[128], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(a, sizeof(a), dir, "a");
    file_path(b, sizeof(b), dir, "b");
    ck_assert_int_eq(ag_file_write(a, "a", 1, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_file_write(b, "b", 1, err, sizeof(err)), AG_OK);
    int fd = open(a, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    ck_assert(ag_file_is_fd(a, fd));
    ck_assert(!ag_file_is_fd(b, fd));
    ck_assert(!ag_file_is_fd(dir, fd));
    close(fd);
    fd = open("/dev/null", O_WRONLY);
    ck_assert(!ag_file_is_fd("/dev/null", fd)); /* a device is not a file to protect */
    close(fd);
    file_rmdir(dir);
}
END_TEST

/* A program that closed a standard stream gets its number back from its
 * next open. An output must not take it: what is printed to the stream
 * would land in the file (progress lines in a checkpoint). With stderr
 * closed, stdout, or all three, a new file, a replaced one and a device
 * each get a descriptor above 2, and what is printed meanwhile stays out. */
START_TEST(test_file_not_on_stdio)
{
    static const int closed[][3] = {{2, -1, -1}, {1, -1, -1}, {0, 1, 2}};
    char path[128], err[256] = "";
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "out.txt");
    const char *const targets[] = {path, path, "/dev/null"}; /* new, replaced, device */
    int saved[3];
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) == -1) { /* run with one closed already: nothing to restore */
            file_rmdir(dir);
            return;
        }
    for (int fd = 0; fd < 3; fd++)
        ck_assert_int_ge(saved[fd] = dup(fd), 3);
    for (int c = 0; c < 3; c++)
        for (int t = 0; t < 3; t++) {
            ag_atomic a;
            int fd = -1, printed_to = -1;
            if (t == 0)
                unlink(path); /* a new file, then the same one replaced */
            for (int k = 0; k < 3; k++)
                if (closed[c][k] >= 0)
                    close(closed[c][k]);
            ag_status st = ag_atomic_open(&a, targets[t], err, sizeof(err));
            if (st == AG_OK) {
                fd = fileno(a.f);
                fputs("kept", a.f);
                fflush(a.f);
                for (int k = 0; k < 3; k++) /* printing to a closed stream fails */
                    if (closed[c][k] > 0 && write(closed[c][k], "noise", 5) == 5)
                        printed_to = closed[c][k];
                st = ag_atomic_commit(&a, err, sizeof(err));
            }
            for (int k = 0; k < 3; k++)
                dup2(saved[k], k);
            ck_assert_msg(st == AG_OK, "%s: %s", targets[t], err);
            ck_assert_msg(fd > 2 && printed_to < 0,
                          "%s, opened with %d closed, is descriptor %d (printing to %d worked)",
                          targets[t], closed[c][0], fd, printed_to);
            if (targets[t] == path)
                assert_contents(path, "kept");
        }
    for (int fd = 0; fd < 3; fd++)
        close(saved[fd]);
    assert_listing("out.txt");
    file_rmdir(dir);
}
END_TEST

/* A file holding tensor "t" of n values (F64 when f64). */
static ag_st_file *file_of(const char *path, const double *v, int n, int f64)
{
    char err[256];
    ag_st_writer *w = ag_st_writer_new(f64 ? AG_ST_F64 : AG_ST_F32);
    ag_real r[8];
    for (int i = 0; i < n; i++)
        r[i] = (ag_real)v[i];
    ck_assert_int_eq(ag_st_add(w, "t", 1, (const int[]){n}, r), AG_OK);
    ck_assert_int_eq(ag_st_save(w, path, err, sizeof(err)), AG_OK);
    ag_st_writer_free(w);
    ag_st_file *f;
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    return f;
}

START_TEST(test_st_get_finite)
{
    char path[128], err[256], want[256];
    ag_real dst[4];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "t.safetensors");
    ag_st_file *f = file_of(path, (const double[]){1, -2, 3}, 3, 0);
    ck_assert_int_eq(ag_st_get_finite(f, "t", 1, (const int[]){3}, dst, 0, err, sizeof(err)),
                     AG_OK);
    ck_assert(dst[1] == -2);
    ck_assert_int_eq(ag_st_get_finite(f, "t", 1, (const int[]){3}, dst, 1, err, sizeof(err)),
                     AG_ERR_NUMERIC);
    snprintf(want, sizeof(want), "%s: tensor 't' holds a negative value at element 1", path);
    ck_assert_str_eq(err, want);
    /* the shape is ag_st_get's to check */
    ck_assert_int_eq(ag_st_get_finite(f, "t", 1, (const int[]){2}, dst, 0, err, sizeof(err)),
                     AG_ERR_SHAPE);
    ck_assert_uint_eq(ag_st_flushed(f, "t", NULL), 0);
    ag_st_free(f);
    f = file_of(path, (const double[]){0, NAN}, 2, 0);
    ck_assert_int_eq(ag_st_get_finite(f, "t", 1, (const int[]){2}, dst, 0, err, sizeof(err)),
                     AG_ERR_NUMERIC);
    snprintf(want, sizeof(want), "%s: tensor 't' holds NaN at element 1", path);
    ck_assert_str_eq(err, want);
    ag_st_free(f);
    file_rmdir(dir);
}
END_TEST

START_TEST(test_st_flushed)
{
    char path[128], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "t.safetensors");
    /* an F64 file with values too small for float */
    ag_st_writer *w = ag_st_writer_new(AG_ST_F64);
#ifdef AG_REAL_DOUBLE
    ag_real v[3] = {1, 1e-50, 1e-60};
#else
    ag_real v[3] = {1, 0, 0}; /* a float build cannot hold them: write the file by hand below */
#endif
    ck_assert_int_eq(ag_st_add(w, "t", 1, (const int[]){3}, v), AG_OK);
    ck_assert_int_eq(ag_st_save(w, path, err, sizeof(err)), AG_OK);
    ag_st_writer_free(w);
#ifndef AG_REAL_DOUBLE
    /* put 1e-50 and 1e-60 into the data section: the last 16 bytes */
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    double tiny[2] = {1e-50, 1e-60};
    ck_assert_int_eq(fseek(fp, -16, SEEK_END), 0);
    ck_assert_uint_eq(fwrite(tiny, sizeof(double), 2, fp), 2); /* little-endian host */
    fclose(fp);
#endif
    ag_st_file *f;
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    size_t first = 99;
#ifdef AG_REAL_DOUBLE
    ck_assert_uint_eq(ag_st_flushed(f, "t", &first), 0); /* a double holds them */
#else
    ck_assert_uint_eq(ag_st_flushed(f, "t", &first), 2);
    ck_assert_uint_eq(first, 1);
#endif
    ck_assert_uint_eq(ag_st_flushed(f, "none", &first), 0);
    ag_st_free(f);
    file_rmdir(dir);
}
END_TEST

/* A model file: wq..wo (d, d) filled with v, and the metadata given (NULL: absent). */
static ag_st_file *model_file(const char *path, int d, ag_real v, const char *heads,
                              const char *causal)
{
    char err[256];
    static const char *const names[4] = {"wq", "wk", "wv", "wo"};
    ag_real w[16];
    for (int i = 0; i < d * d; i++)
        w[i] = v;
    ag_st_writer *wr = ag_st_writer_new(AG_ST_REAL);
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(ag_st_add(wr, names[k], 2, (const int[]){d, d}, w), AG_OK);
    if (heads)
        ag_st_add_meta(wr, "n_heads", heads);
    if (causal)
        ag_st_add_meta(wr, "causal", causal);
    ck_assert_int_eq(ag_st_save(wr, path, err, sizeof(err)), AG_OK);
    ag_st_writer_free(wr);
    ag_st_file *f;
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    return f;
}

START_TEST(test_attention_load)
{
    char path[128], err[256], want[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "m.safetensors");
    ag_st_file *f = model_file(path, 4, 0.5f, "2", "true");
    ag_attention *a = ag_attention_load(f, path, err, sizeof(err));
    ck_assert_msg(a != NULL, "%s", err);
    ck_assert_int_eq(ag_attention_dim(a), 4);
    ck_assert_int_eq(ag_attention_heads(a), 2);
    ck_assert_int_eq(ag_attention_causal(a), 1);
    ck_assert(ag_attention_param(a, "wo")->data[15] == 0.5f);
    ag_attention_free(a);
    ag_st_free(f);
    f = model_file(path, 4, 0.5f, "2", NULL); /* causal absent: false */
    a = ag_attention_load(f, path, err, sizeof(err));
    ck_assert_msg(a != NULL, "%s", err);
    ck_assert_int_eq(ag_attention_causal(a), 0);
    ag_attention_free(a);
    ag_st_free(f);
    /* each fault named, with the file */
    const struct {
        const char *heads, *causal, *why;
    } bad[] = {
        {NULL, NULL, "metadata 'n_heads' is missing"},
        {"3", NULL, "metadata n_heads '3' must be a whole number dividing d = 4"},
        {"2", "yes", "metadata causal 'yes' must be \"true\" or \"false\""},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        f = model_file(path, 4, 0.5f, bad[k].heads, bad[k].causal);
        ck_assert_ptr_null(ag_attention_load(f, path, err, sizeof(err)));
        snprintf(want, sizeof(want), "%s: %s", path, bad[k].why);
        ck_assert_str_eq(err, want);
        ag_st_free(f);
    }
    f = model_file(path, 4, NAN, "1", NULL);
    ck_assert_ptr_null(ag_attention_load(f, path, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s: tensor 'wq' holds NaN at element 0", path);
    ck_assert_str_eq(err, want);
    ag_st_free(f);
    ck_assert_ptr_null(ag_attention_load(NULL, path, err, sizeof(err)));
    ck_assert_str_eq(err, "ag_attention_load: the file is NULL");
    file_rmdir(dir);
}
END_TEST

Suite *suite_files(void)
{
    Suite *s = suite_create("files");
    TCase *tc = tcase_create("outputs");
    tcase_add_test(tc, test_file_write);
    tcase_add_test(tc, test_file_tmp_name);
    tcase_add_test(tc, test_file_same);
    tcase_add_test(tc, test_file_is_fd);
    tcase_add_test(tc, test_file_not_on_stdio);
    suite_add_tcase(s, tc);
    tc = tcase_create("tensors");
    tcase_add_test(tc, test_st_get_finite);
    tcase_add_test(tc, test_st_flushed);
    tcase_add_test(tc, test_attention_load);
    suite_add_tcase(s, tc);
    return s;
}
