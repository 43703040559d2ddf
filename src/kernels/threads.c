/*
 * threads.c - a small persistent pool of pthreads behind ag_parallel_for.
 *
 * ag_set_threads(n) asks for n threads in all (the caller plus n-1 workers)
 * and starts the workers (when called from inside a task, the next parallel
 * call does). A training step makes a few hundred parallel calls of 20 us
 * to 1 ms each, so waking a sleeping thread for every one (tens of
 * microseconds on a VM) would cost more than the second thread gains:
 * between calls a worker spins for a while (SPIN_NS) on the job word, and
 * only then sleeps on a condition variable. The caller, once it has run out
 * of tasks, spins the same way for the last ones to finish.
 *
 * A job is open from its posting until every task has finished. A worker
 * joins it by counting itself into the job word (a CAS that fails once the
 * job is closed or replaced), so a worker the machine has not scheduled in
 * time is never waited for: the caller closes the job, and waits only for
 * the workers that joined. Tasks are claimed with one atomic add each, each
 * thread first from its own run of them (ag_runs_take: the caller the first
 * run, worker k the k+1-th), then from the others'. Which thread runs a
 * task never changes what the task computes.
 * pool_mu guards the sleeping and waking and the worker list; run_mu lets
 * one thread at a time run a job or resize the pool. The pool is stopped and
 * joined by ag_set_threads(1) and at exit; a child of fork() starts with an
 * empty pool (its parent's workers are not in it). Tasks must not fork.
 */
#include "../core/alloc.h"
#include "threads.h"
#include "attograd.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define AG_MAX_THREADS 256
/* How long an idle thread spins before it sleeps: longer than the serial
 * stretches between a step's parallel calls, short enough that a pool left
 * idle goes quiet at once to a person's eye. After YIELD_NS of it the
 * spinner offers its core at every look (sched_yield): on a machine with
 * more runnable threads than cores, the thread it waits for may be the one
 * that needs the core. */
#define SPIN_NS 200000L
#define YIELD_NS 20000L

typedef struct worker {
    pthread_t tid;
    size_t slot; /* its run of each job's tasks (the caller's is 0) */
    void *state; /* its per-thread state (ag_pool_set_worker_init), made by the starting thread */
} worker;

/*
 * The job word: the job's number in the high 32 bits, JOB_OPEN while it
 * takes workers, and in the low bits the number of workers that joined.
 * Posting stores a new number with JOB_OPEN and no workers; closing clears
 * JOB_OPEN. The job's fields below are written only while no worker can
 * join (before posting, after closing and every joined worker left).
 */
#define JOB_OPEN ((uint64_t)1 << 31)
#define JOB_WORKERS(w) ((w) & (JOB_OPEN - 1))
#define JOB_ID(w) ((w) >> 32)
static _Atomic uint64_t job_word;
static ag_task_fn job_fn;
static void *job_ctx;
static size_t job_n;                    /* tasks in the job */
static ag_run job_runs[AG_MAX_THREADS]; /* thread s's run of the tasks */
static size_t job_n_runs;
static _Atomic size_t job_done; /* tasks finished */
static _Atomic size_t job_left; /* joined workers that are done with the job */
static _Atomic int stopping;

/* run_mu is held by the one thread that is running a job or resizing the
 * pool. pool_mu guards the fields below it and the waits on the two
 * condition variables. */
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER; /* a job was posted, or stop */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER; /* the last task finished */
static int want_threads = 1;
static worker *workers;            /* (n_workers) */
static ag_worker_init worker_init; /* what each new worker gets first */
static int n_workers;
static int sleepers; /* workers waiting on work_cv */

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

