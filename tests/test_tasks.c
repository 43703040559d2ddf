/*
 * test_tasks.c - the toy tasks: every example's answers follow from its
 * tokens, sampling is deterministic for a seed, bad sizes are refused.
 */
#include "test_util.h"

/* The value class paired with key token key_tok in example ex, or -1.
 * Token layout (attograd.h): keys 0..7, values 8..15. */
static int value_of(const ag_batch *b, int ex, int key_tok)
{
    for (int t = 0; t < b->seq - 1; t++)
        if (b->tok0[ex * b->seq + t] == key_tok)
            return b->tok1[ex * b->seq + t] - 8;
    return -1;
}

START_TEST(test_lookup_answers)
{
    ag_rng rng = ag_rng_new(7);
    ag_batch *b = ag_batch_new(AG_TASK_LOOKUP, 50, 5);
    ck_assert_ptr_nonnull(b);
    ag_task_sample(b, &rng);
    int T = b->seq;
    for (int ex = 0; ex < b->batch; ex++) {
        /* keys distinct */
        for (int i = 0; i < T - 1; i++)
            for (int j = i + 1; j < T - 1; j++)
                ck_assert_int_ne(b->tok0[ex * T + i], b->tok0[ex * T + j]);
        for (int t = 0; t < T - 1; t++)
            ck_assert_int_eq(b->targets[ex * T + t], -1);
        int q = b->tok0[ex * T + T - 1];
        int v = value_of(b, ex, q);
        ck_assert_int_ge(v, 0);
        ck_assert_int_eq(b->targets[ex * T + T - 1], v);
        ck_assert_int_ne(b->tok1[ex * T + T - 1], b->tok1[ex * T]); /* the query marker */
    }
    ag_batch_free(b);
}
END_TEST

START_TEST(test_lookup2_answers)
{
    ag_rng rng = ag_rng_new(8);
    ag_batch *b = ag_batch_new(AG_TASK_LOOKUP2, 50, 6);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->answers, 2);
    ag_task_sample(b, &rng);
    int T = b->seq;
    for (int ex = 0; ex < b->batch; ex++) {
        int q1 = b->tok0[ex * T + T - 1], q2 = b->tok1[ex * T + T - 1];
        ck_assert_int_ne(q1, q2);
        ck_assert_int_eq(b->targets[(ex * T + T - 1) * 2], value_of(b, ex, q1));
        ck_assert_int_eq(b->targets[(ex * T + T - 1) * 2 + 1], value_of(b, ex, q2));
        ck_assert_int_eq(b->targets[(ex * T) * 2 + 1], -1);
    }
    ag_batch_free(b);
}
END_TEST

START_TEST(test_reverse_answers)
{
    ag_rng rng = ag_rng_new(9);
    ag_batch *b = ag_batch_new(AG_TASK_REVERSE, 20, 7);
    ck_assert_ptr_nonnull(b);
    ag_task_sample(b, &rng);
    for (int ex = 0; ex < b->batch; ex++)
        for (int t = 0; t < 7; t++) {
            ck_assert_int_eq(b->targets[ex * 7 + t], b->tok0[ex * 7 + 6 - t]);
            ck_assert_int_lt(b->targets[ex * 7 + t], ag_task_classes(AG_TASK_REVERSE));
        }
    ag_batch_free(b);
}
END_TEST

START_TEST(test_deterministic)
{
    ag_batch *a = ag_batch_new(AG_TASK_LOOKUP, 8, 5), *b = ag_batch_new(AG_TASK_LOOKUP, 8, 5);
    ag_rng r1 = ag_rng_new(3), r2 = ag_rng_new(3);
    ag_task_sample(a, &r1);
    ag_task_sample(b, &r2);
    ck_assert_mem_eq(a->tok0, b->tok0, 40 * sizeof(int));
    ck_assert_mem_eq(a->tok1, b->tok1, 40 * sizeof(int));
    ck_assert_mem_eq(a->targets, b->targets, 40 * sizeof(int));
    ag_batch_free(a);
    ag_batch_free(b);
}
END_TEST

START_TEST(test_names_and_sizes)
{
    ag_task_kind k;
    ck_assert(ag_task_parse("lookup2", &k) && k == AG_TASK_LOOKUP2);
    ck_assert(!ag_task_parse("lookup3", &k));
    ck_assert_str_eq(ag_task_name(AG_TASK_REVERSE), "reverse");
    ck_assert_ptr_null(ag_batch_new(AG_TASK_LOOKUP, 4, 1));
    ck_assert_ptr_null(ag_batch_new(AG_TASK_LOOKUP, 4, ag_task_max_seq(AG_TASK_LOOKUP) + 1));
    ck_assert_ptr_null(ag_batch_new(AG_TASK_LOOKUP2, 4, 2));
    ck_assert_ptr_null(ag_batch_new(AG_TASK_REVERSE, 0, 4));
    ag_batch_free(NULL);
}
END_TEST

