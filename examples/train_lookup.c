/*
 * train_lookup.c - train the soft hash table through the library, not the
 * command: a few (key, value) pairs and a query key go in, the query's
 * value must come out, and one attention layer learns to look it up. Half
 * way it saves a checkpoint; at the end it resumes from that checkpoint in a
 * fresh model and retrains the second half, which comes out bit for bit the
 * same.
 *
 *   cc -std=c11 train_lookup.c $(pkg-config --cflags --libs attograd) -o train_lookup
 *   ./train_lookup [CHECKPOINT]      (default lookup.safetensors)
 */
#include <attograd.h>

#include <stdio.h>
#include <string.h>

#define STEPS 400

/* One run: the model, its optimizer and the stream its batches come from. */
typedef struct run {
    ag_model *model;
    ag_tensor *params[8];
    size_t n;
    ag_optim *opt;
    ag_rng data;
} run;

/* Steps first..last; the last step's loss goes to *loss. */
static int train(run *r, ag_tape *tape, ag_batch *batch, int first, int last, double *loss)
{
    for (int step = first; step <= last; step++) {
        ag_task_sample(batch, &r->data);
        ag_zero_grad(r->params, r->n);
        ag_tensor *l = ag_model_forward(tape, r->model, batch, NULL, NULL);
        if (ag_backward(tape, l) != AG_OK) {      /* one check covers every op above */
            fprintf(stderr, "step %d: %s\n", step, ag_tape_error(tape));
            return 0;
        }
        *loss = (double)l->data[0];
        if (step % 100 == 0)
            printf("step %3d  loss %.4f\n", step, *loss);
        ag_tape_reset(tape);                      /* releases the step's tensors at once */
        ag_clip_grad_norm(r->params, r->n, 1.0);
        ag_optim_step(r->opt);
    }
    return 1;
}

/* The run a checkpoint holds, ready to go on from its step. */
static int resume(const char *path, run *r, ag_train_state *st)
{
    char err[256];
    ag_checkpoint *ck;
    if (ag_checkpoint_load(path, &ck, st, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return 0;
    }
    r->model = ag_model_new(&st->config.model, NULL, err, sizeof(err));
    r->n = r->model ? ag_model_params(r->model, r->params, NULL, 8) : 0;
    r->opt = r->n ? ag_train_optim_new(&st->config, r->params, r->n) : NULL;
    int ok = r->opt && ag_checkpoint_restore(ck, r->model, r->opt, err, sizeof(err)) == AG_OK;
    if (!ok)
        fprintf(stderr, "%s: %s\n", path, r->opt ? err : "out of memory");
    r->data.state = st->data_rng;
    ag_checkpoint_free(ck);
    return ok;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "lookup.safetensors";
    /* The run's settings: the model (token embeddings, one attention layer,
     * a linear readout) and how it trains; a checkpoint records them all. */
    ag_train_config cfg = {.model = {.task = AG_TASK_LOOKUP, .seq = 5, .dim = 32, .heads = 1,
                                     .causal = 0, .posenc = AG_POSENC_NONE},
                           .optimizer_adam = 1, .lr = 3e-3, .clip = 1.0, .batch = 32, .seed = 1};
    ag_rng init = ag_rng_new(cfg.seed);        /* weights */
    ag_rng held_out = ag_rng_new(3);           /* examples it never trains on */
    run a = {.data = ag_rng_new(2)}, b = {0};  /* a trains straight through; b resumes */
    ag_train_state st = {.config = cfg};
    char err[256];
    double loss_a = 0, loss_b = 0;
    int status = 1;
    ag_tape *tape = ag_tape_new();
    ag_batch *batch = ag_batch_new(cfg.model.task, cfg.batch, cfg.model.seq);
    ag_batch *test = ag_batch_new(cfg.model.task, 512, cfg.model.seq);
    a.model = ag_model_new(&cfg.model, &init, err, sizeof(err));
    a.n = a.model ? ag_model_params(a.model, a.params, NULL, 8) : 0;
    a.opt = a.n ? ag_train_optim_new(&cfg, a.params, a.n) : NULL;
    if (!a.opt || !tape || !batch || !test) {
        fprintf(stderr, "%s\n", a.model ? "out of memory" : err);
        goto done;
    }
    ag_task_sample(test, &held_out);

    /* Half the steps, a checkpoint, the other half. */
    if (!train(&a, tape, batch, 1, STEPS / 2, &loss_a))
        goto done;
    st.data_rng = a.data.state;
    st.step = STEPS / 2;
    if (ag_checkpoint_save(path, a.model, a.opt, &st, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    printf("saved %s at step %ld\n", path, st.step);
    if (!train(&a, tape, batch, STEPS / 2 + 1, STEPS, &loss_a))
        goto done;

    /* Resume in a fresh model: the same steps give the same numbers. */
    if (!resume(path, &b, &st))
        goto done;
    printf("resumed %s at step %ld\n", path, st.step);
    if (!train(&b, tape, batch, (int)st.step + 1, STEPS, &loss_b))
        goto done;
    int same = loss_a == loss_b;
    for (size_t i = 0; i < a.n; i++)
        same &= memcmp(a.params[i]->data, b.params[i]->data,
                       a.params[i]->size * sizeof(ag_real)) == 0;
    printf("step %d: the resumed run's loss and weights are %s\n", STEPS,
           same ? "identical, bit for bit" : "DIFFERENT");

    /* Held-out accuracy: does the query's answer match its value? */
    ag_tensor *logits;
    if (!ag_model_forward(tape, b.model, test, &logits, NULL)) {
        fprintf(stderr, "%s\n", ag_tape_error(tape));
        goto done;
    }
    long correct = 0, total = 0;
    ag_model_score(test, logits, &correct, &total);
    printf("held-out accuracy: %ld/%ld\n", correct, total);
    status = same ? 0 : 1;
done:
    ag_batch_free(batch);
    ag_batch_free(test);
    ag_tape_free(tape);
    ag_optim_free(a.opt);
    ag_optim_free(b.opt);
    ag_model_free(a.model);
    ag_model_free(b.model);
    return status;
}
