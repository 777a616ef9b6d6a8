/* int8 TRANSPOSE_CONV on the QS8 GEMM drivers (transpose_conv.h). Stock accumulates every
 * input pixel x tap product into an int32 map (col2im), adds the bias and requantizes per
 * channel; the same int32 sums come out of one GEMM whose A row for output pixel (b, oy, ox)
 * holds, per tap (ky, kx), the input pixel that tap carries there, or cin bytes of the input
 * zero point where none does: those contribute (zx - zx) * w = 0, exactly as a conv's padding
 * taps (the packed bias folds zx * sum w). The weights [cout][kh][kw][cin] are then a GEMM of
 * K = kh * kw * cin packed once like a FULLY_CONNECTED's (sliced by panels like one), and the
 * output stage requantizes as stock does. A stride s wastes (s_h * s_w - 1) / (s_h * s_w) of
 * the products on zero-point taps, for an exact int32 sum without a scatter buffer. */
#include <string.h>
#include "kernels/qs8-gemm/qs8-run.h"
#include "transpose_conv.h"

/* A rows of output pixels [pix, pix + count): output row oy takes filter rows ky = (oy + pt)
 * mod sh, + sh, ... from input rows iy = (oy + pt - ky) / sh, the columns likewise. */
static void gather_taps(const void *geom, const int8_t *x, int8_t zx, size_t pix, size_t count, int8_t *rows) {
  const fx_tconv_geom *g = geom;
  const int kh = g->kh, kw = g->kw, sh = g->stride_h, sw = g->stride_w, ih = g->ih, iw = g->iw;
  const size_t cin = (size_t)g->cin, K = (size_t)kh * (size_t)kw * cin, ow = (size_t)g->ow;
  const size_t ohw = (size_t)g->oh * ow;
  memset(rows, zx, count * K);
  for (size_t i = 0; i < count; i++) {
    const size_t p = pix + i, b = p / ohw;
    const int ny = (int)(p % ohw / ow) + g->pad_top, nx = (int)(p % ow) + g->pad_left;
    int8_t *row = rows + i * K;
    for (int ky = ny % sh; ky < kh; ky += sh) {
      const int iy = (ny - ky) / sh;
      if (iy < 0) break; /* and every later ky */
      if (iy >= ih) continue;
      const int8_t *line = x + ((size_t)b * (size_t)ih + (size_t)iy) * (size_t)iw * cin;
      for (int kx = nx % sw; kx < kw; kx += sw) {
        const int ix = (nx - kx) / sw;
        if (ix < 0) break;
        if (ix < iw) memcpy(row + ((size_t)ky * (size_t)kw + (size_t)kx) * cin, line + (size_t)ix * cin, cin);
      }
    }
  }
}

int fx_tconv_qs8_run(const struct fx_qs8_gemm_config *g, const fx_tconv_geom *geo, const int8_t *x, int8_t zx,
                     const void *packed, int8_t *y, const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1) {
  const fx_qs8_gather src = {gather_taps, geo, x, zx};
  const size_t K = (size_t)geo->kh * (size_t)geo->kw * (size_t)geo->cin;
  return fx_qs8_gather_run(g, K, (size_t)geo->cout, &src, packed, y, 0, o, 1, m0, m1, p0, p1);
}
