/* Stress of the thread pool (flexdelegate/native/runtime/threadpool.c): pools created, run and freed
 * over and over, jobs alternating tiny (the caller runs all of it before a worker arrives)
 * and larger. Every task of a job must run exactly once, and none may still be running when
 * fx_parallel_tasks returns (a late one outlives the caller's data, e.g. a freed arena).
 * Prints "ok" or the failures; exits non-zero on failure.
 * Usage: pool_stress [cycles] [threads] */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/pool.h"

#define MAXN 64
typedef struct { size_t n; atomic_int runs[MAXN]; } job;
static atomic_int inflight, bad;

static void task(void *arg, int tid, size_t t) {
  (void)tid;
  job *j = arg;
  atomic_fetch_add(&inflight, 1);
  if (t >= j->n) atomic_fetch_add(&bad, 1);
  else atomic_fetch_add(&j->runs[t], 1);
  for (volatile size_t k = 0; j->n > 4 && k < t * 8; k++) {} /* tiny jobs: no work at all */
  atomic_fetch_sub(&inflight, 1);
}

static int run_job(fx_pool *p, size_t n) {
  job j = {n};
  int err = 0;
  fx_parallel_tasks(p, n, task, &j);
  if (atomic_load(&inflight)) err = printf("fx_parallel_tasks returned with a task running\n");
  for (size_t i = 0; i < n; i++)
    if (atomic_load(&j.runs[i]) != 1) err = printf("n=%zu: task %zu ran %d times\n", n, i, atomic_load(&j.runs[i]));
  while (atomic_load(&inflight)) sched_yield(); /* a late task must not see the next job's frame */
  memset(&j, 0xAB, sizeof j);
  return err != 0;
}

int main(int argc, char **argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 2000, threads = argc > 2 ? atoi(argv[2]) : 2, errs = 0;
  unsigned seed = 1;
  for (int c = 0; c < cycles && errs < 10; c++) {
    fx_pool *p = fx_pool_new(threads);
    if (!p) return printf("fx_pool_new failed\n"), 2;
    for (int invoke = 0; invoke < 1 + c % 3; invoke++) {
      fx_pool_set_active(p, 1);
      for (int k = 0; k < 200; k++) {
        seed = seed * 1103515245u + 12345u;
        errs += run_job(p, k % 2 ? 2 : 8 + (seed >> 16) % (MAXN - 8));
      }
      fx_pool_set_active(p, 0);
    }
    fx_pool_free(p);
  }
  if (atomic_load(&bad)) printf("%d tasks ran with an index past their job's end\n", atomic_load(&bad));
  if (errs || atomic_load(&bad)) return printf("FAIL\n"), 1;
  printf("ok\n");
  return 0;
}
