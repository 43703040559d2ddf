/*
 * test_tape.c - the tape: backward seeds and accumulates, sticky errors,
 * reset and the arena.
 */
#include "test_util.h"

START_TEST(test_backward_example)
{
    /* the header's worked example: L = sum(x W), dL/dW = x^T */
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 1});
    w->data[0] = 3;
    w->data[1] = 4;
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    ag_tensor *loss = ag_sum(tape, ag_matmul(tape, x, w));
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_double_eq_tol(loss->data[0], 11, AG_TEST_TOL);
    ck_assert_double_eq_tol(w->grad[0], 1, AG_TEST_TOL);
    ck_assert_double_eq_tol(w->grad[1], 2, AG_TEST_TOL);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_sticky_error)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *a = ag_tensor_new(tape, 2, (int[]){2, 3});
    ag_tensor *b = ag_tensor_new(tape, 2, (int[]){4, 5});
    ck_assert_ptr_null(ag_matmul(tape, a, b));
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "matmul: a is [2x3], b is [4x5]: inner dims 3 != 4");
    /* later ops return NULL and keep the first message */
    ck_assert_ptr_null(ag_softmax(tape, a));
    ck_assert_ptr_null(ag_sum(tape, NULL));
    ck_assert_int_eq(ag_backward(tape, NULL), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "matmul: a is [2x3], b is [4x5]: inner dims 3 != 4");
    ag_tape_reset(tape);
    ck_assert_int_eq(ag_tape_status(tape), AG_OK);
    ck_assert_str_eq(ag_tape_error(tape), "");
    ag_tape_free(tape);
}
END_TEST

/* loss = sum(softmax(x x^T / sqrt(d)) x): x is the query, the key and the value */
static ag_tensor *build_self_attention(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    ag_tensor *x = in[0];
    double d = x->shape[x->ndim - 1];
    ag_tensor *p = ag_softmax(tape, ag_scale(tape, ag_matmul_bt(tape, x, x), 1 / sqrt(d)));
    ag_tensor *out = ag_matmul(tape, p, x);
    return *(const int *)ctx ? ag_sum(tape, out) : out;
}

START_TEST(test_tensor_used_twice)
{
    /* y = x + x and y = x * x: each use contributes */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_param_new(1, (int[]){2});
    x->data[0] = 3;
    x->data[1] = -1;
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_add(tape, x, x))), AG_OK);
    test_assert_values(x->grad, (double[]){2, 2}, 2, 0);
    ag_tape_reset(tape);
    ag_zero_grad(&x, 1);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_mul(tape, x, x))), AG_OK);
    test_assert_values(x->grad, (double[]){6, -2}, 2, 0);
    ag_param_free(x);
    ag_tape_free(tape);

    /* Q = K = V = x: three contributions, against finite differences, both
     * through the plain sum and through the checker's projection */
    int summed = 1, projected = 0;
    const test_shape seed[] = {{2, {3, 2}}};
    const test_shape batched[] = {{3, {2, 4, 3}}};
    test_gradcheck_shapes(build_self_attention, &summed, 1, seed, 300);
    test_gradcheck_shapes(build_self_attention, &projected, 1, seed, 301);
    test_gradcheck_shapes(build_self_attention, &projected, 1, batched, 302);
}
END_TEST

/* Ops that store their first gradient write (add, matmul, gelu) fed the
 * same op output twice: the second write must add to the first, and an
 * output's gradient must start from zero whichever op reaches it first. */
static ag_tensor *build_first_writes(ag_tape *tape, ag_tensor *const *in, void *ctx)
{
    (void)ctx;
    ag_tensor *h = ag_scale(tape, in[0], 0.7); /* an op output, its gradient unset */
    ag_tensor *hh = ag_matmul(tape, ag_matmul_bt(tape, h, h), h);
    return ag_add(tape, ag_add(tape, h, h), ag_add(tape, hh, ag_gelu(tape, h)));
}

START_TEST(test_first_write_used_twice)
{
    const test_shape shapes[] = {{2, {3, 4}}};
    test_gradcheck_shapes(build_first_writes, NULL, 1, shapes, 320);
}
END_TEST

