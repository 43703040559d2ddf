/*
 * test_optim.c - optimizers against hand-computed steps (SGD, momentum,
 * Adam's bias correction, AdamW's decoupled decay), gradient clipping, state
 * save and restore, bad arguments, and small fits whose loss must fall.
 */
#include "test_util.h"
#include "kernels/kernels.h"

#include <float.h>
#include <string.h>

#ifdef AG_REAL_DOUBLE
#define STEP_TOL 1e-12
#else
#define STEP_TOL 1e-6
#endif

/* A one-element parameter holding v, gradient g. */
static ag_tensor *scalar(double v, double g)
{
    ag_tensor *p = ag_param_new(1, (int[]){1});
    ck_assert_ptr_nonnull(p);
    p->data[0] = (ag_real)v;
    p->grad[0] = (ag_real)g;
    return p;
}

START_TEST(test_sgd_plain)
{
    ag_tensor *p = ag_param_new(1, (int[]){2});
    p->data[0] = 1;
    p->data[1] = 2;
    p->grad[0] = 0.5;
    p->grad[1] = -1;
    ag_optim *opt = ag_sgd_new(&p, 1, 0.1, 0);
    ck_assert_ptr_nonnull(opt);
    ck_assert_int_eq(ag_optim_slots(opt), 0);
    ck_assert_ptr_null(ag_optim_state(opt, 0, 0));
    ck_assert_str_eq(ag_optim_name(opt), "sgd");
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 0.95, STEP_TOL);
    ck_assert_double_eq_tol(p->data[1], 2.1, STEP_TOL);
    ck_assert(p->grad[0] == (ag_real)0.5); /* the step leaves gradients alone */
    ck_assert_int_eq(ag_optim_steps(opt), 1);
    ag_optim_free(opt);
    ag_param_free(p);
}
END_TEST

START_TEST(test_sgd_momentum)
{
    /* v = 0.9 v + g; p -= 0.1 v:
     * step 1, g = 0.5:  v = 0.5,                p = 1 - 0.05 = 0.95
     * step 2, g = 0.25: v = 0.45 + 0.25 = 0.7,  p = 0.95 - 0.07 = 0.88 */
    ag_tensor *p = scalar(1, 0.5);
    ag_optim *opt = ag_sgd_new(&p, 1, 0.1, 0.9);
    ck_assert_int_eq(ag_optim_slots(opt), 1);
    ck_assert_str_eq(ag_optim_slot_name(opt, 0), "velocity");
    ck_assert_ptr_null(ag_optim_slot_name(opt, 1));
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 0.95, STEP_TOL);
    ck_assert_double_eq_tol(ag_optim_state(opt, 0, 0)[0], 0.5, STEP_TOL);
    p->grad[0] = 0.25;
    ag_optim_step(opt);
    ck_assert_double_eq_tol(ag_optim_state(opt, 0, 0)[0], 0.7, STEP_TOL);
    ck_assert_double_eq_tol(p->data[0], 0.88, STEP_TOL);
    ag_optim_free(opt);
    ag_param_free(p);
}
END_TEST

START_TEST(test_adam_steps)
{
    /* lr 0.1, betas 0.9 / 0.999, eps 1e-8, p = 1:
     * step 1, g = 0.5: m = 0.05, v = 0.00025; m_hat = 0.5, v_hat = 0.25,
     *   p = 1 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.900000002
     * step 2, g = -1: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001 = 0.00124975;
     *   m_hat = -0.055 / 0.19, v_hat = 0.00124975 / 0.001999,
     *   p = 0.900000002 + 0.1 * 0.2894737 / 0.7906876 = 0.93661035424 */
    ag_tensor *p = scalar(1, 0.5);
    ag_optim *opt = ag_adam_new(&p, 1, 0.1, 0.9, 0.999, 1e-8, 0);
    ck_assert_ptr_nonnull(opt);
    ck_assert_str_eq(ag_optim_name(opt), "adam");
    ck_assert_int_eq(ag_optim_slots(opt), 2);
    ck_assert_str_eq(ag_optim_slot_name(opt, 0), "m");
    ck_assert_str_eq(ag_optim_slot_name(opt, 1), "v");
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 0.900000002, STEP_TOL);
    ck_assert_double_eq_tol(ag_optim_state(opt, 0, 0)[0], 0.05, STEP_TOL);
    ck_assert_double_eq_tol(ag_optim_state(opt, 0, 1)[0], 0.00025, STEP_TOL);
    p->grad[0] = -1;
    ag_optim_step(opt);
    ck_assert_double_eq_tol(ag_optim_state(opt, 0, 0)[0], -0.055, STEP_TOL);
    ck_assert_double_eq_tol(ag_optim_state(opt, 0, 1)[0], 0.00124975, STEP_TOL);
    ck_assert_double_eq_tol(p->data[0], 0.9366103542405654, STEP_TOL);
    ck_assert_int_eq(ag_optim_steps(opt), 2);
    ag_optim_free(opt);
    ag_param_free(p);
}
END_TEST

