/* The one place a partition's planner is chosen (planner.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "conv/conv.h"
#include "ir/band.h"
#include "planner.h"
#include "runtime/log.h"
#include "store/store.h"

/* A budget (MB, checked by flex_check_budget) in bytes, rounded up: a positive budget is never
 * 0 bytes, which would read as unlimited. */
static size_t budget_bytes(double mb) { return (size_t)ceil(mb * 1048576.0); }

/* What the greedy plan holds outside its arena: every packed blob and constant its kernels
 * read, the partition inputs/outputs, and the runtime's reserve (shared constants counted
 * once per reader: an upper bound). */
static size_t unlimited_extra(const fx_graph *g) {
  size_t bytes = fx_budget_reserve_bytes(g);
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    if (n->at_prepare) continue;
    int packed = (n->kind == FX_OP_CONV || n->kind == FX_OP_FC) && n->pack;
    if (packed) bytes += fx_conv_weights(n->pack)->size;
    bytes += fx_qlayer_bytes(n->qlayer); /* int8 panels: their bias and requantization inside */
    for (int k = 0; k < n->n_in; k++) {
      int id = n->in[k];
      if (id < 0 || g->tensors[id].storage != FX_ST_CONST || (packed && k == 1) || (n->qlayer && k >= 1)) continue;
      bytes += fx_shape_numel(&g->tensors[id].shape) * fx_dtype_size(g->tensors[id].dtype);
    }
  }
  return bytes;
}

/* The active chain that runs at TFLite node `node` (a budget planner's bottleneck), or NULL. */
static fx_band_chain *chain_run_at(fx_graph *g, int node) {
  for (int i = 0; i < g->n_chains; i++)
    if (g->chains[i].active && g->nodes[g->chains[i].run_at].tfl_node == node) return &g->chains[i];
  return NULL;
}

void fx_mem_plan_free(fx_mem_plan *p) {
  if (p->planner) p->planner->free(p);
  memset(p, 0, sizeof *p);
}

/* A budget that holds the greedy plan (its arena, every weight resident) runs it unchanged:
 * nothing to stream, and the same speed as no budget at all. */
const char *fx_plan_memory(fx_mem_plan *p, fx_graph *g, int threads, double budget_mb, struct fx_store *store,
                           flex_error *err) {
  fx_mem_plan_free(p);
  fx_band_choose(g, threads);
  const char *why = fx_greedy_planner.plan(p, g, threads, 0, 0, store, err);
  if (why) return why;
  if (budget_mb > 0) {
    const size_t budget = budget_bytes(budget_mb), extra = unlimited_extra(g);
    if (p->arena_bytes + extra > budget) {
      fx_mem_plan_free(p);
      /* The chains run band by band as one step each, their weights whole. A chain that is
       * the bottleneck of a budget too small runs its members on their own instead (sliceable),
       * one chain at a time; a refusal names the lowest minimum of the plans tried (at it, the
       * same sequence of plans is tried and that one holds). */
      why = fx_budget_planner.plan(p, g, threads, budget, 0, store, err);
      flex_error lowest = *err;
      fx_band_chain *c;
      for (int attempt = 1; why && (c = chain_run_at(g, err->node)) != NULL; attempt++) {
        c->active = 0;
        fx_mem_plan_free(p);
        why = fx_budget_planner.plan(p, g, threads, budget, attempt, store, err);
        if (why && err->min_budget_mb > 0 && err->min_budget_mb < lowest.min_budget_mb) lowest = *err;
      }
      if (why && err->min_budget_mb > 0) { /* (another failure is said as it is) */
        *err = lowest;
        why = err->message;
      }
      if (!why)
        fx_log(FX_LOG_PLAN, "partition under budget %.2f MB: arena %zu bytes, %d steps (min budget %.2f MB)",
               budget_mb, p->arena_bytes, p->n_steps, p->min_budget_bytes / 1048576.0);
      return why;
    }
    fx_log(FX_LOG_PLAN, "budget %.2f MB holds the unlimited plan (arena %zu + weights and reserve %zu bytes)",
           budget_mb, p->arena_bytes, extra);
  }
  fx_log(FX_LOG_PLAN, "partition arena: %zu bytes for %d tensors, %d threads", p->arena_bytes, g->n_tensors,
         threads);
  return NULL;
}
