/* CONV_2D and FULLY_CONNECTED over packed weights: the pack (made once at init into the GEMM
 * microkernel's panel layout, or Winograd-transformed, through the weight store), and the
 * driver that splits a run into row x panel tasks over the thread pool and hands each to an
 * algorithm body: im2col GEMM (im2col.c), direct conv (direct.c), Winograd pre-transformed
 * (winograd.c) or at run time (winograd_rt.c). Which one runs is choose.c's decision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "conv.h"
#include "kernels/gemm/gemm.h"
#include "kernels/igemm/igemm.h"
#include "kernels/conv-stem/stem.h"
#include "ir/blob.h"
#include "runtime/pool.h"
#include "store/store.h"
#include "winograd.h"

/* How the weights were packed: GEMM panels (tile 0) or Winograd F(tile x tile, 3x3). */
typedef struct { int n, k, nr, tile, cin; const float *w, *bias; fx_blob *wsrc; } pack_args;

struct fx_conv_pack {
  const fx_gemm_config *uk;
  int n, k;
  int tile;        /* 0: GEMM panels; 4 or 6: Winograd-transformed (stride-1 3x3 conv) */
  pack_args args;  /* to pack again in memory if a cached blob turns out damaged */
  const fx_igemm_config *iuk; /* direct conv's kernel over the same panels (NULL: none) */
  const fx_stem_config *suk;  /* the stem kernel over the same panels (NULL: none) */
  int direct;      /* run as direct conv (chosen at load: fx_conv_set_direct) */
  int stem;        /* direct, through the stem kernel (fx_conv_set_stem) */
  int rt_tile;     /* or as Winograd F(rt_tile, 3) from these panels (fx_conv_set_winograd_rt) */
  fx_wref *ref;    /* the packed weights, in the cache or in memory */
};

/* Bumped whenever fx_gemm_pack's (fx_winograd_pack's) output changes, so old cache blobs are
 * never misread. Winograd 2: panel-major (was point-major), so a channel slice is contiguous. */
#define FX_GEMM_PACK_VERSION 1
#define FX_WINOGRAD_PACK_VERSION 2

/* Rows of im2col per tile: the tile (mt x K floats) should stay within half of a 1 MiB L2. */
#define FX_IM2COL_TILE_BYTES (512 * 1024)
#define FX_MAX_TILE_ROWS 256

/* Panels [lo, hi) (nr output channels each): both layouts are panel-major, so a panel range
 * is the same packing of that range of output channels. */
static int pack_weights(void *ctx, const void *src, void *dst, size_t lo, size_t hi) {
  pack_args a = *(const pack_args *)ctx;
  float *tmp = NULL;
  if (!a.w && a.wsrc && !(a.w = a.wsrc->data)) { /* a deferred fold: computed for packing only */
    if (!(tmp = fx_blob_compute(a.wsrc))) return -1;
    a.w = tmp;
  }
  const int n0 = (int)lo * a.nr, n1 = (int)hi * a.nr < a.n ? (int)hi * a.nr : a.n;
  const float *w = src ? (const float *)src : a.w + (size_t)n0 * (size_t)a.k;
  if (a.tile) fx_winograd_pack(a.tile, n1 - n0, a.cin, a.nr, w, dst);
  else fx_gemm_pack(n1 - n0, a.k, a.nr, w, a.bias ? a.bias + n0 : NULL, dst);
  free(tmp);
  return 0;
}

static fx_pack_desc pack_desc(const pack_args *a) {
  const size_t panels = (size_t)(a->n + a->nr - 1) / (size_t)a->nr, row = (size_t)a->k * sizeof(float);
  fx_pack_desc d = {pack_weights, a, sizeof *a, panels, 0, a->w, (size_t)a->n * row, (size_t)a->nr * row};
  if (!a->w) { /* a deferred fold is computed whole for each call: pack it in one */
    d.whole = 1;
    d.src = a->wsrc->deferred->src;
    d.src_len = a->wsrc->deferred->src_len;
    d.src_part = 0;
  }
  return d;
}

