/* The delegate's Prepare, i.e. partitioning: walks the execution plan, claims every node the
 * IR can run (folding what is known at load), records why the rest fall back, and asks TFLite
 * to group the claimed nodes into partition kernels (kernel.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "delegate.h"
#include "kernels/gemm/gemm.h"
#include "store/store.h"

void fx_add_fallback(fx_subgraph *sg, int node, int builtin, const char *why) {
  fx_fallback *f = &sg->fallback[sg->n_fallback++];
  f->node = node;
  f->builtin = builtin;
  snprintf(f->reason, sizeof f->reason, "%s", why);
  fx_log(FX_LOG_PARTITION, "node %d (%s) stays with TFLite: %s", node, fx_builtin_name(builtin), why);
}

/* A node whose inputs are all constant is evaluated now; SHAPE only needs the input's shape.
 * CONV/FC and the int8 GEMM layers are left to run (they would need packing and scratch just to
 * fold). */
static const char *try_fold(fx_graph *g, fx_node *n, fx_blob **out) {
  *out = NULL;
  if (n->kind == FX_OP_CONV || n->kind == FX_OP_FC || n->kind == FX_OP_QCONV || n->kind == FX_OP_QFC ||
      n->kind == FX_OP_QDEPTHWISE || n->kind == FX_OP_QTRANSPOSE_CONV || n->kind == FX_OP_QBATCH_MATMUL)
    return NULL;
  int shape_dependent = n->kind == FX_OP_SHAPE;
  for (int i = 0; i < n->n_in; i++) {
    if (n->in[i] < 0) continue;
    fx_tensor *t = &g->tensors[n->in[i]];
    if (t->storage != FX_ST_CONST && !(n->kind == FX_OP_SHAPE && i == 0)) return NULL;
    if (t->blob && t->blob->shape_dependent) shape_dependent = 1;
    t->ptr = (void *)t->cdata;
  }
  fx_tensor *y = &g->tensors[n->out[0]];
  fx_blob *b = fx_blob_new(y->dtype, &y->shape);
  if (!b) return "out of memory";
  y->ptr = b->data;
  if (fx_run_node(g, n, NULL)) {
    fx_blob_unref(b);
    return "invalid constant input (e.g. a gather index out of range)";
  }
  b->shape_dependent = shape_dependent;
  *out = b;
  return NULL;
}

/* produced_at[t] = the execution-plan position of the (last) node writing tensor t, or -1;
 * *first_bad = the first node reading what it or a later node writes, or left alone.
 * TFLite's partitioner crashes on a graph with such a node whatever we claim (a cycle, or
 * nodes out of order), so then nothing is claimed and the stock interpreter runs or refuses
 * the graph as it would without us. */
static int producer_positions(TfLiteContext *ctx, const TfLiteIntArray *plan, int *produced_at, int nt,
                              int *first_bad) {
  for (int t = 0; t < nt; t++) produced_at[t] = -1;
  for (int pass = 0; pass < 2; pass++)
    for (int p = 0; p < plan->size; p++) {
      TfLiteNode *node;
      TfLiteRegistration *reg;
      if (ctx->GetNodeAndRegistration(ctx, plan->data[p], &node, &reg) != kTfLiteOk) return -1;
      const TfLiteIntArray *ts = pass ? node->inputs : node->outputs;
      for (int i = 0; ts && i < ts->size; i++) {
        int t = ts->data[i];
        if (t < 0 || t >= nt) continue;
        if (!pass) {
          if (produced_at[t] >= 0 && *first_bad < 0) *first_bad = plan->data[p]; /* written twice */
          produced_at[t] = p;
        } else if (produced_at[t] >= p && *first_bad < 0) *first_bad = plan->data[p];
      }
    }
  return 0;
}

/* A model's identity for naming its default cache file: its structure (ops, shapes, types),
 * not its weights, so a re-trained model extends the same file instead of adding one. */
