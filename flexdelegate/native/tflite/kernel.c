/* One partition kernel (init / prepare / invoke / free). Init builds the IR and packs weights;
 * prepare infers shapes, resizes partition outputs and plans the memory (plan/planner.h);
 * invoke only resolves pointers and runs the plan (no allocation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/band.h"
#include "plan/planner.h"
#include "store/sigbus.h"
#include "runtime/clock.h"
#include "delegate.h"
#include "flex_api.h"

typedef struct fx_partition {
  fx_delegate *d;
  const void *sg_ctx; /* the subgraph it is registered in, found by context: a pointer into
                       * d->subgraphs would dangle once another subgraph grows that array */
  fx_graph g;
  /* Partition outputs whose value is known before invoke (folded): TFLite index, local id
   * (-1 if no node here reads it) and the load-time blob, copied out at every invoke. */
  int *outputs_static, *outputs_static_local;
  fx_blob **static_blobs;
  int n_static;
  fx_mem_plan plan;     /* its memory plan (plan/planner.h) */
  void *arena;
  size_t arena_size;
  fx_pool *pool;
  int damage_seen; /* fx_sigbus_any() when this partition last repaired its weights */
} fx_partition;

static void unregister(fx_partition *p) {
  fx_subgraph *sg = p->sg_ctx ? fx_find_subgraph(p->d, p->sg_ctx) : NULL;
  for (int i = 0; sg && i < sg->n_parts; i++)
    if (sg->parts[i] == p) sg->parts[i] = sg->parts[--sg->n_parts];
}

static void partition_free(TfLiteContext *ctx, void *buffer) {
  (void)ctx;
  fx_partition *p = buffer;
  if (!p) return;
  fx_delegate *d = p->d;
  if (d) pthread_mutex_lock(&d->state_lock);
  unregister(p);
  fx_mem_plan_free(&p->plan);
  fx_graph_free(&p->g);
  for (int i = 0; i < p->n_static; i++) fx_blob_unref(p->static_blobs[i]);
  free(p->static_blobs);
  free(p->outputs_static);
  free(p->outputs_static_local);
  free(p->arena);
  free(p);
  if (d) {
    pthread_mutex_unlock(&d->state_lock);
    fx_delegate_unref(d); /* may be the last reference: the runtime destroyed it already */
  }
}

/* 0: runs at invoke; 1: folded at load (constant); 2: folded but shape-derived, so it is
 * re-evaluated at every prepare (input shapes may change without a new delegate Prepare). */
static int folded_kind(const fx_subgraph *sg, const TfLiteNode *node) {
  int kind = 1;
  for (int i = 0; i < node->outputs->size; i++) {
    int o = node->outputs->data[i];
    if (o < 0 || o >= sg->n_tensors || !sg->statics[o]) return 0;
    if (sg->statics[o]->shape_dependent) kind = 2;
  }
  return kind;
}

