#ifndef FLEX_BUDGET_PLAN_H
#define FLEX_BUDGET_PLAN_H
#include <stddef.h>
#include "loader.h"
#include "ir/graph.h"
#include "runtime/pool.h"

struct fx_store;
struct fx_conv_pack;

/* A partition's plan under a budget, ready to run. */
typedef struct {
  size_t arena_bytes, min_budget_bytes;
  size_t *tensor_offset; /* by tensor id; (size_t)-1 when not in the arena */
  int n_steps;
  fx_budget *exec;
  /* filled by _make, consumed by _start */
  fx_step *pending_steps;
  fx_load_unit *pending_units;
  int pending_n_units, *pending_deps, deps_start;
  /* The cache file versions its units stream from (one reference each: their fds stay open
   * and name the mapped bytes whatever happens to the path). */
  struct fx_cache_map **maps;
  int n_maps;
} fx_budget_plan;

/* Asks the planner for a plan of g (shapes inferred) under `budget` bytes and checks it.
 * NULL on success, else why (msg holds the planner's message, e.g. the minimum budget). */
const char *fx_budget_plan_make(fx_graph *g, int threads, size_t budget, struct fx_store *store,
                                fx_budget_plan *out, char *msg, size_t msg_len);
/* With the arena allocated: starts the loader and loads pinned weights. */
const char *fx_budget_plan_start(fx_budget_plan *bp, char *arena);
/* One invoke: runs every step, streaming weights. 0 ok, -1 on a load or kernel error. */
int fx_budget_plan_run(fx_budget_plan *bp, fx_graph *g, fx_pool *pool, char *arena, int profile);
/* Steps (slices) the plan runs node `node` in (1 when unsliced or unplanned). */
int fx_budget_plan_slices(const fx_budget_plan *bp, int node);
/* The packed weights node `node` runs with: the form the plan chose, else its own pack;
 * *kernel gets the plan's FLEX_KERNEL_* for it (FLEX_KERNEL_NODE when unplanned). */
const struct fx_conv_pack *fx_budget_plan_pack(const fx_budget_plan *bp, const fx_graph *g, int node, int *kernel);
/* Under a budget: packs the im2col GEMM form of every Winograd conv in g that lacks one (the
 * plan may run that instead when the Winograd weights do not fit). Returns how many it added
 * (pending in the store until its commit), or -1 when out of memory. */
int fx_budget_add_gemm_forms(fx_graph *g, struct fx_store *store);
void fx_budget_plan_free(fx_budget_plan *bp);
/* What the unlimited plan holds outside its arena: every packed blob and constant its kernels
 * read, the partition inputs/outputs, and the runtime's reserve (shared constants counted
 * once per reader: an upper bound). */
size_t fx_budget_unlimited_extra(const fx_graph *g);
#endif
