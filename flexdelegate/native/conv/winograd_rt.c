/* Winograd straight from a conv's GEMM panels: the filter transform runs at every invoke, one
 * panel of NR output channels at a time into per-thread scratch, instead of being stored.
 * Nothing is added to the resident weights (the pre-transformed form is 4x / 7.1x the plain
 * one: ResNet-50's 14x14 layers would cost 7 MB each), and the plain 3x3 weights are read
 * from memory instead of 4x as many transformed ones.
 *
 *   1. input transform of every tile into a shared V (tasks over tile blocks);
 *   2. per panel (tasks over panels): for each row i of the (m+2)^2 points, the filter
 *      transform of that row's points (transforms_2d.inc fx_wg_filter_row: 27 multiply-adds per
 *      channel, vs 2 * tiles per channel and point in the GEMMs), then its GEMMs
 *      [tiles x cin] x [cin x NR]; then the output transform of the panel's channels.
 * Pays where tiles are few and channels many (a 14x14 map, 256 channels: 16 F4 tiles), so
 * every panel's filter transform serves few GEMM rows but saves 2.25x-4x of them. */
#include <math.h>
#include <string.h>
#include "runtime/pool.h"
#include "kernels/winograd/transforms.h"
#include "winograd.h"

#define WG_WANT_G
#include "kernels/winograd/transforms_1d.inc"

typedef struct {
  const fx_gemm_config *uk;
  const fx_wg_transforms *tf;
  fx_wg_geom g;
  const float *panels, *bias, *x;
  float *y, *V, *scratch;
  size_t tiles, tb, vs, ms, per_thread;
  size_t pan0; /* `panels` starts at this panel of the layer (a budget plan's slice) */
  float G[8 * 3];
  float lo, hi;
} rt_job;

static size_t points(int tile) { return (size_t)(tile + 2) * (size_t)(tile + 2); }

/* Per thread: one row of points' filters (n GEMM panels, a zero bias row each) and M. */
static size_t u_floats(int tile, int cin, int nr) { return (size_t)(tile + 2) * (size_t)nr * ((size_t)cin + 1); }
static size_t m_stride(size_t tiles, int nr) { return tiles * pad16(nr) + 16; }

size_t fx_winograd_rt_scratch_bytes(const fx_gemm_config *uk, int tile, int cin, size_t tiles, int threads) {
  if (!tile_ok(tile)) return 0;
  const size_t v = points(tile) * (tiles * pad16(cin) + 16);
  const size_t per_thread = u_floats(tile, cin, uk->nr) + points(tile) * m_stride(tiles, uk->nr);
  return (v + (size_t)(threads > 0 ? threads : 1) * per_thread) * sizeof(float);
}

static void rt_input(void *arg, int tid, size_t blk) {
  (void)tid;
  const rt_job *j = arg;
  const size_t t0 = blk * j->tb;
  const int tb = (int)(j->tiles - t0 < j->tb ? j->tiles - t0 : j->tb);
  j->tf->input(&j->g, j->x, t0, tb, j->V + t0 * j->g.cin_pad, j->vs);
}