/* A graph whose op outputs are mostly one size, one of them read by three
 * ops and by the loss (a residual stream), for ag_tape_reuse_grads: w1, w2 and x get
 * gradients; h, u, v and r are op outputs (2 x 3). */
static ag_tensor *build_reused(ag_tape *tape, ag_tensor *w1, ag_tensor *w2, ag_tensor *x,
                               ag_tensor **outputs)
{
    ag_tensor *h = ag_matmul(tape, x, w1);
    ag_tensor *u = ag_gelu(tape, ag_scale(tape, h, 1.5));
    ag_tensor *r = ag_add(tape, h, ag_matmul(tape, u, w2)); /* h: read three times */
    ag_tensor *v = ag_mul(tape, ag_add(tape, r, h), r);
    outputs[0] = h, outputs[1] = u, outputs[2] = v, outputs[3] = r;
    return ag_sum(tape, ag_mul(tape, ag_softmax(tape, v), h)); /* and a fourth */
}

/* The parameters' and the input's gradients after one backward with reuse
 * on or off (then, when twice, a second one with it off, of another loss
 * made from r, u and v), into g (9 + 9 + 6 values). Every op
 * output's gradient buffer is filled with NaN first: with reuse on, the
 * ones the first backward wrote into a spare buffer instead still hold it,
 * counted in *untouched. */
static void reused_grads(int reuse, int twice, ag_real *g, int *untouched)
{
    ag_tape *tape = ag_tape_new();
    ag_tape_reuse_grads(tape, reuse);
    ag_rng rng = ag_rng_new(77);
    ag_tensor *w1 = test_param(&rng, 2, (int[]){3, 3}), *w2 = test_param(&rng, 2, (int[]){3, 3});
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 2, (int[]){2, 3}));
    ag_fill_normal(x, &rng, 0, 1);
    ag_tensor *out[4];
    ag_tensor *loss = build_reused(tape, w1, w2, x, out);
    ag_real *own[4];
    for (int k = 0; k < 4; k++) {
        own[k] = out[k]->grad;
        for (size_t i = 0; i < out[k]->size; i++)
            own[k][i] = (ag_real)NAN;
    }
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    *untouched = 0;
    for (int k = 0; k < 4; k++)
        *untouched += isnan(own[k][0]);
    ck_assert(loss->grad[0] == 1); /* the loss's own stays */
    if (twice) { /* another loss on the same tape: each gradient in its own buffer again */
        ag_tape_reuse_grads(tape, 0);
        ag_tensor *other = ag_sum(tape, ag_mul(tape, ag_mul(tape, out[3], out[1]), out[2]));
        ck_assert_int_eq(ag_backward(tape, other), AG_OK);
    }
    memcpy(g, w1->grad, 9 * sizeof(ag_real));
    memcpy(g + 9, w2->grad, 9 * sizeof(ag_real));
    memcpy(g + 18, x->grad, 6 * sizeof(ag_real));
    ag_param_free(w1);
    ag_param_free(w2);
    ag_tape_free(tape);
}

START_TEST(test_reuse_grads_same_bits)
{
    ag_real kept[24], reused[24];
    int untouched;
    for (int twice = 0; twice < 2; twice++) {
        reused_grads(0, twice, kept, &untouched);
        ck_assert_int_eq(untouched, 0); /* without reuse backward writes each one */
        reused_grads(1, twice, reused, &untouched);
        ck_assert_int_gt(untouched, 0); /* with it some went into others' buffers... */
        ck_assert_int_lt(untouched, 4);
        for (int i = 0; i < 24; i++) /* ...and the gradients that stay are the same bits */
            ck_assert_msg(memcmp(&kept[i], &reused[i], sizeof(ag_real)) == 0,
                          "twice %d: gradient %d: %.17g kept, %.17g reused", twice, i,
                          (double)kept[i], (double)reused[i]);
    }
}
END_TEST

