/* TFLite external-delegate plugin entry points and the stats the Python side reads. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "delegate.h"
#include "flex_api.h"
#include "kernels/gemm/gemm.h"
#include "store/store.h"

unsigned fx_env_log_mask(void);

void *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                    void (*report_error)(const char *)) {
  fx_delegate *d = calloc(1, sizeof *d);
  if (!d) {
    if (report_error) report_error("flexdelegate: out of memory");
    return NULL;
  }
  d->opts.num_threads = -1;
  /* Python's loader passes the count as a C int: only the low 32 bits are defined. */
  n = (size_t)(uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    const char *err = fx_parse_option(&d->opts, keys ? keys[i] : NULL, values ? values[i] : NULL);
    if (err) {
      char msg[256];
      snprintf(msg, sizeof msg, "flexdelegate: option '%s': %s", keys && keys[i] ? keys[i] : "?", err);
      if (report_error) report_error(msg);
      free(d->opts.cache_path);
      free(d);
      return NULL;
    }
  }
  fx_log_mask = d->opts.log | fx_env_log_mask();
  d->store = fx_store_new();
  if (!d->store) {
    if (report_error) report_error("flexdelegate: out of memory");
    free(d->opts.cache_path);
    free(d);
    return NULL;
  }
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
  return &d->base;
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

/* The runtime is done with the delegate; kernels of a live interpreter may still use it. */
void tflite_plugin_destroy_delegate(void *delegate) { fx_delegate_unref(delegate); }

void fx_delegate_settle(fx_delegate *d, int wait) {
  if (!wait && !fx_store_settling(d->store)) return;
  if (wait) pthread_rwlock_wrlock(&d->weights_lock);
  else if (pthread_rwlock_trywrlock(&d->weights_lock)) return; /* an invoke is running: later */
  fx_store_settle(d->store, wait);
  pthread_rwlock_unlock(&d->weights_lock);
}

/* Appends to a bounded buffer, tracking the length the full text would need. */
typedef struct { char *buf; size_t cap, len; } sbuf;
__attribute__((format(printf, 2, 3)))
static void put(sbuf *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = s->len < s->cap ? s->cap - s->len : 0;
  int k = vsnprintf(room ? s->buf + s->len : NULL, room, fmt, ap);
  va_end(ap);
  if (k > 0) s->len += (size_t)k;
}

static void put_json_string(sbuf *s, const char *str) {
  put(s, "\"");
  for (const char *p = str; *p; p++) {
    if (*p == '"' || *p == '\\') put(s, "\\%c", *p);
    else if ((unsigned char)*p < 0x20) put(s, "\\u%04x", *p);
    else put(s, "%c", *p);
  }
  put(s, "\"");
}

static size_t stats_locked(fx_delegate *d, char *buf, size_t cap);

size_t flex_stats_json(void *delegate, char *buf, size_t cap) {
  fx_delegate *d = delegate;
  if (d) pthread_mutex_lock(&d->state_lock);
  size_t len = stats_locked(d, buf, cap);
  if (d) pthread_mutex_unlock(&d->state_lock);
  return len;
}

