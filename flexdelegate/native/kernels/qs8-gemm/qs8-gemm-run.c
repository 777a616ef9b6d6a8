/* Drives a QS8 GEMM microkernel over a whole matrix (FULLY_CONNECTED, 1x1 convs): MR-row tiles
 * outer, the panels [p0, p1) inner, so a tile's rows stay in L1 while the panels stream. `packed`
 * points at panel p0 (a budget step's slice is just those panels). A variant with a whole-panel
 * GEMM (gemm_rows) takes blocks of rows instead (panel_rows), panels inner, and sets up each
 * panel's output stage once per block rather than once per tile; a variant
 * with a range kernel (AMX) is handed the whole range. fx_qs8_gemm_run_split applies a tail rule
 * (o->tail_from) by running the tail's panels again under its rounding; fx_qs8_gather_run feeds
 * either rows gathered block by block. */
#include <stdlib.h>
#include <string.h>
#include "qs8-run.h"

/* Rows per block of run_row_blocks: a multiple of MR whose A rows fit in 64 KB, read from L2
 * by each panel in turn while the panel stays in L1. Each panel's output stage is set up once a
 * block: with blocks sized so that A and the whole outputs fit 16 KB of L1 (8 rows at 7x7 and
 * 960 channels) that setup cost more than the L1 saved (int8 1x1 160->960 @7: 22.9 -> 19.2 us,
 * 320->1280 @7: 50.8 -> 46.8 us; XNNPack 18 and 44). */
static size_t panel_rows(const fx_qs8_gemm_config *g, size_t kc) {
  const size_t mr = (size_t)g->mr, rows = 65536 / (kc ? kc : 1) / mr * mr;
  return rows < mr ? mr : rows;
}

static void run_row_blocks(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a,
                           size_t a_stride, const uint8_t *packed, size_t pb, int8_t *c, size_t c_stride,
                           const fx_qs8_out *o, size_t p0, size_t p1) {
  const size_t nr = (size_t)g->nr, block = panel_rows(g, kc);
  for (size_t m0 = 0; m0 < m; m0 += block) {
    const size_t mb = m - m0 < block ? m - m0 : block;
    for (size_t p = p0; p < p1; p++) {
      const size_t n0 = p * nr, nc = n - n0 < nr ? n - n0 : nr;
      g->gemm_rows(mb, nc, kc, a + m0 * a_stride, a_stride, packed + (p - p0) * pb, c + m0 * c_stride + n0,
                   c_stride, o);
    }
  }
}

void fx_qs8_gemm_run(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a,
                     size_t a_stride, const void *packed, int8_t *c, size_t c_stride,
                     int32_t row_factor, const fx_qs8_out *o, size_t p0, size_t p1) {
  const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(g, (int)n, 1, (int)kc);
  const size_t pb = fx_qs8_gemm_panel_bytes(&geom), nr = (size_t)g->nr, mr_max = (size_t)g->mr;
  if (g->range) {
    g->range(m, n, kc, a, a_stride, packed, pb, c, c_stride, row_factor, o, p0, p1);
    return;
  }
  if (g->gemm_rows && !row_factor) {
    run_row_blocks(g, m, n, kc, a, a_stride, packed, pb, c, c_stride, o, p0, p1);
    return;
  }
  int32_t corr[FX_QS8_MR_MAX];
  for (size_t m0 = 0; m0 < m; m0 += mr_max) {
    const size_t mr = m - m0 < mr_max ? m - m0 : mr_max;
    const int8_t *at = a + m0 * a_stride;
    if (row_factor) fx_qs8_rowsums_gemm(mr, kc, at, a_stride, row_factor, corr);
    for (size_t p = p0; p < p1; p++) {
      const size_t n0 = p * nr, nc = n - n0 < nr ? n - n0 : nr;
      g->gemm(mr, nc, kc, at, a_stride, (const uint8_t *)packed + (p - p0) * pb, c + m0 * c_stride + n0,
              c_stride, row_factor ? corr : NULL, o);
    }
  }
}

