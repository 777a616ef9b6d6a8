/* Drives a QS8 IGEMM microkernel over an NHWC convolution (qs8-run.h): per tile of MR output
 * pixels, an indirection buffer of ks x MR row pointers (the zero row for taps in the padding),
 * the panels of the range over blocks of tiles; or, in the im2col form, gathered im2col rows
 * through the GEMM (conv/choose.c decides which). */
#include <stdlib.h>
#include <string.h>
#include "../qs8-gemm/qs8-run.h"

fx_qs8_gemm_geom fx_qs8_conv_pack_geom(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form) {
  const int taps = cg->kh * cg->kw;
  return form == FX_QS8_CONV_IM2COL ? fx_qs8_gemm_geom_of(g, cg->cout, 1, taps * cg->cin)
                                    : fx_qs8_gemm_geom_of(g, cg->cout, taps, cg->cin);
}

static void fill_tile(const fx_qs8_conv_geom *cg, const int8_t *x, const int8_t *zero_row,
                      size_t pix0, size_t mr, size_t mr_max, const int8_t **ptrs) {
  const size_t ohw = (size_t)cg->oh * (size_t)cg->ow;
  for (size_t i = 0; i < mr_max; i++) {
    const size_t pix = pix0 + (i < mr ? i : 0); /* rows past mr repeat the first: readable */
    const int b = (int)(pix / ohw), oy = (int)(pix % ohw / (size_t)cg->ow), ox = (int)(pix % (size_t)cg->ow);
    for (int ky = 0; ky < cg->kh; ky++)
      for (int kx = 0; kx < cg->kw; kx++) {
        const int iy = oy * cg->sh - cg->pt + ky * cg->dh, ix = ox * cg->sw - cg->pl + kx * cg->dw;
        const size_t t = (size_t)ky * (size_t)cg->kw + (size_t)kx;
        ptrs[t * mr_max + i] = (iy < 0 || iy >= cg->h || ix < 0 || ix >= cg->w)
                                   ? zero_row
                                   : x + (((size_t)b * (size_t)cg->h + (size_t)iy) * (size_t)cg->w + (size_t)ix) * (size_t)cg->cin;
      }
  }
}

/* n bytes, 8 at a time: the runs here are a few bytes (3-channel stems), where a memcpy call per
 * run cost more than the GEMM it feeds. */
static inline void copy_run(int8_t *dst, const int8_t *src, size_t n) {
  for (; n >= 8; n -= 8, dst += 8, src += 8) memcpy(dst, src, 8);
  while (n--) *dst++ = *src++;
}

/* One window row's run of n bytes; src_end bounds the input: a short run (a 3-channel stem's
 * 9 bytes) is one 16-byte copy where both ends allow it (dst_end: the rows buffer's end; the
 * bytes past n are rewritten by the next run or are the buffer's slack). */
static inline void copy_window_run(int8_t *dst, const int8_t *dst_end, const int8_t *src, const int8_t *src_end,
                                   size_t n) {
  if (n <= 16 && src + 16 <= src_end && dst + 16 <= dst_end) memcpy(dst, src, 16);
  else copy_run(dst, src, n);
}

/* im2col rows of output pixels [pix, pix + count): each its taps' cin bytes back to back, taps
 * in the padding the zero point. A window row with dilation 1 and all kw taps inside the input
 * is one run of kw * cin bytes (adjacent pixels are adjacent in NHWC). The pixel's coordinates
 * step along (no division per pixel: with a 27-byte row this gather cost more than the GEMM). */
static void gather_rows(const fx_qs8_conv_geom *cg, const int8_t *x, int8_t zx, size_t pix, size_t count,
                        int8_t *rows, const int8_t *rows_end) {
  const size_t ohw = (size_t)cg->oh * (size_t)cg->ow, cin = (size_t)cg->cin, span = (size_t)cg->kw * cin;
  const int8_t *x_end = x + (size_t)cg->batch * (size_t)cg->h * (size_t)cg->w * cin;
  int b = (int)(pix / ohw), oy = (int)(pix % ohw / (size_t)cg->ow), ox = (int)(pix % (size_t)cg->ow);
  for (size_t i = 0; i < count; i++) {
    int8_t *row = rows + i * (size_t)cg->kh * span;
    const int ix0 = ox * cg->sw - cg->pl, ix1 = ix0 + (cg->kw - 1) * cg->dw;
    for (int ky = 0; ky < cg->kh; ky++, row += span) {
      const int iy = oy * cg->sh - cg->pt + ky * cg->dh;
      if (iy < 0 || iy >= cg->h) {
        memset(row, zx, span);
        continue;
      }
      const int8_t *line = x + ((size_t)b * (size_t)cg->h + (size_t)iy) * (size_t)cg->w * cin;
      if (cg->dw == 1 && ix0 >= 0 && ix1 < cg->w) {
        copy_window_run(row, rows_end, line + (size_t)ix0 * cin, x_end, span);
        continue;
      }
      for (int kx = 0; kx < cg->kw; kx++) {
        const int ix = ix0 + kx * cg->dw;
        if (ix < 0 || ix >= cg->w) memset(row + (size_t)kx * cin, zx, cin);
        else copy_run(row + (size_t)kx * cin, line + (size_t)ix * cin, cin);
      }
    }
    if (++ox == cg->ow) {
      ox = 0;
      if (++oy == cg->oh) oy = 0, b++;
    }
  }
}

