/* The greedy planner's placement (greedy.c): every buffer has a size and an inclusive
 * [first, last] lifetime in node order; it gets a byte offset (a multiple of FLEX_ARENA_ALIGN) so
 * that buffers alive at the same time never overlap. */
#ifndef FLEX_GREEDY_H
#define FLEX_GREEDY_H
#include <stddef.h>
#include "planner.h"

typedef struct {
  size_t size;
  int first, last;
  size_t offset; /* output */
} fx_arena_buf;

/* Greedy: largest first, each at the lowest offset clear of every placed buffer whose
 * lifetime overlaps. Returns the arena size, or (size_t)-1 on bad input / OOM. */
size_t fx_arena_plan_greedy(fx_arena_buf *bufs, int n);
/* Trivial: back to back, no reuse (the baseline the greedy plan is tested against). */
size_t fx_arena_plan_trivial(fx_arena_buf *bufs, int n);
#endif