static void rt_panel(void *arg, int tid, size_t task) {
  const rt_job *j = arg;
  const size_t pan = j->pan0 + task;
  const fx_gemm_config *uk = j->uk;
  const int n = j->g.n, nr = uk->nr, mr = uk->mr, cin = j->g.cin;
  const size_t point = (size_t)nr * (size_t)(cin + 1), n0 = pan * (size_t)nr;
  const size_t nc = (size_t)j->g.cout - n0 < (size_t)nr ? (size_t)j->g.cout - n0 : (size_t)nr;
  float *U = j->scratch + (size_t)tid * j->per_thread, *M = U + (size_t)n * point;
  const float *w = j->panels + task * (size_t)nr * (9 * (size_t)cin + 1) + nr; /* past the GEMM bias */
  const fx_gemm_out raw = fx_gemm_out_clamp(-INFINITY, INFINITY); /* bias and clamp come after */
  for (int p = 0; p < n; p++) memset(U + (size_t)p * point, 0, (size_t)nr * sizeof(float)); /* bias rows */
  for (int i = 0; i < n; i++) {
    j->tf->filter_row(n, j->G + 3 * i, j->G, cin, nr, w, U, point);
    for (int c = 0; c < n; c++) {
      const size_t xi = (size_t)(i * n + c);
      for (size_t r = 0; r < j->tiles; r += (size_t)mr)
        uk->fn(j->tiles - r < (size_t)mr ? j->tiles - r : (size_t)mr, nc, (size_t)cin,
               j->V + xi * j->vs + r * j->g.cin_pad, j->g.cin_pad, U + (size_t)c * point,
               M + xi * j->ms + r * pad16(nr), pad16(nr), NULL, &raw);
    }
  }
  fx_wg_geom g = j->g; /* this panel's channels */
  g.cout = (int)nc;
  g.cout_pad = pad16(nr);
  j->tf->output(&g, M, j->ms, 0, (int)j->tiles, j->bias ? j->bias + n0 : NULL, j->lo, j->hi, j->y + n0);
}

void fx_winograd_rt_run_panels(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *panels, int pan0,
                               int pan1, int cout, int cin, const float *bias, const float *x, const fx_shape *xs,
                               int pad_top, int pad_left, float *y, const fx_shape *ys, float *scratch, int act) {
  if (!tile_ok(tile) || cout <= 0 || cin <= 0 || pan0 < 0 || pan1 <= pan0) return;
  rt_job j;
  memset(&j, 0, sizeof j);
  j.tiles = fx_wg_geom_init(&j.g, tile, xs->d, ys->d, cin, cout, pad_top, pad_left);
  if (!j.tiles) return;
  const fx_wg_geom *g = &j.g;
  j.uk = uk;
  j.tf = fx_wg_transforms_for(uk);
  j.panels = panels; j.bias = bias; j.x = x; j.y = y;
  j.pan0 = (size_t)pan0;
  j.vs = j.tiles * g->cin_pad + 16;
  j.ms = m_stride(j.tiles, uk->nr);
  j.V = scratch;
  j.scratch = scratch + points(tile) * j.vs;
  j.per_thread = u_floats(tile, cin, uk->nr) + points(tile) * j.ms;
  const double(*G)[3] = tile == 4 ? wg_g6 : wg_g8;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < 3; k++) j.G[3 * i + k] = (float)G[i][k];
  fx_act_bounds(act, &j.lo, &j.hi);
  const size_t threads = (size_t)fx_pool_threads(pool);
  j.tb = (j.tiles + 2 * threads - 1) / (2 * threads);
  fx_parallel_tasks(pool, (j.tiles + j.tb - 1) / j.tb, rt_input, &j);
  fx_parallel_tasks(pool, (size_t)(pan1 - pan0), rt_panel, &j);
  if (act == FLEX_ACT_TANH || fx_act_is_curve(act)) { /* this slice's channels only */
    const size_t c0 = (size_t)pan0 * (size_t)uk->nr, c1 = (size_t)pan1 * (size_t)uk->nr < (size_t)cout ? (size_t)pan1 * (size_t)uk->nr : (size_t)cout;
    const size_t pixels = fx_shape_numel(ys) / (size_t)ys->d[3];
    for (size_t i = 0; i < pixels; i++) fx_apply_act(act, y + i * (size_t)ys->d[3] + c0, c1 - c0);
  }
}

void fx_winograd_rt_run(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *panels, int cout, int cin,
                        const float *bias, const float *x, const fx_shape *xs, int pad_top, int pad_left, float *y,
                        const fx_shape *ys, float *scratch, int act) {
  fx_winograd_rt_run_panels(uk, pool, tile, panels, 0, (cout + uk->nr - 1) / uk->nr, cout, cin, bias, x, xs, pad_top,
                            pad_left, y, ys, scratch, act);
}