static fx_conv_pack *pack_new(fx_store *store, const fx_gemm_config *uk, int n, int k, int tile, const float *w,
                              fx_blob *wsrc, const float *bias) {
  fx_conv_pack *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->uk = uk;
  p->iuk = fx_igemm_config_for(uk);
  p->suk = fx_stem_config_for(uk);
  p->n = n;
  p->k = k;
  p->tile = tile;
  /* The key covers everything the packed bytes depend on: shapes, weights, bias. */
  uint64_t key[2];
  int dims[3] = {n, k, bias != NULL};
  size_t wbytes = (size_t)n * (size_t)k * sizeof(float);
  const uint32_t algo = tile ? FX_ALGO_WINOGRAD(tile, p->uk->nr) : FX_ALGO_GEMM_PANEL(p->uk->nr);
  const uint32_t version = tile ? FX_WINOGRAD_PACK_VERSION : FX_GEMM_PACK_VERSION;
  const size_t packed = (tile ? fx_winograd_packed_floats(tile, n, k / 9, p->uk->nr)
                              : fx_gemm_packed_floats(n, k, p->uk->nr)) * sizeof(float);
  if (!fx_store_replay(store, algo, version, packed, key)) {
    fx_hasher h;
    fx_hasher_init(&h, algo);
    fx_hasher_update(&h, dims, sizeof dims);
    if (w) {
      fx_store_hash(store, &h, w, wbytes);
    } else { /* a deferred fold: its recipe stands for its value */
      fx_hasher_update(&h, wsrc->deferred->params, wsrc->deferred->params_len);
      fx_store_hash(store, &h, wsrc->deferred->src, wsrc->deferred->src_len);
    }
    if (bias && !tile) fx_store_hash(store, &h, bias, (size_t)n * sizeof(float)); /* Winograd adds it at run */
    fx_hasher_final(&h, key);
  }
  p->args = (pack_args){n, k, p->uk->nr, tile, k / 9, w, bias, w ? NULL : fx_blob_ref(wsrc)};
  const fx_pack_desc d = pack_desc(&p->args);
  p->ref = fx_store_get(store, key, algo, version, packed, &d);
  if (!p->ref) { fx_blob_unref(p->args.wsrc); free(p); return NULL; }
  return p;
}

fx_conv_pack *fx_conv_pack_new(fx_store *store, int n, int k, int tile, const float *w, fx_blob *wsrc,
                               const float *bias) {
  return pack_new(store, fx_gemm_config_get(), n, k, tile, w, wsrc, bias);
}

fx_conv_pack *fx_conv_pack_new_with(fx_store *store, const fx_gemm_config *uk, int n, int k, const float *w,
                                    const float *bias) {
  return pack_new(store, uk, n, k, 0, w, NULL, bias);
}

fx_conv_pack *fx_conv_pack_gemm_form(struct fx_store *store, const fx_conv_pack *p) {
  return fx_conv_pack_new(store, p->n, p->k, 0, p->args.w, p->args.wsrc, p->args.bias);
}

int fx_conv_pack_tile(const fx_conv_pack *p) { return p->tile; }

int fx_conv_pack_mapped(const fx_conv_pack *p) { return p->ref->map != NULL; }

void fx_conv_pack_forget(fx_store *store, fx_conv_pack *p) {
  fx_store_forget(store, p->ref);
  fx_conv_pack_free(p);
}

int fx_conv_pack_check(fx_conv_pack *p, int unmapped) {
  const fx_pack_desc d = pack_desc(&p->args);
  return fx_wref_check(&p->ref, &d, unmapped);
}

int fx_conv_pack_repair(fx_conv_pack *p) {
  const fx_pack_desc d = pack_desc(&p->args);
  return fx_wref_repair(&p->ref, &d);
}

void fx_conv_pack_free(fx_conv_pack *p) {
  if (!p) return;
  fx_wref_unref(p->ref);
  fx_blob_unref(p->args.wsrc);
  free(p);
}


const char *fx_conv_pack_kernel(const fx_conv_pack *p, int direct) {
  if (p->stem && (direct || p->direct)) return p->suk->name;
  return (direct || p->direct) && p->iuk ? p->iuk->name : p->uk->name;
}

static int tile_rows(int k, int mr) {
  int rows = FX_IM2COL_TILE_BYTES / (int)sizeof(float) / (k > 0 ? k : 1);
  rows = rows / mr * mr;
  if (rows < mr) rows = mr;
  return rows > FX_MAX_TILE_ROWS ? FX_MAX_TILE_ROWS / mr * mr : rows;
}

