/* Winograd F(4x4,3x3) / F(6x6,3x3) convolution: filter packing, scratch sizing and the run
 * driver (tile blocks over threads, batched GEMM through the GEMM microkernels). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/pool.h"
#include "kernels/winograd/transforms.h"
#include "winograd.h"

#define WG_WANT_G
#include "kernels/winograd/transforms_1d.inc"

/* Per-thread scratch target: the block's V (tiles x cin per point) and M (tiles x cout per
 * point) together, about half an L2, so the transforms and the GEMMs work out of L2. Measured
 * on Zen 5 (1 MiB L2): 384-768 KiB beat 1.5-2 MiB on every ResNet/VGG shape, even where the
 * smaller blocks mean reading the transformed weights more often. At least MR tiles. */
#define WG_SCRATCH_BUDGET (512 * 1024)
#define WG_MAX_BLOCK_TILES 64

size_t fx_winograd_panel_floats(int tile, int cin, int nr) {
  if (!tile_ok(tile)) return 0;
  const size_t n = (size_t)tile + 2;
  return n * n * (size_t)nr * ((size_t)cin + 1);
}

size_t fx_winograd_packed_floats(int tile, int cout, int cin, int nr) {
  return (size_t)((cout + nr - 1) / nr) * fx_winograd_panel_floats(tile, cin, nr);
}

void fx_winograd_pack(int tile, int cout, int cin, int nr, const float *w, float *dst) {
  if (!tile_ok(tile)) return;
  const int n = tile + 2;
  const double(*G)[3] = tile == 4 ? wg_g6 : wg_g8;
  const size_t point = (size_t)nr * (size_t)(cin + 1), panel = fx_winograd_panel_floats(tile, cin, nr);
  memset(dst, 0, fx_winograd_packed_floats(tile, cout, cin, nr) * sizeof(float)); /* bias rows, padding */
  for (int co = 0; co < cout; co++) {
    const size_t col = (size_t)(co / nr) * panel + (size_t)(co % nr);
    for (int ci = 0; ci < cin; ci++) {
      double g[3][3], gt[8][3];
      for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++)
          g[ky][kx] = w[(((size_t)co * 3 + (size_t)ky) * 3 + (size_t)kx) * (size_t)cin + (size_t)ci];
      for (int i = 0; i < n; i++) /* G g */
        for (int kx = 0; kx < 3; kx++)
          gt[i][kx] = G[i][0] * g[0][kx] + G[i][1] * g[1][kx] + G[i][2] * g[2][kx];
      const size_t at = col + (size_t)nr * (size_t)(1 + ci);
      for (int i = 0; i < n; i++) /* (G g) G^T */
        for (int j = 0; j < n; j++)
          dst[(size_t)(i * n + j) * point + at] =
              (float)(gt[i][0] * G[j][0] + gt[i][1] * G[j][1] + gt[i][2] * G[j][2]);
    }
  }
}

size_t fx_wg_geom_init(fx_wg_geom *g, int tile, const int *xs, const int *ys, int cin, int cout, int pad_top,
                       int pad_left) {
  g->m = tile;
  g->n = tile + 2;
  g->H = xs[1]; g->W = xs[2]; g->cin = cin;
  g->OH = ys[1]; g->OW = ys[2]; g->cout = cout; g->y_cs = ys[3];
  g->pad_top = pad_top; g->pad_left = pad_left;
  g->tiles_h = (g->OH + tile - 1) / tile;
  g->tiles_w = (g->OW + tile - 1) / tile;
  g->cin_pad = pad16(cin);
  g->cout_pad = pad16(cout);
  return (size_t)ys[0] * (size_t)g->tiles_h * (size_t)g->tiles_w;
}

/* Tiles per block: a multiple of the microkernel's MR within the scratch budget. */
static int block_tiles(int tile, int cout, int cin, int mr) {
  const size_t n = (size_t)tile + 2;
  const size_t per_tile = n * n * (pad16(cin) + pad16(cout));
  size_t tb = (size_t)WG_SCRATCH_BUDGET / sizeof(float) / per_tile;
  if (tb > WG_MAX_BLOCK_TILES) tb = WG_MAX_BLOCK_TILES;
  tb = tb / (size_t)mr * (size_t)mr;
  return tb < (size_t)mr ? mr : (int)tb;
}

/* Distance between the per-point matrices of V (and of M): tb rows plus one cache line, so the
 * (tile+2)^2 rows a transform writes (reads) for one tile do not all land in the same L1 set
 * when tb * channels * 4 bytes is a multiple of 4 KiB. */
static size_t point_stride(size_t tb, size_t cpad) { return tb * cpad + 16; }

static size_t thread_floats(int tile, int cout, int cin, int tb) {
  const size_t n = (size_t)tile + 2;
  return n * n * (point_stride((size_t)tb, pad16(cin)) + point_stride((size_t)tb, pad16(cout)));
}

size_t fx_winograd_scratch_bytes_with(const fx_gemm_config *uk, int tile, int cout, int cin,
                                      int threads) {
  if (!tile_ok(tile)) return 0;
  const int tb = block_tiles(tile, cout, cin, uk->mr);
  return (size_t)(threads > 0 ? threads : 1) * thread_floats(tile, cout, cin, tb) * sizeof(float);
}

