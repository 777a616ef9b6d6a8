#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include "clock.h"
#include "pool.h"

/* Waiting is a spin, then a sleep on a condition variable. While an invoke runs, idle workers
 * spin FX_SPIN_NS before parking: a MobileNet has ~60 small ops a few microseconds apart, and
 * waking a parked thread per op costs more than the op. After an invoke they linger a little
 * (back-to-back invokes find them awake), then park; an invoke's start wakes parked ones at
 * once, so they are spinning by its first parallel op. Waking is what costs: on a VM an idle
 * vCPU halts and takes long to come back (MobileNetV2 at 2 threads, invoked in rounds 60 ms
 * apart: median 4.6 ms with workers asleep at each invoke's start, 2.6 ms with the wake).
 *
 * The spin is short and never calls sched_yield. On a busy machine (more runnable threads
 * than cores) a longer spin burns the share of CPU the other thread of the job needs, and
 * Linux's EEVDF scheduler (6.6 on) pushes a yielding thread's deadline back a slice per yield,
 * so a worker that spin-yields between ops is picked last. Measured on MobileNetV2 at 2 threads,
 * 2 cores at load 4-6: the worker ran 4-8% of the tasks with the former 20000-poll spin that
 * yielded past 2000, 40-45% with a short spin then park; bench/compare.py flex / LiteRT XNNPack
 * went from 1.84 and 1.99 to 1.07 and 1.08 (runs alternated). */
#define FX_SPIN_NS 50000   /* inside an invoke: longer than the gap between two ops */
#define FX_LINGER_NS 100000 /* after an invoke */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* A spin bounded in time, not in polls (a pause is ~10 to ~140 cycles across x86 cores). */
typedef struct { uint64_t until; unsigned polls; } spin_clock;

static spin_clock spin_for(uint64_t ns) { return (spin_clock){fx_now_ns() + ns, 0}; }

/* One poll: a pause, and every 64th a look at the clock. 0 once the time is up. */
static inline int spin_more(spin_clock *c) {
  cpu_relax();
  return ++c->polls % 64 || fx_now_ns() < c->until;
}

/* A job ends when all its tasks are done, not when every worker has checked in: tasks are
 * claimed one at a time, so a worker the OS has not scheduled yet (a busy machine, more
 * threads than free cores) simply claims none and the caller never waits for it. The tasks are
 * cut into one contiguous range per thread, each with its own claim word: a thread runs its
 * range first, then helps the others (taking from their fronts). Contiguous and the same from
 * op to op, so a thread mostly reads the rows it wrote itself in the op before, from its own
 * core's cache. A claim word packs (job number << 32 | next task), so a late worker can never
 * claim a task of a job it did not see start. */
#define JOB_SHIFT 32
#define TASK_MASK ((uint64_t)0xFFFFFFFFu)

/* One thread's range of the current job: [next, end), next in the claim word. Alone on its
 * cache line (the owner claims from it at every task). */
typedef struct {
  _Alignas(64) atomic_uint_fast64_t claim; /* (job << 32) | next task index */
  atomic_size_t end;
} task_range;

struct fx_pool {
  int threads;
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done_cv;
  task_range *ranges;         /* one per thread */
  atomic_ulong generation;    /* bumped per job; workers wait for a new one */
  atomic_size_t done;         /* tasks of the current job finished */
  atomic_int sleepers;        /* workers parked (or about to park) on `wake` */
  atomic_int caller_waiting;  /* the caller parked on `done_cv` */
  atomic_int active;          /* inside an invoke: spin before sleeping */
  atomic_ulong rouse;         /* bumped when an invoke starts: parked workers wake to spin */
  atomic_int stop;
  /* The current job: written between closing the claim words and publishing the new ones,
   * read only by a worker that then claims a task of that job (which proves they were its). */
  atomic_size_t n;
  _Atomic(fx_tid_task_fn) fn;
  _Atomic(void *) ctx;
};

/* The tid of the task this thread is running, -1 outside tasks: a task that starts a job of
 * its own runs it inline under its own tid (a pool serves one job at a time, and the caller
 * would wait on itself), so the nested tasks use that thread's scratch. */
static _Thread_local int task_tid = -1;