static void *partition_init(TfLiteContext *ctx, const char *buffer, size_t length) {
  (void)length;
  const TfLiteDelegateParams *params = (const TfLiteDelegateParams *)buffer;
  fx_delegate *d = params->delegate->data_;
  fx_subgraph *sg = fx_find_subgraph(d, ctx);
  fx_partition *p = calloc(1, sizeof *p);
  int *local = malloc(sizeof(int) * (ctx->tensors_size ? ctx->tensors_size : 1));
  const int n_out = params->output_tensors->size;
  if (p) {
    p->outputs_static = calloc((size_t)(n_out ? n_out : 1), sizeof(int));
    p->outputs_static_local = calloc((size_t)(n_out ? n_out : 1), sizeof(int));
    p->static_blobs = calloc((size_t)(n_out ? n_out : 1), sizeof(fx_blob *));
  }
  if (!sg || !p || !local || !p->outputs_static || !p->outputs_static_local || !p->static_blobs) goto fail;
  memset(local, -1, sizeof(int) * ctx->tensors_size);
  p->d = fx_delegate_ref(d);
  fx_translate tr = {ctx, sg, local, NULL, 1, &d->opts.rounding};
  int folded = 0;
  for (int i = 0; i < params->nodes_to_replace->size; i++) {
    int idx = params->nodes_to_replace->data[i];
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (ctx->GetNodeAndRegistration(ctx, idx, &node, &reg) != kTfLiteOk) goto fail;
    int fk = folded_kind(sg, node);
    if (fk == 1) { folded++; continue; }
    const int first = p->g.n_nodes;
    const char *why = fx_translate_node(&tr, &p->g, idx, node, reg);
    if (why) {
      ctx->ReportError(ctx, "flexdelegate: node %d (%s): %s\n", idx, fx_builtin_name(reg->builtin_code), why);
      goto fail;
    }
    for (int k = first; k < p->g.n_nodes; k++) p->g.nodes[k].at_prepare = fk == 2;
  }
  for (int i = 0; i < params->input_tensors->size; i++) {
    int t = params->input_tensors->data[i];
    if (t >= 0 && local[t] >= 0 && p->g.tensors[local[t]].storage == FX_ST_ARENA)
      p->g.tensors[local[t]].storage = FX_ST_EXTERNAL;
  }
  for (int i = 0; i < n_out; i++) {
    int t = params->output_tensors->data[i];
    if (t < 0) continue;
    if (sg->statics[t]) {
      if (!fx_blob_data(sg->statics[t])) goto fail; /* copied out at every invoke: a value now */
      p->outputs_static[p->n_static] = t;
      p->outputs_static_local[p->n_static] = local[t];
      p->static_blobs[p->n_static++] = fx_blob_ref(sg->statics[t]);
    } else if (local[t] >= 0) {
      p->g.tensors[local[t]].storage = FX_ST_EXTERNAL;
    }
  }
  if (fx_choose_winograd(&p->g, d->opts.winograd)) goto fail;
  for (int i = 0; i < p->g.n_nodes; i++) {
    /* partition inputs/outputs are marked by now */
    const char *why = fx_fuse_node(&p->g, &p->g.nodes[i]) ? "out of memory" : NULL;
    if (!why) why = fx_prepare_node_weights(&p->g, &p->g.nodes[i], d->store);
    if (why) {
      ctx->ReportError(ctx, "flexdelegate: node %d: %s\n", p->g.nodes[i].tfl_node, why);
      goto fail;
    }
  }
  if (fx_band_find(&p->g) < 0) goto fail; /* the chains that may run band by band (ir/band.h) */
  fx_partition **parts = realloc(sg->parts, sizeof *parts * (size_t)(sg->n_parts + 1));
  if (!parts) goto fail;
  sg->parts = parts;
  sg->parts[sg->n_parts++] = p;
  p->sg_ctx = sg->ctx;
  sg->partitions++;
  fx_log(FX_LOG_PARTITION, "partition %d: %d nodes (%d folded at load), %d inputs, %d outputs",
         sg->partitions - 1, params->nodes_to_replace->size, folded, params->input_tensors->size, n_out);
  free(local);
  return p;
fail:
  free(local);
  partition_free(ctx, p);
  return NULL;
}

/* Recomputes a shape-derived value for the shapes just inferred (inputs are constants, or
 * for SHAPE only the input's shape matters). */
static const char *eval_at_prepare(fx_graph *g, fx_node *n) {
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i] >= 0) g->tensors[n->in[i]].ptr = (void *)g->tensors[n->in[i]].cdata;
  fx_tensor *y = &g->tensors[n->out[0]];
  fx_blob *b = fx_blob_new(y->dtype, &y->shape);
  if (!b) return "out of memory";
  b->shape_dependent = 1;
  y->ptr = b->data;
  if (fx_run_node(g, n, NULL)) {
    fx_blob_unref(b);
    return "invalid shape computation";
  }
  fx_blob_unref(y->blob);
  y->blob = b;
  y->cdata = b->data;
  return NULL;
}

static int shape_equals_dims(const fx_shape *s, const TfLiteIntArray *dims) {
  if (!dims || dims->size != s->rank) return 0;
  for (int i = 0; i < s->rank; i++)
    if (dims->data[i] != s->d[i]) return 0;
  return 1;
}

/* Gives TFLite tensor t shape s (a partition output); 0 ok, -1 failed. */
static int resize_output(TfLiteContext *ctx, int t, const fx_shape *s) {
  if (shape_equals_dims(s, ctx->tensors[t].dims)) return 0;
  TfLiteIntArray *dims = malloc(sizeof(TfLiteIntArray) + sizeof(int) * (size_t)s->rank);
  if (!dims) return -1;
  dims->size = s->rank;
  memcpy(dims->data, s->d, sizeof(int) * (size_t)s->rank);
  return ctx->ResizeTensor(ctx, &ctx->tensors[t], dims) == kTfLiteOk ? 0 : -1;
}

