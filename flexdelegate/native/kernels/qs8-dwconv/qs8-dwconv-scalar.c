/* The portable depthwise code: the generic whole-layer loop (any depth multiplier; the scalar
 * reference and every variant's path for multipliers > 1) and the scalar microkernels. */
#include <string.h>
#include "qs8-dwconv.h"

static int32_t rd32(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}
static int16_t rd16(const uint8_t *p) {
  int16_t v;
  memcpy(&v, p, 2);
  return v;
}

/* Channel c's panel fields: panel of ct channels, `taps` int16 weights per channel. */
typedef struct {
  const uint8_t *panel;
  size_t j, ct, taps;
} dw_chan;

static dw_chan chan_of(const void *packed, size_t c, size_t ct, size_t taps) {
  dw_chan d = {(const uint8_t *)packed + c / ct * ct * (4 + 2 * taps + 8), c % ct, ct, taps};
  return d;
}
static int32_t chan_bias(const dw_chan *d) { return rd32(d->panel + 4 * d->j); }
static int16_t chan_w(const dw_chan *d, size_t t) { return rd16(d->panel + 4 * d->ct + 2 * (t * d->ct + d->j)); }
static int32_t chan_m(const dw_chan *d) { return rd32(d->panel + d->ct * (4 + 2 * d->taps) + 4 * d->j); }
static int32_t chan_s(const dw_chan *d) { return rd32(d->panel + d->ct * (4 + 2 * d->taps) + 4 * (d->ct + d->j)); }

void fx_qs8_dwconv_generic(int ct, const fx_qs8_conv_geom *cg, int mult, const int8_t *x,
                           int32_t zp_in, const void *packed, int8_t *y, const fx_qs8_out *o,
                           size_t r0, size_t r1) {
  const size_t taps = (size_t)cg->kh * (size_t)cg->kw, C = (size_t)cg->cout;
  for (size_t r = r0; r < r1; r++) {
    const int b = (int)(r / (size_t)cg->oh), oy = (int)(r % (size_t)cg->oh);
    for (int ox = 0; ox < cg->ow; ox++)
      for (size_t c = 0; c < C; c++) {
        const dw_chan d = chan_of(packed, c, (size_t)ct, taps);
        uint32_t acc = (uint32_t)chan_bias(&d);
        for (int ky = 0; ky < cg->kh; ky++)
          for (int kx = 0; kx < cg->kw; kx++) {
            const int iy = oy * cg->sh - cg->pt + ky * cg->dh, ix = ox * cg->sw - cg->pl + kx * cg->dw;
            const int32_t xv = (iy < 0 || iy >= cg->h || ix < 0 || ix >= cg->w)
                                   ? zp_in
                                   : x[(((size_t)b * cg->h + iy) * cg->w + ix) * (size_t)cg->cin + c / (size_t)mult];
            acc += (uint32_t)(xv * chan_w(&d, (size_t)ky * cg->kw + kx));
          }
        y[(r * (size_t)cg->ow + (size_t)ox) * C + c] =
            fx_qs8_out_one((int32_t)acc, chan_m(&d), chan_s(&d), fx_qs8_rounding_of(o, c), o);
      }
  }
}

void fx_qs8_dwconv_portable(size_t ct, FX_QS8_DW_ARGS) {
  for (size_t px = 0; px < pixels; px++)
    for (size_t c = 0; c < channels; c++) {
      const dw_chan d = chan_of(w, c, ct, taps);
      uint32_t acc = (uint32_t)chan_bias(&d);
      for (size_t t = 0; t < taps; t++) acc += (uint32_t)(in[px * taps + t][c] * chan_w(&d, t));
      out[px * out_stride + c] = fx_qs8_out_one((int32_t)acc, chan_m(&d), chan_s(&d), fx_qs8_rounding_of(o, c), o);
    }
}

#define CT 4
void fx_qs8_dwconv_9__scalar(FX_QS8_DW_ARGS) { fx_qs8_dwconv_portable(CT, channels, pixels, in, taps, w, out, out_stride, o); }
void fx_qs8_dwconv_25__scalar(FX_QS8_DW_ARGS) { fx_qs8_dwconv_portable(CT, channels, pixels, in, taps, w, out, out_stride, o); }
void fx_qs8_dwconv_any__scalar(FX_QS8_DW_ARGS) { fx_qs8_dwconv_portable(CT, channels, pixels, in, taps, w, out, out_stride, o); }
