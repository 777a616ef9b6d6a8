/* Drives a depthwise layer (qs8-dwconv.h): per run of output rows, the taps x ow pointer buffer
 * of each row, then the variant's microkernel for that tap count over the run (the rows are
 * contiguous in NHWC). A microkernel call sets up every channel tile (interleaved weights, the
 * output stage): once per 7-pixel row of a 7x7 map with 960 channels that was as much as the
 * taps (1.64x XNNPack's time there; bench/qs8_layers.py). */
#include <stdlib.h>
#include "qs8-dwconv.h"

/* The taps of output columns [x0, x1) in one window row (line: that input row, NULL in the
 * padding), each tested against the input's width. */
static void tested_taps(const fx_qs8_conv_geom *cg, const int8_t *line, const int8_t *zero_row, size_t C,
                        size_t taps, const int8_t **row, int x0, int x1) {
  for (int ox = x0; ox < x1; ox++) {
    const int8_t **dst = row + (size_t)ox * taps;
    for (int kx = 0; kx < cg->kw; kx++) {
      const int ix = ox * cg->sw - cg->pl + kx * cg->dw;
      dst[kx] = !line || ix < 0 || ix >= cg->w ? zero_row : line + (size_t)ix * C;
    }
  }
}

int fx_qs8_dwconv_run(const fx_qs8_dwconv_config *v, const fx_qs8_conv_geom *cg, int mult,
                      const int8_t *x, const int8_t *zero_row, const void *packed, int8_t *y,
                      const fx_qs8_out *o, size_t r0, size_t r1) {
  if (mult != 1) {
    fx_qs8_dwconv_generic(v->ct, cg, mult, x, zero_row[0], packed, y, o, r0, r1);
    return 0;
  }
  const size_t taps = (size_t)cg->kh * (size_t)cg->kw, C = (size_t)cg->cout, ow = (size_t)cg->ow;
  const fx_qs8_dwconv_fn fn = taps == 9 ? v->taps9 : taps == 25 ? v->taps25 : v->any;
  const int8_t *local[2048], **buf = local;
  const size_t cap = sizeof local / sizeof local[0], per_row = taps * ow, run = per_row > cap ? 1 : cap / per_row;
  if (per_row > cap) {
    buf = (const int8_t **)malloc(per_row * sizeof *buf);
    if (!buf) return -1;
  }
  int ox_lo, ox_hi; /* output columns whose taps need no tests */
  fx_qs8_interior_cols(cg, &ox_lo, &ox_hi);
  const size_t col = (size_t)cg->sw * C, tap = (size_t)cg->dw * C;
  size_t first = r0; /* the run's first row */
  for (size_t r = r0; r < r1; r++) {
    const int b = (int)(r / (size_t)cg->oh), oy = (int)(r % (size_t)cg->oh);
    const int8_t **ptrs = buf + (r - first) * per_row;
    for (int ky = 0; ky < cg->kh; ky++) { /* window row by window row: the row test once */
      const int iy = oy * cg->sh - cg->pt + ky * cg->dh;
      const int8_t *line = iy >= 0 && iy < cg->h ? x + ((size_t)b * cg->h + iy) * (size_t)cg->w * C : NULL;
      const int8_t **row = ptrs + (size_t)ky * cg->kw;
      if (!line) {
        tested_taps(cg, NULL, zero_row, C, taps, row, 0, cg->ow);
        continue;
      }
      tested_taps(cg, line, zero_row, C, taps, row, 0, ox_lo);
      if (ox_lo < ox_hi) {
        const int8_t *p = line + (size_t)(ox_lo * cg->sw - cg->pl) * C, **dst = row + (size_t)ox_lo * taps;
        if (cg->kw == 3) /* the common window, unrolled */
          for (int ox = ox_lo; ox < ox_hi; ox++, dst += taps, p += col) dst[0] = p, dst[1] = p + tap, dst[2] = p + 2 * tap;
        else
          for (int ox = ox_lo; ox < ox_hi; ox++, dst += taps, p += col)
            for (int kx = 0; kx < cg->kw; kx++) dst[kx] = p + (size_t)kx * tap;
      }
      tested_taps(cg, line, zero_row, C, taps, row, ox_hi, cg->ow);
    }
    if (r + 1 - first == run || r + 1 == r1) {
      fn(C, (r + 1 - first) * ow, buf, taps, packed, y + first * ow * C, C, o);
      first = r + 1;
    }
  }
  if (buf != local) free((void *)buf);
  return 0;
}
