/*
 * test_cli_files.c - `attograd grad` and `attograd train --load` on
 * malformed and hostile files: each bad file is made here (with the
 * library's writer, or as raw bytes) in a fresh directory, and the command
 * must fail with status 1 and one message naming the file and the tensor or
 * metadata key. The output files given to the command already hold
 * "previous" content, which must survive, and no temporary file may remain.
 * Under `make check SANITIZE=address,undefined` the same runs prove that
 * no bad input reaches undefined behaviour.
 */
#include "run.h"
#include "st_edit.h"
#include "test_util.h"

#include <unistd.h>

#define PREVIOUS "previous content\n"

/* ---- making files ---- */

typedef struct spec {
    const char *name;
    int ndim;
    int shape[AG_MAX_DIMS];
} spec;

/* Save tensors (deterministic values, element 0 of `nan_in` set to NaN)
 * and metadata (key, value pairs, NULL-terminated) to path. */
static void save_file(const char *path, const spec *t, int n, const char *nan_in,
                      const char *const *meta)
{
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ck_assert_ptr_nonnull(w);
    ag_rng rng = ag_rng_new(7);
    ag_tensor *keep[8];
    ck_assert_int_le(n, 8);
    static const ag_real nothing[1];
    for (int i = 0; i < n; i++) {
        size_t size = 1;
        for (int k = 0; k < t[i].ndim; k++)
            size *= (size_t)t[i].shape[k];
        keep[i] = NULL;
        if (size == 0) { /* an empty tensor: ag_param_new refuses those, a file need not */
            ag_st_add(w, t[i].name, t[i].ndim, t[i].shape, nothing);
            continue;
        }
        keep[i] = ag_param_new(t[i].ndim, t[i].shape);
        ck_assert_ptr_nonnull(keep[i]);
        ag_fill_uniform(keep[i], &rng, -0.5, 0.5);
        if (nan_in && strcmp(nan_in, t[i].name) == 0)
            keep[i]->data[0] = (ag_real)NAN;
        ag_st_add_tensor(w, t[i].name, keep[i]);
    }
    for (int k = 0; meta && meta[k]; k += 2)
        ag_st_add_meta(w, meta[k], meta[k + 1]);
    char err[256];
    ck_assert_msg(ag_st_save(w, path, err, sizeof(err)) == AG_OK, "%s", err);
    ag_st_writer_free(w);
    for (int i = 0; i < n; i++)
        ag_param_free(keep[i]);
}

/* A safetensors file from a raw JSON header and len bytes of zero data. */
static void save_raw(const char *path, const char *json, size_t len)
{
    size_t h = strlen(json);
    unsigned char *buf = calloc(1, 8 + h + len + 1);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, json, h);
    file_write(path, buf, 8 + h + len);
    free(buf);
}