size_t fx_conv_scratch_bytes(const fx_conv_pack *p, const fx_conv_geom *g, int threads) {
  if (p->tile) return fx_winograd_scratch_bytes(p->tile, p->n, p->k / 9, threads);
  if (g->direct || p->direct) return 0;
  return (size_t)threads * (size_t)tile_rows(p->k, p->uk->mr) * (size_t)p->k * sizeof(float);
}

/* One run over rows [m0, m1) and panels [pan0, pan1); `panels` points at panel pan0. */
typedef struct {
  const fx_conv_pack *p;
  const fx_conv_geom *g;
  const float *x, *panels;
  const float *res; /* the fused residual ADD, applied by the microkernels (NULL: none, or curve) */
  float *y, *scratch;
  size_t m0, m1, mt, row_groups, panel_groups, panels_per_group, pan0, pan1;
  size_t block; /* panels per block (fx_conv_panel_block) */
  fx_gemm_out out;
  int curve; /* SIGMOID / SWISH on each microkernel tile, while it is in L1 */
  int igemm; /* direct conv (direct.c) instead of im2col / direct GEMM */
} conv_job;

/* The residual ADD on rows [m0, m0 + rows) x columns [c0, c1) of y (row stride ld), for the
 * outputs the microkernels could not finish: after a SIGMOID / SWISH, and on Winograd layers. */
static void add_residual(const fx_conv_geom *g, float *y, size_t ld, size_t m0, size_t rows, size_t c0, size_t c1) {
  float lo, hi;
  fx_act_bounds(g->residual_act, &lo, &hi);
  for (size_t i = m0; i < m0 + rows; i++) {
    float *restrict yr = y + i * ld;
    const float *restrict rr = g->residual + i * ld;
    for (size_t c = c0; c < c1; c++) {
      float v = yr[c] + rr[c];
      yr[c] = v < lo ? lo : v > hi ? hi : v;
    }
  }
}

static void conv_task(void *arg, int tid, size_t task) {
  conv_job *j = arg;
  const fx_conv_pack *p = j->p;
  const int nr = p->uk->nr;
  size_t rg = task % j->row_groups, pg = task / j->row_groups;
  size_t m0 = j->m0 + rg * j->mt, rows = j->m1 - m0 < j->mt ? j->m1 - m0 : j->mt;
  size_t pan0 = j->pan0 + pg * j->panels_per_group, pan1 = pan0 + j->panels_per_group;
  if (pan1 > j->pan1) pan1 = j->pan1;
  if (j->igemm && p->stem)
    fx_conv_stem_rows(p->suk, j->g, (size_t)p->n, j->x, m0, rows, j->panels, j->pan0, pan0, pan1, j->y, j->res,
                      &j->out);
  else if (j->igemm)
    fx_conv_direct_rows(p->iuk, j->g, (size_t)p->n, j->x, m0, rows, j->panels, j->pan0, pan0, pan1, j->y,
                        j->res, &j->out);
  else
    fx_conv_gemm_rows(p->uk, j->g, (size_t)p->n, (size_t)p->k, j->x, m0, rows,
                      j->g->direct ? NULL : j->scratch + (size_t)tid * j->mt * (size_t)p->k, j->panels, j->pan0, pan0,
                      pan1, j->block, j->y, j->res, &j->out);
  if (pan1 <= pan0 || !j->curve) return;
  /* On the tile just written (in L2), in as few calls as possible. */
  size_t c0 = pan0 * (size_t)nr, c1 = pan1 * (size_t)nr < (size_t)p->n ? pan1 * (size_t)nr : (size_t)p->n;
  float *c = j->y + m0 * (size_t)p->n;
  if (c0 == 0 && c1 == (size_t)p->n) fx_apply_act(j->curve, c, rows * (size_t)p->n);
  else
    for (size_t i = 0; i < rows; i++) fx_apply_act(j->curve, c + i * (size_t)p->n + c0, c1 - c0);
  if (j->g->residual) add_residual(j->g, j->y, (size_t)p->n, m0, rows, c0, c1);
}

