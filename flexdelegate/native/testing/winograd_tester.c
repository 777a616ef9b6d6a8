/* Test / benchmark entry point: pack and run one Winograd convolution with a chosen GEMM
 * kernel (declared in include/flex_api.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "flex_api.h"
#include "runtime/pool.h"
#include "conv/winograd.h"

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

int flex_winograd_run(int variant, int tile, int threads, int n, int h, int w, int cin, int cout,
                      int pad_top, int pad_left, int oh, int ow, const float *x,
                      const float *filter, const float *bias, int act, float *y, int slice_panels,
                      int from_gemm, int iters, double *seconds) {
  const fx_gemm_config *uk = fx_gemm_config_at(variant);
  if (!uk || (tile != 4 && tile != 6) || threads < 1 || n < 0 || h < 1 || w < 1 || cin < 1 ||
      cout < 1 || pad_top < 0 || pad_left < 0 || oh < 0 || ow < 0 || !x || !filter || !y ||
      act < FX_ACT_NONE || act > FX_ACT_SWISH || slice_panels < 0 || (from_gemm && slice_panels))
    return -1;
  const int panels = (cout + uk->nr - 1) / uk->nr, per = slice_panels ? slice_panels : panels;
  /* from_gemm: the filter as GEMM panels, transformed at every run (winograd_rt.c) */
  const size_t tiles = (size_t)n * (size_t)((oh + tile - 1) / tile) * (size_t)((ow + tile - 1) / tile);
  const size_t panel_floats = fx_winograd_panel_floats(tile, cin, uk->nr);
  const size_t packed_floats = from_gemm ? fx_gemm_packed_floats(cout, 9 * cin, uk->nr)
                                         : fx_winograd_packed_floats(tile, cout, cin, uk->nr);
  const size_t scratch_bytes = from_gemm ? fx_winograd_rt_scratch_bytes(uk, tile, cin, tiles, threads)
                                         : fx_winograd_scratch_bytes_with(uk, tile, cout, cin, threads);
  float *packed = malloc(packed_floats * sizeof(float));
  float *part = malloc((size_t)(per < panels ? per : panels) * panel_floats * sizeof(float));
  float *scratch = malloc(scratch_bytes + sizeof(float));
  fx_pool *pool = fx_pool_new(threads);
  int rc = -1;
  if (packed && part && scratch && pool) {
    if (from_gemm) fx_gemm_pack(cout, 9 * cin, uk->nr, filter, bias, packed);
    else fx_winograd_pack(tile, cout, cin, uk->nr, filter, packed);
    fx_shape xs = {4, {n, h, w, cin}}, ys = {4, {n, oh, ow, cout}};
    double best = 0.0;
    if (iters < 1) iters = 1;
    for (int it = 0; it < iters; it++) {
      struct timespec t0;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      if (from_gemm)
        fx_winograd_rt_run(uk, pool, tile, packed, cout, cin, bias, x, &xs, pad_top, pad_left, y, &ys, scratch, act);
      else
        for (int pan0 = 0; pan0 < panels; pan0 += per) {
          const int pan1 = pan0 + per < panels ? pan0 + per : panels;
          const float *slice = packed + (size_t)pan0 * panel_floats;
          if (slice_panels) /* a slice is one contiguous range: it runs from a copy of just that */
            slice = memcpy(part, slice, (size_t)(pan1 - pan0) * panel_floats * sizeof(float));
          fx_winograd_run_panels(uk, pool, tile, slice, pan0, pan1, cout, cin, bias, x, &xs, pad_top, pad_left,
                                 y, &ys, scratch, act);
        }
      const double s = seconds_since(&t0);
      if (it == 0 || s < best) best = s;
    }
    if (seconds) *seconds = best;
    rc = 0;
  }
  fx_pool_free(pool);
  free(scratch);
  free(part);
  free(packed);
  return rc;
}
