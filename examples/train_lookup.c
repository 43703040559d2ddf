/*
 * train_lookup.c - train the soft hash table through the library, not the
 * command: a few (key, value) pairs and a query key go in, the query's
 * value must come out, and one attention layer learns to look it up.
 *
 *   cc -std=c11 train_lookup.c $(pkg-config --cflags --libs attograd) -o train_lookup
 */
#include <attograd.h>

#include <stdio.h>

int main(void)
{
    /* The model: token embeddings, one attention layer, a linear readout. */
    ag_model_config cfg = {.task = AG_TASK_LOOKUP, .seq = 5, .dim = 32, .heads = 1,
                           .causal = 0, .posenc = AG_POSENC_NONE};
    ag_rng rng = ag_rng_new(1);          /* weights */
    ag_rng data = ag_rng_new(2);         /* training examples */
    ag_rng held_out = ag_rng_new(3);     /* examples it never trains on */
    char err[128];
    ag_model *model = ag_model_new(&cfg, &rng, err, sizeof(err));
    if (!model) {
        fprintf(stderr, "model: %s\n", err);
        return 1;
    }
    ag_tensor *params[8];
    size_t n = ag_model_params(model, params, NULL, 8);
    ag_optim *adam = ag_adam_new(params, n, 3e-3, 0.9, 0.999, 1e-8, 0);
    ag_tape *tape = ag_tape_new();
    ag_batch *batch = ag_batch_new(cfg.task, 32, cfg.seq);
    ag_batch *test = ag_batch_new(cfg.task, 512, cfg.seq);
    int status = 1;
    if (!adam || !tape || !batch || !test)
        goto done;
    ag_task_sample(test, &held_out);

    for (int step = 1; step <= 400; step++) {
        ag_task_sample(batch, &data);
        ag_zero_grad(params, n);
        ag_tensor *loss = ag_model_forward(tape, model, batch, NULL, NULL);
        if (ag_backward(tape, loss) != AG_OK) {      /* one check covers every op above */
            fprintf(stderr, "step %d: %s\n", step, ag_tape_error(tape));
            goto done;
        }
        if (step % 100 == 0)
            printf("step %3d  loss %.4f\n", step, (double)loss->data[0]);
        ag_tape_reset(tape);                          /* releases the step's tensors at once */
        ag_clip_grad_norm(params, n, 1.0);
        ag_optim_step(adam);
    }

    /* Held-out accuracy: does the query's answer match its value? */
    ag_tensor *logits;
    if (!ag_model_forward(tape, model, test, &logits, NULL)) {
        fprintf(stderr, "%s\n", ag_tape_error(tape));
        goto done;
    }
    long correct = 0, total = 0;
    ag_model_score(test, logits, &correct, &total);
    printf("held-out accuracy: %ld/%ld\n", correct, total);
    status = 0;
done:
    ag_batch_free(batch);
    ag_batch_free(test);
    ag_tape_free(tape);
    ag_optim_free(adam);
    ag_model_free(model);
    return status;
}