/* Set in workers, and in a caller while it runs a job: nested calls run serially. */
static _Thread_local int in_pool;

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Spin until done(arg) holds or SPIN_NS pass; returns whether it holds. */
static int spin_until(int (*done)(const void *), const void *arg)
{
    long t0 = 0;
    for (unsigned i = 1;; i++) {
        if (done(arg))
            return 1;
        CPU_RELAX();
        if (i % 64 == 0) { /* the clock now and then: it costs more than a pause */
            long t = now_ns();
            if (t0 == 0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                return done(arg);
            else if (t - t0 > YIELD_NS)
                sched_yield();
        }
    }
}

/* Run task i of the job, and wake the caller if it was the last to finish
 * and the caller went to sleep. */
static void run_task(size_t i)
{
    job_fn(job_ctx, i);
    if (atomic_fetch_add_explicit(&job_done, 1, memory_order_acq_rel) + 1 == job_n) {
        pthread_mutex_lock(&pool_mu);
        pthread_cond_signal(&done_cv);
        pthread_mutex_unlock(&pool_mu);
    }
}

/* Claim and run the job's tasks until none are left: first those of this
 * thread's own run, then the others'. */
static void run_tasks(size_t slot)
{
    size_t i, from = 0;
    while ((i = ag_runs_take(job_runs, job_n_runs, slot, &from)) != SIZE_MAX)
        run_task(i);
}

/* A job other than number seen is open, or the pool is stopping. */
static int new_job(const void *arg)
{
    uint64_t w = atomic_load_explicit(&job_word, memory_order_acquire);
    return atomic_load_explicit(&stopping, memory_order_relaxed) ||
           ((w & JOB_OPEN) && JOB_ID(w) != *(const uint64_t *)arg);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    in_pool = 1;
    if (worker_init.adopt)
        worker_init.adopt(w->state);
    uint64_t seen = JOB_ID(atomic_load(&job_word));
    for (;;) {
        if (!spin_until(new_job, &seen)) {
            pthread_mutex_lock(&pool_mu);
            sleepers++;
            while (!new_job(&seen))
                pthread_cond_wait(&work_cv, &pool_mu);
            sleepers--;
            pthread_mutex_unlock(&pool_mu);
        }
        if (atomic_load(&stopping))
            break;
        /* join the job unless it closed (or was replaced) meanwhile */
        uint64_t word = atomic_load_explicit(&job_word, memory_order_acquire);
        while ((word & JOB_OPEN) && JOB_ID(word) != seen &&
               !atomic_compare_exchange_weak_explicit(&job_word, &word, word + 1,
                                                      memory_order_acq_rel, memory_order_acquire))
            ;
        if (!(word & JOB_OPEN) || JOB_ID(word) == seen)
            continue; /* too late for it: wait for the next one */
        seen = JOB_ID(word);
        run_tasks(w->slot);
        atomic_fetch_add_explicit(&job_left, 1, memory_order_release);
    }
    return NULL;
}

/* Stop and join every worker. Called with run_mu held and no job running. */
static void pool_stop(void)
{
    pthread_mutex_lock(&pool_mu);
    atomic_store(&stopping, 1);
    pthread_cond_broadcast(&work_cv);
    int n = n_workers;
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].tid, NULL);
    pthread_mutex_lock(&pool_mu);
    free(workers);
    workers = NULL;
    n_workers = 0;
    atomic_store(&stopping, 0);
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
    sleepers = 0;
    atomic_store(&stopping, 0);
    atomic_store(&job_word, atomic_load(&job_word) & ~(JOB_OPEN | (JOB_OPEN - 1)));
    in_pool = 0;
}

static int hooks_ok; /* the fork handler is in place: workers may start */

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
        ws[i].slot = (size_t)i + 1;
        ws[i].state = worker_init.make ? worker_init.make() : NULL;
        if (pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]) != 0) {
            free(ws[i].state);
            break;
        }
        n_workers++;
    }
    pthread_mutex_unlock(&pool_mu);
}