/* Channels [o->tail_from, n) under o->tail_rounding (LiteRT's NEON Quantize loop rounds the
 * last C % 8 channels of a row in its scalar tail). A kernel applies one rounding per call, so
 * after the whole range ran under o->rounding, the panels holding those channels (at most two
 * for a C % 8 tail) run again under the tail's into a small buffer, a block of rows (and of
 * panels) at a time, and the tail channels are copied over. */
static void run_tail(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a, size_t a_stride,
                     const void *packed, int8_t *c, size_t c_stride, int32_t row_factor, const fx_qs8_out *o,
                     size_t p0, size_t p1) {
  const size_t nr = (size_t)g->nr, from = (size_t)o->tail_from;
  const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(g, (int)n, 1, (int)kc);
  const size_t pb = fx_qs8_gemm_panel_bytes(&geom);
  fx_qs8_out tail = *o;
  tail.rounding = o->tail_rounding;
  tail.tail_from = INT32_MAX;
  int8_t buf[4096];
  const size_t per = sizeof buf / (8 * nr); /* panels per pass: blocks of at least 8 rows */
  for (size_t q0 = from / nr > p0 ? from / nr : p0; q0 < p1; q0 += per) {
    const size_t q1 = p1 - q0 < per ? p1 : q0 + per, width = (q1 - q0) * nr, block = sizeof buf / width;
    const size_t lo = from > q0 * nr ? from : q0 * nr, hi = n < q1 * nr ? n : q1 * nr;
    for (size_t m0 = 0; m0 < m; m0 += block) {
      const size_t rows = m - m0 < block ? m - m0 : block;
      /* the panels rebased to channel q0 * nr: panel 0 of n - q0 * nr channels */
      fx_qs8_gemm_run(g, rows, n - q0 * nr, kc, a + m0 * a_stride, a_stride, (const uint8_t *)packed + (q0 - p0) * pb,
                      buf, width, row_factor, &tail, 0, q1 - q0);
      for (size_t i = 0; i < rows; i++)
        memcpy(c + (m0 + i) * c_stride + lo, buf + i * width + (lo - q0 * nr), hi - lo);
    }
  }
}

void fx_qs8_gemm_run_split(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a,
                           size_t a_stride, const void *packed, int8_t *c, size_t c_stride, int32_t row_factor,
                           const fx_qs8_out *o, size_t p0, size_t p1) {
  fx_qs8_gemm_run(g, m, n, kc, a, a_stride, packed, c, c_stride, row_factor, o, p0, p1);
  if (o->rounding < FLEX_RQ_SINGLE && o->tail_rounding != o->rounding && o->tail_from >= 0 && (size_t)o->tail_from < n)
    run_tail(g, m, n, kc, a, a_stride, packed, c, c_stride, row_factor, o, p0, p1);
}

int fx_qs8_gather_run(const fx_qs8_gemm_config *g, size_t kc, size_t n, const fx_qs8_gather *src, const void *packed,
                      int8_t *y, int32_t row_factor, const fx_qs8_out *o, int split, size_t m0, size_t m1, size_t p0,
                      size_t p1) {
  const size_t step = g->range || (g->gemm_rows && !row_factor) ? fx_qs8_row_block(g, kc, p1 - p0) : (size_t)g->mr;
  int8_t *rows = (int8_t *)malloc(step * kc);
  if (!rows) return -1;
  for (size_t r = m0; r < m1; r += step) {
    const size_t count = m1 - r < step ? m1 - r : step;
    src->fill(src->geom, src->x, src->zx, r, count, rows);
    (split ? fx_qs8_gemm_run_split : fx_qs8_gemm_run)(g, count, n, kc, rows, kc, packed, y + r * n, n, row_factor, o,
                                                      p0, p1);
  }
  free(rows);
  return 0;
}