size_t fx_winograd_scratch_bytes(int tile, int cout, int cin, int threads) {
  return fx_winograd_scratch_bytes_with(fx_gemm_config_get(), tile, cout, cin, threads);
}

typedef struct {
  const fx_gemm_config *uk;
  const fx_wg_transforms *tf;
  fx_wg_geom g;             /* g.cout: the channels this run computes (a slice of panels) */
  const float *packed, *bias, *x; /* packed: the run's first panel; bias, y: at its first channel */
  float *y, *scratch;
  size_t tiles, tb, per_thread, panels;
  float lo, hi;
} wg_job;

static void wg_block(void *arg, int tid, size_t blk) {
  const wg_job *j = arg;
  const fx_wg_geom *g = &j->g;
  const fx_gemm_config *uk = j->uk;
  const int nn = g->n * g->n, mr = uk->mr, nr = uk->nr, cin = g->cin, cout = g->cout;
  const size_t t0 = blk * j->tb;
  const int tb = (int)(j->tiles - t0 < j->tb ? j->tiles - t0 : j->tb);
  /* V and M are sized for the largest block (the scratch layout does not depend on tb). */
  float *V = j->scratch + (size_t)tid * j->per_thread;
  const size_t vs = point_stride(j->tb, g->cin_pad), ms = point_stride(j->tb, g->cout_pad);
  float *M = V + (size_t)nn * vs;
  j->tf->input(g, j->x, t0, tb, V, vs);
  /* Panel by panel, point by point: the weights are read in their (panel-major) memory order,
   * one sequential stream, which matters where they outweigh the tiles (7x7 maps). */
  const size_t point = (size_t)nr * (size_t)(cin + 1);
  const float *W = j->packed;
  const fx_gemm_out raw = fx_gemm_out_clamp(-INFINITY, INFINITY); /* bias and clamp come after the transform */
  for (size_t p = 0; p < j->panels; p++) {
    const size_t n0 = p * (size_t)nr;
    const size_t nc = (size_t)cout - n0 < (size_t)nr ? (size_t)cout - n0 : (size_t)nr;
    for (int xi = 0; xi < nn; xi++, W += point) {
      const float *A = V + (size_t)xi * vs;
      float *C = M + (size_t)xi * ms + n0;
      for (int r = 0; r < tb; r += mr)
        uk->fn((size_t)(tb - r < mr ? tb - r : mr), nc, (size_t)cin, A + (size_t)r * g->cin_pad,
               g->cin_pad, W, C + (size_t)r * g->cout_pad, g->cout_pad, NULL, &raw);
    }
  }
  j->tf->output(g, M, ms, t0, tb, j->bias, j->lo, j->hi, j->y);
}

void fx_winograd_run_panels(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *packed,
                            int pan0, int pan1, int cout, int cin, const float *bias, const float *x,
                            const fx_shape *xs, int pad_top, int pad_left, float *y, const fx_shape *ys,
                            float *scratch, int act) {
  const int panels = (cout + uk->nr - 1) / uk->nr;
  if (!tile_ok(tile) || pan0 < 0 || pan1 > panels || pan0 >= pan1) return;
  wg_job j;
  memset(&j, 0, sizeof j);
  const int c0 = pan0 * uk->nr, c1 = pan1 * uk->nr < cout ? pan1 * uk->nr : cout;
  j.tiles = fx_wg_geom_init(&j.g, tile, xs->d, ys->d, cin, c1 - c0, pad_top, pad_left);
  if (j.tiles == 0 || cout <= 0 || cin <= 0) return;
  j.uk = uk;
  j.tf = fx_wg_transforms_for(uk);
  j.packed = packed; j.bias = bias ? bias + c0 : NULL; j.x = x; j.y = y + c0; j.scratch = scratch;
  j.panels = (size_t)(pan1 - pan0);
  /* Blocks and the per-thread layout as for all of cout, so any slice fits the scratch that
   * fx_winograd_scratch_bytes gives (a slice's M rows are shorter). */
  const int tb_max = block_tiles(tile, cout, cin, uk->mr);
  j.per_thread = thread_floats(tile, cout, cin, tb_max);
  /* Smaller blocks when there are too few for every thread (2 per thread, whole MR rows). */
  size_t tb = (size_t)tb_max;
  const size_t want = 2 * (size_t)fx_pool_threads(pool);
  if (want > 2 && (j.tiles + tb - 1) / tb < want) {
    size_t per = (j.tiles + want - 1) / want;
    per = (per + (size_t)uk->mr - 1) / (size_t)uk->mr * (size_t)uk->mr;
    if (per < tb) tb = per;
  }
  j.tb = tb;
  fx_act_bounds(act, &j.lo, &j.hi);
  fx_parallel_tasks(pool, (j.tiles + tb - 1) / tb, wg_block, &j);
  if (act != FLEX_ACT_TANH && !fx_act_is_curve(act)) return;
  if (c0 == 0 && c1 == cout) {
    fx_apply_act(act, y, fx_shape_numel(ys));
    return;
  }
  const size_t pixels = fx_shape_numel(ys) / (size_t)cout; /* only this slice's channels */
  for (size_t i = 0; i < pixels; i++) fx_apply_act(act, y + i * (size_t)cout + c0, (size_t)(c1 - c0));
}
