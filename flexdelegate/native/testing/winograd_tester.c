/* flex_winograd_run (flex_testing.h): pack and run one Winograd convolution with a chosen GEMM
 * kernel, pre-transformed or transformed at every run, whole or in budget-plan slices. */
#include <stdlib.h>
#include <string.h>
#include "conv/winograd.h"
#include "runtime/pool.h"
#include "testing/flex_testing.h"
#include "testing/tester.h"

typedef struct {
  const fx_gemm_config *uk;
  fx_pool *pool;
  int tile, cin, cout, pad_top, pad_left, act, from_gemm, panels, per, sliced;
  const float *packed, *bias, *x;
  float *part, *y, *scratch;
  size_t panel_floats;
  fx_shape xs, ys;
} wino_case;

static void run_wino(void *arg) {
  const wino_case *c = arg;
  if (c->from_gemm && !c->sliced) {
    fx_winograd_rt_run(c->uk, c->pool, c->tile, c->packed, c->cout, c->cin, c->bias, c->x, &c->xs, c->pad_top,
                       c->pad_left, c->y, &c->ys, c->scratch, c->act);
    return;
  }
  for (int pan0 = 0; pan0 < c->panels; pan0 += c->per) {
    const int pan1 = pan0 + c->per < c->panels ? pan0 + c->per : c->panels;
    const float *slice = c->packed + (size_t)pan0 * c->panel_floats;
    if (c->sliced) /* a slice is one contiguous range: it runs from a copy of just that */
      slice = memcpy(c->part, slice, (size_t)(pan1 - pan0) * c->panel_floats * sizeof(float));
    if (c->from_gemm)
      fx_winograd_rt_run_panels(c->uk, c->pool, c->tile, slice, pan0, pan1, c->cout, c->cin, c->bias, c->x, &c->xs,
                                c->pad_top, c->pad_left, c->y, &c->ys, c->scratch, c->act);
    else
      fx_winograd_run_panels(c->uk, c->pool, c->tile, slice, pan0, pan1, c->cout, c->cin, c->bias, c->x, &c->xs,
                             c->pad_top, c->pad_left, c->y, &c->ys, c->scratch, c->act);
  }
}

int flex_winograd_run(int variant, int tile, int threads, int n, int h, int w, int cin, int cout,
                      int pad_top, int pad_left, int oh, int ow, const float *x,
                      const float *filter, const float *bias, int act, float *y, int slice_panels,
                      int from_gemm, int iters, double *seconds) {
  const fx_gemm_config *uk = fx_gemm_config_at(variant);
  if (!uk || (tile != 4 && tile != 6) || threads < 1 || n < 0 || h < 1 || w < 1 || cin < 1 ||
      cout < 1 || pad_top < 0 || pad_left < 0 || oh < 0 || ow < 0 || !x || !filter || !y ||
      act < FLEX_ACT_NONE || act > FLEX_ACT_SWISH || slice_panels < 0)
    return -1;
  const int panels = (cout + uk->nr - 1) / uk->nr, per = slice_panels && slice_panels < panels ? slice_panels : panels;
  const size_t tiles = (size_t)n * (size_t)((oh + tile - 1) / tile) * (size_t)((ow + tile - 1) / tile);
  const size_t panel_floats = from_gemm ? (size_t)uk->nr * (size_t)(9 * cin + 1) : fx_winograd_panel_floats(tile, cin, uk->nr);
  const size_t packed_floats = from_gemm ? fx_gemm_packed_floats(cout, 9 * cin, uk->nr)
                                         : fx_winograd_packed_floats(tile, cout, cin, uk->nr);
  const size_t scratch_bytes = from_gemm ? fx_winograd_rt_scratch_bytes(uk, tile, cin, tiles, threads)
                                         : fx_winograd_scratch_bytes_with(uk, tile, cout, cin, threads);
  float *packed = malloc(packed_floats * sizeof(float));
  float *part = malloc((size_t)per * panel_floats * sizeof(float));
  float *scratch = malloc(scratch_bytes + sizeof(float));
  fx_pool *pool = fx_pool_new(threads);
  int rc = -1;
  if (packed && part && scratch && pool) {
    if (from_gemm) fx_gemm_pack(cout, 9 * cin, uk->nr, filter, bias, packed);
    else fx_winograd_pack(tile, cout, cin, uk->nr, filter, packed);
    wino_case c = {uk, pool, tile, cin, cout, pad_top, pad_left, act, from_gemm, panels, per, slice_panels > 0, packed, bias, x,
                   part, y, scratch, panel_floats, {4, {n, h, w, cin}}, {4, {n, oh, ow, cout}}};
    fx_tester_time(iters, seconds, run_wino, &c);
    rc = 0;
  }
  fx_pool_free(pool);
  free(scratch);
  free(part);
  free(packed);
  return rc;
}