/* The first len bytes of src, as dst. */
static void truncate_copy(const char *src, const char *dst, size_t keep)
{
    size_t len;
    char *data = file_read(src, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_gt(len, keep);
    file_write(dst, data, keep);
    free(data);
}

static const spec good_model[] = {
    {"wq", 2, {4, 4}},
    {"wk", 2, {4, 4}},
    {"wv", 2, {4, 4}},
    {"wo", 2, {4, 4}},
};
static const spec good_batch[] = {{"x", 3, {2, 3, 4}}, {"y", 3, {2, 3, 4}}};
static const char *const good_meta[] = {"n_heads", "2", "causal", "false", NULL};

/* ---- attograd grad ---- */

/* Each case writes m.safetensors and b.safetensors in dir (good ones
 * unless it says otherwise) and names what the message must contain. */
typedef struct grad_case {
    const char *what;
    void (*make)(const char *m, const char *b);
    const char *file;     /* "m" or "b": which file the message names */
    const char *fragment; /* the tensor or key and the problem */
} grad_case;

static void good_pair(const char *m, const char *b)
{
    save_file(m, good_model, 4, NULL, good_meta);
    save_file(b, good_batch, 2, NULL, NULL);
}

static void model_meta(const char *m, const char *b, const char *heads, const char *causal)
{
    const char *meta[5] = {NULL};
    int k = 0;
    if (heads)
        meta[k++] = "n_heads", meta[k++] = heads;
    if (causal)
        meta[k++] = "causal", meta[k++] = causal;
    save_file(m, good_model, 4, NULL, meta);
    save_file(b, good_batch, 2, NULL, NULL);
}

static void m_truncated(const char *m, const char *b)
{
    good_pair(m, b);
    size_t len;
    free(file_read(m, &len));
    truncate_copy(m, m, len - 10);
}
static void m_truncated_header(const char *m, const char *b)
{
    good_pair(m, b);
    truncate_copy(m, m, 30);
}
static void m_empty(const char *m, const char *b)
{
    good_pair(m, b);
    file_write(m, "", 0);
}
static void m_garbage(const char *m, const char *b)
{
    good_pair(m, b);
    file_write(m, "hello, this is not safetensors at all\n", 38);
}
static void m_huge_header(const char *m, const char *b)
{
    good_pair(m, b);
    file_write(m, "\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10);
}
static void m_f16(const char *m, const char *b)
{
    good_pair(m, b);
    save_raw(m,
             "{\"wq\":{\"dtype\":\"F16\",\"shape\":[4,4],\"data_offsets\":[0,32]},"
             "\"__metadata__\":{\"n_heads\":\"2\"}}",
             32);
}
static void m_missing_wk(const char *m, const char *b)
{
    static const spec t[] = {{"wq", 2, {4, 4}}, {"wv", 2, {4, 4}}, {"wo", 2, {4, 4}}};
    good_pair(m, b);
    save_file(m, t, 3, NULL, good_meta);
}
static void m_missing_wq(const char *m, const char *b)
{
    static const spec t[] = {{"wk", 2, {4, 4}}, {"wv", 2, {4, 4}}, {"wo", 2, {4, 4}}};
    good_pair(m, b);
    save_file(m, t, 3, NULL, good_meta);
}
static void m_wrong_shape_wv(const char *m, const char *b)
{
    static const spec t[] = {
        {"wq", 2, {4, 4}}, {"wk", 2, {4, 4}}, {"wv", 2, {4, 3}}, {"wo", 2, {4, 4}}};
    good_pair(m, b);
    save_file(m, t, 4, NULL, good_meta);
}
static void m_wq_not_square(const char *m, const char *b)
{
    static const spec t[] = {
        {"wq", 2, {4, 5}}, {"wk", 2, {4, 4}}, {"wv", 2, {4, 4}}, {"wo", 2, {4, 4}}};
    good_pair(m, b);
    save_file(m, t, 4, NULL, good_meta);
}
static void m_wq_3d(const char *m, const char *b)
{
    static const spec t[] = {
        {"wq", 3, {1, 4, 4}}, {"wk", 2, {4, 4}}, {"wv", 2, {4, 4}}, {"wo", 2, {4, 4}}};
    good_pair(m, b);
    save_file(m, t, 4, NULL, good_meta);
}
static void m_heads_3x(const char *m, const char *b)
{
    model_meta(m, b, "3x", "false");
}
static void m_heads_3(const char *m, const char *b)
{
    model_meta(m, b, "3", "false");
}
static void m_heads_0(const char *m, const char *b)
{
    model_meta(m, b, "0", "false");
}
static void m_heads_space(const char *m, const char *b)
{
    model_meta(m, b, " 2", "false");
}
static void m_heads_huge(const char *m, const char *b)
{
    model_meta(m, b, "99999999999999999999", NULL);
}
static void m_heads_missing(const char *m, const char *b)
{
    model_meta(m, b, NULL, "true");
}
static void m_causal_maybe(const char *m, const char *b)
{
    model_meta(m, b, "2", "maybe");
}
static void m_causal_upper(const char *m, const char *b)
{
    model_meta(m, b, "2", "TRUE");
}
static void m_nan(const char *m, const char *b)
{
    good_pair(m, b);
    save_file(m, good_model, 4, "wk", good_meta);
}
static void m_is_batch(const char *m, const char *b)
{
    good_pair(m, b);
    save_file(m, good_batch, 2, NULL, good_meta);
}
static void b_missing_y(const char *m, const char *b)
{
    good_pair(m, b);
    save_file(b, good_batch, 1, NULL, NULL);
}
static void b_missing_x(const char *m, const char *b)
{
    good_pair(m, b);
    save_file(b, good_batch + 1, 1, NULL, NULL);
}
static void b_wrong_d(const char *m, const char *b)
{
    static const spec t[] = {{"x", 3, {2, 3, 5}}, {"y", 3, {2, 3, 5}}};
    good_pair(m, b);
    save_file(b, t, 2, NULL, NULL);
}
static void b_x_2d(const char *m, const char *b)
{
    static const spec t[] = {{"x", 2, {3, 4}}, {"y", 2, {3, 4}}};
    good_pair(m, b);
    save_file(b, t, 2, NULL, NULL);
}
static void b_y_shape(const char *m, const char *b)
{
    static const spec t[] = {{"x", 3, {2, 3, 4}}, {"y", 3, {2, 4, 4}}};
    good_pair(m, b);
    save_file(b, t, 2, NULL, NULL);
}
static void b_empty_x(const char *m, const char *b)
{
    static const spec t[] = {{"x", 3, {0, 3, 4}}, {"y", 3, {0, 3, 4}}};
    good_pair(m, b);
    save_file(b, t, 2, NULL, NULL);
}
static void b_nan_y(const char *m, const char *b)
{
    good_pair(m, b);
    save_file(b, good_batch, 2, "y", NULL);
}
static void b_too_long(const char *m, const char *b)
{
    /* 96 KB of x, but its attention weights would be 6000 x 6000 */
    static const spec t[] = {{"x", 3, {1, 6000, 4}}, {"y", 3, {1, 6000, 4}}};
    good_pair(m, b);
    save_file(b, t, 2, NULL, NULL);
}
static void b_truncated(const char *m, const char *b)
{
    good_pair(m, b);
    size_t len;
    free(file_read(b, &len));
    truncate_copy(b, b, len / 2);
}

static const grad_case grad_cases[] = {
    {"truncated data", m_truncated, "m", ""},
    {"truncated header", m_truncated_header, "m", ""},
    {"empty file", m_empty, "m", ""},
    {"not safetensors", m_garbage, "m", ""},
    {"huge header length", m_huge_header, "m", ""},
    {"dtype F16", m_f16, "m", "tensor 'wq': unsupported dtype F16"},
    {"missing wk", m_missing_wk, "m", "tensor 'wk' not found"},
    {"missing wq", m_missing_wq, "m", "tensor 'wq' not found"},
    {"wrong shape wv", m_wrong_shape_wv, "m", "tensor 'wv' has shape [4x3], expected [4x4]"},
    {"wq not square", m_wq_not_square, "m", "tensor 'wq' is [4x5], must be square"},
    {"wq 3-d", m_wq_3d, "m", "tensor 'wq' has 3 dims"},
    {"n_heads 3x", m_heads_3x, "m", "metadata n_heads '3x'"},
    {"n_heads 3 for d 4", m_heads_3, "m",
     "metadata n_heads '3' must be a whole number dividing d = 4"},
    {"n_heads 0", m_heads_0, "m", "metadata n_heads '0'"},
    {"n_heads ' 2'", m_heads_space, "m", "metadata n_heads ' 2'"},
    {"n_heads overflow", m_heads_huge, "m", "metadata n_heads '99999999999999999999'"},
    {"n_heads missing", m_heads_missing, "m", "metadata 'n_heads' is missing"},
    {"causal maybe", m_causal_maybe, "m", "metadata causal 'maybe' must be \"true\" or \"false\""},
    {"causal TRUE", m_causal_upper, "m", "metadata causal 'TRUE'"},
    {"NaN weight", m_nan, "m", "tensor 'wk' holds NaN at element 0"},
    {"a batch as the model", m_is_batch, "m", "tensor 'wq' not found"},
    {"missing y", b_missing_y, "b", "tensor 'y' not found"},
    {"missing x", b_missing_x, "b", "tensor 'x' not found"},
    {"x of the wrong width", b_wrong_d, "b", "tensor 'x' must be (B, T, 4)"},
    {"x 2-d", b_x_2d, "b", "tensor 'x' must be (B, T, 4)"},
    {"y of another shape", b_y_shape, "b", "tensor 'y' has shape [2x4x4], expected [2x3x4]"},
    {"empty x", b_empty_x, "b", "tensor 'x' must be (B, T, 4)"},
    {"NaN target", b_nan_y, "b", "tensor 'y' holds NaN at element 0"},
    {"attention too large", b_too_long, "b", "tensor 'x' is [1x6000x4]: with 2 head(s)"},
    {"truncated batch", b_truncated, "b", ""},
};
#define N_GRAD_CASES ((int)(sizeof(grad_cases) / sizeof(grad_cases[0])))

START_TEST(test_grad_bad_file)
{
    const grad_case *c = &grad_cases[_i];
    char dir[256], m[512], b[512], out[512], listing[1024];
    file_tmpdir(dir, sizeof(dir));
    file_path(m, sizeof(m), dir, "m.safetensors");
    file_path(b, sizeof(b), dir, "b.safetensors");
    file_path(out, sizeof(out), dir, "out.safetensors");
    c->make(m, b);
    file_write(out, PREVIOUS, strlen(PREVIOUS));

    run_proc p = run_cmd("grad", "--model", m, "--batch", b, "--out", out, NULL);
    ck_assert_msg(p.status == 1 && p.signal == 0, "%s: exit status %d (signal %d), want 1\n%s%s",
                  c->what, p.status, p.signal, p.out, p.err);
    char want[600];
    snprintf(want, sizeof(want), "attograd grad: %s: %s", c->file[0] == 'm' ? m : b, c->fragment);
    ck_assert_msg(strstr(p.err, want) != NULL, "%s: '%s' not in stderr:\n%s", c->what, want, p.err);
    ck_assert_msg(strchr(p.err, '\n') == p.err + p.err_len - 1, "%s: not one line:\n%s", c->what,
                  p.err);
    ck_assert_msg(p.out_len == 0, "%s: stdout:\n%s", c->what, p.out);
    /* the output is untouched and nothing else was left behind */
    char *kept = file_read(out, NULL);
    ck_assert_str_eq(kept, PREVIOUS);
    free(kept);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)),
                     "b.safetensors m.safetensors out.safetensors");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* The good pair the cases start from does work, and makes every tensor of
 * the contract, so each failure above is the bad file's doing. */