void ag_pool_set_worker_init(ag_worker_init init)
{
    pthread_mutex_lock(&run_mu);
    worker_init = init;
    pthread_mutex_unlock(&run_mu);
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

size_t ag_thread_stack_bytes(void)
{
    pthread_attr_t attr;
    size_t stack = 0, guard = 0;
    if (pthread_attr_init(&attr) == 0) {
        /* an attribute never set answers with what a new thread gets */
        if (pthread_attr_getstacksize(&attr, &stack) != 0 ||
            pthread_attr_getguardsize(&attr, &guard) != 0)
            stack = guard = 0;
        pthread_attr_destroy(&attr);
    }
    /* a libc that does not say: glibc's usual default, so no stack goes uncounted */
    return stack ? stack + guard : (size_t)8 << 20;
}

static void run_serial(size_t n_tasks, ag_task_fn fn, void *ctx)
{
    for (size_t i = 0; i < n_tasks; i++)
        fn(ctx, i);
}

static int all_done(const void *arg)
{
    (void)arg;
    return atomic_load_explicit(&job_done, memory_order_acquire) == job_n;
}

static int all_left(const void *arg)
{
    return atomic_load_explicit(&job_left, memory_order_acquire) == *(const uint64_t *)arg;
}

static _Atomic size_t jobs_shared; /* jobs the pool's threads took part in */

size_t ag_parallel_jobs(void)
{
    return atomic_load_explicit(&jobs_shared, memory_order_relaxed);
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
    if (n_workers == 0) { /* only run_mu's holder changes it */
        pthread_mutex_unlock(&run_mu);
        run_serial(n_tasks, fn, ctx);
        return;
    }
    /* no worker is in a job now: the fields are free to set */
    atomic_fetch_add_explicit(&jobs_shared, 1, memory_order_relaxed);
    job_fn = fn;
    job_ctx = ctx;
    job_n = n_tasks;
    /* thread s takes the s-th run first: see ag_runs_take */
    job_n_runs = (size_t)n_workers + 1;
    ag_runs_split(job_runs, job_n_runs, n_tasks);
    atomic_store_explicit(&job_done, 0, memory_order_relaxed);
    atomic_store_explicit(&job_left, 0, memory_order_relaxed);
    uint64_t id = JOB_ID(atomic_load(&job_word)) + 1;
    atomic_store_explicit(&job_word, id << 32 | JOB_OPEN, memory_order_release);
    pthread_mutex_lock(&pool_mu);
    if (sleepers > 0)
        pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&pool_mu);

    in_pool = 1;
    run_tasks(0);
    if (!spin_until(all_done, NULL)) {
        pthread_mutex_lock(&pool_mu);
        while (!all_done(NULL))
            pthread_cond_wait(&done_cv, &pool_mu);
        pthread_mutex_unlock(&pool_mu);
    }
    /* close the job; the workers that joined are leaving it */
    uint64_t joined = JOB_WORKERS(atomic_fetch_and(&job_word, ~JOB_OPEN));
    while (!spin_until(all_left, &joined))
        sched_yield();
    in_pool = 0;
    job_fn = NULL;
    job_ctx = NULL;
    pthread_mutex_unlock(&run_mu);
}

void ag_runs_split(ag_run *runs, size_t n_runs, size_t n)
{
    size_t each = n / n_runs, rest = n % n_runs, at = 0;
    for (size_t r = 0; r < n_runs; r++) {
        atomic_store_explicit(&runs[r].next, at, memory_order_relaxed);
        at += each + (r < rest);
        runs[r].end = at;
    }
}

size_t ag_runs_take(ag_run *runs, size_t n_runs, size_t own, size_t *from)
{
    if (n_runs == 1) { /* one taker: no locked instruction, which waits for earlier stores */
        size_t i = atomic_load_explicit(&runs->next, memory_order_relaxed);
        atomic_store_explicit(&runs->next, i + 1, memory_order_relaxed);
        return i < runs->end ? i : SIZE_MAX;
    }
    for (; *from < n_runs; ++*from) {
        ag_run *r = &runs[(own + *from) % n_runs];
        size_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (i < r->end)
            return i;
    }
    return SIZE_MAX;
}

typedef struct range_job {
    ag_range_fn fn;
    void *ctx;
    size_t n, grain;
} range_job;

static void range_task(void *ctx, size_t i)
{
    const range_job *r = ctx;
    size_t lo = i * r->grain, hi = r->n - lo < r->grain ? r->n : lo + r->grain;
    r->fn(r->ctx, lo, hi);
}

void ag_parallel_range(size_t n, size_t grain, ag_range_fn fn, void *ctx)
{
    if (n == 0 || !fn)
        return;
    if (grain == 0 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
    range_job r = {fn, ctx, n, grain};
    ag_parallel_for((n - 1) / grain + 1, range_task, &r);
}

typedef struct params_job {
    ag_tensor *const *params;
    size_t n, chunk; /* parameters; elements per chunk */
    ag_piece_fn fn;
    void *ctx;
} params_job;

static void params_task(void *ctx, size_t c)
{
    const params_job *j = ctx;
    size_t lo = c * j->chunk, hi = lo + j->chunk, at = 0; /* flat indices */
    for (size_t p = 0; p < j->n && at < hi; p++) {
        if (!j->params[p])
            continue;
        size_t size = j->params[p]->size;
        if (at + size > lo)
            j->fn(j->ctx, c, p, lo > at ? lo - at : 0, hi - at < size ? hi - at : size);
        at += size;
    }
}

size_t ag_params_range(ag_tensor *const *params, size_t n, size_t grain, ag_piece_fn fn, void *ctx)
{
    size_t total = 0;
    for (size_t p = 0; p < n; p++)
        total += params[p] ? params[p]->size : 0;
    if (total == 0)
        return 0;
    size_t most = (total - 1) / AG_PARAMS_CHUNKS + 1;
    params_job j = {params, n, grain > most ? grain : most, fn, ctx};
    size_t chunks = (total - 1) / j.chunk + 1;
    ag_parallel_for(chunks, params_task, &j);
    return chunks;
}