/* Anomaly detection reads every gradient, so it keeps them all. */
START_TEST(test_reuse_grads_off_under_anomaly_detection)
{
    ag_tape *tape = ag_tape_new();
    ag_tape_reuse_grads(tape, 1);
    ag_tape_detect_anomaly(tape, 1);
    ag_rng rng = ag_rng_new(78);
    ag_tensor *w1 = test_param(&rng, 2, (int[]){3, 3}), *w2 = test_param(&rng, 2, (int[]){3, 3});
    ag_tensor *x = ag_tensor_new(tape, 2, (int[]){2, 3}), *out[4];
    ag_fill_normal(x, &rng, 0, 1);
    ag_tensor *loss = build_reused(tape, w1, w2, x, out);
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < out[k]->size; i++)
            out[k]->grad[i] = (ag_real)NAN;
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    for (int k = 0; k < 4; k++)
        ck_assert(!isnan(out[k]->grad[0]));
    ag_param_free(w1);
    ag_param_free(w2);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_grad_accumulates)
{
    /* L = sum(x w) with x = [1 2]: dL/dw = [1 2] per backward */
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 1});
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    ag_tensor *loss = ag_sum(tape, ag_matmul(tape, x, w));
    /* twice on the same tape: the parameter sums both passes, and the
     * intermediate gradients start over (they are not parameters) */
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    test_assert_values(w->grad, (double[]){2, 4}, 2, 0);
    ag_zero_grad(&w, 1);
    test_assert_values(w->grad, (double[]){0, 0}, 2, 0);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    test_assert_values(w->grad, (double[]){1, 2}, 2, 0);
    /* and across steps: reset, rebuild, backward again */
    ag_tape_reset(tape);
    x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_matmul(tape, x, w))), AG_OK);
    test_assert_values(w->grad, (double[]){2, 4}, 2, 0);
    ag_zero_grad(NULL, 0); /* nothing to do, no crash */
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_no_grad_stays_null)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 2});
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    ag_tensor *y = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){3, 4});
    /* ops on tensors without gradient make outputs without gradient */
    ag_tensor *c = ag_add(tape, x, y);
    ag_tensor *s = ag_softmax(tape, ag_scale(tape, c, 2));
    ag_tensor *t = ag_transpose(tape, s);
    ck_assert_ptr_null(c->grad);
    ck_assert_ptr_null(s->grad);
    ck_assert_ptr_null(t->grad);
    /* one input with a gradient is enough */
    ag_tensor *h = ag_matmul(tape, s, w);
    ck_assert_ptr_nonnull(h->grad);
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, h)), AG_OK);
    ck_assert_ptr_null(x->grad);
    ck_assert_ptr_null(y->grad);
    ck_assert_ptr_null(c->grad);
    ck_assert_ptr_null(s->grad);
    /* dw = s^T 1 */
    test_assert_values(w->grad, (double[]){s->data[0], s->data[0], s->data[1], s->data[1]}, 4,
                       AG_TEST_TOL);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_requires_grad)
{
    /* dL/dx for a tape tensor: L = sum(x w), dx = row sums of w^T */
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
    ck_assert_ptr_eq(ag_requires_grad(tape, x), x);
    ck_assert_ptr_nonnull(x->grad);
    ck_assert_ptr_eq(ag_requires_grad(tape, x), x); /* a second call changes nothing */
    ag_tensor *w = ag_tensor_from(tape, 2, (int[]){2, 2}, (ag_real[]){1, 2, 3, 4});
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, ag_matmul(tape, x, w))), AG_OK);
    test_assert_values(x->grad, (double[]){3, 7}, 2, 0);
    ck_assert_ptr_null(w->grad);
    ck_assert_ptr_null(ag_requires_grad(tape, NULL));
    test_expect_error(tape, AG_ERR_ARG, "requires_grad: tensor is NULL");
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_backward_errors)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 3});
    ag_tensor *big = ag_scale(tape, w, 2);
    ck_assert_int_eq(ag_backward(tape, big), AG_ERR_SHAPE);
    test_expect_error(tape, AG_ERR_SHAPE, "backward: loss is [2x3]; it must have one element");

    ag_tensor *x = ag_tensor_from(tape, 1, (int[]){2}, (ag_real[]){1, 2});
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, x)), AG_ERR_ARG);
    test_expect_error(tape, AG_ERR_ARG,
                      "backward: loss does not depend on anything that needs a gradient");

    ck_assert_int_eq(ag_backward(tape, NULL), AG_ERR_ARG);
    test_expect_error(tape, AG_ERR_ARG, "backward: loss is NULL");

    ag_tensor *loss = ag_sum(tape, w);
    ck_assert_int_eq(ag_backward(NULL, loss), AG_ERR_ARG);
    ck_assert_int_eq(ag_tape_status(NULL), AG_ERR_ARG);
    ck_assert_str_eq(ag_tape_error(NULL), "tape is NULL");
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_backward_after_op_error)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){2, 3});
    ag_tensor *loss = ag_sum(tape, w);
    ck_assert_ptr_null(ag_mse(tape, w, ag_tensor_new(tape, 2, (int[]){3, 2})));
    /* the op's error comes back from backward, and no gradient is written */
    ck_assert_int_eq(ag_backward(tape, loss), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "mse: pred is [2x3], target is [3x2]: shapes differ");
    for (size_t i = 0; i < w->size; i++)
        ck_assert(w->grad[i] == 0);
    /* a later failure does not replace the first message */
    ck_assert_int_eq(ag_tape_fail(tape, AG_ERR_IO, "later"), AG_ERR_SHAPE);
    ck_assert_int_eq(ag_backward(tape, NULL), AG_ERR_SHAPE);
    ck_assert_str_eq(ag_tape_error(tape), "mse: pred is [2x3], target is [3x2]: shapes differ");
    ag_tape_reset(tape);
    ck_assert_int_eq(ag_tape_status(tape), AG_OK);
    ck_assert_str_eq(ag_tape_error(tape), "");
    ck_assert_uint_eq(ag_tape_size(tape), 0);
    /* after the reset the tape works again */
    ck_assert_int_eq(ag_backward(tape, ag_sum(tape, w)), AG_OK);
    ck_assert_double_eq(w->grad[0], 1);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_tape_fail)
{
    ag_tape *tape = ag_tape_new();
    ck_assert_int_eq(ag_tape_fail(tape, AG_ERR_IO, "load: %s is %d bytes", "x.bin", 7), AG_ERR_IO);
    ck_assert_int_eq(ag_tape_fail(tape, AG_ERR_FORMAT, "second"), AG_ERR_IO);
    ck_assert_ptr_null(ag_tensor_new(tape, 1, (int[]){2})); /* sticky */
    test_expect_error(tape, AG_ERR_IO, "load: x.bin is 7 bytes");
    ck_assert_int_eq(ag_tape_fail(NULL, AG_ERR_IO, "no tape"), AG_ERR_ARG);
    ck_assert_str_eq(ag_status_name(AG_OK), "ok");
    ck_assert_str_eq(ag_status_name(AG_ERR_SHAPE), "shape");
    ck_assert_str_eq(ag_status_name(AG_ERR_NUMERIC), "numeric");
    ck_assert_str_eq(ag_status_name(AG_ERR_STOPPED), "stopped");
    ck_assert_str_eq(ag_status_name((ag_status)99), "unknown");
    ag_tape_free(tape);
    ag_tape_free(NULL);
    ag_tape_reset(NULL);
}
END_TEST

