/* Drives a QS8 IGEMM microkernel over an NHWC convolution (qs8-run.h): per tile of MR output
 * pixels, an indirection buffer of ks x MR row pointers (the zero row for taps in the padding),
 * the panels of the range over blocks of tiles; or, in the im2col form, gathered im2col rows
 * through the GEMM (conv/choose.c decides which). Hybrid layers (float outputs) run through the
 * float forms: the IGEMM tiles' (tiles_f32) over the same indirection, or the range kernel's
 * over the same im2col rows gathered from their quantized input. */
#include <stdlib.h>
#include <string.h>
#include "../quant/dynamic.h"
#include "../qs8-gemm/qs8-run.h"

fx_qs8_gemm_geom fx_qs8_conv_pack_geom(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form) {
  const int taps = cg->kh * cg->kw;
  return form == FX_QS8_CONV_IM2COL || !g->igemm ? fx_qs8_gemm_geom_of(g, cg->cout, 1, taps * cg->cin)
                                    : fx_qs8_gemm_geom_of(g, cg->cout, taps, cg->cin);
}

/* A tile's indirection: pointer (tap t, row i) at ptrs[t * mr_max + i]. The pixel position is
 * stepped, not divided out per pixel, and a pixel whose window lies inside the input takes its
 * taps as fixed steps from one base with no tests: with the tests and divisions on every tap
 * this cost 15 % of a 3x3 64->64 conv at 56x56. */
static void fill_tile(const fx_qs8_conv_geom *cg, const int8_t *x, const int8_t *zero_row,
                      size_t pix0, size_t mr, size_t mr_max, const int8_t **ptrs) {
  /* the geometry in locals: the pointer stores below may alias *cg */
  const int h = cg->h, w = cg->w, oh = cg->oh, ow = cg->ow, kh = cg->kh, kw = cg->kw;
  const int sh = cg->sh, sw = cg->sw, dh = cg->dh, dw = cg->dw, pt = cg->pt, pl = cg->pl;
  const size_t cin = (size_t)cg->cin, ohw = (size_t)oh * (size_t)ow, ks = (size_t)kh * (size_t)kw;
  const size_t row_step = (size_t)dh * (size_t)w * cin, col_step = (size_t)dw * cin;
  size_t b = pix0 / ohw;
  int oy = (int)(pix0 % ohw / (size_t)ow), ox = (int)(pix0 % (size_t)ow);
  for (size_t i = 0; i < mr; i++) {
    const int iy0 = oy * sh - pt, ix0 = ox * sw - pl;
    const int8_t **p = ptrs + i;
    if (iy0 >= 0 && iy0 + (kh - 1) * dh < h && ix0 >= 0 && ix0 + (kw - 1) * dw < w) {
      const int8_t *row = x + ((b * (size_t)h + (size_t)iy0) * (size_t)w + (size_t)ix0) * cin;
      for (int ky = 0; ky < kh; ky++, row += row_step)
        for (int kx = 0; kx < kw; kx++, p += mr_max) *p = row + (size_t)kx * col_step;
    } else {
      for (int ky = 0; ky < kh; ky++)
        for (int kx = 0; kx < kw; kx++, p += mr_max) {
          const int iy = iy0 + ky * dh, ix = ix0 + kx * dw;
          *p = iy < 0 || iy >= h || ix < 0 || ix >= w
                   ? zero_row
                   : x + ((b * (size_t)h + (size_t)iy) * (size_t)w + (size_t)ix) * cin;
        }
    }
    if (++ox == ow) {
      ox = 0;
      if (++oy == oh) oy = 0, b++;
    }
  }
  for (size_t i = mr; i < mr_max; i++) /* rows past mr repeat the first: readable */
    for (size_t t = 0; t < ks; t++) ptrs[t * mr_max + i] = ptrs[t * mr_max];
}

/* n bytes, 8 at a time: the runs here are a few bytes (3-channel stems), where a memcpy call per
 * run cost more than the GEMM it feeds. */