static size_t stats_locked(fx_delegate *d, char *buf, size_t cap) {
  sbuf s = {buf, cap, 0};
  int total = 0, delegated = 0, folded = 0, parts = 0;
  for (int i = 0; d && i < d->n_subgraphs; i++) {
    total += d->subgraphs[i].nodes_total;
    delegated += d->subgraphs[i].nodes_delegated;
    folded += d->subgraphs[i].nodes_folded;
    parts += d->subgraphs[i].partitions;
  }
  put(&s, "{\"nodes_total\": %d, \"nodes_delegated\": %d, \"nodes_folded\": %d, \"partitions\": %d, "
          "\"subgraphs\": %d, \"gemm_kernel\": \"%s\", \"threads\": %d, \"fallback\": [",
      total, delegated, folded, parts, d ? d->n_subgraphs : 0, fx_gemm_config_get()->name,
      d ? fx_pool_threads(d->pool) : 0);
  int first = 1;
  for (int i = 0; d && i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_fallback; j++) {
      const fx_fallback *f = &d->subgraphs[i].fallback[j];
      put(&s, "%s{\"subgraph\": %d, \"node\": %d, \"op\": ", first ? "" : ", ", i, f->node);
      put_json_string(&s, fx_builtin_name(f->builtin));
      put(&s, ", \"reason\": ");
      put_json_string(&s, f->reason);
      put(&s, "}");
      first = 0;
    }
  put(&s, "], \"budget_mb\": %.6g, \"partitions_memory\": [", d ? d->opts.budget_mb : 0.0);
  first = 1;
  for (int i = 0; d && i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      size_t arena, min_budget;
      int steps;
      fx_partition_budget(d->subgraphs[i].parts[j], &arena, &min_budget, &steps);
      put(&s, "%s{\"arena_bytes\": %zu, \"min_budget_bytes\": %zu, \"steps\": %d}", first ? "" : ", ", arena,
          min_budget, steps);
      first = 0;
    }
  put(&s, "], \"ops\": [");
  first = 1;
  for (int i = 0; d && i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      const struct fx_partition *part = d->subgraphs[i].parts[j];
      for (int k = 0; k < fx_partition_n_ops(part); k++) {
        fx_op_report r;
        fx_partition_op(part, k, &r);
        put(&s, "%s{\"subgraph\": %d, \"partition\": %d, \"node\": %d, \"op\": \"%s\", \"kernel\": ",
            first ? "" : ", ", i, j, r.node, fx_builtin_name(r.builtin));
        put_json_string(&s, r.kernel);
        put(&s, ", \"flops\": %.0f, \"runs\": %llu, \"time_us\": %.3f, \"slices\": %d}", r.flops,
            (unsigned long long)r.runs, r.time_us, r.slices);
        first = 0;
      }
    }
  put(&s, "]");
  if (d) {
    fx_delegate_settle(d, 1); /* report the cache as it ends up, not mid-write */
    fx_store_stats st;
    fx_store_get_stats(d->store, &st);
    const char *path = fx_store_path(d->store);
    put(&s, ", \"cache\": {\"path\": ");
    if (path) put_json_string(&s, path);
    else put(&s, "null");
    put(&s, ", \"file_ok\": %s, \"blobs_mapped\": %zu, \"bytes_mapped\": %zu, \"blobs_packed\": %zu, "
            "\"bytes_packed\": %zu, \"blobs_deduped\": %zu, \"bytes_deduped\": %zu, \"keys_replayed\": %zu}",
        st.file_ok ? "true" : "false", st.blobs_mapped, st.bytes_mapped, st.blobs_packed, st.bytes_packed,
        st.blobs_deduped, st.bytes_deduped, st.keys_replayed);
  }
  put(&s, "}");
  if (cap) buf[s.len < cap ? s.len : cap - 1] = 0;
  return s.len;
}

/* Lays out every partition again for d's current budget; the first failure, or NULL. With
 * keep_going the others are still re-planned (restoring the old budget must reach them all). */
static const char *replan_all(fx_delegate *d, int keep_going, char *msg, size_t msg_len) {
  const char *first = NULL;
  for (int i = 0; i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      const char *why = fx_partition_replan(d->subgraphs[i].parts[j], msg, msg_len);
      if (why && !first) first = why;
      if (why && !keep_going) return first;
    }
  return first;
}

/* Going under a budget: the GEMM forms a load under a budget packs (delegate.c), written
 * to the cache file now, so the plan can stream them. 0 ok, -1 out of memory. */
static int add_gemm_forms(fx_delegate *d) {
  if (!fx_store_path(d->store)) return 0;
  for (int i = 0; i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++)
      if (fx_partition_add_gemm_forms(d->subgraphs[i].parts[j]) < 0) return -1;
  /* Only blobs the file lacks are worth a write (it copies the whole file). */
  if (fx_store_pending(d->store)) fx_store_commit(d->store, 0);
  return 0;
}

static int set_budget_locked(fx_delegate *d, double mb, char *msg, size_t msg_len);

int flex_set_budget(void *delegate, double mb, char *msg, size_t msg_len) {
  fx_delegate *d = delegate;
  const char *invalid = d ? flex_check_budget(mb) : "no delegate";
  if (invalid) {
    snprintf(msg, msg_len, "%s", invalid);
    return -1;
  }
  pthread_mutex_lock(&d->state_lock);
  fx_delegate_settle(d, 1); /* a budget plan streams weights from the file */
  pthread_rwlock_wrlock(&d->weights_lock); /* no invoke runs a plan being replaced */
  int rc = set_budget_locked(d, mb, msg, msg_len);
  pthread_rwlock_unlock(&d->weights_lock);
  pthread_mutex_unlock(&d->state_lock);
  return rc;
}

static int set_budget_locked(fx_delegate *d, double mb, char *msg, size_t msg_len) {
  if (mb > 0 && add_gemm_forms(d)) {
    snprintf(msg, msg_len, "out of memory packing the GEMM form of Winograd convolutions");
    return -1;
  }
  double old = d->opts.budget_mb;
  d->opts.budget_mb = mb;
  const char *why = replan_all(d, 0, msg, msg_len);
  if (!why) return 0;
  if (why != msg) snprintf(msg, msg_len, "%s", why);
  /* Keep the delegate runnable: back to the old budget (its plan is feasible). */
  d->opts.budget_mb = old;
  char ignored[512];
  replan_all(d, 1, ignored, sizeof ignored);
  return -1;
}
