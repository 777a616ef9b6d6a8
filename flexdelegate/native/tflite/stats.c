/* flex_stats_json (flex_api.h): what the last Prepare found and how every partition runs, as
 * the JSON delegate.stats() returns. */
#include <stdarg.h>
#include <stdio.h>
#include "delegate.h"
#include "flex_api.h"
#include "kernels/gemm/gemm.h"
#include "store/store.h"

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

/* The nodes left to stock, with their reasons (stats()["fallback"]'s items). */
static void put_fallback(sbuf *s, const fx_delegate *d) {
  int first = 1;
  for (int i = 0; d && i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_fallback; j++) {
      const fx_fallback *f = &d->subgraphs[i].fallback[j];
      put(s, "%s{\"subgraph\": %d, \"node\": %d, \"op\": ", first ? "" : ", ", i, f->node);
      put_json_string(s, fx_builtin_name(f->builtin));
      put(s, ", \"reason\": ");
      put_json_string(s, f->reason);
      put(s, "}");
      first = 0;
    }
}

/* Each delegated op: its kernel, flops, runs and time (stats()["ops"]). */
static void put_ops(sbuf *s, const fx_delegate *d) {
  int first = 1;
  for (int i = 0; d && i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      const struct fx_partition *part = d->subgraphs[i].parts[j];
      for (int k = 0; k < fx_partition_n_ops(part); k++) {
        fx_op_report r;
        fx_partition_op(part, k, &r);
        put(s, "%s{\"subgraph\": %d, \"partition\": %d, \"node\": %d, \"op\": \"%s\", \"kernel\": ",
            first ? "" : ", ", i, j, r.node, fx_builtin_name(r.builtin));
        put_json_string(s, r.kernel);
        put(s, ", \"flops\": %.0f, \"runs\": %llu, \"time_us\": %.3f, \"slices\": %d}", r.flops,
            (unsigned long long)r.runs, r.time_us, r.slices);
        first = 0;
      }
    }
}

/* The weight store: the cache file and the weights' backing memory (stats()["cache"], ["memory"]). */
static void put_store(sbuf *s, fx_delegate *d) {
  fx_delegate_settle(d, 1); /* report the cache as it ends up, not mid-write */
  fx_store_stats st;
  fx_store_get_stats(d->store, &st);
  const char *path = fx_store_path(d->store);
  put(s, ", \"cache\": {\"path\": ");
  if (path) put_json_string(s, path);
  else put(s, "null");
  put(s, ", \"file_ok\": %s, \"writable\": %s, \"blobs_mapped\": %zu, \"bytes_mapped\": %zu, \"blobs_packed\": %zu, "
          "\"bytes_packed\": %zu, \"blobs_deduped\": %zu, \"bytes_deduped\": %zu, \"keys_replayed\": %zu}",
      st.file_ok ? "true" : "false", st.writable ? "true" : "false", st.blobs_mapped, st.bytes_mapped, st.blobs_packed, st.bytes_packed,
      st.blobs_deduped, st.bytes_deduped, st.keys_replayed);
  static const char *const backing[] = {"memory", "cache_file", "temp_file"};
  put(s, ", \"memory\": {\"weights_backing\": \"%s\", \"budget_held\": %s, \"temp_dir\": ",
      backing[st.backing],
      d->opts.budget_mb <= 0 ? "null" : st.backing != FX_BACKING_MEMORY || !st.bytes_packed ? "true" : "false");
  if (st.backing == FX_BACKING_TEMP_FILE) put_json_string(s, st.temp_dir);
  else put(s, "null");
  put(s, ", \"temp_on_tmpfs\": %s}", st.temp_tmpfs ? "true" : "false");
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
  put_fallback(&s, d);
  /* The totals above summed over every subgraph this delegate prepared: one TfLiteContext
   * each, so a delegate shared by two interpreters reports each one's coverage here. */
  put(&s, "], \"by_subgraph\": [");
  for (int i = 0; d && i < d->n_subgraphs; i++) {
    const fx_subgraph *sg = &d->subgraphs[i];
    put(&s, "%s{\"subgraph\": %d, \"nodes_total\": %d, \"nodes_delegated\": %d, \"nodes_folded\": %d, "
            "\"partitions\": %d, \"fallback\": %d}", i ? ", " : "", i, sg->nodes_total, sg->nodes_delegated,
        sg->nodes_folded, sg->partitions, sg->n_fallback);
  }
  put(&s, "], \"budget_mb\": %.6g, \"partitions_memory\": [", d ? d->opts.budget_mb : 0.0);
  int first = 1;
  for (int i = 0; d && i < d->n_subgraphs; i++)
    for (int j = 0; j < d->subgraphs[i].n_parts; j++) {
      size_t arena, min_budget;
      int steps;
      const char *planner = fx_partition_memory(d->subgraphs[i].parts[j], &arena, &min_budget, &steps);
      put(&s, "%s{\"arena_bytes\": %zu, \"min_budget_bytes\": %zu, \"steps\": %d, \"planner\": \"%s\"}",
          first ? "" : ", ", arena, min_budget, steps, planner);
      first = 0;
    }
  put(&s, "], \"ops\": [");
  put_ops(&s, d);
  put(&s, "]");
  if (d) put_store(&s, d);
  put(&s, "}");
  if (cap) buf[s.len < cap ? s.len : cap - 1] = 0;
  return s.len;
}