int fx_conv_panels(const fx_conv_pack *p) { return (p->n + p->uk->nr - 1) / p->uk->nr; }
int fx_conv_nr(const fx_conv_pack *p) { return p->uk->nr; }
int fx_conv_isa(const fx_conv_pack *p) { return p->uk->isa; }
size_t fx_conv_panel_bytes(const fx_conv_pack *p) {
  if (p->tile) return fx_winograd_panel_floats(p->tile, p->k / 9, p->uk->nr) * sizeof(float);
  return (size_t)p->uk->nr * (size_t)(p->k + 1) * sizeof(float);
}
size_t fx_conv_row_bytes(const fx_conv_pack *p) { return (size_t)p->k * sizeof(float); }
const struct fx_wref *fx_conv_weights(const fx_conv_pack *p) { return p->ref; }

void fx_conv_run(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                 float *y, float *scratch, int act) {
  fx_conv_run_part(pool, p, g, x, y, scratch, act, p->ref->data, 0, fx_conv_panels(p), 0, g->m, 0);
}

static void run_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x, float *y,
                     float *scratch, int act, const float *panels, int pan0, int pan1, size_t m0, size_t m1,
                     size_t tile, int igemm) {
  conv_job j = {.p = p, .g = g, .x = x, .y = y, .scratch = scratch, .panels = panels, .igemm = igemm};
  const int mr = igemm ? (p->stem ? p->suk->mr : p->iuk->mr) : p->uk->mr;
  j.m0 = m0;
  j.m1 = m1;
  j.pan0 = (size_t)pan0;
  j.pan1 = (size_t)pan1;
  /* direct conv: im2col's rows per task too (it balances the same weight reuse), no scratch cap */
  j.mt = g->direct && !igemm ? (size_t)(mr * 8) : (size_t)tile_rows(p->k, mr);
  if (tile && tile < j.mt && !igemm) j.mt = tile; /* a budget plan's smaller scratch */
  const size_t rows = m1 - m0, panels_n = (size_t)(pan1 - pan0), threads = (size_t)fx_pool_threads(pool);
  j.panel_groups = 1;
  if (threads > 1 && rows > 0 && panels_n > 0) {
    /* Tasks are claimed one at a time, so the threads end at most one task apart: aim for
     * >= 4 equal tasks per thread. When the weights outweigh the activations (N > M: small
     * maps, FC) split the columns, so each thread streams only its own weight panels;
     * otherwise split the rows into equal tiles of whole microkernel rows (a 14x14 map in
     * 64-row tiles was 64,64,64,4: one thread did twice the other's work). */
    const size_t want = threads * 4;
    if ((size_t)p->n > rows) {
      size_t per = panels_n / want;
      j.panels_per_group = per ? per : 1;
      j.panel_groups = (panels_n + j.panels_per_group - 1) / j.panels_per_group;
    } else {
      size_t tasks = (rows + j.mt - 1) / j.mt;
      if (tasks < want) tasks = want;
      tasks = (tasks + threads - 1) / threads * threads;
      size_t mt = (rows + tasks - 1) / tasks;
      mt = (mt + (size_t)mr - 1) / (size_t)mr * (size_t)mr;
      if (mt < j.mt) j.mt = mt;
    }
  }
  j.row_groups = (rows + j.mt - 1) / j.mt;
  if (j.panel_groups == 1) j.panels_per_group = panels_n;
  if (!igemm)
    j.block = fx_conv_panel_block(rows < j.mt ? rows : j.mt, mr, (size_t)p->k, panels_n, fx_conv_panel_bytes(p));
  float lo, hi, rlo, rhi;
  fx_act_bounds(act, &lo, &hi);
  fx_act_bounds(g->residual_act, &rlo, &rhi);
  j.out = (fx_gemm_out){lo, hi, rlo, rhi};
  j.curve = fx_act_is_curve(act) ? act : 0;
  j.res = j.curve ? NULL : g->residual; /* the curve comes first: then a pass adds it */
  if (m1 > m0 && panels_n) fx_parallel_tasks(pool, j.row_groups * j.panel_groups, conv_task, &j);
}

static size_t rt_tiles(const fx_conv_geom *g, int tile) {
  return g->m / ((size_t)g->oh * g->ow) * (size_t)((g->oh + tile - 1) / tile) * (size_t)((g->ow + tile - 1) / tile);
}