START_TEST(test_adamw_decay)
{
    /* decoupled decay: p -= lr wd p on top of the Adam step, with p before the step.
     * p = 2, lr 0.1, wd 0.1, same gradients as above:
     * step 1: 2 - 0.02 - 0.1 * 0.5 / (0.5 + 1e-8) = 1.880000002
     * step 2: 1.880000002 - 0.0188000000002 + 0.0366103522 = 1.89781035422 */
    ag_tensor *p = scalar(2, 0.5);
    ag_optim *opt = ag_adam_new(&p, 1, 0.1, 0.9, 0.999, 1e-8, 0.1);
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 1.880000002, STEP_TOL);
    p->grad[0] = -1;
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 1.8978103542205655, STEP_TOL);
    ag_optim_free(opt);
    ag_param_free(p);

    /* with no gradient at all, only the decay acts: p (1 - lr wd)^t */
    p = scalar(3, 0);
    opt = ag_adam_new(&p, 1, 0.5, 0.9, 0.999, 1e-8, 0.2);
    ag_optim_step(opt);
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 3 * 0.9 * 0.9, STEP_TOL);
    ag_optim_free(opt);
    ag_param_free(p);
}
END_TEST

/* AdamW says whether its step left every parameter finite, which lets a
 * trainer skip its scan for NaN and Inf: a step that overflows one element
 * (at the start, in the middle and in the tail of the vector loop) or meets
 * a NaN gradient says no, and SGD never says yes. */
START_TEST(test_adam_left_finite)
{
#ifdef AG_REAL_DOUBLE
    const ag_real big = DBL_MAX / 2;
#else
    const ag_real big = FLT_MAX / 2;
#endif
    enum { N = 203 };
    ag_tensor *p = ag_param_new(1, (int[]){N});
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < N; i++)
        p->data[i] = 1, p->grad[i] = (ag_real)0.5;
    ag_optim *opt = ag_adam_new(&p, 1, 1e-3, 0.9, 0.999, 1e-8, 0.1);
    ck_assert_ptr_nonnull(opt);
    ck_assert(!ag_optim_left_finite(opt)); /* no step yet */
    ag_optim_step(opt);
    ck_assert(ag_optim_left_finite(opt));
    static const int at[] = {0, 100, N - 1};
    for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
        for (int i = 0; i < N; i++)
            p->data[i] = 1;
        p->data[at[k]] = big;
        ck_assert_int_eq(ag_optim_set_lr(opt, 1000), AG_OK); /* p (1 - lr wd) = -99 p */
        ag_optim_step(opt);
        ck_assert_msg(!isfinite(p->data[at[k]]), "element %d stayed finite", at[k]);
        ck_assert_msg(!ag_optim_left_finite(opt), "overflow at %d not seen", at[k]);
        for (int i = 0; i < N; i++)
            p->data[i] = 1;
        ck_assert_int_eq(ag_optim_set_lr(opt, 1e-3), AG_OK);
        ag_optim_step(opt);
        ck_assert(ag_optim_left_finite(opt));
    }
    p->grad[7] = (ag_real)NAN;
    ag_optim_step(opt);
    ck_assert(!ag_optim_left_finite(opt));
    ag_optim_free(opt);
    p->grad[7] = 0;
    opt = ag_sgd_new(&p, 1, 0.1, 0);
    ag_optim_step(opt);
    ck_assert(!ag_optim_left_finite(opt)); /* not known: the trainer scans */
    ag_optim_free(opt);
    ag_param_free(p);
}
END_TEST

/* Adam and AdamW over several parameters of odd sizes (so vector loops end
 * in tails), short and long, for a few steps: each step against the documented formula
 * evaluated in double from the same p, m and v. The element loop runs in
 * ag_real; this says it still computes that formula, to the rounding of
 * ag_real. Gradients span a wide range of scales and include exact zeros. */
