/*
 * test_text.c - the character tokenizer: the vocabulary of UTF-8 text
 * (multibyte characters sort by code point), encoding and decoding, the
 * 90/10 split, random windows and the validation windows, and the errors a
 * text file can cause: empty, not UTF-8, a NUL byte, a character outside
 * the vocabulary, too short for a window.
 */
#include "test_util.h"
#include "run.h"

#include <string.h>

static ag_text *parse_ok(const char *s, const ag_vocab *vocab)
{
    ag_text *t;
    char err[256];
    ag_status st = ag_text_parse(s, strlen(s), "t.txt", vocab, &t, err, sizeof(err));
    ck_assert_msg(st == AG_OK, "%s", err);
    return t;
}

static void parse_fails(const char *s, size_t len, ag_status want, const char *message)
{
    ag_text *t = (ag_text *)1;
    char err[256] = "";
    ck_assert_int_eq(ag_text_parse(s, len, "t.txt", NULL, &t, err, sizeof(err)), want);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(err, message);
}

START_TEST(test_vocab_multibyte)
{
    /* é U+00E9, € U+20AC, 𝄞 U+1D11E: 2, 3 and 4 bytes */
    const char *s = "b\xc3\xa9"
                    "a\xe2\x82\xac"
                    "a\xf0\x9d\x84\x9e\n";
    ag_text *t = parse_ok(s, NULL);
    const uint32_t want[] = {'\n', 'a', 'b', 0xE9, 0x20AC, 0x1D11E};
    ck_assert_int_eq(ag_vocab_size(t->vocab), 6);
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(ag_vocab_char(t->vocab, i), want[i]);
        ck_assert_int_eq(ag_vocab_id(t->vocab, want[i]), i);
    }
    ck_assert_int_eq(ag_vocab_id(t->vocab, 'z'), -1);
    ck_assert_uint_eq(ag_vocab_char(t->vocab, 6), 0);
    /* one id per character, not per byte */
    const int ids[] = {2, 3, 1, 4, 1, 5, 0};
    ck_assert_uint_eq(t->len, 7);
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(ag_text_id(t, i), ids[i]);
    /* decoding gives the bytes back */
    char buf[8], back[64] = "";
    for (size_t i = 0; i < t->len; i++) {
        size_t n = ag_vocab_utf8(t->vocab, ag_text_id(t, i), buf);
        ck_assert_uint_eq(n, strlen(buf));
        strcat(back, buf);
    }
    ck_assert_str_eq(back, s);
    ck_assert_uint_eq(ag_vocab_utf8(t->vocab, 9, buf), 0);
    /* the vocabulary as a string, and back */
    ck_assert_str_eq(ag_vocab_chars(t->vocab), "\nab\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e");
    char err[256];
    ag_vocab *v = ag_vocab_from_chars(ag_vocab_chars(t->vocab), err, sizeof(err));
    ck_assert_msg(v != NULL, "%s", err);
    ck_assert_int_eq(ag_vocab_size(v), 6);
    ck_assert_uint_eq(ag_vocab_char(v, 5), 0x1D11E);
    ag_vocab_free(v);
    ag_text_free(t);
}
END_TEST

START_TEST(test_vocab_from_chars_errors)
{
    char err[256];
    ck_assert_ptr_null(ag_vocab_from_chars("ba", err, sizeof(err)));
    ck_assert_str_eq(err, "vocabulary: 'a' (U+0061) follows 'b' (U+0062): the characters must be "
                          "distinct and in increasing order");
    ck_assert_ptr_null(ag_vocab_from_chars("aa", err, sizeof(err)));
    ck_assert_ptr_null(ag_vocab_from_chars("", err, sizeof(err)));
    ck_assert_str_eq(err, "vocabulary: the text is empty");
    ck_assert_ptr_null(ag_vocab_from_chars("a\xff", err, sizeof(err)));
    ck_assert_ptr_null(ag_vocab_from_chars(NULL, err, sizeof(err)));
    ag_vocab_free(NULL);
    ag_text_free(NULL);
}
END_TEST