static uint64_t structure_hash(TfLiteContext *ctx, const TfLiteIntArray *plan) {
  fx_hasher h;
  fx_hasher_init(&h, 0x666c6578u);
  for (int p = 0; p < plan->size; p++) {
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (ctx->GetNodeAndRegistration(ctx, plan->data[p], &node, &reg) != kTfLiteOk) continue;
    fx_hasher_update(&h, &reg->builtin_code, sizeof reg->builtin_code);
    for (int io = 0; io < 2; io++) {
      const TfLiteIntArray *ts = io ? node->outputs : node->inputs;
      for (int i = 0; ts && i < ts->size; i++) {
        int t = ts->data[i];
        if (t < 0 || (size_t)t >= ctx->tensors_size) continue;
        const TfLiteTensor *tt = &ctx->tensors[t];
        fx_hasher_update(&h, &tt->type, sizeof tt->type);
        if (tt->dims) fx_hasher_update(&h, tt->dims->data, sizeof(int) * (size_t)tt->dims->size);
      }
    }
  }
  uint64_t out[2];
  fx_hasher_final(&h, out);
  return out[0];
}

/* The cache file for this subgraph: the cache_path option; "" = none; unset = one file per
 * model under $XDG_CACHE_HOME/flexdelegate (or ~/.cache/flexdelegate). */
static int cache_file_for(const fx_delegate *d, TfLiteContext *ctx, const TfLiteIntArray *plan,
                          char *out, size_t len) {
  if (d->opts.cache_path) {
    snprintf(out, len, "%s", d->opts.cache_path);
    return out[0] != 0;
  }
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char dir[4096];
  if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/flexdelegate", xdg);
  else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/flexdelegate", home);
  else return 0;
  /* mkdir -p of the parent too (a fresh home has no .cache yet). */
  char *slash = strrchr(dir, '/');
  if (slash) { *slash = 0; mkdir(dir, 0755); *slash = '/'; }
  if (mkdir(dir, 0755) && errno != EEXIST) return 0;
  snprintf(out, len, "%s/%016llx.fxc", dir, (unsigned long long)structure_hash(ctx, plan));
  return 1;
}

static TfLiteStatus prepare_locked(TfLiteContext *ctx, fx_delegate *d);

TfLiteStatus fx_delegate_prepare(TfLiteContext *ctx, TfLiteDelegate *base) {
  fx_delegate *d = base->data_;
  pthread_mutex_lock(&d->state_lock);
  TfLiteStatus status = prepare_locked(ctx, d);
  pthread_mutex_unlock(&d->state_lock);
  return status;
}

/* Whether node idx can be claimed: NULL (and folded[k] the value of its output k, when known
 * at load) or why it stays with TFLite. Translating it into a graph of its own (one IR node
 * per output) and inferring its shapes is the test; what it infers joins `shapes` for the
 * nodes after it. */
static const char *claim(fx_translate *tr, fx_shape *shapes, int idx, const TfLiteNode *node,
                         const TfLiteRegistration *reg, fx_blob **folded, double *flops) {
  folded[0] = NULL;
  *flops = 0;
  /* DEQUANTIZE of constants (fp16 / int8 weights) folds; of activations it runs (ops.c) */
  const int in0 = node->inputs && node->inputs->size == 1 ? node->inputs->data[0] : -1;
  const int const_in = in0 >= 0 && (size_t)in0 < tr->ctx->tensors_size &&
                       (tr->sg->statics[in0] || tr->ctx->tensors[in0].allocation_type == kTfLiteMmapRo);
  if ((reg->builtin_code == kTfLiteBuiltinDequantize && (const_in || in0 < 0)) || reg->builtin_code == kTfLiteBuiltinDensify)
    return fx_fold_special(tr, node, reg->builtin_code, folded);
  fx_graph g = {0};
  memset(tr->local, -1, sizeof(int) * tr->ctx->tensors_size);
  const char *why = fx_translate_node(tr, &g, idx, node, reg);
  for (int k = 0; !why && k < g.n_nodes; k++) {
    fx_node *n = &g.nodes[k];
    shapes[g.tensors[n->out[0]].tfl] = g.tensors[n->out[0]].shape;
    why = try_fold(&g, n, &folded[k]);
    /* the arithmetic of the ops with a flop count (ops.inc); element-wise and layout ops are
     * memory-bound, the runtime's XNNPack runs them as fast: they pay for no boundary.
     * A folded node costs nothing per invoke. */
    if (!why && !folded[k] && fx_op_defs[n->kind].flops) *flops += fx_node_flops(&g, n);
  }
  if (why)
    for (int k = 0; k < g.n_nodes; k++) { fx_blob_unref(folded[k]); folded[k] = NULL; }
  fx_graph_free(&g);
  return why;
}

