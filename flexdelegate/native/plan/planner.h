/* A partition's memory plan, behind one interface (after tflite-micro's MicroMemoryPlanner) with
 * two implementations:
 *   fx_greedy_planner (greedy.c): every tensor and im2col/Winograd scratch buffer packed into
 *     one arena by lifetime, elementwise ops in place, all weights resident;
 *   fx_budget_planner (budget.c, after FlexNN): activations, weight slices streamed from the
 *     cache file and scratch laid out in one arena over time x address within a memory budget,
 *     by the Python planner (flex_plan_callback), and run as steps beside a loader thread.
 * fx_plan_memory is the one place that picks between them. Nothing here knows TFLite. */
#ifndef FLEX_PLANNER_H
#define FLEX_PLANNER_H
#include <stddef.h>
#include "flex_api.h"
#include "ir/graph.h"
#include "runtime/pool.h"

struct fx_store;
struct fx_planner;

typedef struct {
  const struct fx_planner *planner; /* the implementation that made it: runs and frees it */
  size_t arena_bytes;
  size_t *offsets;         /* arena offset by tensor id; (size_t)-1: the tensor is not in it */
  size_t min_budget_bytes; /* budget plans: the smallest budget that runs the partition; else 0 */
  int n_steps;             /* steps per invoke: nodes, or a budget plan's slices */
  void *state;             /* the implementation's own */
} fx_mem_plan;

typedef struct fx_planner {
  const char *name; /* "greedy" or "budget" (stats()["partitions_memory"][i]["planner"]) */
  /* Plans g (shapes inferred) for `threads` workers within `budget` bytes (0: none) into *out;
   * attempt: 0, or which retry of the same plan this is (g changed: a chain off), so what the
   * first attempt measured still holds. NULL, or why not (err filled where the planner says
   * more, e.g. the minimum budget). */
  const char *(*plan)(fx_mem_plan *out, fx_graph *g, int threads, size_t budget, int attempt,
                      struct fx_store *store, flex_error *err);
  /* With an arena of arena_bytes allocated: ready to run (NULL), or why not. */
  const char *(*start)(fx_mem_plan *p, char *arena);
  /* One invoke of g (tensor pointers resolved from offsets): 0, or -1 with why in msg. */
  int (*run)(fx_mem_plan *p, fx_graph *g, fx_pool *pool, char *arena, int profile, char *msg, size_t msg_len);
  /* The FLEX_KERNEL_* node i runs with, and in how many steps (*slices). */
  int (*node_kernel)(const fx_mem_plan *p, int node, int *slices);
  void (*free)(fx_mem_plan *p);
} fx_planner;

extern const fx_planner fx_greedy_planner, fx_budget_planner;

/* The one place a partition's memory is planned (freeing the plan *p held): the greedy plan,
 * unless a budget is set (MB, 0 = none) that it does not hold together with what it keeps
 * outside the arena; then the budget planner's. NULL, or why not (*p then holds no plan). */
const char *fx_plan_memory(fx_mem_plan *p, fx_graph *g, int threads, double budget_mb, struct fx_store *store,
                           flex_error *err);
void fx_mem_plan_free(fx_mem_plan *p);

/* Shared by the two implementations (budget.c): what the budget must hold beside the arena,
 * namely the partition inputs/outputs TFLite owns and the runtime's own reserve. */
size_t fx_budget_reserve_bytes(const fx_graph *g);
#endif