START_TEST(test_adam_reference)
{
    enum { NP = 4, STEPS = 6, MAXN = 131 };
    static const int sizes[NP] = {131, 37, 5, 1}; /* long ones take adam.c's wide path */
    for (int with_decay = 0; with_decay < 2; with_decay++) {
        double lr = 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = with_decay ? 0.1 : 0;
        ag_rng rng = ag_rng_new(5 + (uint64_t)with_decay);
        ag_tensor *ps[NP];
        for (int i = 0; i < NP; i++)
            ps[i] = test_param(&rng, 1, (int[]){sizes[i]});
        ag_optim *opt = ag_adam_new(ps, NP, lr, b1, b2, eps, wd);
        ck_assert_ptr_nonnull(opt);
        for (int t = 1; t <= STEPS; t++) {
            double c1 = 1 - pow(b1, t), c2 = 1 - pow(b2, t);
            double p[NP][MAXN], m[NP][MAXN], v[NP][MAXN], m_mag[NP][MAXN];
            for (int i = 0; i < NP; i++)
                for (int j = 0; j < sizes[i]; j++) {
                    /* scales 1e-3 .. 1e2, every 7th gradient exactly 0 */
                    double scale = pow(10, (double)((i + j + t) % 6) - 3);
                    ag_real g = (j + t) % 7 == 0 ? 0 : (ag_real)(scale * ag_rng_normal(&rng));
                    ps[i]->grad[j] = g;
                    double m0 = ag_optim_state(opt, (size_t)i, 0)[j];
                    double v0 = ag_optim_state(opt, (size_t)i, 1)[j];
                    double p0 = ps[i]->data[j];
                    /* m's rounding error is relative to its terms, not to m (they may cancel) */
                    m_mag[i][j] = fabs(b1 * m0) + fabs((1 - b1) * g);
                    m[i][j] = b1 * m0 + (1 - b1) * g;
                    v[i][j] = b2 * v0 + (1 - b2) * (double)g * g;
                    p[i][j] = p0 - lr * wd * p0 - lr * (m[i][j] / c1) / (sqrt(v[i][j] / c2) + eps);
                }
            ag_optim_step(opt);
            for (int i = 0; i < NP; i++)
                for (int j = 0; j < sizes[i]; j++) {
                    double got_m = ag_optim_state(opt, (size_t)i, 0)[j];
                    double got_v = ag_optim_state(opt, (size_t)i, 1)[j];
                    ck_assert_msg(fabs(ps[i]->data[j] - p[i][j]) <= STEP_TOL * (1 + fabs(p[i][j])),
                                  "step %d param %d [%d]: p %.9g, want %.9g", t, i, j,
                                  (double)ps[i]->data[j], p[i][j]);
                    ck_assert_msg(fabs(got_m - m[i][j]) <= STEP_TOL * m_mag[i][j],
                                  "step %d param %d [%d]: m %.9g, want %.9g", t, i, j, got_m,
                                  m[i][j]);
                    ck_assert_msg(fabs(got_v - v[i][j]) <= STEP_TOL * v[i][j],
                                  "step %d param %d [%d]: v %.9g, want %.9g", t, i, j, got_v,
                                  v[i][j]);
                }
        }
        ag_optim_free(opt);
        for (int i = 0; i < NP; i++)
            ag_param_free(ps[i]);
    }
}
END_TEST

/* SGD with and without momentum on odd sizes, against the formula in double. */
START_TEST(test_sgd_reference)
{
    enum { N = 19, STEPS = 5 };
    for (int with_momentum = 0; with_momentum < 2; with_momentum++) {
        double lr = 0.1, mu = with_momentum ? 0.9 : 0;
        ag_rng rng = ag_rng_new(9);
        ag_tensor *ps = test_param(&rng, 1, (int[]){N});
        double p[N], vel[N] = {0};
        for (int j = 0; j < N; j++)
            p[j] = ps->data[j];
        ag_optim *opt = ag_sgd_new(&ps, 1, lr, mu);
        for (int t = 0; t < STEPS; t++) {
            for (int j = 0; j < N; j++) {
                ps->grad[j] = (ag_real)ag_rng_normal(&rng);
                vel[j] = mu * vel[j] + ps->grad[j];
                p[j] -= lr * vel[j];
            }
            ag_optim_step(opt);
            for (int j = 0; j < N; j++)
                ck_assert_double_eq_tol(ps->data[j], p[j], STEP_TOL * (1 + fabs(p[j])));
        }
        ag_optim_free(opt);
        ag_param_free(ps);
    }
}
END_TEST