static void finish_task(fx_pool *p, size_t n) {
  if (atomic_fetch_add(&p->done, 1) + 1 == n && atomic_load(&p->caller_waiting)) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

/* Claims and runs tasks of job `job` from range r until it is empty; 0 once the job is over
 * (or a newer job replaced it). */
static int run_range(fx_pool *p, uint64_t job, int tid, task_range *r, size_t n, fx_tid_task_fn fn, void *ctx) {
  uint64_t s = atomic_load(&r->claim);
  for (;;) {
    if ((s >> JOB_SHIFT) != job) return 0;
    if ((s & TASK_MASK) >= atomic_load_explicit(&r->end, memory_order_relaxed)) return 1;
    if (!atomic_compare_exchange_weak(&r->claim, &s, s + 1)) continue; /* s reloaded */
    task_tid = tid;
    fn(ctx, tid, (size_t)(s & TASK_MASK));
    task_tid = -1;
    finish_task(p, n);
    s = atomic_load(&r->claim);
  }
}

/* Runs tasks of job `job`: thread tid's own range, then the others' in turn. */
static void run_tasks(fx_pool *p, uint64_t job, int tid) {
  if ((atomic_load(&p->ranges[tid].claim) >> JOB_SHIFT) != job) return;
  const size_t n = atomic_load_explicit(&p->n, memory_order_relaxed);
  fx_tid_task_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
  void *ctx = atomic_load_explicit(&p->ctx, memory_order_relaxed);
  /* Pairs with the release fence in fx_parallel_tasks: if we read any field of a newer job
   * (n, fn, ctx or a range's end), our claims below see the closed claim words and fail. */
  atomic_thread_fence(memory_order_acquire);
  for (int i = 0; i < p->threads; i++)
    if (!run_range(p, job, tid, &p->ranges[(tid + i) % p->threads], n, fn, ctx)) return;
}

/* Wakes parked workers. Taking and dropping the mutex first orders the wake after any worker
 * that counted itself a sleeper and is re-checking under it (no lost wake-up); broadcasting
 * after the unlock spares a woken worker from blocking on the mutex we would still hold. */
static void wake_parked(fx_pool *p) {
  pthread_mutex_lock(&p->mu);
  pthread_mutex_unlock(&p->mu);
  pthread_cond_broadcast(&p->wake);
}

typedef struct { fx_pool *pool; int tid; } worker_arg;

static void *worker_main(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  fx_pool *p = wa.pool;
  unsigned long seen = 0, roused = atomic_load(&p->rouse);
  for (;;) {
    spin_clock spin = spin_for(atomic_load_explicit(&p->active, memory_order_relaxed) ? FX_SPIN_NS : FX_LINGER_NS);
    while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop) && spin_more(&spin)) {}
    if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);
      while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen && atomic_load(&p->rouse) == roused)
        pthread_cond_wait(&p->wake, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
      roused = atomic_load(&p->rouse);
      if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) continue; /* roused: spin */
    }
    if (atomic_load(&p->stop)) break;
    seen = atomic_load(&p->generation);
    run_tasks(p, (uint64_t)seen & TASK_MASK, wa.tid);
  }
  return NULL;
}

fx_pool *fx_pool_new(int threads) {
  fx_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->threads = threads < 1 ? 1 : threads;
  p->ranges = aligned_alloc(_Alignof(task_range), (size_t)p->threads * sizeof(task_range));
  if (!p->ranges) { free(p); return NULL; }
  for (int t = 0; t < p->threads; t++) {
    atomic_init(&p->ranges[t].claim, TASK_MASK); /* job 0, nothing to claim */
    atomic_init(&p->ranges[t].end, 0);
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  if (p->threads > 1) {
    p->workers = calloc((size_t)p->threads - 1, sizeof(pthread_t));
    if (!p->workers) { fx_pool_free(p); return NULL; }
    for (int i = 1; i < p->threads; i++) {
      worker_arg *wa = malloc(sizeof *wa);
      if (!wa) { p->threads = i; fx_pool_free(p); return NULL; }
      *wa = (worker_arg){p, i};
      if (pthread_create(&p->workers[i - 1], NULL, worker_main, wa)) {
        free(wa);
        p->threads = i; /* join the ones that started */
        fx_pool_free(p);
        return NULL;
      }
    }
  }
  return p;
}

void fx_pool_free(fx_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->threads; i++) pthread_join(p->workers[i - 1], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done_cv);
  free(p->workers);
  free(p->ranges);
  free(p);
}