static inline void copy_run(int8_t *dst, const int8_t *src, size_t n) {
  for (; n >= 8; n -= 8, dst += 8, src += 8) memcpy(dst, src, 8);
  while (n--) *dst++ = *src++;
}

/* Exactly n bytes as two overlapping fixed-size copies where n allows (a 3x3 stem's window row
 * is 9 bytes: 8 + 8), writing nothing past dst + n: the gather fills window rows of the next
 * taps before this one's. */
static inline void copy_exact(int8_t *dst, const int8_t *src, size_t n) {
  if (n >= 8 && n <= 16) {
    uint64_t lo, hi;
    memcpy(&lo, src, 8);
    memcpy(&hi, src + n - 8, 8);
    memcpy(dst, &lo, 8);
    memcpy(dst + n - 8, &hi, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t lo, hi;
    memcpy(&lo, src, 4);
    memcpy(&hi, src + n - 4, 4);
    memcpy(dst, &lo, 4);
    memcpy(dst + n - 4, &hi, 4);
  } else {
    copy_run(dst, src, n);
  }
}

/* Output columns [c0, c1) of one window row (line: that input row; rows row_bytes apart), each
 * tap tested against the input's width. */
static void tested_row(const fx_qs8_conv_geom *cg, const int8_t *line, int8_t zx, int c0, int c1, int8_t *row,
                       size_t row_bytes) {
  const int w = cg->w, kw = cg->kw, sw = cg->sw, dw = cg->dw, pl = cg->pl; /* see gather_rows */
  const size_t cin = (size_t)cg->cin;
  for (int c = c0; c < c1; c++, row += row_bytes)
    for (int kx = 0; kx < kw; kx++) {
      const int ix = c * sw - pl + kx * dw;
      if (ix < 0 || ix >= w) memset(row + (size_t)kx * cin, zx, cin);
      else copy_run(row + (size_t)kx * cin, line + (size_t)ix * cin, cin);
    }
}

/* im2col rows of output pixels [pix, pix + count): each its taps' cin bytes back to back, taps
 * in the padding the zero point. Output row by output row, window row by window row: the input
 * row and its test once per run of pixels, and a pixel whose window row lies inside the input
 * (dilation 1: columns [in_lo, in_hi)) is one run of kw * cin bytes (adjacent pixels are
 * adjacent in NHWC). With a 27-byte row (a 3-channel stem) the gather cost about what the GEMM
 * it feeds did, so nothing per pixel is computed twice. */
static void gather_rows(const void *geom, const int8_t *x, int8_t zx, size_t pix, size_t count, int8_t *rows) {
  const fx_qs8_conv_geom *cg = geom;
  /* the geometry in locals: the byte stores below may alias *cg, which would be read again */
  const int h = cg->h, w = cg->w, oh = cg->oh, ow = cg->ow, kh = cg->kh, kw = cg->kw;
  const int sh = cg->sh, sw = cg->sw, dh = cg->dh, dw = cg->dw, pt = cg->pt, pl = cg->pl;
  const size_t ohw = (size_t)oh * (size_t)ow, cin = (size_t)cg->cin, span = (size_t)kw * cin;
  const size_t line_bytes = (size_t)w * cin, row_bytes = (size_t)kh * span, step = (size_t)sw * cin;
  int in_lo, in_hi; /* output columns whose window row is one run of the input (dilation 1) */
  fx_qs8_interior_cols(cg, &in_lo, &in_hi);
  if (dw != 1) in_lo = in_hi = 0;
  int b = (int)(pix / ohw), oy = (int)(pix % ohw / (size_t)ow), ox = (int)(pix % (size_t)ow);
  for (size_t i = 0; i < count;) {
    const int run = count - i < (size_t)(ow - ox) ? (int)(count - i) : ow - ox; /* pixels ox.. of row oy */
    /* [ox, end) in three segments: tested, interior [lo, hi), tested */
    const int end = ox + run, lo = in_lo < ox ? ox : in_lo > end ? end : in_lo;
    const int hi = in_hi < lo ? lo : in_hi > end ? end : in_hi;
    for (int ky = 0; ky < kh; ky++) {
      int8_t *row = rows + i * row_bytes + (size_t)ky * span;
      const int iy = oy * sh - pt + ky * dh;
      if (iy < 0 || iy >= h) {
        for (int j = 0; j < run; j++, row += row_bytes) memset(row, zx, span);
        continue;
      }
      const int8_t *line = x + ((size_t)b * (size_t)h + (size_t)iy) * line_bytes;
      tested_row(cg, line, zx, ox, lo, row, row_bytes);
      row += (size_t)(lo - ox) * row_bytes;
      if (lo < hi) {
        const int8_t *src = line + (size_t)(lo * sw - pl) * cin;
        for (int c = lo; c < hi; c++, row += row_bytes, src += step) copy_exact(row, src, span);
      }
      tested_row(cg, line, zx, hi, end, row, row_bytes);
    }
    i += (size_t)run, ox = end;
    if (ox == ow) {
      ox = 0;
      if (++oy == oh) oy = 0, b++;
    }
  }
}

/* The IGEMM form over pixels [m0, m1): blocks of up to IGEMM_TILES tiles have their
 * indirection filled at once, then each panel runs over the whole block, so a panel's weights
 * (ks * kc * nr bytes: 4.6 KB for a 3x3 conv of 64 channels, all the panels 37 KB, past L1) are
 * read from L1 by every tile of the block instead of coming from L2 once per tile. */
#define IGEMM_TILES 16

/* A block's indirection: up to IGEMM_TILES tiles of MR pixels, ks pointers a pixel. */
typedef struct {
  const int8_t *local[1024], **ptrs;
  size_t per_tile, pixels; /* pointers a tile; pixels a block */
} igemm_block;

static int block_init(igemm_block *b, const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg) {
  b->per_tile = (size_t)cg->kh * (size_t)cg->kw * (size_t)g->mr;
  size_t tiles = sizeof b->local / sizeof b->local[0] / b->per_tile;
  tiles = tiles > IGEMM_TILES ? IGEMM_TILES : tiles ? tiles : 1;
  b->pixels = tiles * (size_t)g->mr;
  b->ptrs = tiles * b->per_tile <= sizeof b->local / sizeof b->local[0]
                ? b->local : (const int8_t **)malloc(tiles * b->per_tile * sizeof *b->ptrs);
  return b->ptrs ? 0 : -1;
}

static void block_free(igemm_block *b) {
  if (b->ptrs != b->local) free((void *)b->ptrs);
}

/* Fills the indirection of pixels [pix, end), and with row_factor each tile's row sums. */
static void block_fill(igemm_block *b, const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, const int8_t *x,
                       const int8_t *zero_row, size_t pix, size_t end, int32_t row_factor,
                       int32_t (*corr)[FX_QS8_MR_MAX]) {
  const size_t mr_max = (size_t)g->mr, ks = (size_t)cg->kh * (size_t)cg->kw;
  for (size_t t = 0, q = pix; q < end; t++, q += mr_max) {
    const size_t mr = end - q < mr_max ? end - q : mr_max;
    fill_tile(cg, x, zero_row, q, mr, mr_max, b->ptrs + t * b->per_tile);
    if (row_factor) fx_qs8_rowsums_igemm(mr, (size_t)cg->cin, ks, b->ptrs + t * b->per_tile, mr_max, row_factor, corr[t]);
  }
}

static int run_igemm(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, const int8_t *x,
                     const int8_t *zero_row, const uint8_t *packed, size_t pb, int8_t *y, int32_t row_factor,
                     const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1) {
  const size_t ks = (size_t)cg->kh * (size_t)cg->kw, kc = (size_t)cg->cin, n = (size_t)cg->cout;
  const size_t mr_max = (size_t)g->mr, nr = (size_t)g->nr;
  igemm_block b;
  if (block_init(&b, g, cg)) return -1;
  int32_t corr[IGEMM_TILES][FX_QS8_MR_MAX];
  for (size_t pix = m0; pix < m1; pix += b.pixels) {
    const size_t end = m1 - pix < b.pixels ? m1 : pix + b.pixels;
    block_fill(&b, g, cg, x, zero_row, pix, end, row_factor, corr);
    for (size_t p = p0; p < p1; p++) {
      const size_t n0 = p * nr, nc = n - n0 < nr ? n - n0 : nr;
      if (g->igemm_tiles && mr_max == FX_QS8_MR_MAX) /* then corr[t] + 8 is corr[t + 1] */
        g->igemm_tiles(end - pix, nc, kc, ks, b.ptrs, packed + (p - p0) * pb, y + pix * n + n0, n,
                       row_factor ? corr[0] : NULL, o);
      else
        for (size_t t = 0, q = pix; q < end; t++, q += mr_max)
          g->igemm(end - q < mr_max ? end - q : mr_max, nc, kc, ks, b.ptrs + t * b.per_tile, packed + (p - p0) * pb,
                   y + q * n + n0, n, row_factor ? corr[t] : NULL, o);
    }
  }
  block_free(&b);
  return 0;
}

/* The im2col form: gathered rows through fx_qs8_gemm_run, MR at a time, or a whole-panel
 * GEMM's row block at a time on a variant that has one. */
static int run_im2col(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, const int8_t *x, int8_t zx,
                      const void *packed, int8_t *y, int32_t row_factor, const fx_qs8_out *o, size_t m0,
                      size_t m1, size_t p0, size_t p1) {
  const fx_qs8_gather src = {gather_rows, cg, x, zx};
  return fx_qs8_gather_run(g, (size_t)cg->kh * (size_t)cg->kw * (size_t)cg->cin, (size_t)cg->cout, &src, packed, y,
                           row_factor, o, 0, m0, m1, p0, p1);
}

int fx_qs8_conv_run(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form, const int8_t *x,
                     const int8_t *zero_row, const void *packed, int8_t *y, int32_t row_factor,
                     const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1) {
  if (form == FX_QS8_CONV_IM2COL || !g->igemm)
    return run_im2col(g, cg, x, zero_row[0], packed, y, row_factor, o, m0, m1, p0, p1);
  const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(g, cg, form);
  return run_igemm(g, cg, x, zero_row, packed, fx_qs8_gemm_panel_bytes(&geom), y, row_factor, o, m0, m1, p0, p1);
}

/* Rows of a hybrid chunk: its A rows (K bytes) and float outputs within ~64 KB, whole steps of
 * the range kernel's MR. */
static size_t hybrid_chunk(const fx_qs8_gemm_config *g, size_t K, size_t channels) {
  const size_t mr = (size_t)g->mr, rows = 65536 / (K + channels * sizeof(float)) / mr * mr;
  return rows < mr ? mr : rows;
}

/* The curve on channels [c0, c1) of rows [0, rows) of y (n floats a row), one run when whole,
 * and the range of what it leaves (range NULL: not wanted). */
static void hybrid_curve(const fx_qs8_curve *curve, float *y, size_t rows, size_t n, size_t c0, size_t c1,
                         float *range) {
  const int whole = c0 == 0 && c1 == n;
  for (size_t i = 0; i < (whole ? 1 : rows); i++) {
    float *row = y + i * n + c0;
    const size_t len = whole ? rows * n : c1 - c0;
    curve->apply(curve->act, row, len);
    if (range) fx_dynq_minmax(row, len, &range[0], &range[1]);
  }
}

/* o for the rows from pix on; no range when a curve follows (taken after it). */
static fx_qs8_f32_out rows_from(const fx_qs8_f32_out *o, size_t pix, const fx_qs8_curve *curve) {
  fx_qs8_f32_out oc = *o;
  oc.x_scale += pix * o->x_step;
  if (oc.x_zp) oc.x_zp += pix * o->x_step;
  if (oc.res) oc.res += pix * o->res_stride;
  if (curve) oc.range = NULL;
  return oc;
}

/* A hybrid conv in the IGEMM form: blocks of up to IGEMM_TILES tiles (run_igemm's), padding
 * taps reading a row of zx, each panel through the float tiles kernel, the curve on each block
 * while it is in cache. */
static int hybrid_igemm(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, const int8_t *x, int8_t zx,
                        const uint8_t *packed, float *y, const fx_qs8_f32_out *o, const fx_qs8_curve *curve,
                        size_t m0, size_t m1, size_t p0, size_t p1) {
  const size_t ks = (size_t)cg->kh * (size_t)cg->kw, kc = (size_t)cg->cin, n = (size_t)cg->cout;
  const size_t nr = (size_t)g->nr, c0 = p0 * nr, c1 = p1 * nr < n ? p1 * nr : n;
  const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(g, cg, FX_QS8_CONV_IGEMM);
  const size_t pb = fx_qs8_gemm_panel_bytes(&geom);
  igemm_block b;
  int8_t *zero = (int8_t *)malloc(kc);
  if (!zero || block_init(&b, g, cg)) {
    free(zero);
    return -1;
  }
  memset(zero, zx, kc);
  for (size_t pix = m0; pix < m1; pix += b.pixels) {
    const size_t end = m1 - pix < b.pixels ? m1 : pix + b.pixels;
    block_fill(&b, g, cg, x, zero, pix, end, 0, NULL);
    const fx_qs8_f32_out oc = rows_from(o, pix, curve);
    for (size_t p = p0; p < p1; p++)
      g->igemm_tiles_f32(end - pix, n, kc, ks, b.ptrs, packed + (p - p0) * pb, p, y + pix * n, n, &oc);
    if (curve) hybrid_curve(curve, y + pix * n, end - pix, n, c0, c1, o->range);
  }
  free(zero);
  block_free(&b);
  return 0;
}

int fx_qs8_hybrid_run(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form, const int8_t *x, int8_t zx,
                      size_t k, size_t n, const void *packed, float *y, const fx_qs8_f32_out *o,
                      const fx_qs8_curve *curve, size_t m0, size_t m1, size_t p0, size_t p1) {
  if (cg && form == FX_QS8_CONV_IGEMM)
    return hybrid_igemm(g, cg, x, zx, (const uint8_t *)packed, y, o, curve, m0, m1, p0, p1);
  const int gather = cg && (form != FX_QS8_CONV_GEMM);
  const size_t K = cg ? (gather ? (size_t)cg->kh * (size_t)cg->kw : 1) * (size_t)cg->cin : k, nr = (size_t)g->nr;
  const size_t c0 = p0 * nr, c1 = p1 * nr < n ? p1 * nr : n;
  const size_t step = gather || curve ? hybrid_chunk(g, K, c1 - c0) : m1 - m0;
  int8_t *rows = gather ? (int8_t *)malloc(step * K) : NULL;
  if (gather && !rows) return -1;
  for (size_t pix = m0; pix < m1; pix += step) {
    const size_t mr = m1 - pix < step ? m1 - pix : step;
    const fx_qs8_f32_out oc = rows_from(o, pix, curve);
    if (gather) gather_rows(cg, x, zx, pix, mr, rows);
    const int8_t *a = gather ? rows : x + pix * K;
    const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(g, (int)n, 1, (int)K);
    g->range_f32(mr, n, K, a, K, packed, fx_qs8_gemm_panel_bytes(&geom), y + pix * n, n, &oc, p0, p1);
    if (curve) hybrid_curve(curve, y + pix * n, mr, n, c0, c1, o->range);
  }
  free(rows);
  return 0;
}