/* A folded node's TFLite output takes the shape folded at load, as its stock kernel's Prepare
 * would give it: TFLite still allocates that tensor when it is also a graph input or output,
 * and at its declared shape it may be absurdly large (or just wrong). 0 ok, -1 failed. */
static int give_folded_shape(TfLiteContext *ctx, int t, const fx_shape *s) {
  const TfLiteIntArray *now = ctx->tensors[t].dims;
  if (ctx->tensors[t].allocation_type != kTfLiteArenaRw) return 0; /* a constant keeps its bytes */
  if (now && now->size == s->rank && !memcmp(now->data, s->d, sizeof(int) * (size_t)s->rank)) return 0;
  TfLiteIntArray *dims = malloc(sizeof(TfLiteIntArray) + sizeof(int) * (size_t)s->rank);
  if (!dims) return -1;
  dims->size = s->rank;
  memcpy(dims->data, s->d, sizeof(int) * (size_t)s->rank);
  return ctx->ResizeTensor(ctx, &ctx->tensors[t], dims) == kTfLiteOk ? 0 : -1;
}

/* Walks the execution plan: claimed nodes into `claimed`, the rest into the fallback list. */
static TfLiteStatus claim_nodes(TfLiteContext *ctx, const fx_delegate *d, const TfLiteIntArray *plan, fx_subgraph *sg,
                                fx_shape *shapes, int *local, int out_of_order, double *flops, TfLiteIntArray *claimed) {
  fx_translate tr = {ctx, sg, local, shapes, 0, &d->opts.rounding};
  claimed->size = 0;
  for (int p = 0; p < plan->size; p++) {
    int idx = plan->data[p];
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (ctx->GetNodeAndRegistration(ctx, idx, &node, &reg) != kTfLiteOk) return kTfLiteDelegateError;
    sg->nodes_total++;
    fx_blob *folded[FX_MAX_SPLIT_PARTS] = {0}; /* one per output */
    char order_msg[sizeof sg->fallback->reason];
    const char *why = order_msg;
    if (out_of_order >= 0)
      snprintf(order_msg, sizeof order_msg, "node %d reads a tensor that it or a later node writes, or writes one another node writes", out_of_order);
    else
      why = claim(&tr, shapes, idx, node, reg, folded, &flops[p]);
    if (why) {
      fx_add_fallback(sg, idx, reg->builtin_code, why);
      continue;
    }
    if (folded[0]) { /* every output folded (they share their inputs) */
      const int n_out = node->outputs->size;
      int k = 0;
      while (k < n_out && !give_folded_shape(ctx, node->outputs->data[k], &folded[k]->shape)) k++;
      if (k < n_out) {
        for (k = 0; k < n_out; k++) fx_blob_unref(folded[k]);
        fx_add_fallback(sg, idx, reg->builtin_code, "cannot resize the folded output");
        continue;
      }
      for (k = 0; k < n_out; k++) {
        const int o = node->outputs->data[k];
        fx_blob_unref(sg->statics[o]);
        sg->statics[o] = folded[k];
        shapes[o] = folded[k]->shape;
      }
      sg->nodes_folded++;
    }
    claimed->data[claimed->size++] = idx;
  }
  return kTfLiteOk;
}

/* The claimed nodes become partition kernels (kernel.c), and the weights they packed are
 * committed to the store. */