START_TEST(test_grad_good_files)
{
    char dir[256], m[512], b[512], out[512], listing[1024], err[256];
    file_tmpdir(dir, sizeof(dir));
    file_path(m, sizeof(m), dir, "m.safetensors");
    file_path(b, sizeof(b), dir, "b.safetensors");
    file_path(out, sizeof(out), dir, "out.safetensors");
    good_pair(m, b);
    file_write(out, PREVIOUS, strlen(PREVIOUS));
    run_proc p = run_cmd("grad", "--model", m, "--batch", b, "--out", out, NULL);
    run_assert_status(&p, 0);
    run_assert_has(p.out, "grad: B=2 T=3 d=4 heads=2 causal=false loss=");
    ag_st_file *f;
    ck_assert_msg(ag_st_load(out, &f, err, sizeof(err)) == AG_OK, "%s", err);
    static const char *const names[] = {"attn",    "grad.wk", "grad.wo", "grad.wq",
                                        "grad.wv", "grad.x",  "loss",    "out"};
    ck_assert_uint_eq(ag_st_count(f), 8);
    for (size_t i = 0; i < 8; i++)
        ck_assert_str_eq(ag_st_name(f, i), names[i]);
    ag_st_free(f);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)),
                     "b.safetensors m.safetensors out.safetensors");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* ---- attograd train --load ---- */