/* Labels say what each position holds, in the tasks' own terms. */
START_TEST(test_labels)
{
    char buf[16], want[32];
    ag_rng rng = ag_rng_new(7);
    ag_batch *b = ag_batch_new(AG_TASK_LOOKUP, 1, 4);
    ag_task_sample(b, &rng);
    for (int t = 0; t < 3; t++) {
        snprintf(want, sizeof(want), "k%d:v%d", b->tok0[t], b->tok1[t] - 8);
        ck_assert_str_eq(ag_task_token_label(b, 0, t, buf, sizeof(buf)), want);
    }
    snprintf(want, sizeof(want), "?k%d", b->tok0[3]);
    ck_assert_str_eq(ag_task_token_label(b, 0, 3, buf, sizeof(buf)), want);
    ag_batch_free(b);
    b = ag_batch_new(AG_TASK_LOOKUP2, 1, 4);
    ag_task_sample(b, &rng);
    snprintf(want, sizeof(want), "?k%d,k%d", b->tok0[3], b->tok1[3]);
    ck_assert_str_eq(ag_task_token_label(b, 0, 3, buf, sizeof(buf)), want);
    ag_batch_free(b);
    b = ag_batch_new(AG_TASK_REVERSE, 1, 4);
    ag_task_sample(b, &rng);
    snprintf(want, sizeof(want), "s%d", b->tok0[2]);
    ck_assert_str_eq(ag_task_token_label(b, 0, 2, buf, sizeof(buf)), want);
    ag_batch_free(b);
    ck_assert_str_eq(ag_task_class_label(AG_TASK_LOOKUP2, 5, buf, sizeof(buf)), "v5");
    ck_assert_str_eq(ag_task_class_label(AG_TASK_REVERSE, 4, buf, sizeof(buf)), "s4");
}
END_TEST

/* One check of a model configuration, the one ag_model_new makes. */
START_TEST(test_model_config_check)
{
    static const struct {
        ag_model_config cfg;
        ag_model_field field;
        const char *msg;
    } cases[] = {
        {{AG_TASK_LOOKUP, 5, 32, 1, 0, AG_POSENC_NONE}, AG_MODEL_OK, ""},
        {{AG_TASK_COUNT, 5, 32, 1, 0, AG_POSENC_NONE}, AG_MODEL_TASK, "unknown task"},
        {{AG_TASK_LOOKUP, 12, 32, 1, 0, AG_POSENC_NONE},
         AG_MODEL_SEQ,
         "seq 12 is out of range for task lookup (2..9)"},
        {{AG_TASK_LOOKUP2, 2, 32, 2, 0, AG_POSENC_NONE},
         AG_MODEL_SEQ,
         "seq 2 is out of range for task lookup2 (3..9)"},
        {{AG_TASK_LOOKUP, 5, 0, 1, 0, AG_POSENC_NONE}, AG_MODEL_DIM, "dim 0 must be at least 1"},
        {{AG_TASK_LOOKUP, 5, 16, 0, 0, AG_POSENC_NONE},
         AG_MODEL_HEADS,
         "heads 0 must be at least 1"},
        {{AG_TASK_LOOKUP, 5, 16, 3, 0, AG_POSENC_NONE},
         AG_MODEL_HEADS,
         "heads 3 does not divide dim 16"},
        {{AG_TASK_LOOKUP, 5, 16, 32, 0, AG_POSENC_NONE},
         AG_MODEL_HEADS,
         "heads 32 does not divide dim 16"},
        {{AG_TASK_REVERSE, 5, 16, 1, 0, (ag_posenc_kind)7},
         AG_MODEL_POSENC,
         "unknown positional encoding 7"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[128] = "junk", err2[128] = "";
        ck_assert_int_eq(ag_model_config_check(&cases[i].cfg, err, sizeof(err)), cases[i].field);
        ck_assert_str_eq(err, cases[i].msg);
        ag_model *m = ag_model_new(&cases[i].cfg, NULL, err2, sizeof(err2));
        ck_assert(cases[i].field == AG_MODEL_OK ? m != NULL : m == NULL);
        ck_assert_str_eq(err2, cases[i].msg);
        ag_model_free(m);
    }
    ck_assert_int_eq(ag_model_config_check(NULL, NULL, 0), AG_MODEL_TASK);
}
END_TEST

Suite *suite_tasks(void)
{
    Suite *s = suite_create("tasks");
    TCase *tc = tcase_create("sample");
    tcase_add_test(tc, test_lookup_answers);
    tcase_add_test(tc, test_lookup2_answers);
    tcase_add_test(tc, test_reverse_answers);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_labels);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_names_and_sizes);
    tcase_add_test(tc, test_model_config_check);
    suite_add_tcase(s, tc);
    return s;
}
