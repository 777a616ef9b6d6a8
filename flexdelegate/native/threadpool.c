#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "pool.h"

/* While an invoke runs, idle workers spin this many polls before sleeping: a MobileNet has
 * ~60 small ops, and waking a sleeping thread per op costs more than the op. Between
 * invokes (pool inactive) they sleep at once. */
#define FX_SPIN_POLLS 20000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

struct fx_pool {
  int threads;
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  atomic_ulong generation; /* bumped per job; workers wait for a new one */
  atomic_int busy;         /* workers still in the current job */
  atomic_int active;       /* inside an invoke: spin before sleeping */
  atomic_int stop;
  /* the current job */
  size_t n;
  atomic_size_t next;
  fx_tid_task_fn fn;
  void *ctx;
};

static void run_tasks(fx_pool *p, int tid) {
  for (;;) {
    size_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (t >= p->n) return;
    p->fn(p->ctx, tid, t);
  }
}

typedef struct { fx_pool *pool; int tid; } worker_arg;

static void *worker_main(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  fx_pool *p = wa.pool;
  unsigned long seen = 0;
  for (;;) {
    for (int spins = 0; atomic_load(&p->generation) == seen && !atomic_load(&p->stop) &&
                        atomic_load_explicit(&p->active, memory_order_relaxed) && spins < FX_SPIN_POLLS;
         spins++)
      cpu_relax();
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen) pthread_cond_wait(&p->wake, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (atomic_load(&p->stop)) break;
    seen = atomic_load(&p->generation);
    run_tasks(p, wa.tid);
    if (atomic_fetch_sub(&p->busy, 1) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

fx_pool *fx_pool_new(int threads) {
  fx_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->threads = threads < 1 ? 1 : threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
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
  pthread_cond_destroy(&p->done);
  free(p->workers);
  free(p);
}

int fx_pool_threads(const fx_pool *p) { return p ? p->threads : 1; }

void fx_pool_set_active(fx_pool *p, int active) {
  if (p) atomic_store(&p->active, active);
}

void fx_parallel_tasks(fx_pool *p, size_t n, fx_tid_task_fn fn, void *ctx) {
  if (!p || p->threads == 1 || n <= 1) {
    for (size_t t = 0; t < n; t++) fn(ctx, 0, t);
    return;
  }
  p->n = n;
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->next, 0);
  atomic_store(&p->busy, p->threads - 1);
  /* Publish, then wake sleepers under the lock (a worker checks the generation under it
   * before sleeping, so no wake-up is lost); spinning workers see the store directly. */
  atomic_fetch_add(&p->generation, 1);
  pthread_mutex_lock(&p->mu);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  run_tasks(p, 0);
  for (int spins = 0; atomic_load(&p->busy) && spins < FX_SPIN_POLLS; spins++) cpu_relax();
  if (atomic_load(&p->busy)) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->busy)) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}

/* ops.h's range form, on top of the task form. */
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
  /* Never fewer than ~4 tasks per thread, so the atomic counter can balance the load. */
  size_t min_grain = (n + (size_t)threads * 4 - 1) / ((size_t)threads * 4);
  if (grain < min_grain) grain = min_grain;
  range_job j = {n, grain, fn, ctx};
  fx_parallel_tasks(p, (n + grain - 1) / grain, range_task, &j);
}
