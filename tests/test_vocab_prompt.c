/*
 * test_vocab_prompt.c - ag_vocab_prompt: a prompt's ids to generate after;
 * an empty prompt starts after a newline (or at id 0 without one); a
 * character the vocabulary lacks is refused, naming it.
 */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static ag_text *text_of(const char *s)
{
    ag_text *t;
    char err[256];
    ck_assert_msg(ag_text_parse(s, strlen(s), "t", NULL, &t, err, sizeof(err)) == AG_OK, "%s", err);
    return t;
}

START_TEST(test_prompt_ids)
{
    ag_text *t = text_of("ba\nc"); /* vocabulary "\n", a, b, c: ids 0..3 */
    int *ids;
    size_t n;
    char err[256];
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, "cab", 3, &ids, &n, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(ids[0], ag_vocab_id(t->vocab, 'c'));
    ck_assert_int_eq(ids[1], ag_vocab_id(t->vocab, 'a'));
    ck_assert_int_eq(ids[2], ag_vocab_id(t->vocab, 'b'));
    free(ids);
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, NULL, 0, &ids, &n, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ids[0], ag_vocab_id(t->vocab, '\n')); /* where a text starts anew */
    free(ids);
    ag_text_free(t);
    t = text_of("xyz"); /* no newline: the first id */
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, "", 0, &ids, &n, err, sizeof(err)), AG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ids[0], 0);
    free(ids);
    ag_text_free(t);
}
END_TEST

START_TEST(test_prompt_errors)
{
    ag_text *t = text_of("abc");
    int *ids = (int *)&ids;
    size_t n = 7;
    char err[256];
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, "abz", 3, &ids, &n, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_ptr_null(ids);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_nonnull(strstr(err, "'z'"));
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, "a\xff", 2, &ids, &n, err, sizeof(err)),
                     AG_ERR_FORMAT);
    ck_assert_int_eq(ag_vocab_prompt(NULL, "a", 1, &ids, &n, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, NULL, 1, &ids, &n, err, sizeof(err)), AG_ERR_ARG);
    ck_assert_int_eq(ag_vocab_prompt(t->vocab, "a", 1, NULL, &n, err, sizeof(err)), AG_ERR_ARG);
    ag_text_free(t);
}
END_TEST

Suite *suite_vocab_prompt(void)
{
    Suite *s = suite_create("vocab_prompt");
    TCase *tc = tcase_create("prompt");
    tcase_add_test(tc, test_prompt_ids);
    tcase_add_test(tc, test_prompt_errors);
    suite_add_tcase(s, tc);
    return s;
}
