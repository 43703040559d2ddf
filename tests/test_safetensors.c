/*
 * test_safetensors.c - safetensors files: round trips through the writer and
 * the reader, the exact byte layout, hand-made files in the reference
 * format, one test per class of malformed file (status and message), and
 * saves that fail without harming the previous file.
 */
#include "test_util.h"
#include "run.h"
#include "io/io.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "m.safetensors"

/* The whole of a file, malloc'd; *len is its size. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

/* JSON written with ' for " (easier to read in C), as a new string. */
static char *J(const char *s)
{
    char *o = strdup(s);
    for (char *c = o; *c; c++)
        if (*c == '\'')
            *c = '"';
    return o;
}

/* A file: 8-byte length, the JSON (quotes as in J), then dlen data bytes
 * (value i % 251 each, so regions are distinguishable). */
static unsigned char *make_file(const char *json, size_t dlen, size_t *len)
{
    char *j = J(json);
    size_t n = strlen(j);
    unsigned char *buf = malloc(8 + n + dlen + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((unsigned long long)n >> (8 * i));
    memcpy(buf + 8, j, n);
    for (size_t i = 0; i < dlen; i++)
        buf[8 + n + i] = (unsigned char)(i % 251);
    *len = 8 + n + dlen;
    free(j);
    return buf;
}

static ag_st_file *parse_ok(const char *json, size_t dlen)
{
    size_t len;
    unsigned char *buf = make_file(json, dlen, &len);
    ag_st_file *f = NULL;
    char err[256] = "";
    ag_status st = ag_st_parse(buf, len, NAME, &f, err, sizeof(err));
    ck_assert_msg(st == AG_OK, "%s: %s", json, err);
    free(buf);
    return f;
}

/* Parse and expect exactly this status and message. */
static void bad_bytes(const unsigned char *buf, size_t len, ag_status want, const char *msg)
{
    ag_st_file *f = (ag_st_file *)1;
    char err[256] = "";
    ag_status st = ag_st_parse(buf, len, NAME, &f, err, sizeof(err));
    ck_assert_msg(st == want, "status %s, wanted %s (%s)", ag_status_name(st), ag_status_name(want),
                  err);
    ck_assert_ptr_null(f);
    ck_assert_str_eq(err, msg);
}

static void bad(const char *json, size_t dlen, ag_status want, const char *msg)
{
    size_t len;
    unsigned char *buf = make_file(json, dlen, &len);
    bad_bytes(buf, len, want, msg);
    free(buf);
}

static void bad_json(const char *json, const char *msg)
{
    bad(json, 64, AG_ERR_FORMAT, msg);
}

/* ---- round trips ---- */

START_TEST(test_round_trip)
{
    char dir[256], path[512], err[768], listing[1024];
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "model.safetensors");
    ag_rng rng = ag_rng_new(7);
    ag_tensor *wq = test_param(&rng, 2, (int[]){3, 4});
    ag_tensor *x = test_param(&rng, 3, (int[]){2, 3, 4});
    ag_real loss = (ag_real)0.125;

    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ck_assert_int_eq(ag_st_add_tensor(w, "wq", wq), AG_OK);
    ck_assert_int_eq(ag_st_add_tensor(w, "grad.x", x), AG_OK);
    ck_assert_int_eq(ag_st_add(w, "loss", 1, (int[]){1}, &loss), AG_OK);
    ck_assert_int_eq(ag_st_add(w, "empty", 2, (int[]){0, 3}, NULL), AG_OK);
    ck_assert_int_eq(ag_st_add(w, "scalar", 0, NULL, &loss), AG_OK);
    ck_assert_int_eq(ag_st_add_meta(w, "n_heads", "2"), AG_OK);
    ck_assert_int_eq(ag_st_add_meta(w, "causal", "true"), AG_OK);
    ck_assert_int_eq(ag_st_add_meta(w, "note", "quote \" backslash \\ newline \n caf\xc3\xa9"),
                     AG_OK);
    ck_assert_str_eq(ag_st_writer_error(w), "");
    ck_assert_int_eq(ag_st_save(w, path, err, sizeof(err)), AG_OK);
    ag_st_writer_free(w);
    /* no temporary file left */
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "model.safetensors");

    ag_st_file *f;
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(ag_st_count(f), 5);
    /* names come in name order */
    const char *names[] = {"empty", "grad.x", "loss", "scalar", "wq"};
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(ag_st_name(f, i), names[i]);
    ck_assert_ptr_null(ag_st_name(f, 5));
    ck_assert_str_eq(ag_st_dtype(f, "wq"), AG_ST_REAL == AG_ST_F32 ? "F32" : "F64");
    ck_assert_ptr_null(ag_st_dtype(f, "wk"));

    int nd, d[AG_MAX_DIMS];
    ck_assert_int_eq(ag_st_shape(f, "grad.x", &nd, d, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(nd, 3);
    ck_assert(d[0] == 2 && d[1] == 3 && d[2] == 4);
    ck_assert_int_eq(ag_st_shape(f, "scalar", &nd, d, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(nd, 0);

    ag_tensor *wq2 = ag_param_new(2, (int[]){3, 4});
    ag_tensor *x2 = ag_param_new(3, (int[]){2, 3, 4});
    ag_real loss2 = 0, scalar = 0;
    ck_assert_int_eq(ag_st_get(f, "wq", 2, wq2->shape, wq2->data, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_st_get(f, "grad.x", 3, x2->shape, x2->data, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_st_get(f, "loss", 1, (int[]){1}, &loss2, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_st_get(f, "scalar", 0, NULL, &scalar, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_st_get(f, "empty", 2, (int[]){0, 3}, NULL, err, sizeof(err)), AG_OK);
    ck_assert(memcmp(wq->data, wq2->data, wq->size * sizeof(ag_real)) == 0);
    ck_assert(memcmp(x->data, x2->data, x->size * sizeof(ag_real)) == 0);
    ck_assert(loss2 == loss && scalar == loss);

    ck_assert_uint_eq(ag_st_meta_count(f), 3);
    ck_assert_str_eq(ag_st_meta_key(f, 0), "causal");
    ck_assert_ptr_null(ag_st_meta_key(f, 3));
    ck_assert_str_eq(ag_st_meta(f, "n_heads"), "2");
    ck_assert_str_eq(ag_st_meta(f, "causal"), "true");
    ck_assert_str_eq(ag_st_meta(f, "note"), "quote \" backslash \\ newline \n caf\xc3\xa9");
    ck_assert_ptr_null(ag_st_meta(f, "missing"));

    ag_st_free(f);
    ag_param_free(wq);
    ag_param_free(x);
    ag_param_free(wq2);
    ag_param_free(x2);
    file_rmdir(dir);
}
END_TEST

/* Both dtypes can be written from either build and read back. */
START_TEST(test_round_trip_dtypes)
{
    const ag_real v[3] = {(ag_real)1.5, (ag_real)-0.1, (ag_real)3e10};
    for (int k = 0; k < 2; k++) {
        ag_st_type dt = k ? AG_ST_F64 : AG_ST_F32;
        ag_st_writer *w = ag_st_writer_new(dt);
        ck_assert_int_eq(ag_st_add(w, "v", 1, (int[]){3}, v), AG_OK);
        unsigned char *buf;
        size_t len;
        char err[256];
        ck_assert_int_eq(ag_st_encode(w, &buf, &len, err, sizeof(err)), AG_OK);
        ag_st_file *f;
        ck_assert_int_eq(ag_st_parse(buf, len, NAME, &f, err, sizeof(err)), AG_OK);
        ck_assert_str_eq(ag_st_dtype(f, "v"), k ? "F64" : "F32");
        ag_real out[3];
        ck_assert_int_eq(ag_st_get(f, "v", 1, (int[]){3}, out, err, sizeof(err)), AG_OK);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(out[i] == (ag_real)(k ? (double)v[i] : (double)(float)v[i]), "element %d",
                          i);
        ag_st_free(f);
        free(buf);
        ag_st_writer_free(w);
    }
    ck_assert_ptr_null(ag_st_writer_new((ag_st_type)3));
}
END_TEST

/* The layout of the reference writer: header padded with spaces to a
 * multiple of 8, __metadata__ first, tensors in name order and contiguous. */
START_TEST(test_layout)
{
    const ag_real b[2] = {1, 2}, a[1] = {-2};
    ag_st_writer *w = ag_st_writer_new(AG_ST_F32);
    ag_st_add(w, "b", 1, (int[]){2}, b);
    ag_st_add(w, "a", 1, (int[]){1}, a);
    ag_st_add_meta(w, "k", "v");
    unsigned char *buf;
    size_t len;
    char err[256];
    ck_assert_int_eq(ag_st_encode(w, &buf, &len, err, sizeof(err)), AG_OK);
    const char *want = "{\"__metadata__\":{\"k\":\"v\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
    size_t n = strlen(want), padded = (n + 7) / 8 * 8;
    ck_assert_uint_eq(len, 8 + padded + 12);
    ck_assert_uint_eq(buf[0] | buf[1] << 8, padded);
    for (int i = 2; i < 8; i++)
        ck_assert_uint_eq(buf[i], 0);
    ck_assert(memcmp(buf + 8, want, n) == 0);
    for (size_t i = n; i < padded; i++)
        ck_assert_uint_eq(buf[8 + i], ' ');
    /* -2.0f, 1.0f, 2.0f little-endian */
    const unsigned char data[12] = {0, 0, 0, 0xc0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
    ck_assert(memcmp(buf + 8 + padded, data, 12) == 0);
    free(buf);
    ag_st_writer_free(w);
}
END_TEST

/* Tensors of their own type beside the writer's: float32 from any build,
 * integer ids for other tools (which ag_st_load does not read back). */
START_TEST(test_typed_layout)
{
    const ag_real r[1] = {0.5};
    const float f[2] = {1, -2};
    const int32_t i32[2] = {7, -1};
    const int64_t i64[1] = {-2};
    ag_st_writer *w = ag_st_writer_new(AG_ST_F64);
    ag_st_add(w, "r", 1, (int[]){1}, r);
    ck_assert_int_eq(ag_st_add_typed(w, "f", AG_ST_F32, 1, (int[]){2}, f), AG_OK);
    ck_assert_int_eq(ag_st_add_typed(w, "i", AG_ST_I32, 2, (int[]){1, 2}, i32), AG_OK);
    ck_assert_int_eq(ag_st_add_typed(w, "j", AG_ST_I64, 1, (int[]){1}, i64), AG_OK);
    unsigned char *buf;
    size_t len;
    char err[256];
    ck_assert_int_eq(ag_st_encode(w, &buf, &len, err, sizeof(err)), AG_OK);
    const char *want = "{\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"i\":{\"dtype\":\"I32\",\"shape\":[1,2],\"data_offsets\":[8,16]},"
                       "\"j\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[16,24]},"
                       "\"r\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[24,32]}}";
    size_t n = strlen(want), padded = (n + 7) / 8 * 8;
    ck_assert_uint_eq(len, 8 + padded + 32);
    ck_assert(memcmp(buf + 8, want, n) == 0);
    const unsigned char data[32] = {
        0,    0,    0x80, 0x3f, 0,    0,    0,    0xc0,  /* 1.0f, -2.0f */
        7,    0,    0,    0,    0xff, 0xff, 0xff, 0xff,  /* 7, -1 */
        0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  /* -2 */
        0,    0,    0,    0,    0,    0,    0xe0, 0x3f}; /* 0.5 */
    ck_assert(memcmp(buf + 8 + padded, data, 32) == 0);
    /* attograd's reader takes floats only: the ids are for other tools */
    ag_st_file *back;
    ck_assert_int_eq(ag_st_parse(buf, len, "typed", &back, err, sizeof(err)), AG_ERR_FORMAT);
    ck_assert_str_eq(err, "typed: tensor 'i': unsupported dtype I32 (attograd reads F32 and F64)");
    free(buf);
    /* a type that is none is the writer's sticky error */
    ck_assert_int_eq(ag_st_add_typed(w, "k", (ag_st_type)9, 1, (int[]){1}, f), AG_ERR_ARG);
    ck_assert_str_eq(ag_st_writer_error(w), "ag_st_add_typed: unknown type 9");
    ck_assert_int_eq(ag_st_add_typed(NULL, "k", AG_ST_F32, 1, (int[]){1}, f), AG_ERR_ARG);
    ag_st_writer_free(w);
}
END_TEST

/* Files as other writers make them: whitespace, keys in another order,
 * escapes, gaps between tensors, big-endian-free little-endian data. */
START_TEST(test_foreign_file)
{
    /* 'a' F64 [1] at [8,16]; 'b' F32 [1,1] at [0,4]; bytes 4..8 a gap */
    const char *json = " { 'b' : {'data_offsets':[0,4],'shape':[1, 1],'dtype':'F32'},\n"
                       "\t'\\u0061':{'dtype':'F64','shape':[1],'data_offsets':[8,16]},"
                       "'__metadata__':{'format':'pt','caf\\u00e9':'\\ud83d\\ude00\\/'} }   ";
    size_t len;
    unsigned char *buf = make_file(json, 16, &len);
    size_t data = len - 16;
    const unsigned char one_f32[4] = {0, 0, 0x80, 0x3f};              /* 1.0f */
    const unsigned char half_f64[8] = {0, 0, 0, 0, 0, 0, 0xe0, 0x3f}; /* 0.5 */
    memcpy(buf + data, one_f32, 4);
    memcpy(buf + data + 8, half_f64, 8);
    ag_st_file *f;
    char err[256];
    ck_assert_int_eq(ag_st_parse(buf, len, NAME, &f, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(ag_st_count(f), 2);
    ag_real v = 0;
    ck_assert_int_eq(ag_st_get(f, "a", 1, (int[]){1}, &v, err, sizeof(err)), AG_OK);
    ck_assert(v == (ag_real)0.5);
    ck_assert_int_eq(ag_st_get(f, "b", 2, (int[]){1, 1}, &v, err, sizeof(err)), AG_OK);
    ck_assert(v == 1);
    ck_assert_str_eq(ag_st_meta(f, "format"), "pt");
    ck_assert_str_eq(ag_st_meta(f, "caf\xc3\xa9"), "\xf0\x9f\x98\x80/");
    ag_st_free(f);
    free(buf);

    /* an empty header is a file without tensors */
    f = parse_ok("{}", 0);
    ck_assert_uint_eq(ag_st_count(f), 0);
    ck_assert_uint_eq(ag_st_meta_count(f), 0);
    ck_assert_ptr_null(ag_st_meta(f, "x"));
    ag_st_free(f);
    /* zero-element tensors may share an offset with anything */
    f = parse_ok("{'e':{'dtype':'F32','shape':[0,5],'data_offsets':[4,4]},"
                 "'f':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}",
                 8);
    ag_st_free(f);
}
END_TEST

/* ---- queries: errors ---- */

START_TEST(test_missing_tensor)
{
    ag_st_file *f = parse_ok("{'wq':{'dtype':'F32','shape':[2,2],'data_offsets':[0,16]}}", 16);
    ag_real d[16];
    char err[256];
    int nd, s[AG_MAX_DIMS];
    ck_assert_int_eq(ag_st_get(f, "wk", 2, (int[]){2, 2}, d, err, sizeof(err)), AG_ERR_FORMAT);
    ck_assert_str_eq(err, NAME ": tensor 'wk' not found");
    ck_assert_int_eq(ag_st_shape(f, "wk", &nd, s, err, sizeof(err)), AG_ERR_FORMAT);
    ck_assert_str_eq(err, NAME ": tensor 'wk' not found");
    ck_assert_int_eq(ag_st_get(NULL, "wk", 2, (int[]){2, 2}, d, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_st_get: file is NULL");
    ck_assert_int_eq(ag_st_get(f, "wq", 5, (int[]){1, 1, 1, 1, 1}, d, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_st_get: 'wq': bad expected shape (ndim 5)");
    ck_assert_int_eq(ag_st_get(f, "wq", 2, (int[]){2, 2}, NULL, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_st_get: 'wq': dst is NULL");
    ag_st_free(f);
    ag_st_free(NULL);
    ck_assert_uint_eq(ag_st_count(NULL), 0);
}
END_TEST

START_TEST(test_wrong_shape)
{
    ag_st_file *f = parse_ok("{'wq':{'dtype':'F32','shape':[4,4],'data_offsets':[0,64]}}", 64);
    ag_real d[64] = {42};
    char err[256];
    ck_assert_int_eq(ag_st_get(f, "wq", 2, (int[]){8, 8}, d, err, sizeof(err)), AG_ERR_SHAPE);
    ck_assert_str_eq(err, NAME ": tensor 'wq' has shape [4x4], expected [8x8]");
    ck_assert_int_eq(ag_st_get(f, "wq", 1, (int[]){16}, d, err, sizeof(err)), AG_ERR_SHAPE);
    ck_assert_str_eq(err, NAME ": tensor 'wq' has shape [4x4], expected [16]");
    ck_assert(d[0] == 42); /* untouched */
    ag_st_free(f);
}
END_TEST

/* Shapes a file may hold but an ag_tensor cannot. */
START_TEST(test_shape_beyond_tensor)
{
    ag_st_file *f = parse_ok("{'five':{'dtype':'F32','shape':[1,1,1,1,2],'data_offsets':[0,8]},"
                             "'wide':{'dtype':'F32','shape':[0,3000000000],'data_offsets':[0,0]}}",
                             8);
    int nd, s[AG_MAX_DIMS];
    char err[256];
    ck_assert_int_eq(ag_st_shape(f, "five", &nd, s, err, sizeof(err)), AG_ERR_SHAPE);
    ck_assert_str_eq(err, NAME ": tensor 'five' has 5 dims; attograd tensors have at most 4");
    ck_assert_int_eq(ag_st_shape(f, "wide", &nd, s, err, sizeof(err)), AG_ERR_SHAPE);
    ck_assert_str_eq(err,
                     NAME ": tensor 'wide' has shape [0x3000000000]: a dim is beyond 2147483647");
    ag_st_free(f);
}
END_TEST

START_TEST(test_f64_beyond_float)
{
#ifdef AG_REAL_DOUBLE
    ck_assert(1); /* every F64 fits a double build */
#else
    size_t len;
    unsigned char *buf =
        make_file("{'big':{'dtype':'F64','shape':[2],'data_offsets':[0,16]}}", 16, &len);
    const unsigned char one[8] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f};                    /* 1.0 */
    const unsigned char huge[8] = {0x9c, 0x75, 0x00, 0x88, 0x3c, 0xe4, 0x37, 0x7e}; /* 1e300 */
    memcpy(buf + len - 16, one, 8);
    memcpy(buf + len - 8, huge, 8);
    ag_st_file *f;
    char err[256];
    ck_assert_int_eq(ag_st_parse(buf, len, NAME, &f, err, sizeof(err)), AG_OK);
    ag_real d[2] = {7, 7};
    ck_assert_int_eq(ag_st_get(f, "big", 1, (int[]){2}, d, err, sizeof(err)), AG_ERR_NUMERIC);
    ck_assert_str_eq(err, NAME ": tensor 'big': element 1 (1e+300) is out of range for float");
    ck_assert(d[0] == 7);
    ag_st_free(f);
    free(buf);
#endif
}
END_TEST

/* ---- malformed files, one class per test ---- */

START_TEST(test_truncated_length)
{
    const unsigned char five[5] = {16, 0, 0, 0, 0};
    bad_bytes(five, 5, AG_ERR_FORMAT,
              NAME ": too short for a safetensors file (5 bytes; the header length alone takes 8)");
    bad_bytes(five, 0, AG_ERR_FORMAT,
              NAME ": too short for a safetensors file (0 bytes; the header length alone takes 8)");
}
END_TEST

START_TEST(test_length_beyond_file)
{
    unsigned char buf[18] = {100};
    memcpy(buf + 8, "{}        ", 10);
    bad_bytes(buf, 18, AG_ERR_FORMAT,
              NAME ": header length 100 runs past the end of the file (18 bytes)");
    /* beyond the limit, whatever the file's size */
    unsigned char huge[16] = {0, 0, 0, 0, 0, 1, 0, 0};
    bad_bytes(huge, 16, AG_ERR_FORMAT,
              NAME ": header length 1099511627776 is over the limit of 100000000 bytes");
    unsigned char all[16] = {255, 255, 255, 255, 255, 255, 255, 255};
    bad_bytes(all, 16, AG_ERR_FORMAT,
              NAME ": header length 18446744073709551615 is over the limit of 100000000 bytes");
}
END_TEST

START_TEST(test_bad_json_structure)
{
    bad_json("", NAME ": bad header JSON at byte 0: expected '{' at the start of the header, "
                      "found the end of the header");
    bad_json("[]", NAME ": bad header JSON at byte 0: expected '{' at the start of the header, "
                        "found '['");
    bad_json("{'a' 1}", NAME ": bad header JSON at byte 5: expected ':', found '1'");
    bad_json("{} x",
             NAME ": bad header JSON at byte 3: trailing characters after the header object");
    bad_json("{}{}",
             NAME ": bad header JSON at byte 2: trailing characters after the header object");
    bad_json("{'w':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},}",
             NAME ": bad header JSON at byte 54: expected a string, found '}'");
    bad_json("{'w':{'dtype':'F32'",
             NAME ": tensor 'w': bad header JSON at byte 19: expected ',' or '}', "
                  "found the end of the header");
    bad_json("{'w':{'dtype':'F32';",
             NAME ": tensor 'w': bad header JSON at byte 19: expected ',' or '}', found ';'");
    bad_json("{'w':7}", NAME ": tensor 'w': bad header JSON at byte 5: expected an object for the "
                             "tensor, found '7'");
    bad_json("{'w':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}\x01}",
             NAME ": bad header JSON at byte 53: expected ',' or '}', found byte 0x01");
    bad_json("{7:1}", NAME ": bad header JSON at byte 1: expected a string, found '7'");
}
END_TEST

START_TEST(test_bad_json_strings)
{
    bad_json("{'abc", NAME ": bad header JSON at byte 2: unterminated string");
    bad_json("{'a\\", NAME ": bad header JSON at byte 2: unterminated string");
    bad_json("{'a\\q':{}}", NAME ": bad header JSON at byte 3: bad escape in a string");
    bad_json("{'a\\u12':{}}", NAME ": bad header JSON at byte 3: bad \\u escape in a string");
    bad_json("{'a\\u12g4':{}}", NAME ": bad header JSON at byte 3: bad \\u escape in a string");
    bad_json("{'\\ud800':{}}",
             NAME ": bad header JSON at byte 2: unpaired surrogate \\ud800 in a string");
    bad_json("{'\\ud800\\u0041':{}}",
             NAME ": bad header JSON at byte 2: unpaired surrogate \\ud800 in a string");
    bad_json("{'\\udc00':{}}",
             NAME ": bad header JSON at byte 2: unpaired surrogate \\udc00 in a string");
    bad_json("{'a\\u0000b':{}}",
             NAME ": bad header JSON at byte 3: \\u0000 in a string is not supported");
    bad_json("{'a\tb':{}}", NAME ": bad header JSON at byte 3: control character 0x09 in a string");
    bad_json("{'\xc3':{}}", NAME ": bad header JSON at byte 1: string is not valid UTF-8");
    bad_json("{'\xc0\xaf':{}}", NAME ": bad header JSON at byte 1: string is not valid UTF-8");
    bad_json("{'\xed\xa0\x80':{}}", NAME ": bad header JSON at byte 1: string is not valid UTF-8");
    bad_json("{'\xf4\x90\x80\x80':{}}",
             NAME ": bad header JSON at byte 1: string is not valid UTF-8");
}
END_TEST

START_TEST(test_bad_json_numbers)
{
    bad_json("{'w':{'dtype':'F32','shape':[01],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 29: number with a leading zero");
    bad_json("{'w':{'dtype':'F32','shape':[1.0],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 30: expected an integer, found a fraction "
                  "or an exponent");
    bad_json("{'w':{'dtype':'F32','shape':[1e3],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 30: expected an integer, found a fraction "
                  "or an exponent");
    bad_json("{'w':{'dtype':'F32','shape':[18446744073709551616],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 29: number too large");
    bad_json("{'w':{'dtype':'F32','shape':['1'],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 29: expected a non-negative integer, "
                  "found '\"'");
    bad_json("{'w':{'dtype':'F32','shape':[1,],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 31: expected a non-negative integer, "
                  "found ']'");
    bad_json("{'w':{'dtype':'F32','shape':[1 2],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 31: expected ',' or ']', found '2'");
}
END_TEST

/* Values nested where the format has none are refused, not recursed into. */
START_TEST(test_bad_json_nesting)
{
    bad_json("{'w':{'dtype':'F32','shape':[[1]],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 29: expected a non-negative integer, "
                  "found '['");
    bad_json("{'w':{'dtype':{'F32':1},'shape':[1],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 14: expected a string, found '{'");
    bad_json("{'w':{'dtype':'F32','shape':[1],'data_offsets':[0,4],'x':{}}}",
             NAME ": tensor 'w': unknown key 'x'");
    bad_json("{'w':{'dtype':'F32','shape':[1]}}", NAME ": tensor 'w': missing 'data_offsets'");
    bad_json("{'w':{}}", NAME ": tensor 'w': missing 'dtype'");
    bad_json("{'w':{'dtype':'F32','dtype':'F32','shape':[1],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': duplicate key 'dtype'");
    bad_json("{'w':{'dtype':'F32','shape':[1],'data_offsets':[0,4,8]}}",
             NAME ": tensor 'w': data_offsets must hold 2 numbers");
    bad_json("{'w':{'dtype':'F32','shape':[1],'data_offsets':[4]}}",
             NAME ": tensor 'w': data_offsets must hold 2 numbers");
    bad_json("{'__metadata__':[]}",
             NAME ": bad header JSON at byte 16: expected an object for __metadata__, found '['");
    bad_json("{'__metadata__':{},'__metadata__':{}}", NAME ": duplicate __metadata__");
}
END_TEST

#define X26 "xxxxxxxxxxxxxxxxxxxxxxxxxx"
#define X46 X26 "xxxxxxxxxxxxxxxxxxxx"
#define X50 X46 "xxxx"
START_TEST(test_unsupported_dtype)
{
    const char *dtypes[] = {"F16", "BF16", "I32", "I64", "U8", "BOOL", "F8_E4M3", "f32", ""};
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
        char json[128], msg[128];
        snprintf(json, sizeof(json), "{'w':{'dtype':'%s','shape':[1],'data_offsets':[0,2]}}",
                 dtypes[i]);
        snprintf(msg, sizeof(msg),
                 NAME ": tensor 'w': unsupported dtype %s (attograd reads F32 and F64)", dtypes[i]);
        bad_json(json, msg);
    }
    /* a hostile dtype is shown escaped, its middle cut (ag_io_show's rule) */
    bad_json("{'w':{'dtype':'\\u001b[2J" X50 X50 X50 X50 "'}}",
             NAME ": tensor 'w': unsupported dtype \\x1b[2J" X46 "[...128 bytes...]" X26
                  " (attograd reads F32 and F64)");
}
END_TEST

START_TEST(test_bad_shape)
{
    bad_json("{'w':{'dtype':'F32','shape':[-1],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': bad header JSON at byte 29: negative number");
    bad_json("{'w':{'dtype':'F32','shape':[4294967296,4294967296,4294967296],"
             "'data_offsets':[0,4]}}",
             NAME ": tensor 'w': shape [4294967296x4294967296x4294967296] has too many elements");
    bad_json("{'w':{'dtype':'F64','shape':[4611686018427387904],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': shape [4611686018427387904] has too many elements");
    bad_json("{'w':{'dtype':'F32','shape':[1,1,1,1,1,1,1,1,1],'data_offsets':[0,4]}}",
             NAME ": tensor 'w': shape has more than 8 dims");
}
END_TEST

START_TEST(test_offsets_out_of_range)
{
    bad("{'w':{'dtype':'F32','shape':[100],'data_offsets':[0,400]}}", 16, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [0, 400] run past the data section (16 bytes)");
    bad("{'w':{'dtype':'F32','shape':[1],'data_offsets':[18446744073709551612,"
        "18446744073709551615]}}",
        16, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [18446744073709551612, 18446744073709551615] run past "
             "the data section (16 bytes)");
    bad("{'w':{'dtype':'F32','shape':[1],'data_offsets':[8,4]}}", 16, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [8, 4] end before they begin");
    bad("{'w':{'dtype':'F32','shape':[1],'data_offsets':[0,4]}}", 0, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [0, 4] run past the data section (0 bytes)");
}
END_TEST

START_TEST(test_size_mismatch)
{
    bad("{'w':{'dtype':'F32','shape':[2,2],'data_offsets':[0,12]}}", 16, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [0, 12] hold 12 bytes, but F32 [2x2] needs 16");
    bad("{'w':{'dtype':'F64','shape':[2],'data_offsets':[0,8]}}", 16, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [0, 8] hold 8 bytes, but F64 [2] needs 16");
    bad("{'w':{'dtype':'F32','shape':[],'data_offsets':[0,0]}}", 16, AG_ERR_FORMAT,
        NAME ": tensor 'w': data_offsets [0, 0] hold 0 bytes, but F32 [] needs 4");
}
END_TEST

START_TEST(test_overlap)
{
    bad("{'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8]},"
        "'b':{'dtype':'F32','shape':[2],'data_offsets':[4,12]}}",
        16, AG_ERR_FORMAT, NAME ": tensors 'a' and 'b' overlap in the data section");
    /* the same bytes twice */
    bad("{'b':{'dtype':'F32','shape':[2],'data_offsets':[0,8]},"
        "'a':{'dtype':'F32','shape':[2],'data_offsets':[0,8]}}",
        16, AG_ERR_FORMAT, NAME ": tensors 'a' and 'b' overlap in the data section");
    /* one inside another that started earlier */
    bad("{'big':{'dtype':'F32','shape':[4],'data_offsets':[0,16]},"
        "'mid':{'dtype':'F32','shape':[1],'data_offsets':[4,8]},"
        "'x':{'dtype':'F32','shape':[1],'data_offsets':[8,12]}}",
        16, AG_ERR_FORMAT, NAME ": tensors 'big' and 'mid' overlap in the data section");
}
END_TEST

START_TEST(test_duplicate_name)
{
    bad("{'a':{'dtype':'F32','shape':[1],'data_offsets':[0,4]},"
        "'a':{'dtype':'F32','shape':[1],'data_offsets':[4,8]}}",
        16, AG_ERR_FORMAT, NAME ": duplicate tensor 'a'");
    bad("{'__metadata__':{'k':'1','k':'2'}}", 0, AG_ERR_FORMAT,
        NAME ": duplicate metadata key 'k'");
}
END_TEST

START_TEST(test_metadata_not_string)
{
    bad_json("{'__metadata__':{'n_heads':2}}", NAME ": metadata 'n_heads' is not a string");
    bad_json("{'__metadata__':{'a':'b','c':{'d':'e'}}}", NAME ": metadata 'c' is not a string");
    bad_json("{'__metadata__':{'a':null}}", NAME ": metadata 'a' is not a string");
}
END_TEST

/* ---- loading from disk ---- */

START_TEST(test_load_errors)
{
    char dir[256], path[512], err[768], want[768];
    ag_st_file *f = (ag_st_file *)1;
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "none.safetensors");
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_ERR_IO);
    ck_assert_ptr_null(f);
    snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ag_st_load(dir, &f, err, sizeof(err)), AG_ERR_IO);
    snprintf(want, sizeof(want), "%s: is a directory", dir);
    ck_assert_str_eq(err, want);

    /* a malformed file on disk is named by its path */
    file_path(path, sizeof(path), dir, "bad.safetensors");
    FILE *fp = fopen(path, "wb");
    fwrite("\x02\0\0\0\0\0\0\0{]", 1, 10, fp);
    fclose(fp);
    ck_assert_int_eq(ag_st_load(path, &f, err, sizeof(err)), AG_ERR_FORMAT);
    snprintf(want, sizeof(want), "%s: bad header JSON at byte 1: expected a string, found ']'",
             path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(ag_st_load(NULL, &f, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "ag_st_load: path is NULL");
    file_rmdir(dir);
}
END_TEST

/* ---- writer errors and failed saves ---- */

START_TEST(test_writer_errors)
{
    const ag_real v[4] = {0};
    char err[256];
    struct {
        const char *name;
        int ndim;
        const int *shape;
        const ag_real *data;
        const char *msg;
    } cases[] = {
        {"__metadata__", 1, (int[]){1}, v, "ag_st_add: '__metadata__' cannot name a tensor"},
        {"w", 5, (int[]){1, 1, 1, 1, 1}, v, "ag_st_add: tensor 'w': ndim 5 (0..4 dims)"},
        {"w", 2, (int[]){2, -1}, v, "ag_st_add: tensor 'w': negative dim -1"},
        {"w", 1, (int[]){4}, NULL, "ag_st_add: tensor 'w': data is NULL"},
        {"\xff", 1, (int[]){4}, v, "ag_st_add: tensor name is not valid UTF-8"},
        {NULL, 1, (int[]){4}, v, "ag_st_add: name is NULL"},
        {"a", 1, (int[]){4}, v, "ag_st_add: duplicate tensor 'a'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ag_st_writer *w = ag_st_writer_new(AG_ST_F32);
        ck_assert_int_eq(ag_st_add(w, "a", 1, (int[]){4}, v), AG_OK);
        ag_status st = ag_st_add(w, cases[i].name, cases[i].ndim, cases[i].shape, cases[i].data);
        ck_assert_int_ne(st, AG_OK);
        ck_assert_str_eq(ag_st_writer_error(w), cases[i].msg);
        /* sticky: later calls keep the first error, and save reports it */
        ck_assert_int_eq(ag_st_add(w, "b", 1, (int[]){4}, v), st);
        ck_assert_int_eq(ag_st_add_meta(w, "k", "v"), st);
        ck_assert_str_eq(ag_st_writer_error(w), cases[i].msg);
        char want[256];
        snprintf(want, sizeof(want), "/nonexistent/x.safetensors: not saved: %s", cases[i].msg);
        ck_assert_int_eq(ag_st_save(w, "/nonexistent/x.safetensors", err, sizeof(err)), st);
        ck_assert_str_eq(err, want);
        ag_st_writer_free(w);
    }
    ag_st_writer *w = ag_st_writer_new(AG_ST_F32);
    ck_assert_int_eq(ag_st_add_meta(w, "k", "v"), AG_OK);
    ck_assert_int_eq(ag_st_add_meta(w, "k", "w"), AG_ERR_ARG);
    ck_assert_str_eq(ag_st_writer_error(w), "ag_st_add_meta: duplicate key 'k'");
    ag_st_writer_free(w);
    w = ag_st_writer_new(AG_ST_F32);
    ck_assert_int_eq(ag_st_add_tensor(w, "t", NULL), AG_ERR_ARG);
    ck_assert_str_eq(ag_st_writer_error(w), "ag_st_add_tensor: tensor 't' is NULL");
    ag_st_writer_free(w);
    ag_st_writer_free(NULL);
    ck_assert_int_eq(ag_st_add(NULL, "a", 1, (int[]){4}, v), AG_ERR_ARG);
}
END_TEST

#ifdef AG_REAL_DOUBLE
START_TEST(test_writer_f32_range)
{
    const ag_real v[2] = {1, 1e300};
    ag_st_writer *w = ag_st_writer_new(AG_ST_F32);
    ck_assert_int_eq(ag_st_add(w, "v", 1, (int[]){2}, v), AG_OK);
    unsigned char *buf;
    size_t len;
    char err[256];
    ck_assert_int_eq(ag_st_encode(w, &buf, &len, err, sizeof(err)), AG_ERR_NUMERIC);
    ck_assert_ptr_null(buf);
    ck_assert_str_eq(err, "safetensors: tensor 'v': element 1 (1e+300) is out of range for F32");
    ag_st_writer_free(w);
}
END_TEST
#endif

/* Write "old" contents at path with one tensor. */
static void write_old(const char *path, const ag_real *v, int n)
{
    char err[256];
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ag_st_add(w, "old", 1, (int[]){n}, v);
    ck_assert_int_eq(ag_st_save(w, path, err, sizeof(err)), AG_OK);
    ag_st_writer_free(w);
}

/* Check that path still holds exactly what write_old(path, v, n) wrote. */
static void assert_old(const char *path, const ag_real *v, int n)
{
    char err[256];
    unsigned char *want;
    size_t want_len, len;
    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ag_st_add(w, "old", 1, (int[]){n}, v);
    ck_assert_int_eq(ag_st_encode(w, &want, &want_len, err, sizeof(err)), AG_OK);
    unsigned char *have = slurp(path, &len);
    ck_assert_uint_eq(len, want_len);
    ck_assert(memcmp(have, want, len) == 0);
    free(have);
    free(want);
    ag_st_writer_free(w);
}

START_TEST(test_failed_save_keeps_old_file)
{
    char dir[256], path[512], sub[512], err[1100], want[1100], listing[1024];
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "model.safetensors");
    const ag_real old[3] = {1, 2, 3};
    write_old(path, old, 3);

    ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
    ag_st_add(w, "new", 1, (int[]){3}, old);

    /* the target is a directory: refused before anything is written */
    file_path(sub, sizeof(sub), dir, "dir.safetensors");
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(ag_st_save(w, sub, err, sizeof(err)), AG_ERR_IO);
    snprintf(want, sizeof(want), "%s: is a directory", sub);
    ck_assert_str_eq(err, want);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)),
                     "dir.safetensors model.safetensors");
    ck_assert_str_eq(file_listing(sub, listing, sizeof(listing)), "");

    /* a directory that does not exist */
    file_path(sub, sizeof(sub), dir, "none/model.safetensors");
    ck_assert_int_eq(ag_st_save(w, sub, err, sizeof(err)), AG_ERR_IO);
    snprintf(want, sizeof(want),
             "%s: cannot write there: directory '%s/none': No such file or directory", sub, dir);
    ck_assert_str_eq(err, want);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)),
                     "dir.safetensors model.safetensors");

    assert_old(path, old, 3);
    ag_st_writer_free(w);
    file_rmdir(dir);
}
END_TEST

/* A save that fails halfway through writing (the file size limit stands in
 * for a full disk) leaves the previous file and no temporary file. Runs in
 * a child process so the limit does not touch the test runner. */
START_TEST(test_interrupted_save_keeps_old_file)
{
    char dir[256], path[512], listing[1024];
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "model.safetensors");
    const ag_real old[3] = {1, 2, 3};
    write_old(path, old, 3);

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        enum { N = 100000 }; /* 400 KB or more: beyond the limit below */
        ag_real *big = calloc(N, sizeof(ag_real));
        struct rlimit lim = {64 * 1024, 64 * 1024};
        signal(SIGXFSZ, SIG_IGN);
        char err[256] = "";
        int ok = big && setrlimit(RLIMIT_FSIZE, &lim) == 0;
        ag_st_writer *w = ag_st_writer_new(AG_ST_REAL);
        ag_st_add(w, "big", 1, (int[]){N}, big);
        ag_status st = ag_st_save(w, path, err, sizeof(err));
        ok = ok && st == AG_ERR_IO && strstr(err, ": cannot write: File too large");
        if (!ok)
            fprintf(stderr, "interrupted save: %s (%s)\n", ag_status_name(st), err);
        ag_st_writer_free(w);
        free(big);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_str_eq(file_listing(dir, listing, sizeof(listing)), "model.safetensors");
    assert_old(path, old, 3);
    file_rmdir(dir);
}
END_TEST

/* The saved file gets the usual permissions (0666 less the umask). */
START_TEST(test_save_mode)
{
    char dir[256], path[512];
    file_path(path, sizeof(path), file_tmpdir(dir, sizeof(dir)), "model.safetensors");
    mode_t old = umask(022);
    const ag_real v[1] = {1};
    write_old(path, v, 1);
    umask(old);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0644);
    file_rmdir(dir);
}
END_TEST

Suite *suite_safetensors(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("round trip");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_round_trip_dtypes);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_foreign_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("queries");
    tcase_add_test(tc, test_missing_tensor);
    tcase_add_test(tc, test_wrong_shape);
    tcase_add_test(tc, test_shape_beyond_tensor);
    tcase_add_test(tc, test_f64_beyond_float);
    suite_add_tcase(s, tc);

    tc = tcase_create("malformed");
    tcase_add_test(tc, test_truncated_length);
    tcase_add_test(tc, test_length_beyond_file);
    tcase_add_test(tc, test_bad_json_structure);
    tcase_add_test(tc, test_bad_json_strings);
    tcase_add_test(tc, test_bad_json_numbers);
    tcase_add_test(tc, test_bad_json_nesting);
    tcase_add_test(tc, test_unsupported_dtype);
    tcase_add_test(tc, test_bad_shape);
    tcase_add_test(tc, test_offsets_out_of_range);
    tcase_add_test(tc, test_size_mismatch);
    tcase_add_test(tc, test_overlap);
    tcase_add_test(tc, test_duplicate_name);
    tcase_add_test(tc, test_metadata_not_string);
    tcase_add_test(tc, test_load_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("writing");
    tcase_add_test(tc, test_writer_errors);
    tcase_add_test(tc, test_typed_layout);
#ifdef AG_REAL_DOUBLE
    tcase_add_test(tc, test_writer_f32_range);
#endif
    tcase_add_test(tc, test_failed_save_keeps_old_file);
    tcase_add_test(tc, test_interrupted_save_keeps_old_file);
    tcase_add_test(tc, test_save_mode);
    suite_add_tcase(s, tc);
    return s;
}
