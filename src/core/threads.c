/*
 * threads.c - a small persistent pool of pthreads behind ag_parallel_for.
 *
 * ag_set_threads(n) asks for n threads in all (the caller plus n-1 workers)
 * and starts the workers (when called from inside a task, the next parallel
 * call does); they sleep on a condition variable between calls, so no thread
 * is created per call. One mutex, pool_mu, guards all shared state (simple,
 * and helgrind reads it easily); tasks are coarse, so taking it once per task
 * costs nothing. A second, run_mu, lets one thread at a time run a job or
 * resize the pool.
 * The pool is stopped and joined by ag_set_threads(1) and at exit; a child
 * of fork() starts with an empty pool (its parent's workers are not in it).
 * Tasks must not fork.
 */
#include "alloc.h"
#include "gemm.h"
#include "threads.h"
#include "attograd.h"

#include <pthread.h>
#include <stdlib.h>

#define AG_MAX_THREADS 256

typedef struct worker {
    pthread_t tid;
    unsigned long gen;      /* the job generation when it was started */
    void *pack;             /* its packing buffer, made by the starting thread */
} worker;

/* pool_mu guards every field below it. run_mu is held by the one thread that
 * is running a job or resizing the pool. */
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;   /* a job was posted, or stop */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;   /* the last worker left a job */
static int want_threads = 1;
static worker *workers;        /* (n_workers) */
static int n_workers;
static int stopping;
static unsigned long generation;   /* bumped once per posted job */
static ag_task_fn job_fn;
static void *job_ctx;
static size_t job_n, job_next;     /* tasks in the job, the next one to claim */
static int job_busy;               /* workers that have not finished the job */

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

/* Set in workers, and in a caller while it runs a job: nested calls run serially. */
static _Thread_local int in_pool;

/* Claim and run tasks until none are left. Called with pool_mu held. */
static void run_tasks(void)
{
    while (job_next < job_n) {
        size_t i = job_next++;
        pthread_mutex_unlock(&pool_mu);
        job_fn(job_ctx, i);
        pthread_mutex_lock(&pool_mu);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    in_pool = 1;
    ag_gemm_pack_adopt(w->pack);
    pthread_mutex_lock(&pool_mu);
    unsigned long seen = w->gen;
    for (;;) {
        while (!stopping && generation == seen)
            pthread_cond_wait(&work_cv, &pool_mu);
        if (stopping)
            break;
        seen = generation;
        run_tasks();
        if (--job_busy == 0)
            pthread_cond_signal(&done_cv);
    }
    pthread_mutex_unlock(&pool_mu);
    return NULL;
}

/* Stop and join every worker. Called with run_mu held and no job running. */
static void pool_stop(void)
{
    pthread_mutex_lock(&pool_mu);
    stopping = 1;
    pthread_cond_broadcast(&work_cv);
    int n = n_workers;
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].tid, NULL);
    pthread_mutex_lock(&pool_mu);
    free(workers);
    workers = NULL;
    n_workers = 0;
    stopping = 0;
    pthread_mutex_unlock(&pool_mu);
}

static void pool_atexit(void)
{
    /* a job still running on another thread keeps its workers: leave them */
    if (pthread_mutex_trylock(&run_mu) != 0)
        return;
    pool_stop();
    pthread_mutex_unlock(&run_mu);
}

/* A child of fork() has none of the parent's workers: start it with an empty
 * pool (and fresh locks, which another parent thread may have held). */
static void pool_atfork_child(void)
{
    pthread_mutex_init(&run_mu, NULL);
    pthread_mutex_init(&pool_mu, NULL);
    pthread_cond_init(&work_cv, NULL);
    pthread_cond_init(&done_cv, NULL);
    free(workers);
    workers = NULL;
    n_workers = 0;
    stopping = 0;
    job_busy = 0;
    job_n = job_next = 0;
    in_pool = 0;
}

static int hooks_ok;   /* the fork handler is in place: workers may start */

static void register_hooks(void)
{
    /* without the fork handler a forked child could wait on workers it does
     * not have, so then the pool never starts (everything runs serially);
     * without the exit handler the workers are merely not joined at exit */
    hooks_ok = pthread_atfork(NULL, NULL, pool_atfork_child) == 0;
    atexit(pool_atexit);
}

/* Make the pool hold want-1 workers. Called with run_mu held and no job
 * running. When a thread cannot be started the pool keeps the ones it has. */
static void pool_resize(int want)
{
    if (n_workers == want - 1)
        return;
    if (n_workers > 0)
        pool_stop();
    if (want <= 1)
        return;
    pthread_once(&hooks_once, register_hooks);
    if (!hooks_ok)
        return;
    worker *ws = ag_calloc((size_t)want - 1, sizeof(*ws));
    if (!ws)
        return;
    pthread_mutex_lock(&pool_mu);
    workers = ws;
    for (int i = 0; i < want - 1; i++) {
        ws[i].gen = generation;
        ws[i].pack = ag_gemm_pack_new();
        if (pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]) != 0) {
            free(ws[i].pack);
            break;
        }
        n_workers++;
    }
    pthread_mutex_unlock(&pool_mu);
}

void ag_set_threads(int n)
{
    if (n < 1)
        n = 1;
    if (n > AG_MAX_THREADS)
        n = AG_MAX_THREADS;
    pthread_mutex_lock(&pool_mu);
    want_threads = n;
    pthread_mutex_unlock(&pool_mu);
    /* From inside a task the pool is busy: the next parallel call resizes it. */
    if (!in_pool) {
        pthread_mutex_lock(&run_mu);
        pool_resize(n);
        pthread_mutex_unlock(&run_mu);
    }
}

int ag_get_threads(void)
{
    pthread_mutex_lock(&pool_mu);
    int n = want_threads;
    pthread_mutex_unlock(&pool_mu);
    return n;
}

int ag_parallel_threads(void)
{
    return in_pool ? 1 : ag_get_threads();
}

static void run_serial(size_t n_tasks, ag_task_fn fn, void *ctx)
{
    for (size_t i = 0; i < n_tasks; i++)
        fn(ctx, i);
}

void ag_parallel_for(size_t n_tasks, ag_task_fn fn, void *ctx)
{
    if (n_tasks == 0 || !fn)
        return;
    if (n_tasks == 1 || in_pool || ag_get_threads() <= 1 || pthread_mutex_trylock(&run_mu) != 0) {
        run_serial(n_tasks, fn, ctx);
        return;
    }
    pool_resize(ag_get_threads());
    pthread_mutex_lock(&pool_mu);
    if (n_workers == 0) {
        pthread_mutex_unlock(&pool_mu);
        pthread_mutex_unlock(&run_mu);
        run_serial(n_tasks, fn, ctx);
        return;
    }
    job_fn = fn;
    job_ctx = ctx;
    job_n = n_tasks;
    job_next = 0;
    job_busy = n_workers;
    generation++;
    pthread_cond_broadcast(&work_cv);
    in_pool = 1;
    run_tasks();
    while (job_busy > 0)
        pthread_cond_wait(&done_cv, &pool_mu);
    in_pool = 0;
    job_fn = NULL;
    job_ctx = NULL;
    pthread_mutex_unlock(&pool_mu);
    pthread_mutex_unlock(&run_mu);
}