size_t fx_conv_winograd_rt_scratch_bytes(const fx_conv_pack *p, const fx_conv_geom *g, int threads) {
  return p->rt_tile ? fx_winograd_rt_scratch_bytes(p->uk, p->rt_tile, g->cin, rt_tiles(g, p->rt_tile), threads) : 0;
}

void fx_conv_run_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                      float *y, float *scratch, int act, const float *panels, int pan0, int pan1,
                      size_t m0, size_t m1, size_t tile) {
  /* Run-time Winograd only for a whole run: a budget plan (tile > 0, or a slice) runs the GEMM it sized. */
  const int rt = p->rt_tile && !tile && m0 == 0 && m1 == g->m && pan0 == 0 && pan1 == fx_conv_panels(p);
  if (p->tile || rt) { /* every row: Winograd slices by channels only */
    fx_shape xs = {4, {(int)(g->m / ((size_t)g->oh * g->ow)), g->ih, g->iw, g->cin}};
    fx_shape ys = {4, {xs.d[0], g->oh, g->ow, p->n}};
    if (rt)
      fx_winograd_rt_run(p->uk, pool, p->rt_tile, panels, p->n, g->cin, p->args.bias, x, &xs, g->pad_top,
                         g->pad_left, y, &ys, scratch, act);
    else
      fx_winograd_run_panels(p->uk, pool, p->tile, panels, pan0, pan1, p->n, g->cin, p->args.bias, x, &xs,
                             g->pad_top, g->pad_left, y, &ys, scratch, act);
    size_t c0 = (size_t)pan0 * (size_t)p->uk->nr, c1 = (size_t)pan1 * (size_t)p->uk->nr;
    if (g->residual) add_residual(g, y, (size_t)p->n, 0, g->m, c0, c1 < (size_t)p->n ? c1 : (size_t)p->n);
    return;
  }
  run_part(pool, p, g, x, y, scratch, act, panels, pan0, pan1, m0, m1, tile, p->direct);
}

void fx_conv_run_winograd_rt_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                                  float *y, float *scratch, int act, const float *panels, int pan0, int pan1) {
  fx_shape xs = {4, {(int)(g->m / ((size_t)g->oh * g->ow)), g->ih, g->iw, g->cin}};
  fx_shape ys = {4, {xs.d[0], g->oh, g->ow, p->n}};
  fx_winograd_rt_run_panels(p->uk, pool, p->rt_tile, panels, pan0, pan1, p->n, g->cin, p->args.bias, x, &xs,
                            g->pad_top, g->pad_left, y, &ys, scratch, act);
  size_t c0 = (size_t)pan0 * (size_t)p->uk->nr, c1 = (size_t)pan1 * (size_t)p->uk->nr;
  if (g->residual) add_residual(g, y, (size_t)p->n, 0, g->m, c0, c1 < (size_t)p->n ? c1 : (size_t)p->n);
}

void fx_conv_run_direct_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                             float *y, int act, const float *panels, int pan0, int pan1, size_t m0, size_t m1) {
  run_part(pool, p, g, x, y, NULL, act, panels, pan0, pan1, m0, m1, 0, 1);
}

int fx_conv_direct_supported(const fx_conv_pack *p, const fx_conv_geom *g) {
  return !p->tile && p->iuk && p->k == g->kh * g->kw * g->cin && fx_conv_direct_geom_ok(g, p->iuk->mr);
}

void fx_conv_set_direct(fx_conv_pack *p, int on) {
  p->direct = on && p->iuk;
  p->stem = 0;
}
int fx_conv_stem_supported(const fx_conv_pack *p, const fx_conv_geom *g) {
  return !p->tile && p->suk && p->k == FX_STEM_K && fx_conv_stem_geom_ok(g);
}
void fx_conv_set_stem(fx_conv_pack *p, int on) {
  p->stem = on && p->suk;
  p->direct = p->stem;
}
int fx_conv_pack_stem(const fx_conv_pack *p) { return p->stem; }
void fx_conv_set_winograd_rt(fx_conv_pack *p, int tile) { p->rt_tile = !p->tile && p->k % 9 == 0 ? tile : 0; }
int fx_conv_pack_winograd_rt(const fx_conv_pack *p) { return p->rt_tile; }
int fx_conv_pack_direct(const fx_conv_pack *p) { return p->direct; }
