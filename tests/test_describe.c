/*
 * test_describe.c - the strings that name where a number is: an element's
 * indices (ag_index_str) and a gradient-check row's inputs
 * (ag_gradcheck_case_inputs), as `attograd gradcheck` prints them.
 */
#include "test_util.h"

START_TEST(test_index_str)
{
    char buf[64];
    ag_tensor *t = ag_param_new(3, (const int[]){2, 3, 4});
    ck_assert_str_eq(ag_index_str(t, 0, buf, sizeof(buf)), "[0][0][0]");
    ck_assert_str_eq(ag_index_str(t, 23, buf, sizeof(buf)), "[1][2][3]");
    ck_assert_str_eq(ag_index_str(t, 13, buf, sizeof(buf)), "[1][0][1]");
    ck_assert_str_eq(ag_index_str(t, 24, buf, sizeof(buf)), ""); /* beyond its size */
    ck_assert_str_eq(ag_index_str(t, 23, buf, 6), "[1][2");      /* cut to fit */
    ck_assert_str_eq(ag_index_str(NULL, 0, buf, sizeof(buf)), "");
    ag_param_free(t);
}
END_TEST

START_TEST(test_case_inputs)
{
    char buf[128], err[128];
    int seen_shared = 0, seen_range = 0;
    for (size_t i = 0; i < ag_gradcheck_case_count(); i++) {
        ag_case_setup s;
        ck_assert_int_eq(ag_gradcheck_case_setup(i, 1, &s, err, sizeof(err)), AG_OK);
        const char *d = ag_gradcheck_case_inputs(&s, buf, sizeof(buf));
        ck_assert_ptr_eq(d, buf);
        ck_assert_msg(strncmp(d, s.names[0], strlen(s.names[0])) == 0, "%s", d);
        seen_shared |= strchr(d, ',') != NULL;
        seen_range |= strstr(d, "..") != NULL;
        ag_gradcheck_case_free(&s);
    }
    ck_assert(seen_shared && seen_range); /* "a,b[2x3]" and "wq..wo[4x4]" both occur */
    ag_case_setup s;
    ck_assert_int_eq(ag_gradcheck_case_setup(0, 1, &s, err, sizeof(err)), AG_OK);
    ag_gradcheck_case_inputs(&s, buf, 3); /* too small: cut, still a string */
    ck_assert_uint_lt(strlen(buf), 3);
    ag_gradcheck_case_free(&s);
}
END_TEST

Suite *suite_describe(void)
{
    Suite *s = suite_create("describe");
    TCase *tc = tcase_create("strings");
    tcase_add_test(tc, test_index_str);
    tcase_add_test(tc, test_case_inputs);
    suite_add_tcase(s, tc);
    return s;
}
