/* The delegate object: its options, references, locks, thread pools, weight store and the
 * record of every subgraph it partitioned. */
#include <stdlib.h>
#include <string.h>
#include "delegate.h"
#include "kernels/gemm/gemm.h"
#include "store/store.h"

fx_delegate *fx_delegate_new(fx_options *opts) {
  fx_delegate *d = calloc(1, sizeof *d);
  if (d) d->store = fx_store_new();
  if (!d || !d->store) {
    free(opts->cache_path);
    free(d);
    return NULL;
  }
  d->opts = *opts; /* takes over cache_path */
  fx_log_mask = d->opts.log | fx_log_env_mask();
  pthread_rwlock_init(&d->weights_lock, NULL);
  pthread_mutexattr_t recursive;
  pthread_mutexattr_init(&recursive);
  pthread_mutexattr_settype(&recursive, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&d->state_lock, &recursive);
  pthread_mutexattr_destroy(&recursive);
  d->refs = 1;
  fx_gemm_config_get(); /* probe the CPU once, here, under the runtime's lock */
  d->base.data_ = d;
  d->base.Prepare = fx_delegate_prepare;
  /* Without this flag TFLite refuses the delegate for any graph whose stock prepare yields
   * a dynamic tensor, e.g. the SHAPE -> PACK -> RESHAPE chains of Keras 3 exports, which we
   * fold. In exchange, resizes re-run only our kernels' prepare, which re-infers shapes. */
  d->base.flags = kTfLiteDelegateFlagsAllowDynamicTensors;
  return d;
}

fx_delegate *fx_delegate_ref(fx_delegate *d) {
  __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
  return d;
}

void fx_delegate_unref(fx_delegate *d) {
  if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL)) return;
  for (int i = 0; i < d->n_subgraphs; i++) {
    fx_subgraph_clear(&d->subgraphs[i]);
    free(d->subgraphs[i].parts);
  }
  free(d->subgraphs);
  for (int i = 0; i < d->n_pools; i++) fx_pool_free(d->pools[i]);
  free(d->pools);
  fx_store_free(d->store); /* waits for a background write */
  pthread_rwlock_destroy(&d->weights_lock);
  pthread_mutex_destroy(&d->state_lock);
  free(d->opts.cache_path);
  free(d);
}

void fx_delegate_settle(fx_delegate *d, int wait) {
  if (!wait && !fx_store_settling(d->store)) return;
  if (wait) pthread_rwlock_wrlock(&d->weights_lock);
  else if (pthread_rwlock_trywrlock(&d->weights_lock)) return; /* an invoke is running: later */
  fx_store_settle(d->store, wait);
  pthread_rwlock_unlock(&d->weights_lock);
}

fx_subgraph *fx_find_subgraph(fx_delegate *d, const void *ctx) {
  for (int i = 0; i < d->n_subgraphs; i++)
    if (d->subgraphs[i].ctx == ctx) return &d->subgraphs[i];
  return NULL;
}

fx_subgraph *fx_subgraph_for(fx_delegate *d, const void *ctx) {
  fx_subgraph *sg = fx_find_subgraph(d, ctx);
  if (sg) return sg;
  fx_subgraph *grown = realloc(d->subgraphs, sizeof *grown * (size_t)(d->n_subgraphs + 1));
  if (!grown) return NULL;
  d->subgraphs = grown;
  sg = &d->subgraphs[d->n_subgraphs++];
  memset(sg, 0, sizeof *sg);
  sg->ctx = ctx;
  return sg;
}

void fx_subgraph_clear(fx_subgraph *sg) {
  for (int i = 0; sg->statics && i < sg->n_tensors; i++) fx_blob_unref(sg->statics[i]);
  free(sg->statics);
  free(sg->fallback);
  const void *ctx = sg->ctx;
  int n_parts = sg->n_parts;
  struct fx_partition **parts = sg->parts;
  memset(sg, 0, sizeof *sg);
  sg->ctx = ctx;
  sg->n_parts = n_parts;
  sg->parts = parts;
}

fx_pool *fx_delegate_pool(fx_delegate *d, int threads) {
  for (int i = 0; i < d->n_pools; i++)
    if (fx_pool_threads(d->pools[i]) == threads) return d->pool = d->pools[i];
  fx_pool **grown = realloc(d->pools, sizeof *grown * (size_t)(d->n_pools + 1));
  if (!grown) return NULL;
  d->pools = grown;
  fx_pool *pool = fx_pool_new(threads);
  if (!pool) return NULL;
  d->pools[d->n_pools++] = pool;
  return d->pool = pool;
}