typedef struct load_case {
    const char *what;
    st_edit e;
    int truncate;         /* keep only this many bytes (0: the whole file) */
    const char *fragment; /* after "<checkpoint>: " */
} load_case;

static const load_case load_cases[] = {
    {"truncated", {0}, 1000, ""},
    {"truncated header", {0}, 12, ""},
    {"no format", {.key = "format"}, 0, "metadata 'format' is missing"},
    {"another format",
     {.key = "format", .value = "pickle"},
     0,
     "not an attograd checkpoint (format 'pickle')"},
    {"version 2", {.key = "version", .value = "2"}, 0, "checkpoint version '2' is not supported"},
    {"task sort", {.key = "task", .value = "sort"}, 0, "metadata task 'sort' is unknown"},
    {"posenc rope", {.key = "posenc", .value = "rope"}, 0, "metadata posenc 'rope' is unknown"},
    {"optimizer lion",
     {.key = "optimizer", .value = "lion"},
     0,
     "metadata optimizer 'lion' is unknown"},
    {"heads 3x", {.key = "heads", .value = "3x"}, 0, "metadata heads '3x' is not a whole number"},
    {"heads 3", {.key = "heads", .value = "3"}, 0, "metadata heads 3 does not divide dim 16"},
    {"heads missing", {.key = "heads"}, 0, "metadata 'heads' is missing"},
    {"causal maybe", {.key = "causal", .value = "maybe"}, 0, "metadata causal 'maybe'"},
    {"seq 12", {.key = "seq", .value = "12"}, 0, "metadata seq 12 is out of range for task lookup"},
    {"dim tab", {.key = "dim", .value = "\t16"}, 0, "metadata dim '\\t16'"},
    {"dim csi",
     {.key = "dim",
      .value = "\xc2\x9b"
               "16"},
     0,
     "metadata dim '\\xc2\\x9b16'"},
    {"lr nan", {.key = "lr", .value = "nan"}, 0, "metadata lr 'nan'"},
    {"lr inf", {.key = "lr", .value = "1e999"}, 0, "metadata lr '1e999'"},
    {"seed -1", {.key = "seed", .value = "-1"}, 0, "metadata seed '-1'"},
    {"seed ' -1'", {.key = "seed", .value = " -1"}, 0, "metadata seed ' -1'"},
    {"step -1", {.key = "step", .value = "-1"}, 0, "metadata step '-1'"},
    {"data_rng junk", {.key = "data_rng", .value = "12ab"}, 0, "metadata data_rng '12ab'"},
    {"missing wq",
     {.drop = "wq"},
     0,
     "tensor 'wq' is missing (the metadata's task lookup, posenc none calls for it)"},
    {"missing Adam state",
     {.drop = "optim.wv.m"},
     0,
     "tensor 'optim.wv.m' is missing (the metadata's optimizer adam calls for it)"},
    {"wrong shape",
     {.reshape = "wk"},
     0,
     "tensor 'wk' has shape [2x128], but the metadata's task lookup, seq 5, dim 16 call for "
     "[16x16]"},
    {"another task's tensors",
     {.key = "task", .value = "lookup2"},
     0,
     "tensor 'readout' has shape [16x8], but the metadata's task lookup2, seq 5, dim 16 call for "
     "[16x16]"},
    {"dim 32 in the metadata",
     {.key = "dim", .value = "32"},
     0,
     "tensor 'emb0' has shape [18x16], but the metadata's task lookup, seq 5, dim 32 call for "
     "[18x32]"},
    {"learned positions, none in the file",
     {.key = "posenc", .value = "learned"},
     0,
     "tensor 'pos' is missing (the metadata's task lookup, posenc learned calls for it)"},
    {"sgd with Adam's state",
     {.key = "optimizer", .value = "sgd"},
     0,
     "tensor 'optim.emb0.velocity' is missing (the metadata's optimizer sgd with momentum calls "
     "for it)"},
    {"a tensor left over",
     {.add = "readout2"},
     0,
     "tensor 'readout2' is not one the metadata calls for (a left-over?)"},
    {"NaN weight",
     {.poison = "emb1", .poison_value = NAN},
     0,
     "tensor 'emb1' holds NaN at element 0"},
    {"Inf weight",
     {.poison = "readout", .poison_value = INFINITY},
     0,
     "tensor 'readout' holds Inf at element 0"},
    {"negative Adam v",
     {.poison = "optim.wo.v", .poison_value = -1},
     0,
     "tensor 'optim.wo.v' holds a negative value at element 0"},
};
#define N_LOAD_CASES ((int)(sizeof(load_cases) / sizeof(load_cases[0])))

