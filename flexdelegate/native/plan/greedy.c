#include <stdlib.h>
#include "greedy.h"

static size_t align_up(size_t v) { return (v + FX_ARENA_ALIGN - 1) / FX_ARENA_ALIGN * FX_ARENA_ALIGN; }

static int valid(const fx_arena_buf *bufs, int n) {
  if (n < 0 || (n > 0 && !bufs)) return 0;
  for (int i = 0; i < n; i++)
    if (bufs[i].first > bufs[i].last || bufs[i].size > ((size_t)1 << 48)) return 0;
  return 1;
}

size_t fx_arena_plan_trivial(fx_arena_buf *bufs, int n) {
  if (!valid(bufs, n)) return (size_t)-1;
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    bufs[i].offset = total;
    total += align_up(bufs[i].size);
  }
  return total;
}

static int by_size_desc(const void *a, const void *b) {
  const fx_arena_buf *x = *(fx_arena_buf *const *)a, *y = *(fx_arena_buf *const *)b;
  if (x->size != y->size) return x->size < y->size ? 1 : -1;
  return x->first - y->first;
}

size_t fx_arena_plan_greedy(fx_arena_buf *bufs, int n) {
  if (!valid(bufs, n)) return (size_t)-1;
  /* order[i]: the i-th largest buffer; order[0..i) are the ones placed so far. */
  fx_arena_buf **order = malloc(sizeof *order * (size_t)(n ? n : 1));
  if (!order) return (size_t)-1;
  for (int i = 0; i < n; i++) order[i] = &bufs[i];
  qsort(order, (size_t)n, sizeof *order, by_size_desc);
  size_t total = 0;
  for (int oi = 0; oi < n; oi++) {
    fx_arena_buf *b = order[oi];
    size_t size = align_up(b->size);
    /* Candidate offsets: 0 and the end of every placed, lifetime-overlapping buffer; take the
     * lowest that collides with none of them. O(n^2) per buffer: graphs have ~hundreds. */
    size_t best = (size_t)-1;
    for (int c = -1; c < oi; c++) {
      size_t cand = 0;
      if (c >= 0) {
        const fx_arena_buf *o = order[c];
        if (o->last < b->first || o->first > b->last) continue;
        cand = o->offset + align_up(o->size);
      }
      if (cand >= best) continue;
      int clear = 1;
      for (int j = 0; j < oi && clear; j++) {
        const fx_arena_buf *o = order[j];
        if (o->last < b->first || o->first > b->last) continue;
        if (cand < o->offset + align_up(o->size) && o->offset < cand + size) clear = 0;
      }
      if (clear) best = cand;
    }
    b->offset = best;
    if (best + size > total) total = best + size;
  }
  free(order);
  return total;
}