START_TEST(test_set_lr)
{
    ag_tensor *p = scalar(1, 1);
    ag_optim *opt = ag_sgd_new(&p, 1, 0.1, 0);
    ck_assert_double_eq(ag_optim_lr(opt), 0.1);
    ck_assert_int_eq(ag_optim_set_lr(opt, 0.5), AG_OK);
    ck_assert_int_eq(ag_optim_set_lr(opt, -1), AG_ERR_ARG);
    ck_assert_int_eq(ag_optim_set_lr(opt, NAN), AG_ERR_ARG);
    ck_assert_double_eq(ag_optim_lr(opt), 0.5);
    ag_optim_step(opt);
    ck_assert_double_eq_tol(p->data[0], 0.5, STEP_TOL);
    ck_assert_uint_eq(ag_optim_n_params(opt), 1);
    ag_optim_free(opt);
    ag_param_free(p);
}
END_TEST

/* Two halves' gradients weighed into one (the GPT trainer's): each element
 * wa a + wb b, b zeroed, and the sum of squares the same bits as
 * ag_fast_grad_sq_sum's over the result, for sizes that cut the chunks and
 * the blocks anywhere. */
START_TEST(test_grad_weigh)
{
    const int sizes[4] = {3, 70001, 129, 40960};
    ag_tensor *a[5], *b[5], *want[5];
    ag_rng rng = ag_rng_new(9);
    for (int i = 0; i < 5; i++) {
        int n = i == 2 ? 1 : sizes[i % 4];
        a[i] = ag_param_new(1, &n), b[i] = ag_param_new(1, &n), want[i] = ag_param_new(1, &n);
        for (int k = 0; k < n; k++) {
            /* magnitudes 2^-14 .. 2^14: the sum rounds, so its order shows */
            a[i]->grad[k] = (ag_real)ldexp(ag_rng_normal(&rng), k % 29 - 14);
            b[i]->grad[k] = (ag_real)ag_rng_normal(&rng);
            want[i]->grad[k] = (ag_real)0.25 * a[i]->grad[k] + (ag_real)0.75 * b[i]->grad[k];
        }
    }
    double sq = ag_fast_grad_weigh(a, b, 5, (ag_real)0.25, (ag_real)0.75);
    ck_assert(sq == ag_fast_grad_sq_sum(want, 5));
    for (int i = 0; i < 5; i++) {
        for (size_t k = 0; k < a[i]->size; k++)
            ck_assert(a[i]->grad[k] == want[i]->grad[k] && b[i]->grad[k] == 0);
        ag_param_free(a[i]), ag_param_free(b[i]), ag_param_free(want[i]);
    }
}
END_TEST

START_TEST(test_clip)
{
    ag_tensor *a = ag_param_new(1, (int[]){2}), *b = ag_param_new(1, (int[]){1});
    a->grad[0] = 3;
    a->grad[1] = 4;
    b->grad[0] = 12;
    ag_tensor *ps[3] = {a, NULL, b}; /* NULL entries are skipped */
    ck_assert_double_eq_tol(ag_clip_grad_norm(ps, 3, 100), 13, STEP_TOL);
    ck_assert(a->grad[0] == 3 && a->grad[1] == 4 &&
              b->grad[0] == 12); /* under the max: untouched */
    ck_assert_double_eq_tol(ag_clip_grad_norm(ps, 3, 0), 13, STEP_TOL); /* 0: only measure */
    ck_assert(b->grad[0] == 12);
    ck_assert_double_eq_tol(ag_clip_grad_norm(ps, 3, 6.5), 13, STEP_TOL);
    ck_assert_double_eq_tol(a->grad[0], 1.5, STEP_TOL);
    ck_assert_double_eq_tol(a->grad[1], 2, STEP_TOL);
    ck_assert_double_eq_tol(b->grad[0], 6, STEP_TOL);
    ck_assert_double_eq_tol(ag_clip_grad_norm(ps, 3, 0), 6.5, STEP_TOL);
    ck_assert_double_eq(ag_clip_grad_norm(NULL, 3, 1), 0);
    ag_param_free(a);
    ag_param_free(b);
}
END_TEST

