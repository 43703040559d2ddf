/*
 * test_model_print.c - ag_model_print_attention: a trained toy model's
 * held-out example as a text heatmap, one row per position with its shaded
 * weights and, where asked, the model's answer beside the wanted one.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *print_example(int heads, int *rows)
{
    ag_train_config c = {.model = {.task = AG_TASK_LOOKUP,
                                   .seq = 5,
                                   .dim = 16,
                                   .heads = heads,
                                   .posenc = AG_POSENC_NONE},
                         .optimizer_adam = 1,
                         .lr = 3e-3,
                         .clip = 1,
                         .batch = 8,
                         .seed = 3};
    char err[256] = "";
    ag_trainer *t = ag_trainer_new(&c, NULL, NULL, err, sizeof(err));
    ck_assert_msg(t != NULL, "%s", err);
    for (int s = 0; s < 3; s++)
        ck_assert_int_eq(ag_trainer_step(t, NULL, err, sizeof(err)), AG_OK);
    const ag_tensor *logits, *attn;
    ck_assert_int_eq(ag_trainer_example(t, &logits, &attn, err, sizeof(err)), AG_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    const ag_batch *b = ag_trainer_held_out(t);
    ag_model_print_attention(f, b, attn, logits);
    ck_assert_int_eq(fflush(f), 0);
    size_t printed = len;
    ag_model_print_attention(f, NULL, attn, logits); /* without a batch: prints nothing */
    ck_assert_int_eq(fflush(f), 0);
    ck_assert_uint_eq(len, printed);
    fclose(f);
    /* the first row is example 0's first token, named as the library names it */
    char label[32], want[64];
    snprintf(want, sizeof(want), "\n  %-9s", ag_task_token_label(b, 0, 0, label, sizeof(label)));
    ck_assert_msg(strstr(text, want) != NULL, "%s", text);
    *rows = 0;
    for (const char *p = text; (p = strstr(p, "\n  ")) != NULL; p++)
        (*rows)++;
    ag_trainer_free(t);
    return text;
}

START_TEST(test_one_head)
{
    int rows;
    char *text = print_example(1, &rows);
    ck_assert_int_eq(rows, 5); /* T rows after the header line of labels */
    ck_assert_ptr_null(strstr(text, "head 1:"));
    ck_assert_ptr_nonnull(strstr(text, "  -> v")); /* lookup asks the last position */
    ck_assert_ptr_nonnull(strstr(text, " (want v"));
    free(text);
}
END_TEST

START_TEST(test_heads_each_drawn)
{
    int rows;
    char *text = print_example(2, &rows);
    ck_assert_ptr_nonnull(strstr(text, "head 1:\n"));
    ck_assert_ptr_nonnull(strstr(text, "head 2:\n"));
    ck_assert_int_eq(rows, 2 * (1 + 5)); /* each head: its labels line, then T rows */
    free(text);
}
END_TEST

/* A weight's shade follows the weight as printed: 0.0996 prints 0.10 and
 * gets '.', 0.0949 prints 0.09 and gets none, 0.8951 prints 0.90 and gets '@'. */
START_TEST(test_shade_as_printed)
{
    ag_batch *b = ag_batch_new(AG_TASK_LOOKUP, 1, 5);
    ck_assert_ptr_nonnull(b);
    ag_rng rng = ag_rng_new(1);
    ag_task_sample(b, &rng);
    ag_tape *tape = ag_tape_new();
    ag_tensor *attn = ag_tensor_new(tape, 4, (int[]){1, 1, 5, 5});
    ag_tensor *logits = ag_tensor_new(tape, 3, (int[]){1, 5, ag_task_classes(AG_TASK_LOOKUP)});
    ck_assert(attn && logits);
    attn->data[0] = (ag_real)0.0996, attn->data[1] = (ag_real)0.0949,
    attn->data[2] = (ag_real)0.8951;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ag_model_print_attention(f, b, attn, logits);
    fclose(f);
    ck_assert_msg(strstr(text, "   0.10 .   0.09     0.90 @   0.00  ") != NULL, "%s", text);
    free(text);
    ag_tape_free(tape);
    ag_batch_free(b);
}
END_TEST

Suite *suite_model_print(void)
{
    Suite *s = suite_create("model_print");
    TCase *tc = tcase_create("print");
    tcase_add_test(tc, test_one_head);
    tcase_add_test(tc, test_heads_each_drawn);
    tcase_add_test(tc, test_shade_as_printed);
    suite_add_tcase(s, tc);
    return s;
}
