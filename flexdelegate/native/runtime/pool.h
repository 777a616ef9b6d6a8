/* A small thread pool: workers park on a condition variable between invokes and spin only
 * briefly between jobs. A job's tasks are cut into one contiguous range per thread (the
 * calling thread is tid 0, the first range), each handed out one task at a time through its
 * own atomic counter; a thread done with its range takes tasks from the others', so fast
 * threads take more tiles and a thread the OS has descheduled holds up at most the one task it
 * is running. */
#ifndef FLEX_POOL_H
#define FLEX_POOL_H
#include <stddef.h>

typedef struct fx_pool fx_pool;
fx_pool *fx_pool_new(int threads);   /* threads >= 1; 1 makes a pool that runs inline */
void fx_pool_free(fx_pool *pool);
/* Threads of a pool (1 for NULL): lets kernels size their split. */
int fx_pool_threads(const fx_pool *pool);
/* Marks an invoke in progress (workers spin briefly between jobs) or over (they sleep). */
void fx_pool_set_active(fx_pool *pool, int active);
/* Runs fn(ctx, tid, task) for task in [0, n), each exactly once; tid in [0, threads) names the
 * running thread's per-thread scratch. Returns when every task is done. Called from inside a
 * task (nested), it runs the tasks inline under that task's tid; a NULL pool runs them inline
 * as tid 0, wherever it is called from (its caller sized the scratch for one thread). */
typedef void (*fx_tid_task_fn)(void *ctx, int tid, size_t task);
void fx_parallel_tasks(fx_pool *pool, size_t n, fx_tid_task_fn fn, void *ctx);
/* The range form: fn(ctx, begin, end) over [0, n) in chunks of at least `grain` items (a NULL
 * pool runs it inline). */
typedef void (*fx_task_fn)(void *ctx, size_t begin, size_t end);
void fx_parallel_for(fx_pool *pool, size_t n, size_t grain, fx_task_fn fn, void *ctx);
#endif