START_TEST(test_state_restore)
{
    /* train A for 3 steps, copy its parameters and state into a fresh B,
     * then step both: they must agree exactly */
    ag_rng rng = ag_rng_new(21);
    ag_tensor *pa[2] = {test_param(&rng, 2, (int[]){2, 3}), test_param(&rng, 1, (int[]){4})};
    ag_tensor *pb[2] = {ag_param_new(2, (int[]){2, 3}), ag_param_new(1, (int[]){4})};
    for (int kind = 0; kind < 2; kind++) {
        ag_optim *a =
            kind ? ag_adam_new(pa, 2, 0.05, 0.9, 0.99, 1e-8, 0.01) : ag_sgd_new(pa, 2, 0.05, 0.8);
        ag_optim *b =
            kind ? ag_adam_new(pb, 2, 0.05, 0.9, 0.99, 1e-8, 0.01) : ag_sgd_new(pb, 2, 0.05, 0.8);
        for (int s = 0; s < 3; s++) {
            for (int i = 0; i < 2; i++)
                ag_fill_normal(&(ag_tensor){.ndim = 1, .size = pa[i]->size, .data = pa[i]->grad},
                               &rng, 0, 1);
            ag_optim_step(a);
        }
        ck_assert_int_eq(ag_optim_set_steps(b, ag_optim_steps(a)), AG_OK);
        ck_assert_int_eq(ag_optim_set_steps(b, -1), AG_ERR_ARG);
        for (int i = 0; i < 2; i++) {
            memcpy(pb[i]->data, pa[i]->data, pa[i]->size * sizeof(ag_real));
            memcpy(pb[i]->grad, pa[i]->grad, pa[i]->size * sizeof(ag_real));
            for (int s = 0; s < ag_optim_slots(a); s++)
                memcpy(ag_optim_state(b, (size_t)i, s), ag_optim_state(a, (size_t)i, s),
                       pa[i]->size * sizeof(ag_real));
        }
        ck_assert_ptr_null(ag_optim_state(a, 2, 0));
        ck_assert_ptr_null(ag_optim_state(a, 0, ag_optim_slots(a)));
        ag_optim_step(a);
        ag_optim_step(b);
        for (int i = 0; i < 2; i++)
            ck_assert_mem_eq(pa[i]->data, pb[i]->data, pa[i]->size * sizeof(ag_real));
        ag_optim_free(a);
        ag_optim_free(b);
    }
    for (int i = 0; i < 2; i++) {
        ag_param_free(pa[i]);
        ag_param_free(pb[i]);
    }
}
END_TEST

START_TEST(test_bad_arguments)
{
    ag_tensor *p = scalar(1, 0);
    ag_tensor nograd = {.ndim = 1, .shape = {1, 1, 1, 1}, .size = 1, .data = p->data, .grad = NULL};
    ag_tensor *bad[2] = {p, &nograd}, *null[2] = {p, NULL};
    ck_assert_ptr_null(ag_sgd_new(&p, 1, -0.1, 0));
    ck_assert_ptr_null(ag_sgd_new(&p, 1, INFINITY, 0));
    ck_assert_ptr_null(ag_sgd_new(&p, 1, 0.1, 1));
    ck_assert_ptr_null(ag_sgd_new(&p, 1, 0.1, -0.5));
    ck_assert_ptr_null(ag_sgd_new(&p, 0, 0.1, 0));
    ck_assert_ptr_null(ag_sgd_new(NULL, 1, 0.1, 0));
    ck_assert_ptr_null(ag_sgd_new(bad, 2, 0.1, 0));
    ck_assert_ptr_null(ag_sgd_new(null, 2, 0.1, 0));
    ck_assert_ptr_null(ag_adam_new(&p, 1, 0.1, 1, 0.999, 1e-8, 0));
    ck_assert_ptr_null(ag_adam_new(&p, 1, 0.1, 0.9, 1, 1e-8, 0));
    ck_assert_ptr_null(ag_adam_new(&p, 1, 0.1, 0.9, NAN, 1e-8, 0));
    ck_assert_ptr_null(ag_adam_new(&p, 1, 0.1, 0.9, 0.999, 0, 0));
    ck_assert_ptr_null(ag_adam_new(&p, 1, 0.1, 0.9, 0.999, 1e-8, -1));
    ck_assert_ptr_null(ag_adam_new(bad, 2, 0.1, 0.9, 0.999, 1e-8, 0));
    /* NULL handles are harmless */
    ag_optim_step(NULL);
    ag_optim_free(NULL);
    ck_assert_int_eq(ag_optim_set_lr(NULL, 1), AG_ERR_ARG);
    ck_assert_int_eq(ag_optim_steps(NULL), 0);
    ck_assert_ptr_null(ag_optim_state(NULL, 0, 0));
    ag_param_free(p);
}
END_TEST

/* ---- fits: the loss must fall a lot in 100 steps ---- */