/* The value of static partition output i: re-evaluated at prepare if shape-derived. */
static const fx_blob *static_output(const fx_partition *p, int i) {
  const int id = p->outputs_static_local[i];
  return id >= 0 && p->g.tensors[id].blob ? p->g.tensors[id].blob : p->static_blobs[i];
}

/* The arena is exactly the plan's size: a smaller budget must give memory back, not keep it. */
static int resize_arena(fx_partition *p, size_t bytes) {
  if (bytes == p->arena_size && p->arena) return 0;
  free(p->arena);
  p->arena = aligned_alloc(FLEX_ARENA_ALIGN, (bytes + FLEX_ARENA_ALIGN - 1) / FLEX_ARENA_ALIGN * FLEX_ARENA_ALIGN + FLEX_ARENA_ALIGN);
  p->arena_size = p->arena ? bytes : 0;
  return p->arena ? 0 : -1;
}

/* The partition's memory for the delegate's current budget: a plan (plan/planner.h chooses
 * the planner), an arena of its size, and the plan started on it. */
static const char *plan_once(fx_partition *p, int threads, flex_error *err) {
  const char *why = fx_plan_memory(&p->plan, &p->g, threads, p->d->opts.budget_mb, p->d->store, err);
  if (!why && resize_arena(p, p->plan.arena_bytes)) why = "out of memory for the arena";
  if (!why) why = p->plan.planner->start(&p->plan, p->arena);
  if (why) fx_mem_plan_free(&p->plan);
  return why;
}

/* Packs again in memory the weights of every node whose cache mapping was damaged (see
 * store/sigbus.h): -1 out of memory, else whether any was. */
static int repair_nodes(fx_partition *p) {
  int repaired = 0;
  for (int i = 0; i < p->g.n_nodes; i++) {
    const int r = fx_node_repair(&p->g.nodes[i]);
    if (r < 0) return -1;
    repaired |= r;
  }
  return repaired;
}

static void warn_budget_lost(void) {
  fprintf(stderr, "flexdelegate: warning: the budget is not held until the delegate is loaded again (its "
                  "cache file changed under it)\n");
}

static const char *plan_memory(fx_partition *p, int threads, flex_error *err) {
  /* Unbudgeted runs verify weights at first use through the mapping; streamed ones never go
   * through it, so they are checked here, once, through the file. */
  for (int i = 0; p->d->opts.budget_mb > 0 && i < p->g.n_nodes; i++)
    if (fx_node_check_unmapped(&p->g.nodes[i])) return "out of memory checking weights";
  const char *why = plan_once(p, threads, err);
  if (why && p->d->opts.budget_mb > 0) { /* the pinned weights' read came up short? */
    fx_mapping_check_files();
    const int seen = fx_sigbus_any();
    if (seen != p->damage_seen && repair_nodes(p) > 0) {
      p->damage_seen = seen;
      if (!(why = plan_once(p, threads, err))) warn_budget_lost();
    }
  }
  return why;
}

int fx_partition_add_gemm_forms(fx_partition *p, int mapped_only) {
  return fx_pack_gemm_forms(&p->g, p->d->store, mapped_only);
}

const char *fx_partition_memory(const fx_partition *p, size_t *arena, size_t *min_budget, int *steps) {
  *arena = p->plan.arena_bytes;
  *min_budget = p->plan.min_budget_bytes;
  *steps = p->plan.n_steps;
  return p->plan.planner ? p->plan.planner->name : "none";
}

const char *fx_partition_replan(struct fx_partition *p, flex_error *err) {
  return plan_memory(p, fx_pool_threads(p->pool), err);
}

static TfLiteStatus prepare_locked(TfLiteContext *ctx, fx_partition *p);

static TfLiteStatus partition_prepare(TfLiteContext *ctx, TfLiteNode *node) {
  fx_partition *p = node->user_data;
  if (!p) return kTfLiteError;
  pthread_mutex_lock(&p->d->state_lock); /* its plan is what stats() and set_budget() read */
  TfLiteStatus status = prepare_locked(ctx, p);
  pthread_mutex_unlock(&p->d->state_lock);
  return status;
}