/* A real checkpoint to break: a few steps of a small lookup model. */
static void make_checkpoint(const char *path)
{
    run_proc p = run_cmd("train", "--steps", "3", "--dim", "16", "--quiet", "--save", path, NULL);
    run_assert_status(&p, 0);
    run_free(&p);
}

START_TEST(test_load_bad_checkpoint)
{
    const load_case *c = &load_cases[_i];
    char dir[256], good[512], ck[512], save[512], log[512], listing[1024];
    file_tmpdir(dir, sizeof(dir));
    file_path(good, sizeof(good), dir, "good.safetensors");
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    file_path(save, sizeof(save), dir, "s.safetensors");
    file_path(log, sizeof(log), dir, "l.csv");
    make_checkpoint(good);
    if (c->truncate)
        truncate_copy(good, ck, (size_t)c->truncate);
    else
        st_rewrite(good, ck, &c->e);
    remove(good);
    file_write(save, PREVIOUS, strlen(PREVIOUS));
    file_write(log, PREVIOUS, strlen(PREVIOUS));

    run_proc p = run_cmd("train", "--load", ck, "--steps", "2", "--save", save, "--log", log, NULL);
    ck_assert_msg(p.status == 1 && p.signal == 0, "%s: exit status %d (signal %d), want 1\n%s%s",
                  c->what, p.status, p.signal, p.out, p.err);
    char want[600];
    snprintf(want, sizeof(want), "attograd train: %s: %s", ck, c->fragment);
    ck_assert_msg(strstr(p.err, want) != NULL, "%s: '%s' not in stderr:\n%s", c->what, want, p.err);
    ck_assert_msg(strchr(p.err, '\n') == p.err + p.err_len - 1, "%s: not one line:\n%s", c->what,
                  p.err);
    ck_assert_msg(p.out_len == 0, "%s: stdout:\n%s", c->what, p.out);
    char *kept = file_read(save, NULL);
    ck_assert_str_eq(kept, PREVIOUS);
    free(kept);
    kept = file_read(log, NULL);
    ck_assert_str_eq(kept, PREVIOUS);
    free(kept);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)),
                     "c.safetensors l.csv s.safetensors");
    run_free(&p);
    file_rmdir(dir);
}
END_TEST

