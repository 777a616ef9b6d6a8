/* flex_plan_arena (flex_testing.h): the unlimited planner's placement on buffers given as
 * arrays. */
#include <stdlib.h>
#include "plan/greedy.h"
#include "testing/flex_testing.h"

size_t flex_plan_arena(int greedy, int n, const size_t *sizes, const int *first, const int *last,
                       size_t *offsets) {
  if (n < 0 || (n > 0 && (!sizes || !first || !last || !offsets))) return (size_t)-1;
  fx_arena_buf *bufs = calloc((size_t)(n ? n : 1), sizeof *bufs);
  if (!bufs) return (size_t)-1;
  for (int i = 0; i < n; i++) bufs[i] = (fx_arena_buf){sizes[i], first[i], last[i], 0};
  size_t total = greedy ? fx_arena_plan_greedy(bufs, n) : fx_arena_plan_trivial(bufs, n);
  if (total != (size_t)-1)
    for (int i = 0; i < n; i++) offsets[i] = bufs[i].offset;
  free(bufs);
  return total;
}