int fx_pool_threads(const fx_pool *p) { return p ? p->threads : 1; }

void fx_pool_set_active(fx_pool *p, int active) {
  if (!p) return;
  atomic_store(&p->active, active);
  if (active && atomic_load(&p->sleepers)) {
    atomic_fetch_add(&p->rouse, 1);
    wake_parked(p);
  }
}

void fx_parallel_tasks(fx_pool *p, size_t n, fx_tid_task_fn fn, void *ctx) {
  /* No pool: the caller sized its scratch for one thread (fx_pool_threads(NULL) is 1), so tid 0
   * even inside a task; the band runner hands each strip its own thread's tile this way. */
  const int tid = p && task_tid >= 0 ? task_tid : 0;
  if (!p || p->threads == 1 || n <= 1 || n > TASK_MASK || task_tid >= 0) {
    for (size_t t = 0; t < n; t++) fn(ctx, tid, t);
    return;
  }
  /* Every task of the previous job is claimed and done, but a worker late for it may have read
   * its claim word (all claimed) and be reading the fields we rewrite: with our larger n it
   * would claim one past the end, run a task twice and count it as done, so we would return
   * with a task still running. Closing the claim words first makes that claim fail. */
  const unsigned long gen = atomic_load(&p->generation) + 1;
  const uint64_t job = (uint64_t)gen & TASK_MASK;
  const size_t T = (size_t)p->threads;
  for (size_t t = 0; t < T; t++) /* nothing to claim: n <= TASK_MASK */
    atomic_store(&p->ranges[t].claim, (job << JOB_SHIFT) | TASK_MASK);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&p->n, n, memory_order_relaxed);
  atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
  for (size_t t = 0; t < T; t++) atomic_store_explicit(&p->ranges[t].end, (t + 1) * n / T, memory_order_relaxed);
  atomic_store(&p->done, 0);
  for (size_t t = 0; t < T; t++) atomic_store(&p->ranges[t].claim, (job << JOB_SHIFT) | (t * n / T));
  atomic_store(&p->generation, gen);
  /* Spinning workers see the generation directly; only parked ones need the lock (a worker
   * counts itself a sleeper before re-checking the generation under it: no lost wake-up). */
  if (atomic_load(&p->sleepers)) wake_parked(p);
  run_tasks(p, job, 0);
  spin_clock spin = spin_for(FX_SPIN_NS);
  while (atomic_load(&p->done) < n && spin_more(&spin)) {}
  if (atomic_load(&p->done) < n) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_waiting, 1);
    while (atomic_load(&p->done) < n) pthread_cond_wait(&p->done_cv, &p->mu);
    atomic_store(&p->caller_waiting, 0);
    pthread_mutex_unlock(&p->mu);
  }
}

/* The range form, on top of the task form. */
typedef struct { size_t n, grain; fx_task_fn fn; void *ctx; } range_job;

static void range_task(void *arg, int tid, size_t task) {
  (void)tid;
  range_job *j = arg;
  size_t b = task * j->grain, e = b + j->grain;
  j->fn(j->ctx, b, e < j->n ? e : j->n);
}

void fx_parallel_for(fx_pool *p, size_t n, size_t grain, fx_task_fn fn, void *ctx) {
  if (!n) return;
  if (!grain) grain = 1;
  int threads = fx_pool_threads(p);
  /* At most ~16 tasks per thread (4 inline on one thread): tasks are claimed one at a time, so
   * the threads end at most one task apart, and with 4 per thread that was up to 25 % of an
   * op's time with a thread idle (int8 MobileNetV2 ran 2 threads at 0.6x its 1-thread time). */
  const size_t per = threads > 1 ? 16 : 4;
  size_t min_grain = (n + (size_t)threads * per - 1) / ((size_t)threads * per);
  if (grain < min_grain) grain = min_grain;
  range_job j = {n, grain, fn, ctx};
  fx_parallel_tasks(p, (n + grain - 1) / grain, range_task, &j);
}