/* The IGEMM form over pixels [m0, m1): blocks of up to IGEMM_TILES tiles have their
 * indirection filled at once, then each panel runs over the whole block, so a panel's weights
 * (ks * kc * nr bytes: 4.6 KB for a 3x3 conv of 64 channels, all the panels 37 KB, past L1) are
 * read from L1 by every tile of the block instead of coming from L2 once per tile. */
#define IGEMM_TILES 16
static int run_igemm(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, const int8_t *x,
                     const int8_t *zero_row, const uint8_t *packed, size_t pb, int8_t *y, int32_t row_factor,
                     const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1) {
  const size_t ks = (size_t)cg->kh * (size_t)cg->kw, kc = (size_t)cg->cin, n = (size_t)cg->cout;
  const size_t mr_max = (size_t)g->mr, nr = (size_t)g->nr, per_tile = ks * mr_max;
  const int8_t *local[1024], **ptrs = local;
  size_t tiles = sizeof local / sizeof local[0] / per_tile;
  tiles = tiles > IGEMM_TILES ? IGEMM_TILES : tiles;
  if (tiles == 0) {
    tiles = 1;
    if (!(ptrs = (const int8_t **)malloc(per_tile * sizeof *ptrs))) return -1;
  }
  int32_t corr[IGEMM_TILES][FX_QS8_MR_MAX];
  for (size_t pix = m0; pix < m1; pix += tiles * mr_max) {
    const size_t end = m1 - pix < tiles * mr_max ? m1 : pix + tiles * mr_max;
    for (size_t t = 0, q = pix; q < end; t++, q += mr_max) {
      const size_t mr = end - q < mr_max ? end - q : mr_max;
      fill_tile(cg, x, zero_row, q, mr, mr_max, ptrs + t * per_tile);
      if (row_factor) fx_qs8_rowsums_igemm(mr, kc, ks, ptrs + t * per_tile, mr_max, row_factor, corr[t]);
    }
    for (size_t p = p0; p < p1; p++) {
      const size_t n0 = p * nr, nc = n - n0 < nr ? n - n0 : nr;
      for (size_t t = 0, q = pix; q < end; t++, q += mr_max)
        g->igemm(end - q < mr_max ? end - q : mr_max, nc, kc, ks, ptrs + t * per_tile, packed + (p - p0) * pb,
                 y + q * n + n0, n, row_factor ? corr[t] : NULL, o);
    }
  }
  if (ptrs != local) free((void *)ptrs);
  return 0;
}

/* The im2col form: gathered rows through fx_qs8_gemm_run, MR at a time, or a whole-panel
 * GEMM's row block at a time on a variant that has one. */
static int run_im2col(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, const int8_t *x, int8_t zx,
                      const void *packed, int8_t *y, int32_t row_factor, const fx_qs8_out *o, size_t m0,
                      size_t m1, size_t p0, size_t p1) {
  const size_t K = (size_t)cg->kh * (size_t)cg->kw * (size_t)cg->cin, n = (size_t)cg->cout;
  const size_t step = g->gemm_rows && !row_factor ? fx_qs8_row_block(g, K, p1 - p0) : (size_t)g->mr;
  int8_t *rows = (int8_t *)malloc(step * K);
  if (!rows) return -1;
  for (size_t pix = m0; pix < m1; pix += step) {
    const size_t mr = m1 - pix < step ? m1 - pix : step;
    gather_rows(cg, x, zx, pix, mr, rows, rows + step * K);
    fx_qs8_gemm_run(g, mr, n, K, rows, K, packed, y + pix * n, n, row_factor, o, p0, p1);
  }
  free(rows);
  return 0;
}

int fx_qs8_conv_run(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form, const int8_t *x,
                     const int8_t *zero_row, const void *packed, int8_t *y, int32_t row_factor,
                     const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1) {
  if (form == FX_QS8_CONV_IM2COL)
    return run_im2col(g, cg, x, zero_row[0], packed, y, row_factor, o, m0, m1, p0, p1);
  const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(g, cg, form);
  return run_igemm(g, cg, x, zero_row, packed, fx_qs8_gemm_panel_bytes(&geom), y, row_factor, o, m0, m1, p0, p1);
}
