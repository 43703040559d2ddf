/*
 * threads.h - the library's worker pool: ag_parallel_for runs independent
 * tasks on the threads set by ag_set_threads. Not installed.
 */
#ifndef AG_THREADS_H
#define AG_THREADS_H

#include <stddef.h>

/* One task: fn(ctx, i) for i in [0, n_tasks). Tasks must not depend on each
 * other's order or on which thread runs them. */
typedef void (*ag_task_fn)(void *ctx, size_t i);

/*
 * Run fn(ctx, i) for every i in [0, n_tasks), spread over the pool's threads
 * (the calling thread takes part), and return when all are done. Runs them
 * in order on the calling thread instead when the pool has one thread, when
 * called from inside a task (no nesting), or when another thread is already
 * using the pool. Borrows ctx for the duration of the call.
 */
void ag_parallel_for(size_t n_tasks, ag_task_fn fn, void *ctx);

/* The number of threads ag_parallel_for would use right now (1 inside a task). */
int ag_parallel_threads(void);

#endif /* AG_THREADS_H */
