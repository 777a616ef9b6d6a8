/* Drives a depthwise layer (qs8-dwconv.h): per output row, the taps x ow pointer buffer, then
 * the variant's microkernel for that tap count. */
#include <stdlib.h>
#include "qs8-dwconv.h"

int fx_qs8_dwconv_run(const fx_qs8_dwconv_config *v, const fx_qs8_conv_geom *cg, int mult,
                      const int8_t *x, const int8_t *zero_row, const void *packed, int8_t *y,
                      const fx_qs8_out *o, size_t r0, size_t r1) {
  if (mult != 1) {
    fx_qs8_dwconv_generic(v->ct, cg, mult, x, zero_row[0], packed, y, o, r0, r1);
    return 0;
  }
  const size_t taps = (size_t)cg->kh * (size_t)cg->kw, C = (size_t)cg->cout, ow = (size_t)cg->ow;
  const fx_qs8_dwconv_fn fn = taps == 9 ? v->taps9 : taps == 25 ? v->taps25 : v->any;
  const int8_t *local[2048], **ptrs = local;
  if (taps * ow > sizeof local / sizeof local[0]) {
    ptrs = (const int8_t **)malloc(taps * ow * sizeof *ptrs);
    if (!ptrs) return -1;
  }
  for (size_t r = r0; r < r1; r++) {
    const int b = (int)(r / (size_t)cg->oh), oy = (int)(r % (size_t)cg->oh);
    for (int ky = 0; ky < cg->kh; ky++) { /* window row by window row: the row test once */
      const int iy = oy * cg->sh - cg->pt + ky * cg->dh;
      const int8_t *line = iy >= 0 && iy < cg->h ? x + ((size_t)b * cg->h + iy) * (size_t)cg->w * C : NULL;
      for (int ox = 0; ox < cg->ow; ox++) {
        const int8_t **dst = ptrs + (size_t)ox * taps + (size_t)ky * cg->kw;
        const int ix0 = ox * cg->sw - cg->pl;
        for (int kx = 0; kx < cg->kw; kx++) {
          const int ix = ix0 + kx * cg->dw;
          dst[kx] = !line || ix < 0 || ix >= cg->w ? zero_row : line + (size_t)ix * C;
        }
      }
    }
    fn(C, ow, ptrs, taps, packed, y + r * ow * C, C, o);
  }
  if (ptrs != local) free((void *)ptrs);
  return 0;
}