/* Learn W = [[1 -2] [0.5 3]] from 16 pairs (x, x W) with mse. Returns
 * final loss / first loss. */
static double fit_matrix(int adam)
{
    ag_rng rng = ag_rng_new(31);
    const ag_real w_true[4] = {1, -2, 0.5, 3};
    ag_real x[32], y[32];
    for (int i = 0; i < 32; i++)
        x[i] = (ag_real)ag_rng_normal(&rng);
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 2; c++)
            y[r * 2 + c] = x[r * 2] * w_true[c] + x[r * 2 + 1] * w_true[2 + c];
    ag_tensor *w = ag_param_new(2, (int[]){2, 2});
    ag_optim *opt =
        adam ? ag_adam_new(&w, 1, 0.1, 0.9, 0.999, 1e-8, 0) : ag_sgd_new(&w, 1, 0.05, 0.9);
    ag_tape *tape = ag_tape_new();
    double first = 0, last = 0;
    for (int step = 0; step < 100; step++) {
        ag_zero_grad(&w, 1);
        ag_tensor *xt = ag_tensor_from(tape, 2, (int[]){16, 2}, x);
        ag_tensor *yt = ag_tensor_from(tape, 2, (int[]){16, 2}, y);
        ag_tensor *loss = ag_mse(tape, ag_matmul(tape, xt, w), yt);
        ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
        last = loss->data[0];
        if (step == 0)
            first = last;
        ag_optim_step(opt);
        ag_tape_reset(tape);
    }
    ag_tape_free(tape);
    ag_optim_free(opt);
    ag_param_free(w);
    return last / first;
}

START_TEST(test_fit_matrix)
{
    double sgd = fit_matrix(0), adam = fit_matrix(1);
    ck_assert_msg(sgd < 1e-3, "sgd: loss fell only to %g of its start", sgd);
    ck_assert_msg(adam < 1e-3, "adam: loss fell only to %g of its start", adam);
}
END_TEST

START_TEST(test_fit_attention)
{
    /* a student layer learns to imitate a teacher layer (same shape, other seed) */
    enum { B = 4, T = 3, d = 4 };
    ag_rng rng = ag_rng_new(41);
    ag_attention *teacher = ag_attention_new(d, 2, 1, &rng, NULL, 0);
    ag_attention *student = ag_attention_new(d, 2, 1, &rng, NULL, 0);
    ag_real x[B * T * d];
    for (int i = 0; i < B * T * d; i++)
        x[i] = (ag_real)ag_rng_normal(&rng);
    ag_tensor *params[4];
    ag_attention_params(student, params, NULL, 4);
    ag_optim *opt = ag_adam_new(params, 4, 0.03, 0.9, 0.999, 1e-8, 0);
    ag_tape *tape = ag_tape_new();
    double first = 0, last = 0;
    for (int step = 0; step < 100; step++) {
        ag_zero_grad(params, 4);
        ag_tensor *xt = ag_tensor_from(tape, 3, (int[]){B, T, d}, x);
        ag_tensor *target = ag_attention_forward(tape, teacher, xt, NULL);
        ag_tensor *loss = ag_mse(tape, ag_attention_forward(tape, student, xt, NULL), target);
        ck_assert_int_eq(ag_backward(tape, loss), AG_OK);
        last = loss->data[0];
        if (step == 0)
            first = last;
        ag_clip_grad_norm(params, 4, 1.0);
        ag_optim_step(opt);
        ag_tape_reset(tape);
    }
    ck_assert_msg(last < first / 20, "loss went from %g to %g", first, last);
    ag_tape_free(tape);
    ag_optim_free(opt);
    ag_attention_free(teacher);
    ag_attention_free(student);
}
END_TEST

Suite *suite_optim(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("steps");
    tcase_add_test(tc, test_sgd_plain);
    tcase_add_test(tc, test_sgd_momentum);
    tcase_add_test(tc, test_adam_steps);
    tcase_add_test(tc, test_adamw_decay);
    tcase_add_test(tc, test_adam_left_finite);
    tcase_add_test(tc, test_adam_reference);
    tcase_add_test(tc, test_sgd_reference);
    tcase_add_test(tc, test_set_lr);
    tcase_add_test(tc, test_clip);
    tcase_add_test(tc, test_grad_weigh);
    tcase_add_test(tc, test_state_restore);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    tc = tcase_create("fit");
    tcase_add_test(tc, test_fit_matrix);
    tcase_add_test(tc, test_fit_attention);
    suite_add_tcase(s, tc);
    return s;
}