/* One training-like step: enough intermediate tensors to need several
 * arena blocks (the first is 64 KiB). */
static void arena_step(ag_tape *tape, ag_tensor *w)
{
    ag_tensor *h = ag_tensor_new(tape, 3, (int[]){4, 32, 32});
    for (int i = 0; i < 6; i++)
        h = ag_softmax(tape, ag_matmul(tape, h, w));
    ck_assert_int_eq(ag_backward(tape, ag_mean(tape, h)), AG_OK);
}

START_TEST(test_arena_reuse)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){32, 32});
    arena_step(tape, w);
    ck_assert_uint_gt(tape->arena.n_blocks, 1);
    ag_tape_reset(tape);
    /* reset merges the blocks into one big enough for the whole step */
    ck_assert_uint_eq(tape->arena.n_blocks, 1);
    size_t cap = tape->arena.first->cap;
    ag_block *first = tape->arena.first;
    for (int step = 0; step < 3; step++) {
        arena_step(tape, w);
        ck_assert_uint_eq(tape->arena.n_blocks, 1);
        ck_assert_ptr_eq(tape->arena.first, first);
        ck_assert_uint_eq(tape->arena.first->cap, cap);
        ck_assert_uint_le(tape->arena.first->used, cap);
        ag_tape_reset(tape);
        ck_assert_uint_eq(tape->arena.first->used, 0);
    }
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

