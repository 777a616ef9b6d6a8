/* Drives a QS8 GEMM microkernel over a whole matrix (FULLY_CONNECTED, 1x1 convs): MR-row tiles
 * outer, the panels [p0, p1) inner, so a tile's rows stay in L1 while the panels stream. `packed`
 * points at panel p0 (a budget step's slice is just those panels). A variant with a whole-panel
 * GEMM (gemm_rows) takes blocks of rows instead, its rows and outputs together within ~16 KB of
 * L1, and sets up each panel's output stage once per block rather than once per tile; a variant
 * with a range kernel (AMX) is handed the whole range. */
#include "qs8-run.h"

static void run_row_blocks(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a,
                           size_t a_stride, const uint8_t *packed, size_t pb, int8_t *c, size_t c_stride,
                           const fx_qs8_out *o, size_t p0, size_t p1) {
  const size_t nr = (size_t)g->nr, block = fx_qs8_row_block(g, kc, p1 - p0);
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
