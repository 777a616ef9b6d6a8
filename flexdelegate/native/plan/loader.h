/* The weight loader of budget plans (budget.c): the plan runs as a list of steps (a node, or one
 * slice of it) while a loader thread streams weight slices from the cache file into their
 * planned arena slots, gated by the plan's monotone dependency array. */
#ifndef FLEX_LOADER_H
#define FLEX_LOADER_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "flex_api.h"


typedef struct {
  int node;            /* index in the partition's graph */
  int kernel;          /* FLEX_KERNEL_* (flex_api.h): which form of the node runs */
  int slicing;         /* FLEX_SLICE_* */
  int64_t start, count; /* output channels (weights) or output rows (input) of this step */
  int unit;            /* the load unit holding its weights, -1 if it has none */
  size_t w_off;        /* arena offset of its weights */
  size_t s_off, s_bytes; /* its scratch slot */
} fx_step;

/* One contiguous copy into the arena: from the cache file (pread, never mapped, so streamed
 * weights do not stay resident) or from memory (model constants, then released). */
typedef struct {
  size_t slot, bytes;
  int fd;          /* the cache file to pread from (the plan holds its mapping), or -1: memory */
  off_t file_off;
  const void *mem;
  int step;   /* the first step that uses it */
  int pinned; /* loaded once at setup, never again */
} fx_load_unit;

typedef struct fx_budget fx_budget;

/* Takes ownership of steps, units and deps when it succeeds (deps[i]: after step i the loader
 * may load units whose step <= deps[i]; before step 0, <= deps_start). */
fx_budget *fx_budget_new(fx_step *steps, int n_steps, fx_load_unit *units, int n_units, int *deps,
                         int deps_start, char *arena);
void fx_budget_free(fx_budget *b);
/* Loads the pinned units; 0 ok, -1 on a read error. */
int fx_budget_load_pinned(fx_budget *b);
const fx_step *fx_budget_steps(const fx_budget *b, int *n);
/* Before running step i: waits until its weights are in place. Returns 0, or -1 when the
 * loader failed (read error). */
int fx_budget_wait(fx_budget *b, int step);
/* After running step i (lets the loader reuse memory the plan frees there). */
void fx_budget_done(fx_budget *b, int step);
/* Starts a run (the loader begins with the units allowed before step 0). */
void fx_budget_start(fx_budget *b);
#endif