/* Coming back to a mark frees what was handed out after it, in the mark's
 * block and in any block made since; before the mark nothing moves. */
START_TEST(test_arena_back)
{
    ag_tape *tape = ag_tape_new();
    ag_arena *a = &tape->arena;
    char *first = ag_arena_alloc(tape, 100);
    ag_arena_mark m = ag_arena_here(a);
    char *small = ag_arena_alloc(tape, 100);
    ag_arena_back(a, m);
    ck_assert_ptr_eq(ag_arena_alloc(tape, 100), small); /* the same memory again */
    ag_arena_back(a, m);
    char *big = ag_arena_alloc(tape, (size_t)1 << 20); /* past the first block */
    ck_assert_uint_eq(a->n_blocks, 2);
    ag_arena_back(a, m);
    ck_assert_uint_eq(a->used, m.used);
    ck_assert_ptr_eq(ag_arena_alloc(tape, 100), small);
    ck_assert_ptr_eq(ag_arena_alloc(tape, (size_t)1 << 20), big); /* the new block, again */
    ck_assert_uint_eq(a->n_blocks, 2);
    ck_assert(first < small && ag_arena_owns(a, first));
    ag_tape_free(tape);
}
END_TEST

/* Reusing, what an op's backward takes from the arena (layer norm's
 * partial sums) is free again once it has run: backward leaves the arena
 * as it found it. */
START_TEST(test_backward_scratch_freed)
{
    ag_tape *tape = ag_tape_new();
    ag_tape_reuse_grads(tape, 1);
    ag_tensor *w = ag_param_new(1, (int[]){64});
    ag_tensor *x = ag_requires_grad(tape, ag_tensor_new(tape, 2, (int[]){300, 64}));
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < w->size; i++)
        w->data[i] = 1;
    ag_tensor *h = x;
    for (int k = 0; k < 3; k++)
        h = ag_layernorm(tape, h, w, NULL);
    ag_tensor *loss = ag_sum(tape, ag_mul(tape, h, h));
    ck_assert_ptr_nonnull(loss);
    size_t used = tape->arena.used, peak = ag_tape_peak_bytes(tape);
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_uint_eq(tape->arena.used, used);
    size_t once = ag_tape_peak_bytes(tape) - peak; /* one op's scratch at most */
    ck_assert(once > 0 || ag_reference_kernels()); /* (the plain rows take none) */
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ck_assert_uint_eq(ag_tape_peak_bytes(tape), peak + once);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_arena_alignment)
{
    ag_tape *tape = ag_tape_new();
    for (int n = 1; n < 40; n += 3) {
        ag_tensor *t = ag_requires_grad(tape, ag_tensor_new(tape, 1, (int[]){n}));
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_eq((uintptr_t)t->data % AG_ALIGN, 0);
        ck_assert_uint_eq((uintptr_t)t->grad % AG_ALIGN, 0);
        for (int i = 0; i < n; i++)
            ck_assert(t->data[i] == 0 && t->grad[i] == 0);
    }
    /* one allocation bigger than a block gets a block of its own */
    ag_tensor *big = ag_tensor_new(tape, 2, (int[]){300, 300});
    ck_assert_ptr_nonnull(big);
    big->data[big->size - 1] = 1;
    ck_assert_uint_eq(ag_tape_size(tape), 14);
    ag_tape_free(tape);
}
END_TEST

/* ---- stopping ---- */

/* ag_interrupt stops the next op of any tape, sticky like any error, and a
 * fresh step runs again once it is cleared. */
