/* Stress of the thread pool (flexdelegate/native/runtime/threadpool.c): pools created, run and freed
 * over and over, jobs alternating tiny (the caller runs all of it before a worker arrives)
 * and larger. Every task of a job must run exactly once, and none may still be running when
 * fx_parallel_tasks returns (a late one outlives the caller's data, e.g. a freed arena).
 * fx_parallel_for must cover [0, n) exactly once in chunks of at least its grain (odd sizes,
 * any thread count), and a task that starts a job of its own (nested) must see it run whole.
 * Each thread runs its own contiguous range of a job's tasks first (the same rows from op to
 * op, in its core's cache): with 2 tasks per thread, every thread's pair on that thread.
 * Prints "ok" or the failures; exits non-zero on failure.
 * Usage: pool_stress [cycles] [threads] */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* fx_parallel_for: every index of [0, n) in exactly one chunk, chunks no shorter than the
 * grain except the one that ends at n. */
#define RANGE_MAX 1031
typedef struct { size_t n, grain; atomic_int hits[RANGE_MAX]; atomic_int short_chunks; } range_check;

static void range_part(void *arg, size_t b, size_t e) {
  range_check *r = arg;
  if (e - b < r->grain && e != r->n) atomic_fetch_add(&r->short_chunks, 1);
  for (size_t i = b; i < e && i < RANGE_MAX; i++) atomic_fetch_add(&r->hits[i], 1);
}

static int check_ranges(fx_pool *p) {
  static const size_t sizes[] = {1, 2, 3, 7, 13, 64, 97, 255, 1031};
  static const size_t grains[] = {0, 1, 3, 8, 100, 2000};
  static range_check r;
  int err = 0;
  for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
    for (size_t b = 0; b < sizeof grains / sizeof *grains; b++) {
      memset(&r, 0, sizeof r);
      r.n = sizes[a];
      r.grain = grains[b] ? grains[b] : 1;
      fx_parallel_for(p, r.n, grains[b], range_part, &r);
      for (size_t i = 0; i < r.n; i++)
        if (atomic_load(&r.hits[i]) != 1)
          err = printf("parallel_for n=%zu grain=%zu: index %zu covered %d times\n", r.n, grains[b], i, atomic_load(&r.hits[i]));
      if (atomic_load(&r.short_chunks)) err = printf("parallel_for n=%zu grain=%zu: a chunk shorter than the grain\n", r.n, grains[b]);
    }
  return err != 0;
}

/* Nested: each outer task runs a whole inner job on the same pool, under its own tid (the
 * thread's scratch is its own), then one with no pool, under tid 0 (a kernel given no pool
 * sized its scratch for one thread: the band runner hands each strip its own tile that way). */
typedef struct { fx_pool *pool; atomic_int inner[8][MAXN], alone[8][MAXN]; atomic_int wrong_tid; } nest;
typedef struct { nest *j; atomic_int *ran; int tid; } nest_inner;
static void inner_task(void *arg, int tid, size_t t) {
  nest_inner *in = arg;
  if (tid != in->tid) atomic_fetch_add(&in->j->wrong_tid, 1);
  atomic_fetch_add(&in->ran[t], 1);
}
static void outer_task(void *arg, int tid, size_t t) {
  nest *j = arg;
  nest_inner in = {j, j->inner[t], tid}, alone = {j, j->alone[t], 0};
  for (volatile int k = 0; k < 20000; k++) {} /* long enough for a worker to take some */
  fx_parallel_tasks(j->pool, MAXN, inner_task, &in);
  fx_parallel_tasks(NULL, MAXN, inner_task, &alone);
}

static int check_nested(fx_pool *p) {
  static nest j;
  int err = 0;
  memset(&j, 0, sizeof j);
  j.pool = p;
  fx_parallel_tasks(p, 8, outer_task, &j);
  for (int o = 0; o < 8; o++)
    for (int i = 0; i < MAXN; i++) {
      if (atomic_load(&j.inner[o][i]) != 1) err = printf("nested: outer %d inner %d ran %d times\n", o, i, atomic_load(&j.inner[o][i]));
      if (atomic_load(&j.alone[o][i]) != 1) err = printf("nested, no pool: outer %d inner %d ran %d times\n", o, i, atomic_load(&j.alone[o][i]));
    }
  if (atomic_load(&j.wrong_tid)) err = printf("nested: %d inner tasks ran under the wrong tid\n", atomic_load(&j.wrong_tid));
  return err != 0;
}

/* 2 tasks per thread, thread t's range {2t, 2t+1}. All first tasks wait for each other, then
 * all second ones: each thread must be inside a task of both rounds at once, so a thread that
 * took another's task would leave its own waiting (a shared counter handing out 0, 1, 2, ...
 * puts a first and a second task on the two threads of a pair and deadlocks: the timeout). */
#define OWN_MAX 16
typedef struct { int threads; atomic_int arrived[2], tid_of[2 * OWN_MAX], timeouts; } owned;
static void owned_task(void *arg, int tid, size_t t) {
  owned *o = arg;
  atomic_store(&o->tid_of[t], tid);
  atomic_fetch_add(&o->arrived[t % 2], 1);
  const time_t until = time(NULL) + 20;
  while (atomic_load(&o->arrived[t % 2]) < o->threads)
    if (sched_yield(), time(NULL) > until) {
      atomic_fetch_add(&o->timeouts, 1);
      return;
    }
}

static int check_own_ranges(fx_pool *p, int threads) {
  static owned o;
  if (threads < 2 || threads > OWN_MAX) return 0;
  memset(&o, 0, sizeof o);
  o.threads = threads;
  fx_parallel_tasks(p, 2 * (size_t)threads, owned_task, &o);
  if (atomic_load(&o.timeouts)) return printf("own ranges: tasks waited 20 s for their round\n"), 1;
  int err = 0;
  for (int t = 0; t < 2 * threads; t++)
    if (atomic_load(&o.tid_of[t]) != t / 2) err = printf("own ranges: task %d ran on thread %d\n", t, atomic_load(&o.tid_of[t]));
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
      if (c % 50 == 0) errs += check_ranges(p) + check_nested(p) + check_own_ranges(p, threads);
      fx_pool_set_active(p, 0);
    }
    fx_pool_free(p);
  }
  if (atomic_load(&bad)) printf("%d tasks ran with an index past their job's end\n", atomic_load(&bad));
  if (errs || atomic_load(&bad)) return printf("FAIL\n"), 1;
  printf("ok\n");
  return 0;
}
