/*
 * attograd.h - a small reverse-mode autograd in C, centered on attention.
 *
 * Attention is a soft lookup: compare a query with every key (dot products),
 * turn the scores into weights (softmax), return the weighted blend of the
 * values. Every step is differentiable, so the lookup can be learned. This
 * header is the whole public API, in three layers:
 *
 *   attograd/core.h  tensors, the tape, the ops, backward, kernels, gradient checks
 *   attograd/io.h    safetensors and CSV files
 *   attograd/nn.h    layers, optimizers, models, trainers, checkpoints
 *
 * A worked example: f(W) = sum(x W) for x = [1 2], W = [[3] [4]].
 *
 *     ag_tape *tape = ag_tape_new();
 *     ag_tensor *w = ag_param_new(2, (int[]){2, 1});     // lives outside the tape
 *     w->data[0] = 3; w->data[1] = 4;
 *     ag_tensor *x = ag_tensor_from(tape, 2, (int[]){1, 2}, (ag_real[]){1, 2});
 *     ag_tensor *loss = ag_sum(tape, ag_matmul(tape, x, w));   // 1*3 + 2*4 = 11
 *     if (ag_backward(tape, loss) != AG_OK)
 *         fprintf(stderr, "%s\n", ag_tape_error(tape));
 *     // w->grad is now [1 2]: dL/dW = x^T
 *     ag_tape_reset(tape);   // releases x, the product and the loss at once
 *     ag_param_free(w);
 *     ag_tape_free(tape);
 *
 * Ownership: tensors made by ops or by ag_tensor_new/ag_tensor_from belong to
 * the tape and live until ag_tape_reset or ag_tape_free. Parameters
 * (ag_param_new) belong to the caller. Ops never take ownership of inputs.
 *
 * Errors: ops never abort. The first failure (bad shape, bad argument, out of
 * memory) is kept on the tape with a one-line message; every later op returns
 * NULL, so a caller may chain ops and check once, at ag_backward or with
 * ag_tape_status.
 *
 * Precision: ag_real is float unless the library was built with
 * AG_REAL_DOUBLE (make REAL=double); `pkg-config --cflags attograd` says which.
 */
#ifndef ATTOGRAD_H
#define ATTOGRAD_H

#define AG_VERSION "0.1.0"

#include "attograd/core.h"
#include "attograd/io.h"
#include "attograd/nn.h"

#endif /* ATTOGRAD_H */
