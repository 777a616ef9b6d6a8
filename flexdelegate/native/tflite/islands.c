/* The "never slower to turn on" rule of partitioning. Each island (a set of claimed nodes
 * joined by the tensors they pass each other: one partition kernel, or a few when TFLite has to
 * split it around a stock node) costs a boundary at every invoke: our kernel's entry and exit,
 * and on a runtime that applies its own XNNPack after us (LiteRT's Interpreter, tflite-runtime's
 * default delegate) the split of XNNPack's partition around it, with the stock-left nodes
 * between. Measured here (a chain of 4096-element ADDs, each between two ROUNDs that stay with
 * stock, 1 thread, load 4.5 on 2 cores): 3 us per island on tflite-runtime, 4 us on LiteRT. An
 * island has to carry enough work to pay that, so:
 *
 *   when some node of the subgraph stays with stock, an island whose nodes together count
 *   fewer than FLEX_ISLAND_MIN_FLOPS of arithmetic (2 per multiply-add of the ops with a flop
 *   count in ir/ops.inc: convolutions, FULLY_CONNECTED, BATCH_MATMUL, attention, pooling
 *   windows, for the shapes at load) is not claimed: its nodes stay with stock too ("island
 *   too small: ..."). Element-wise and layout ops count nothing: they are memory-bound, the
 *   runtime's XNNPack runs them as fast, so an island of them only adds its boundary; folded
 *   nodes cost nothing per invoke.
 *
 * A subgraph we take whole has no boundary at all and is always claimed. The threshold is
 * ~20 us of GEMM work at one thread here, five times the boundary. */
#include <stdio.h>
#include <stdlib.h>
#include "delegate.h"

static int root(int *parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

int fx_drop_small_islands(TfLiteContext *ctx, const TfLiteIntArray *plan, fx_subgraph *sg, const int *produced_at,
                          const double *flops, TfLiteIntArray *claimed) {
  const int np = plan->size;
  if (claimed->size == np || claimed->size == 0) return 0; /* whole, or nothing: no boundary */
  int *parent = malloc(sizeof(int) * (size_t)np), *is_claimed = calloc((size_t)np, sizeof(int));
  double *work = calloc((size_t)np, sizeof(double));
  if (!parent || !is_claimed || !work) {
    free(parent); free(is_claimed); free(work);
    return -1;
  }
  for (int p = 0; p < np; p++) parent[p] = p;
  for (int i = 0, p = 0; i < claimed->size; i++) {
    while (plan->data[p] != claimed->data[i]) p++; /* claimed is in plan order */
    is_claimed[p] = 1;
  }
  for (int p = 0; p < np; p++) {
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (!is_claimed[p] || ctx->GetNodeAndRegistration(ctx, plan->data[p], &node, &reg) != kTfLiteOk) continue;
    for (int i = 0; node->inputs && i < node->inputs->size; i++) {
      const int t = node->inputs->data[i];
      const int q = t >= 0 && t < sg->n_tensors ? produced_at[t] : -1;
      if (q >= 0 && is_claimed[q]) parent[root(parent, p)] = root(parent, q);
    }
  }
  for (int p = 0; p < np; p++)
    if (is_claimed[p]) work[root(parent, p)] += flops[p];
  int kept = 0;
  for (int i = 0, p = 0; i < claimed->size; i++) {
    while (plan->data[p] != claimed->data[i]) p++;
    const double w = work[root(parent, p)];
    if (w >= FLEX_ISLAND_MIN_FLOPS) {
      claimed->data[kept++] = claimed->data[i];
      continue;
    }
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (ctx->GetNodeAndRegistration(ctx, plan->data[p], &node, &reg) != kTfLiteOk) continue;
    int folded = 0;
    for (int k = 0; node->outputs && k < node->outputs->size; k++) { /* stock computes it again */
      const int o = node->outputs->data[k];
      if (o < 0 || o >= sg->n_tensors || !sg->statics[o]) continue;
      fx_blob_unref(sg->statics[o]);
      sg->statics[o] = NULL;
      folded = 1;
    }
    sg->nodes_folded -= folded;
    char why[sizeof sg->fallback->reason];
    snprintf(why, sizeof why, "island too small: %.0f flops < %d, its partition boundary would cost more", w,
             FLEX_ISLAND_MIN_FLOPS);
    fx_add_fallback(sg, plan->data[p], reg->builtin_code, why);
  }
  claimed->size = kept;
  free(parent);
  free(is_claimed);
  free(work);
  return 0;
}
