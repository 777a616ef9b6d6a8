/* Stem conv: a 3x3 conv over a 3-channel image (kernels/conv-stem/), no scratch. Output pixels
 * are walked one output-row segment at a time: the pixels whose 3 input columns lie inside the
 * row go to the microkernel in one call, straight from the input (three tap-row pointers and the
 * pixel stride); a tap row outside the image reads a static row of zeros, and a pixel whose
 * columns leave the row reads its 27 taps from a small zero-padded copy. The threading (rows x
 * panels tasks) is conv.c's, as for direct conv. */
#include "conv.h"
#include "kernels/conv-stem/stem.h"

/* A tap row outside the image: read as zeros, never written; as long as an input row, so a
 * segment walks it exactly as a row of the image. Caps the input width (fx_conv_stem_geom_ok). */
#define FX_STEM_ZERO_FLOATS 16384
static float g_stem_zero[FX_STEM_ZERO_FLOATS];

int fx_conv_stem_geom_ok(const fx_conv_geom *g) {
  return g->cin == 3 && g->kh == 3 && g->kw == 3 && g->dil_h == 1 && g->dil_w == 1 && g->stride_h >= 1 &&
         g->stride_w >= 1 && (size_t)g->iw * 3 <= FX_STEM_ZERO_FLOATS;
}

/* Output pixels [ox0, ox1) of output row oy of image xb, panels [pan0, pan1) (panel_floats each,
 * `panels` at pan_first), into y (output pixel 0 of this row: y[ox * n]). */
static void stem_segment(const fx_stem_config *uk, const fx_conv_geom *g, size_t n, const float *xb, int oy,
                         int ox0, int ox1, const float *panels, size_t pan_first, size_t pan0, size_t pan1,
                         size_t panel_floats, float *y, const float *res, const fx_gemm_out *out) {
  const float *r[3];
  for (int ky = 0; ky < 3; ky++) {
    const int iy = oy * g->stride_h - g->pad_top + ky;
    r[ky] = iy >= 0 && iy < g->ih ? xb + (size_t)iy * g->iw * 3 : g_stem_zero;
  }
  const int sw = g->stride_w, pl = g->pad_left;
  int oxa = (pl + sw - 1) / sw;                  /* first ox whose window starts in the row */
  const int span = g->iw - 3 + pl;               /* last ox: ox * sw - pl + 2 <= iw - 1 */
  int oxb = span < 0 ? 0 : span / sw + 1;
  oxa = oxa < ox0 ? ox0 : oxa > ox1 ? ox1 : oxa;
  oxb = oxb > ox1 ? ox1 : oxb < oxa ? oxa : oxb;
  const size_t xs = (size_t)sw * 3, nr = (size_t)uk->nr;
  for (size_t pan = pan0; pan < pan1; pan++) {
    const float *w = panels + (pan - pan_first) * panel_floats;
    const size_t n0 = pan * nr, nc = n - n0 < nr ? n - n0 : nr;
    for (int ox = ox0; ox < ox1; ox++) {
      if (ox == oxa && oxa < oxb) { /* the interior, in one call */
        const size_t j = (size_t)(ox * sw - pl) * 3, at = (size_t)ox * n + n0;
        uk->fn((size_t)(oxb - oxa), r[0] + j, r[1] + j, r[2] + j, xs, w, nc, y + at, n, res ? res + at : NULL, out);
        ox = oxb - 1;
        continue;
      }
      float pad[3][FX_STEM_ROW]; /* a border pixel: its taps, zeros outside the row */
      const int ix0 = ox * sw - pl;
      for (int ky = 0; ky < 3; ky++)
        for (int q = 0; q < FX_STEM_ROW; q++) {
          const int ix = ix0 + q / 3;
          pad[ky][q] = ix >= 0 && ix < g->iw ? r[ky][(size_t)ix * 3 + (size_t)(q % 3)] : 0.0f;
        }
      const size_t at = (size_t)ox * n + n0;
      uk->fn(1, pad[0], pad[1], pad[2], 0, w, nc, y + at, n, res ? res + at : NULL, out);
    }
  }
}

void fx_conv_stem_rows(const fx_stem_config *uk, const fx_conv_geom *g, size_t n, const float *x, size_t m0,
                       size_t rows, const float *panels, size_t pan_first, size_t pan0, size_t pan1, float *y,
                       const float *res, const fx_gemm_out *out) {
  const size_t ow = (size_t)g->ow, per_image = ow * (size_t)g->oh, panel_floats = (size_t)uk->nr * (FX_STEM_K + 1);
  for (size_t m = m0; m < m0 + rows;) {
    const size_t b = m / per_image, oy = m % per_image / ow, ox = m % ow;
    const size_t end = m0 + rows - m < ow - ox ? m0 + rows - m : ow - ox; /* pixels left in this output row */
    const size_t row0 = m - ox;                                              /* output pixel (b, oy, 0) */
    stem_segment(uk, g, n, x + b * (size_t)g->ih * g->iw * 3, (int)oy, (int)ox, (int)(ox + end), panels, pan_first,
                 pan0, pan1, panel_floats, y + row0 * n, res ? res + row0 * n : NULL, out);
    m += end;
  }
}