START_TEST(test_interrupt_stops_ops)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *x = ag_tensor_new(tape, 1, (int[]){3});
    ag_interrupt();
    ck_assert(ag_interrupted());
    ck_assert_ptr_null(ag_add(tape, x, x));
    test_expect_error(tape, AG_ERR_STOPPED, "add: stopped (interrupted)");
    ag_tape_reset(tape);
    ck_assert_ptr_null(ag_mul(tape, x, x)); /* still asked to stop */
    ck_assert_int_eq(ag_tape_status(tape), AG_ERR_STOPPED);
    ag_interrupt_clear();
    ck_assert(!ag_interrupted());
    ag_tape_reset(tape);
    x = ag_tensor_new(tape, 1, (int[]){3});
    ck_assert_ptr_nonnull(ag_add(tape, x, x));
    ag_tape_free(tape);
}
END_TEST

/* Between two entries of a backward pass: the pass stops, and the entries
 * not reached add nothing (here, w's gradient stays zero). */
START_TEST(test_interrupt_stops_backward)
{
    ag_tape *tape = ag_tape_new();
    ag_tensor *w = ag_param_new(2, (int[]){4, 4});
    for (size_t i = 0; i < w->size; i++)
        w->data[i] = (ag_real)(i % 5) * (ag_real)0.1;
    ag_tensor *h = ag_tensor_new(tape, 2, (int[]){2, 4});
    for (size_t i = 0; i < h->size; i++)
        h->data[i] = 1;
    ag_tensor *loss = ag_mean(tape, ag_matmul(tape, h, w));
    ck_assert_ptr_nonnull(loss);
    ag_interrupt();
    ck_assert_int_eq(ag_backward(tape, loss), AG_ERR_STOPPED);
    ag_interrupt_clear();
    for (size_t i = 0; i < w->size; i++)
        ck_assert(w->grad[i] == 0);
    test_expect_error(tape, AG_ERR_STOPPED, "backward: stopped (interrupted)");
    /* cleared: the same step from the start works */
    ag_tape_reset(tape);
    h = ag_tensor_new(tape, 2, (int[]){2, 4});
    loss = ag_mean(tape, ag_matmul(tape, h, w));
    ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
    ag_param_free(w);
    ag_tape_free(tape);
}
END_TEST

START_TEST(test_progress_hook)
{
    test_heard h = {0};
    ag_progress_set(test_hear, &h);
    ck_assert_int_eq(ag_progress_report("reading", 3, 10), AG_OK);
    ck_assert_int_eq(h.calls, 1);
    ck_assert_str_eq(h.what, "reading");
    ck_assert(h.done == 3 && h.total == 10);
    ag_interrupt();
    ck_assert_int_eq(ag_progress_report("validation", 4, 10), AG_ERR_STOPPED);
    ck_assert_int_eq(h.calls, 2);
    ag_interrupt_clear();
    ag_progress_set(NULL, NULL);
    ck_assert_int_eq(ag_progress_report("validation", 5, 10), AG_OK);
    ck_assert_int_eq(h.calls, 2);
}
END_TEST

Suite *suite_tape(void)
{
    Suite *s = suite_create("tape");
    TCase *tc = tcase_create("backward");
    tcase_add_test(tc, test_backward_example);
    tcase_add_test(tc, test_tensor_used_twice);
    tcase_add_test(tc, test_first_write_used_twice);
    tcase_add_test(tc, test_grad_accumulates);
    tcase_add_test(tc, test_reuse_grads_same_bits);
    tcase_add_test(tc, test_reuse_grads_off_under_anomaly_detection);
    tcase_add_test(tc, test_no_grad_stays_null);
    tcase_add_test(tc, test_requires_grad);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_sticky_error);
    tcase_add_test(tc, test_backward_errors);
    tcase_add_test(tc, test_backward_after_op_error);
    tcase_add_test(tc, test_tape_fail);
    suite_add_tcase(s, tc);
    tc = tcase_create("arena");
    tcase_add_test(tc, test_arena_reuse);
    tcase_add_test(tc, test_arena_alignment);
    tcase_add_test(tc, test_arena_back);
    tcase_add_test(tc, test_backward_scratch_freed);
    suite_add_tcase(s, tc);
    tc = tcase_create("stopping");
    tcase_add_test(tc, test_interrupt_stops_ops);
    tcase_add_test(tc, test_interrupt_stops_backward);
    tcase_add_test(tc, test_progress_hook);
    suite_add_tcase(s, tc);
    return s;
}