static TfLiteStatus prepare_locked(TfLiteContext *ctx, fx_partition *p) {
  fx_graph *g = &p->g;
  /* Shapes flow from the partition inputs as TFLite has them now (resize_tensor_input). */
  for (int i = 0; i < g->n_tensors; i++) {
    fx_tensor *t = &g->tensors[i];
    if (t->storage != FX_ST_EXTERNAL) continue;
    const TfLiteIntArray *dims = ctx->tensors[t->tfl].dims;
    if (!dims || dims->size > FX_MAX_RANK) return kTfLiteError;
    t->shape.rank = dims->size;
    memcpy(t->shape.d, dims->data, sizeof(int) * (size_t)dims->size);
  }
  for (int i = 0; i < g->n_nodes; i++) {
    const char *why = fx_infer_node(g, &g->nodes[i]);
    if (!why && g->nodes[i].at_prepare) why = eval_at_prepare(g, &g->nodes[i]);
    g->nodes[i].flops = why ? 0 : fx_node_flops(g, &g->nodes[i]);
    if (why) {
      ctx->ReportError(ctx, "flexdelegate: node %d: %s\n", g->nodes[i].tfl_node, why);
      return kTfLiteError;
    }
  }
  /* Partition outputs: tell TFLite the shapes we produce, computed or folded at load. */
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_tensor *t = &g->tensors[g->nodes[i].out[0]];
    if (t->storage == FX_ST_EXTERNAL && resize_output(ctx, t->tfl, &t->shape)) return kTfLiteError;
    /* A tensor only we read still has a TFLite twin, which TFLite allocates at its declared
     * shape when the model also lists it as a graph input: give it ours, as the stock
     * kernel's Prepare would (a malformed declared shape may be absurdly large). */
    if (t->storage == FX_ST_ARENA && t->tfl >= 0 && ctx->tensors[t->tfl].allocation_type == kTfLiteArenaRw &&
        resize_output(ctx, t->tfl, &t->shape))
      return kTfLiteError;
  }
  for (int i = 0; i < p->n_static; i++)
    if (resize_output(ctx, p->outputs_static[i], &static_output(p, i)->shape)) return kTfLiteError;
  int threads = p->d->opts.num_threads > 0 ? p->d->opts.num_threads
                : ctx->recommended_num_threads > 0 ? ctx->recommended_num_threads : 1;
  p->pool = fx_delegate_pool(p->d, threads);
  if (!p->pool) return kTfLiteError;
  flex_error err = {.node = -1};
  const char *why = plan_memory(p, threads, &err);
  fx_delegate_plan_outcome(p->d, why, &err);
  if (why) {
    ctx->ReportError(ctx, "flexdelegate: %s\n", why);
    return kTfLiteError;
  }
  return kTfLiteOk;
}

int fx_partition_n_ops(const fx_partition *p) { return p->g.n_nodes; }

void fx_partition_op(const fx_partition *p, int i, fx_op_report *out) {
  const fx_node *n = &p->g.nodes[i];
  out->node = n->tfl_node;
  out->builtin = n->tfl_builtin;
  int slices = 1;
  const int kernel = p->plan.planner ? p->plan.planner->node_kernel(&p->plan, i, &slices) : FLEX_KERNEL_NODE;
  const struct fx_conv_pack *pack = kernel == FLEX_KERNEL_NODE ? n->pack : fx_node_pack(n, kernel);
  fx_node_kernel(&p->g, n, pack, kernel, out->kernel, sizeof out->kernel);
  out->flops = n->flops;
  out->runs = n->prof_runs;
  out->time_us = n->prof_runs ? (double)n->prof_ns / 1e3 / (double)n->prof_runs : 0.0;
  out->slices = slices;
}

static TfLiteStatus run_partition(TfLiteContext *ctx, fx_partition *p);

/* Packs again in memory whatever weights a cache file changed or cut short under its mapping
 * damaged (one fstat per live mapping per invoke finds a file rewritten in place; a SIGBUS one
 * truncated), before they reach a kernel. A budget plan is laid out again over the repacked
 * weights: correct results, its weights no longer streamed (over budget) until the delegate is
 * loaded again — one warning says so. Same lock order as set_budget(). */
static TfLiteStatus repair_damage(TfLiteContext *ctx, fx_partition *p) {
  fx_mapping_check_files();
  const int seen = fx_sigbus_any();
  if (seen == p->damage_seen) return kTfLiteOk;
  pthread_mutex_lock(&p->d->state_lock);
  pthread_rwlock_wrlock(&p->d->weights_lock);
  const int repaired = repair_nodes(p);
  const char *why = repaired < 0 ? "out of memory packing weights again" : NULL;
  if (repaired > 0 && p->plan.planner == &fx_budget_planner) {
    flex_error err;
    p->damage_seen = seen; /* the re-plan below need not look again */
    if (!(why = fx_partition_replan(p, &err))) warn_budget_lost();
  }
  if (!why) p->damage_seen = seen;
  pthread_rwlock_unlock(&p->d->weights_lock);
  pthread_mutex_unlock(&p->d->state_lock);
  if (why) ctx->ReportError(ctx, "flexdelegate: %s\n", why);
  return why ? kTfLiteError : kTfLiteOk;
}

