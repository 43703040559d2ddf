/*
 * threads.h - the library's worker pool: ag_parallel_for runs independent
 * tasks on the threads set by ag_set_threads. Not installed.
 */
#ifndef AG_THREADS_H
#define AG_THREADS_H

#include "attograd.h"

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

/* One chunk of a range: fn(ctx, lo, hi) for the items [lo, hi). */
typedef void (*ag_range_fn)(void *ctx, size_t lo, size_t hi);

/*
 * fn over [0, n) in chunks of grain items (the last one shorter), through
 * ag_parallel_for. The chunks depend on n and grain alone, never on the
 * number of threads, so a result combined chunk by chunk in order is the
 * same on any number of threads. One chunk (n <= grain) runs directly.
 */
void ag_parallel_range(size_t n, size_t grain, ag_range_fn fn, void *ctx);

/* A piece of parameter p's elements, [lo, hi), in chunk number chunk. */
typedef void (*ag_piece_fn)(void *ctx, size_t chunk, size_t p, size_t lo, size_t hi);

/* The most chunks ag_params_range makes: a caller can keep one result per
 * chunk on its stack. */
#define AG_PARAMS_CHUNKS 64

/*
 * The elements of params[0..n) (NULL entries skipped), taken end to end and
 * cut into chunks of at least grain elements, at most AG_PARAMS_CHUNKS:
 * fn is called for every parameter's piece of every chunk, the chunks
 * shared over the threads, the pieces of one chunk in order. The chunks
 * depend on the sizes and grain alone. Returns the number of chunks.
 */
size_t ag_params_range(ag_tensor *const *params, size_t n, size_t grain, ag_piece_fn fn, void *ctx);

/*
 * Items [0, n) cut into consecutive runs, one per taker (a thread, a lane),
 * each claimed an item at a time: a taker empties its own run first, then
 * helps with the others', so takers that split the same rows alike keep
 * getting the same rows (still in their core's cache), while one slowed
 * by other work on the machine simply takes fewer items.
 */
typedef struct ag_run {
    _Alignas(64) _Atomic size_t next; /* the run's next item to claim */
    size_t end;
} ag_run;

/* Cut [0, n) into n_runs runs whose lengths differ by at most one. */
void ag_runs_split(ag_run *runs, size_t n_runs, size_t n);

/* Taker own's next item, or SIZE_MAX when every run is empty. *from
 * counts the runs it has emptied (start it at 0), its own first. With one
 * run (one taker) the claim is a plain load and store. */
size_t ag_runs_take(ag_run *runs, size_t n_runs, size_t own, size_t *from);

/*
 * Per-thread state every worker gets as the pool starts it: make() runs on
 * the thread that grows the pool (where allocating is expected), and the
 * new worker hands what it made to adopt() before its first task; the
 * state is released with free() if the worker cannot start. The packed
 * gemm gives each worker its packing buffer this way (gemm.c), so the pool
 * allocates when it starts and never later, without knowing what it holds.
 * One hook for the process; workers started before it is set get nothing.
 */
typedef struct ag_worker_init {
    void *(*make)(void);
    void (*adopt)(void *state);
} ag_worker_init;
void ag_pool_set_worker_init(ag_worker_init init);

/* How many calls of ag_parallel_for have been shared out over the pool's
 * threads since the program started (the tests make sure a check on two
 * threads did use them). */
size_t ag_parallel_jobs(void);

/* The number of threads ag_parallel_for would use right now (1 inside a task). */
int ag_parallel_threads(void);

/* The stack a worker of the pool reserves, in bytes: the system's default
 * for a new thread (ulimit -s), which counts against ulimit -v in full. */
size_t ag_thread_stack_bytes(void);

#endif /* AG_THREADS_H */