START_TEST(test_encode_with_vocab)
{
    ag_text *t = parse_ok("abc\n", NULL);
    ag_text *u = parse_ok("cab\nba", t->vocab);
    const int ids[] = {3, 1, 2, 0, 2, 1};
    ck_assert_uint_eq(u->len, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(ag_text_id(u, i), ids[i]);
    ck_assert_int_eq(ag_vocab_size(u->vocab), 4);
    /* a character the vocabulary lacks is named, with its line */
    ag_text *w = (ag_text *)1;
    char err[256];
    ck_assert_int_eq(ag_text_parse("ab\nbz", 5, "x.txt", t->vocab, &w, err, sizeof(err)),
                     AG_ERR_ARG);
    ck_assert_ptr_null(w);
    ck_assert_str_eq(err, "x.txt: character 'z' (U+007A) on line 2 is not in the vocabulary");
    int out[8];
    size_t n;
    ck_assert_int_eq(ag_vocab_encode(t->vocab, "a\t", 2, out, &n, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "character U+0009 on line 1 is not in the vocabulary");
    ck_assert_int_eq(ag_vocab_encode(t->vocab, "cba", 3, out, &n, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(out[0], 3);
    ck_assert_int_eq(ag_vocab_encode(t->vocab, "\xc3", 1, out, &n, err, sizeof(err)),
                     AG_ERR_FORMAT);
    ag_text_free(u);
    ag_text_free(t);
}
END_TEST

START_TEST(test_invalid_text)
{
    parse_fails("", 0, AG_ERR_FORMAT, "t.txt: the text is empty");
    parse_fails("ab\n\xff", 4, AG_ERR_FORMAT,
                "t.txt: not UTF-8 text: invalid byte 0xff on line 2 (byte 3)");
    /* an overlong '/', a UTF-16 surrogate, a sequence cut short, a stray continuation */
    parse_fails("\xc0\xaf", 2, AG_ERR_FORMAT,
                "t.txt: not UTF-8 text: invalid byte 0xc0 on line 1 (byte 0)");
    parse_fails("a\xed\xa0\x80", 4, AG_ERR_FORMAT,
                "t.txt: not UTF-8 text: invalid byte 0xed on line 1 (byte 1)");
    parse_fails("a\xe2\x82", 3, AG_ERR_FORMAT,
                "t.txt: not UTF-8 text: invalid byte 0xe2 on line 1 (byte 1)");
    parse_fails("\x80", 1, AG_ERR_FORMAT,
                "t.txt: not UTF-8 text: invalid byte 0x80 on line 1 (byte 0)");
    parse_fails("a\0b", 3, AG_ERR_FORMAT, "t.txt: a NUL byte at byte 1: not text");
}
END_TEST

START_TEST(test_split_and_windows)
{
    char s[101];
    for (int i = 0; i < 100; i++)
        s[i] = (char)('a' + i % 26);
    s[100] = '\0';
    ag_text *t = parse_ok(s, NULL);
    ck_assert_uint_eq(t->len, 100);
    ck_assert_uint_eq(t->n_train, 90);
    /* validation: 10 characters, windows of 3 need 4: (10 - 1) / 3 = 3 windows */
    ck_assert_uint_eq(ag_text_windows(t, 3), 3);
    ck_assert_uint_eq(ag_text_windows(t, 9), 1);
    ck_assert_uint_eq(ag_text_windows(t, 10), 0);
    char err[256];
    ck_assert_int_eq(ag_text_check_seq(t, 9, err, sizeof(err)), AG_OK);
    ck_assert_int_eq(ag_text_check_seq(t, 10, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_str_eq(err, "a text of 100 characters is too short for windows of 10: its training "
                          "part (90%) has 90 and its validation part (10%) 10, each needs 11");
    /* random windows: y is x moved by one, inside the part asked for */
    ag_rng rng = ag_rng_new(3);
    int x[4 * 5], y[4 * 5];
    for (int split = 0; split < 2; split++) {
        for (int rep = 0; rep < 20; rep++) {
            ag_text_batch(t, split, 4, 5, &rng, x, y);
            for (int b = 0; b < 4; b++) {
                /* ids are the letters' order: consecutive ids mod 26 */
                for (int k = 0; k < 5; k++)
                    ck_assert_int_eq(y[b * 5 + k], (x[b * 5 + k] + 1) % 26);
                /* where the window starts, found from the text */
                int found = 0;
                size_t lo = split ? t->n_train : 0, hi = split ? t->len : t->n_train;
                for (size_t i = lo; i + 6 <= hi && !found; i++) {
                    int w[6];
                    ag_text_ids(t, i, 6, w);
                    found = memcmp(w, x + b * 5, 5 * sizeof(int)) == 0 && w[5] == y[b * 5 + 4];
                }
                ck_assert_msg(found, "window %d of split %d is not inside its part", b, split);
            }
        }
    }
    ag_text_free(t);
}
END_TEST

START_TEST(test_one_character)
{
    /* a one-character text has a vocabulary but no window */
    ag_text *t = parse_ok("x", NULL);
    ck_assert_int_eq(ag_vocab_size(t->vocab), 1);
    ck_assert_uint_eq(t->len, 1);
    ck_assert_uint_eq(t->n_train, 0);
    char err[256];
    ck_assert_int_eq(ag_text_check_seq(t, 1, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_uint_eq(ag_text_windows(t, 1), 0);
    ag_text_free(t);
    /* a text of one distinct character trains (there is one answer) */
    char s[64];
    memset(s, 'z', 63);
    s[63] = '\0';
    t = parse_ok(s, NULL);
    ck_assert_int_eq(ag_vocab_size(t->vocab), 1);
    ck_assert_int_eq(ag_text_check_seq(t, 4, err, sizeof(err)), AG_OK);
    ag_text_free(t);
}
END_TEST

START_TEST(test_text_load)
{
    char dir[256], path[512];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "t.txt");
    file_write(path, "to be or not\n", 13);
    ag_text *t;
    char err[600];
    ck_assert_int_eq(ag_text_load(path, NULL, &t, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(t->len, 13);
    ck_assert_int_eq(ag_vocab_size(t->vocab), 8); /* \n, space, b, e, n, o, r, t */
    ag_text_free(t);
    file_write(path, "", 0);
    ck_assert_int_eq(ag_text_load(path, NULL, &t, err, sizeof(err)), AG_ERR_FORMAT);
    ck_assert_ptr_null(t);
    file_rmdir(dir);
    ck_assert_int_eq(ag_text_load(path, NULL, &t, err, sizeof(err)), AG_ERR_IO);
    run_assert_has(err, ": cannot open: No such file or directory");
    ck_assert_int_eq(ag_text_load("/", NULL, &t, err, sizeof(err)), AG_ERR_IO);
    ck_assert_str_eq(err, "/: is a directory");
}
END_TEST

/* The len bytes at s read from a file (the path that tokenizes in place)
 * and parsed from memory: the same ids, of the width the vocabulary
 * allows, with ag_text_id and ag_text_ids agreeing; a character outside
 * the vocabulary given is still named. */
static void check_load_matches_parse(const char *s, size_t len, int id_size)
{
    char dir[256], path[512], err[600];
    file_tmpdir(dir, sizeof(dir));
    file_path(path, sizeof(path), dir, "w.txt");
    file_write(path, s, len);
    ag_text *a, *b;
    ck_assert_msg(ag_text_load(path, NULL, &a, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert_msg(ag_text_parse(s, len, "s", NULL, &b, err, sizeof(err)) == AG_OK, "%s", err);
    ck_assert_int_eq(a->id_size, id_size);
    ck_assert_int_eq(b->id_size, id_size);
    ck_assert_uint_eq(a->len, b->len);
    int *ids = malloc(a->len * sizeof(int));
    ck_assert_ptr_nonnull(ids);
    ag_text_ids(a, 0, a->len, ids);
    for (size_t i = 0; i < a->len; i++)
        if (ids[i] != ag_text_id(b, i) || ids[i] != ag_text_id(a, i))
            ck_abort_msg("id %zu: loaded %d, parsed %d", i, ids[i], ag_text_id(b, i));
    /* the ids name the text's characters back */
    size_t at = 0;
    for (size_t i = 0; i < a->len; i++) {
        char buf[8];
        size_t n = ag_vocab_utf8(a->vocab, ids[i], buf);
        ck_assert(n > 0 && at + n <= len && memcmp(s + at, buf, n) == 0);
        at += n;
    }
    ck_assert_uint_eq(at, len);
    /* with the vocabulary of the first half only, the second half's new
     * characters are errors, found on the file's path too */
    ag_text *h;
    size_t cut = len / 2;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--; /* not inside a character */
    ck_assert_int_eq(ag_text_parse(s, cut, "h", NULL, &h, err, sizeof(err)), AG_OK);
    ag_text *c = (ag_text *)1;
    if (ag_vocab_size(h->vocab) < ag_vocab_size(a->vocab)) {
        ck_assert_int_eq(ag_text_load(path, h->vocab, &c, err, sizeof(err)), AG_ERR_ARG);
        ck_assert_ptr_null(c);
        run_assert_has(err, "is not in the vocabulary");
    }
    ag_text_free(h);
    free(ids);
    ag_text_free(a);
    ag_text_free(b);
    file_rmdir(dir);
}

/* Ids take one byte up to 256 characters, two above; both read back the
 * same as they were parsed. */
START_TEST(test_narrow_ids)
{
    /* one-byte ids, with characters of 2, 3 and 4 bytes among ASCII ones */
    const char *mixed = "ab\xc3\xa9 c\xe2\x82\xac\n\xf0\x9d\x84\x9ez\xc3\xa9"
                        "b"; /* (split: \xa9b would read as one escape) */
    check_load_matches_parse(mixed, strlen(mixed), 1);
    /* 256 characters: still one byte; 257: two */
    for (int distinct = 256; distinct <= 257; distinct++) {
        size_t n = 3000;
        char *s = malloc(4 * n);
        ck_assert_ptr_nonnull(s);
        size_t len = 0;
        ag_rng rng = ag_rng_new(5);
        for (size_t i = 0; i < n; i++) {
            /* ASCII letters and newlines, then code points from U+0100 on */
            int k = i < (size_t)distinct ? (int)i : (int)ag_rng_below(&rng, (uint32_t)distinct);
            int cp = k < 53 ? (k == 52 ? '\n' : k < 26 ? 'a' + k : 'A' + k - 26) : 0x100 + k;
            if (cp < 0x80) {
                s[len++] = (char)cp;
            } else if (cp < 0x800) {
                s[len++] = (char)(0xC0 | (cp >> 6));
                s[len++] = (char)(0x80 | (cp & 63));
            } else {
                s[len++] = (char)(0xE0 | (cp >> 12));
                s[len++] = (char)(0x80 | ((cp >> 6) & 63));
                s[len++] = (char)(0x80 | (cp & 63));
            }
        }
        check_load_matches_parse(s, len, distinct <= 256 ? 1 : 2);
        free(s);
    }
}
END_TEST

Suite *suite_text(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("tokenizer");
    tcase_add_test(tc, test_vocab_multibyte);
    tcase_add_test(tc, test_vocab_from_chars_errors);
    tcase_add_test(tc, test_encode_with_vocab);
    tcase_add_test(tc, test_invalid_text);
    suite_add_tcase(s, tc);
    tc = tcase_create("texts");
    tcase_add_test(tc, test_split_and_windows);
    tcase_add_test(tc, test_one_character);
    tcase_add_test(tc, test_text_load);
    tcase_add_test(tc, test_narrow_ids);
    suite_add_tcase(s, tc);
    return s;
}