/* Files that are not checkpoints at all, or not files. */
START_TEST(test_load_not_a_checkpoint)
{
    char dir[256], m[512], b[512], save[512], listing[1024];
    file_tmpdir(dir, sizeof(dir));
    file_path(m, sizeof(m), dir, "m.safetensors");
    file_path(b, sizeof(b), dir, "b.safetensors");
    file_path(save, sizeof(save), dir, "s.safetensors");
    good_pair(m, b); /* grad's model: safetensors, but no checkpoint metadata */
    file_write(save, PREVIOUS, strlen(PREVIOUS));
    const char *loads[] = {m, dir, "/nonexistent/c.safetensors"};
    const char *fragments[] = {"metadata 'format' is missing", "is a directory",
                               "cannot open: No such file or directory"};
    for (int k = 0; k < 3; k++) {
        run_proc p = run_cmd("train", "--load", loads[k], "--steps", "2", "--save", save, NULL);
        run_assert_status(&p, 1);
        char want[600];
        snprintf(want, sizeof(want), "attograd train: %s: %s", loads[k], fragments[k]);
        run_assert_has(p.err, want);
        ck_assert_uint_eq(p.out_len, 0);
        run_free(&p);
    }
    char *kept = file_read(save, NULL);
    ck_assert_str_eq(kept, PREVIOUS);
    free(kept);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)),
                     "b.safetensors m.safetensors s.safetensors");
    file_rmdir(dir);
}
END_TEST

/* A flag that contradicts the checkpoint is a usage error naming both. */
START_TEST(test_load_conflicting_flag)
{
    char dir[256], ck[512], save[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(ck, sizeof(ck), dir, "c.safetensors");
    file_path(save, sizeof(save), dir, "s.safetensors");
    make_checkpoint(ck);
    char want[600];
    run_proc p = run_cmd("train", "--load", ck, "--task", "reverse", "--save", save, NULL);
    run_assert_status(&p, 2);
    snprintf(want, sizeof(want), "--task reverse conflicts with %s, made with lookup", ck);
    run_assert_has(p.err, want);
    run_assert_has(p.err, "usage: attograd train");
    run_free(&p);
    p = run_cmd("train", "--load", ck, "--heads", "3", NULL);
    run_assert_status(&p, 2);
    snprintf(want, sizeof(want), "--heads 3 conflicts with %s, made with 1", ck);
    run_assert_has(p.err, want);
    run_free(&p);
    ck_assert_int_ne(access(save, F_OK), 0);
    file_rmdir(dir);
}
END_TEST

Suite *suite_cli_files(void)
{
    Suite *s = suite_create("cli_files");
    TCase *tc = tcase_create("grad");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_grad_good_files);
    tcase_add_loop_test(tc, test_grad_bad_file, 0, N_GRAD_CASES);
    suite_add_tcase(s, tc);
    tc = tcase_create("load");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_load_bad_checkpoint, 0, N_LOAD_CASES);
    tcase_add_test(tc, test_load_not_a_checkpoint);
    tcase_add_test(tc, test_load_conflicting_flag);
    suite_add_tcase(s, tc);
    return s;
}
