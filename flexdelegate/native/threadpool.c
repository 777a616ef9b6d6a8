#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "pool.h"

struct fx_pool {
  int threads;
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  unsigned long generation; /* bumped per job; workers wait for a new one */
  int busy;                 /* workers still in the current job */
  int stop;
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
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, wa.tid);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
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
  p->stop = 1;
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

void fx_parallel_tasks(fx_pool *p, size_t n, fx_tid_task_fn fn, void *ctx) {
  if (!p || p->threads == 1 || n <= 1) {
    for (size_t t = 0; t < n; t++) fn(ctx, 0, t);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->n = n;
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->next, 0);
  p->busy = p->threads - 1;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  run_tasks(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->busy) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
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