static TfLiteStatus make_partitions(TfLiteContext *ctx, fx_delegate *d, fx_subgraph *sg, TfLiteIntArray *claimed) {
  TfLiteStatus status = kTfLiteOk;
  if (claimed->size)
    status = ctx->ReplaceNodeSubsetsWithDelegateKernels(ctx, fx_partition_registration(), claimed, &d->base);
  /* A Winograd conv also gets its GEMM form in the cache file, for a budget plan to fall back
   * on: with or without a budget now, so a later set_budget() finds it there instead of
   * copying the whole file to add it (1 s on VGG-19). An unbudgeted run never reads it, so its
   * pages are never resident. Without a cache file we may write, every packed form stays in
   * memory, so a second one would only add to it: a read-only file lends those it holds. A
   * budget always gets a file (a private temp file if need be). */
  const int budgeted = d->opts.budget_mb > 0;
  if (claimed->size && (fx_store_path(d->store) || budgeted))
    for (int i = 0; i < sg->n_parts && status == kTfLiteOk; i++)
      if (fx_partition_add_gemm_forms(sg->parts[i], !fx_store_writable(d->store) && !budgeted) < 0)
        status = kTfLiteDelegateError;
  /* Every partition has packed (or found) its weights by now: one write for the model, in the
   * background unless a budget plan will stream weights from the file. */
  fx_store_commit(d->store, !budgeted);
  fx_store_stats st;
  fx_store_get_stats(d->store, &st);
  if (budgeted && status == kTfLiteOk && st.bytes_packed && st.backing == FX_BACKING_MEMORY) {
    /* Never run unbudgeted while claiming a budget. */
    ctx->ReportError(ctx, "flexdelegate: a budget needs a file to stream weights from, and neither the cache path "
                          "nor $TMPDIR could be written: pass a writable cache_path=, or set TMPDIR");
    status = kTfLiteDelegateError;
  }
  return status;
}

/* The store's cache file for this model: one constant tells it which file the model is. */
static void open_store(TfLiteContext *ctx, fx_delegate *d, const TfLiteIntArray *plan) {
  char path[4200];
  const void *model_ptr = NULL;
  for (size_t i = 0; i < ctx->tensors_size && !model_ptr; i++)
    if (ctx->tensors[i].allocation_type == kTfLiteMmapRo) model_ptr = ctx->tensors[i].data.raw;
  fx_store_open(d->store, cache_file_for(d, ctx, plan, path, sizeof path) ? path : NULL, model_ptr,
                FX_ALGO_GEMM_PANEL(fx_gemm_config_get()->nr));
}

static TfLiteStatus prepare_locked(TfLiteContext *ctx, fx_delegate *d) {
  TfLiteIntArray *plan = NULL;
  if (ctx->GetExecutionPlan(ctx, &plan) != kTfLiteOk || !plan) return kTfLiteDelegateError;
  fx_subgraph *sg = fx_subgraph_for(d, ctx);
  if (!sg) return kTfLiteDelegateError;
  fx_subgraph_clear(sg);
  open_store(ctx, d, plan);
  /* A budget holds from here: what building the interpreter made resident of the model goes. */
  if (d->opts.budget_mb > 0) fx_store_release_model(d->store);
  int nt = (int)ctx->tensors_size;
  sg->n_tensors = nt;
  sg->statics = calloc((size_t)(nt ? nt : 1), sizeof(fx_blob *));
  sg->fallback = calloc((size_t)(plan->size ? plan->size : 1), sizeof(fx_fallback));
  fx_shape *shapes = calloc((size_t)(nt ? nt : 1), sizeof(fx_shape));
  int *local = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
  int *produced_at = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
  TfLiteIntArray *claimed = malloc(sizeof(TfLiteIntArray) + sizeof(int) * (size_t)plan->size);
  double *flops = calloc((size_t)(plan->size ? plan->size : 1), sizeof(double)); /* per plan position */
  TfLiteStatus status = kTfLiteDelegateError;
  int out_of_order = -1; /* a node reading what it or a later node writes (a cycle, or bad order) */
  if (sg->statics && sg->fallback && shapes && local && produced_at && claimed && flops &&
      !producer_positions(ctx, plan, produced_at, nt, &out_of_order)) {
    for (int i = 0; i < nt; i++) {
      const TfLiteIntArray *dims = ctx->tensors[i].dims;
      if (dims && dims->size <= FX_MAX_RANK) {
        shapes[i].rank = dims->size;
        memcpy(shapes[i].d, dims->data, sizeof(int) * (size_t)dims->size);
      }
    }
    status = claim_nodes(ctx, d, plan, sg, shapes, local, out_of_order, flops, claimed);
    if (status == kTfLiteOk && fx_drop_small_islands(ctx, plan, sg, produced_at, flops, claimed)) status = kTfLiteDelegateError;
    sg->nodes_delegated = claimed->size;
    if (d->opts.budget_mb > 0) fx_store_release_model(d->store); /* the constants claiming read */
    if (status == kTfLiteOk) status = make_partitions(ctx, d, sg, claimed);
  }
  free(shapes);
  free(local);
  free(produced_at);
  free(claimed);
  free(flops);
  return status;
}
