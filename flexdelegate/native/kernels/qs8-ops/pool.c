/* AVERAGE_POOL_2D on int8 / uint8 (NHWC), as stock's integer kernels (NOTES.md
 * "AVERAGE_POOL_2D"): per output pixel the int32 sum of the in-bounds taps, divided by their
 * count rounding half away from zero, clamped to the fused activation's range. Exact integer
 * arithmetic: the same on both wheels (their NEON loop only widens and adds). */
#include "qs8-ops.h"

/* channels per pass: the sums stay in a stack buffer, as stock's 256-channel tranches */
#define TRANCHE 256

void fx_qs8_avgpool_rows(const fx_qs8_ops_config *v, const fx_qs8_pool_geom *p, const void *x,
                         void *y, size_t r0, size_t r1) {
  const uint8_t *xb = x;
  uint8_t *yb = y;
  const size_t C = (size_t)p->c;
  int32_t acc[TRANCHE];
  for (size_t r = r0; r < r1; r++) {
    const int b = (int)(r / (size_t)p->oh), oy = (int)(r % (size_t)p->oh);
    const int iy0 = oy * p->sh - p->pt;
    const int fy0 = iy0 < 0 ? -iy0 : 0, fy1 = p->h - iy0 < p->kh ? p->h - iy0 : p->kh;
    for (int ox = 0; ox < p->ow; ox++) {
      const int ix0 = ox * p->sw - p->pl;
      const int fx0 = ix0 < 0 ? -ix0 : 0, fx1 = p->w - ix0 < p->kw ? p->w - ix0 : p->kw;
      const int32_t count = (fx1 - fx0) * (fy1 - fy0);
      uint8_t *out = yb + (r * (size_t)p->ow + (size_t)ox) * C;
      for (size_t c0 = 0; c0 < C; c0 += TRANCHE) {
        const size_t nc = C - c0 < TRANCHE ? C - c0 : TRANCHE;
        for (size_t j = 0; j < nc; j++) acc[j] = 0;
        for (int fy = fy0; fy < fy1 && count > 0; fy++) {
          const size_t pix = ((size_t)b * (size_t)p->h + (size_t)(iy0 + fy)) * (size_t)p->w + (size_t)(ix0 + fx0);
          v->sum_rows(nc, (size_t)(fx1 - fx0), xb + pix * C + c0, C, p->u8, acc);
        }
        for (size_t j = 0; j < nc; j++) {
          const int32_t a = count <= 0 ? 0 : acc[j] > 0 ? (acc[j] + count / 2) / count : (acc[j] - count / 2) / count;
          out[c0 + j] = (uint8_t)fxq_sat(a, p->lo, p->hi);
        }
      }
    }
  }
}