/* One run under the weights lock (held shared: set_budget() replaces the plan and arena). */
static TfLiteStatus run_locked(TfLiteContext *ctx, fx_partition *p) {
  fx_graph *g = &p->g;
  pthread_rwlock_rdlock(&p->d->weights_lock);
  if (!p->plan.planner) { /* a re-plan failed, and so did going back to the old budget */
    pthread_rwlock_unlock(&p->d->weights_lock);
    ctx->ReportError(ctx, "flexdelegate: the partition has no memory plan\n");
    return kTfLiteError;
  }
  for (int i = 0; i < g->n_tensors; i++) {
    fx_tensor *t = &g->tensors[i];
    switch (t->storage) {
      case FX_ST_EXTERNAL: t->ptr = ctx->tensors[t->tfl].data.raw; break;
      case FX_ST_ARENA:
        t->ptr = p->plan.offsets[i] == (size_t)-1 ? NULL : (char *)p->arena + p->plan.offsets[i];
        break;
      default: t->ptr = (void *)t->cdata;
    }
  }
  fx_pool_set_active(p->pool, 1);
  TfLiteStatus status = run_partition(ctx, p);
  fx_pool_set_active(p->pool, 0);
  pthread_rwlock_unlock(&p->d->weights_lock);
  return status;
}

static TfLiteStatus partition_invoke(TfLiteContext *ctx, TfLiteNode *node) {
  fx_partition *p = node->user_data;
  const int log_exec = fx_log_mask & FX_LOG_EXEC;
  uint64_t t0 = log_exec ? fx_now_ns() : 0;
  fx_delegate_settle(p->d, 0);
  TfLiteStatus status;
  for (int attempt = 0;; attempt++) {
    if (repair_damage(ctx, p) != kTfLiteOk) return kTfLiteError;
    status = run_locked(ctx, p);
    /* The cache file cut short or rewritten during the run: its results may hold zeros or
     * foreign bytes, never hand them out. Repair and run again (inputs are untouched). */
    fx_mapping_check_files();
    if (fx_sigbus_any() == p->damage_seen) break;
    if (attempt) {
      ctx->ReportError(ctx, "flexdelegate: the weight cache file keeps changing under the run\n");
      return kTfLiteError;
    }
  }
  if (log_exec)
    fx_log(FX_LOG_EXEC, "partition %p: %d nodes, %d threads%s, %.1f us%s", (void *)p, p->g.n_nodes,
           fx_pool_threads(p->pool), p->plan.planner == &fx_budget_planner ? ", budgeted" : "", (fx_now_ns() - t0) / 1e3,
           status == kTfLiteOk ? "" : " (failed)");
  return status;
}

static TfLiteStatus run_partition(TfLiteContext *ctx, fx_partition *p) {
  fx_graph *g = &p->g;
  char msg[FLEX_MSG_LEN];
  if (p->plan.planner->run(&p->plan, g, p->pool, p->arena, p->d->opts.profile, msg, sizeof msg)) {
    ctx->ReportError(ctx, "flexdelegate: %s\n", msg);
    return kTfLiteError;
  }
  for (int i = 0; i < p->n_static; i++) {
    TfLiteTensor *t = &ctx->tensors[p->outputs_static[i]];
    const fx_blob *b = static_output(p, i);
    size_t n = b->bytes < t->bytes ? b->bytes : t->bytes;
    if (t->data.raw) memcpy(t->data.raw, b->data, n);
  }
  return kTfLiteOk;
}

TfLiteRegistration fx_partition_registration(void) {
  TfLiteRegistration r;
  memset(&r, 0, sizeof r); /* every field of the largest layout, including later additions */
  r.init = partition_init;
  r.free = partition_free;
  r.prepare = partition_prepare;
  r.invoke = partition_invoke;
  r.builtin_code = kTfLiteBuiltinDelegate;
  r.custom_name = "FlexDelegate";
  r.version = 1;
  return r;
}
