/*
 * test_alloc.c - a steady training step allocates nothing: after one warm-up
 * step sizes the arena and the tape, 200 and 400 more steps of the same
 * shape make the same number of heap allocations, zero. Both the attention
 * layer's step (forward, mse, backward, Adam), on a sequence of one tile
 * and on one of several, and the toy model's step that `attograd train`
 * runs, on one thread and on two. And the arena's large blocks are what
 * ag_aligned_alloc_large promises.
 */
#include "test_util.h"

#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>

/* ---- the attention layer's step ---- */

typedef struct att_run {
    ag_tape *tape;
    ag_attention *att;
    ag_optim *opt;
    ag_tensor *params[4];
    int shape[3];
    ag_real *x, *y; /* (shape) each */
} att_run;

static void att_step(att_run *r)
{
    ag_zero_grad(r->params, 4);
    ag_tensor *x = ag_tensor_from(r->tape, 3, r->shape, r->x);
    ag_tensor *y = ag_tensor_from(r->tape, 3, r->shape, r->y);
    ag_tensor *loss = ag_mse(r->tape, ag_attention_forward(r->tape, r->att, x, NULL), y);
    ck_assert_int_eq(ag_backward(r->tape, loss), AG_OK);
    ag_optim_step(r->opt);
    ag_tape_reset(r->tape);
}

/* Allocations made by n steps. */
static size_t att_allocs(att_run *r, int n)
{
    size_t before = ag_alloc_count();
    for (int k = 0; k < n; k++)
        att_step(r);
    return ag_alloc_count() - before;
}

/* A causal layer of dim shape[2] with heads heads, on threads threads. */
static void check_attention(int threads, const int *shape, int heads)
{
    ag_set_threads(threads);
    att_run r = {.shape = {shape[0], shape[1], shape[2]}};
    size_t n = (size_t)shape[0] * shape[1] * shape[2];
    ag_rng rng = ag_rng_new(5);
    char err[128];
    r.att = ag_attention_new(shape[2], heads, 1, &rng, err, sizeof(err));
    ck_assert_ptr_nonnull(r.att);
    ag_attention_params(r.att, r.params, NULL, 4);
    r.opt = ag_adam_new(r.params, 4, 1e-3, 0.9, 0.999, 1e-8, 0);
    r.tape = ag_tape_new();
    r.x = malloc(n * sizeof(ag_real));
    r.y = malloc(n * sizeof(ag_real));
    ck_assert_ptr_nonnull(r.opt);
    ck_assert_ptr_nonnull(r.tape);
    ck_assert(r.x && r.y);
    for (size_t i = 0; i < n; i++) {
        r.x[i] = (ag_real)ag_rng_normal(&rng);
        r.y[i] = (ag_real)ag_rng_normal(&rng);
    }
    size_t warm = att_allocs(&r, 1);
    ck_assert_uint_gt(warm, 0); /* the counter sees the arena and the tape grow */
    size_t a200 = att_allocs(&r, 200), a400 = att_allocs(&r, 400);
    ck_assert_uint_eq(a200, a400);
    ck_assert_uint_eq(a200, 0);
    free(r.x);
    free(r.y);
    ag_tape_free(r.tape);
    ag_optim_free(r.opt);
    ag_attention_free(r.att);
    ag_set_threads(1);
}

/* (2,5,8): one block per head; (1,150,16): three query and key blocks per
 * head, backward's key blocks in three groups */
static const int short_seq[3] = {2, 5, 8}, long_seq[3] = {1, 150, 16};

START_TEST(test_attention_step_allocates_nothing)
{
    check_attention(1, short_seq, 2);
    check_attention(1, long_seq, 2);
}
END_TEST

START_TEST(test_attention_step_allocates_nothing_threads)
{
    check_attention(2, short_seq, 2);
    check_attention(2, long_seq, 2);
}
END_TEST

/* ---- the toy model's step, as `attograd train` runs it ---- */

START_TEST(test_model_step_allocates_nothing)
{
    ag_model_config cfg = {AG_TASK_LOOKUP, 8, 16, 2, 0, AG_POSENC_LEARNED};
    ag_rng rng = ag_rng_new(3), data = ag_rng_new(4);
    char err[128];
    ag_model *m = ag_model_new(&cfg, &rng, err, sizeof(err));
    ck_assert_msg(m != NULL, "%s", err);
    ag_tensor *params[16];
    size_t n = ag_model_params(m, params, NULL, 16);
    ag_optim *opt = ag_adam_new(params, n, 1e-3, 0.9, 0.999, 1e-8, 0.01);
    ag_batch *b = ag_batch_new(AG_TASK_LOOKUP, 4, 8);
    ag_tape *tape = ag_tape_new();
    ck_assert_ptr_nonnull(opt);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(tape);
    size_t counts[3];
    int steps[3] = {1, 200, 400};
    for (int run = 0; run < 3; run++) {
        size_t before = ag_alloc_count();
        for (int k = 0; k < steps[run]; k++) {
            ag_task_sample(b, &data);
            ag_zero_grad(params, n);
            ag_tensor *loss = ag_model_forward(tape, m, b, NULL, NULL);
            ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
            ag_clip_grad_norm(params, n, 1.0);
            ag_optim_step(opt);
            ag_tape_reset(tape);
        }
        counts[run] = ag_alloc_count() - before;
    }
    ck_assert_uint_gt(counts[0], 0);
    ck_assert_uint_eq(counts[1], counts[2]);
    ck_assert_uint_eq(counts[1], 0);
    ag_tape_free(tape);
    ag_batch_free(b);
    ag_optim_free(opt);
    ag_model_free(m);
}
END_TEST

START_TEST(test_alloc_counts_params)
{
    size_t before = ag_alloc_count();
    ag_tensor *p = ag_param_new(2, (int[]){3, 4});
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(ag_alloc_count() - before, 1);
    ag_param_free(p);
}
END_TEST

START_TEST(test_large_blocks)
{
    /* the arena's blocks: from 2 MB on, aligned to 2 MB (on Linux, for
     * huge pages), below that to what was asked; one allocation each, all
     * of it writable, released with free */
    static const size_t sizes[] = {100, (size_t)2 << 20, ((size_t)3 << 20) + 5};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t before = ag_alloc_count();
        unsigned char *p = ag_aligned_alloc_large(64, sizes[k]);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(ag_alloc_count() - before, 1);
        size_t align = 64;
#ifdef __linux__
        if (sizes[k] >= ((size_t)2 << 20))
            align = (size_t)2 << 20;
#endif
        ck_assert_msg((uintptr_t)p % align == 0, "%zu bytes at %p: not aligned to %zu", sizes[k],
                      (void *)p, align);
        memset(p, 0xab, sizes[k]);
        ck_assert_uint_eq(p[sizes[k] - 1], 0xab);
        free(p);
    }
}
END_TEST

Suite *suite_alloc(void)
{
    Suite *s = suite_create("alloc");
    TCase *tc = tcase_create("steady");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_alloc_counts_params);
    tcase_add_test(tc, test_large_blocks);
    tcase_add_test(tc, test_attention_step_allocates_nothing);
    tcase_add_test(tc, test_attention_step_allocates_nothing_threads);
    tcase_add_test(tc, test_model_step_allocates_nothing);
    suite_add_tcase(s, tc);
    return s;
}
