/*
 * train_lookup.c - train the soft hash table through the library, not the
 * command: a few (key, value) pairs and a query key go in, the query's
 * value must come out, and one attention layer learns to look it up. Half
 * way it saves a checkpoint; at the end it resumes from that checkpoint in a
 * fresh trainer and retrains the second half, which comes out bit for bit
 * the same.
 *
 *   cc -std=c11 train_lookup.c $(pkg-config --cflags --libs attograd) -o train_lookup
 *   ./train_lookup [CHECKPOINT]      (default lookup.safetensors)
 */
#include <attograd.h>

#include <stdio.h>
#include <string.h>

#define STEPS 400

/* Steps until the trainer has done `last`; the last step's loss goes to *loss. */
static int train(ag_trainer *t, long last, double *loss)
{
    char err[256];
    while (ag_trainer_steps(t) < last) {
        /* a fresh batch, forward, backward, clip, Adam; a NaN stops it, naming the op */
        if (ag_trainer_step(t, loss, err, sizeof(err)) != AG_OK) {
            fprintf(stderr, "%s\n", err);
            return 0;
        }
        if (ag_trainer_steps(t) % 100 == 0)
            printf("step %3ld  loss %.4f\n", ag_trainer_steps(t), *loss);
    }
    return 1;
}

/* The run a checkpoint holds, ready to go on from its step. */
static ag_trainer *resume(const char *path)
{
    char err[256];
    ag_checkpoint *ck;
    ag_train_state st;
    if (ag_checkpoint_load(path, &ck, &st, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    /* the checkpoint's own settings; a new lr or batch could be chosen here */
    ag_trainer *t = ag_trainer_new(&st.config, ck, &st, err, sizeof(err));
    if (!t)
        fprintf(stderr, "%s\n", err);
    ag_checkpoint_free(ck);
    return t;
}

/* Whether two runs hold the same weights, bit for bit. */
static int same_weights(ag_trainer *a, ag_trainer *b)
{
    ag_tensor *pa[8], *pb[8];
    size_t n = ag_model_params(ag_trainer_model(a), pa, NULL, 8);
    int same = n == ag_model_params(ag_trainer_model(b), pb, NULL, 8);
    for (size_t i = 0; same && i < n; i++)
        same = memcmp(pa[i]->data, pb[i]->data, pa[i]->size * sizeof(ag_real)) == 0;
    return same;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "lookup.safetensors";
    /* The run's settings: the model (token embeddings, one attention layer,
     * a linear readout) and how it trains; a checkpoint records them all. */
    ag_train_config cfg = {.model = {.task = AG_TASK_LOOKUP,
                                     .seq = 5,
                                     .dim = 32,
                                     .heads = 1,
                                     .causal = 0,
                                     .posenc = AG_POSENC_NONE},
                           .optimizer_adam = 1,
                           .lr = 3e-3,
                           .clip = 1.0,
                           .batch = 32,
                           .seed = 1};
    char err[256];
    double loss_a = 0, loss_b = 0, eval_loss, accuracy;
    int status = 1;
    ag_trainer *b = NULL, *a = ag_trainer_new(&cfg, NULL, NULL, err, sizeof(err));
    if (!a) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }

    /* Half the steps, a checkpoint, the other half. */
    if (!train(a, STEPS / 2, &loss_a))
        goto done;
    if (ag_trainer_save(a, path, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    printf("saved %s at step %ld\n", path, ag_trainer_steps(a));
    if (!train(a, STEPS, &loss_a))
        goto done;

    /* Resume in a fresh trainer: the same steps give the same numbers. */
    if (!(b = resume(path)))
        goto done;
    printf("resumed %s at step %ld\n", path, ag_trainer_steps(b));
    if (!train(b, STEPS, &loss_b))
        goto done;
    int same = loss_a == loss_b && same_weights(a, b);
    printf("step %d: the resumed run's loss and weights are %s\n", STEPS,
           same ? "identical, bit for bit" : "DIFFERENT");

    /* Held-out accuracy: examples it never trained on. */
    if (ag_trainer_evaluate(b, &eval_loss, &accuracy, err, sizeof(err)) != AG_OK) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    printf("held-out accuracy: %.0f/%d (loss %.4f)\n", accuracy * AG_TRAINER_HELD_OUT,
           AG_TRAINER_HELD_OUT, eval_loss);
    status = same ? 0 : 1;
done:
    ag_trainer_free(a);
    ag_trainer_free(b);
    return status;
}
