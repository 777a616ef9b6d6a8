/* RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (NHWC), TFLite reference semantics. */
#include "ops.h"

#include <math.h>
#include <string.h>

/* TFLite ComputeInterpolationValues: lower bound clamped at 0, upper at size-1;
 * the fractional weight uses the unclamped scaled value (so with
 * half_pixel_centers a negative position weights row 0 twice). */
static void bl_interp(int v, float scale, int half_pixel, int in_size, float *scaled, int *lo,
                      int *hi) {
  const float s = half_pixel ? ((float)v + 0.5f) * scale - 0.5f : (float)v * scale;
  const int f = (int)floorf(s);
  const int cl = (int)ceilf(s);
  *scaled = s;
  *lo = f > 0 ? f : 0;
  *hi = cl < in_size - 1 ? cl : in_size - 1;
}

void fx_resize_bilinear_f32(const float *x, const fx_shape *xs, float *y, const fx_shape *ys,
                            int align_corners, int half_pixel_centers) {
  const int N = xs->d[0], H = xs->d[1], W = xs->d[2], C = xs->d[3];
  const int OH = ys->d[1], OW = ys->d[2];
  if (N <= 0 || OH <= 0 || OW <= 0 || C <= 0) return;
  float hs = (float)H / (float)OH, ws = (float)W / (float)OW;
  if (align_corners && OH > 1) hs = (float)(H - 1) / (float)(OH - 1);
  if (align_corners && OW > 1) ws = (float)(W - 1) / (float)(OW - 1);
  for (int b = 0; b < N; ++b) {
    const float *xb = x + (size_t)b * H * W * C;
    for (int oy = 0; oy < OH; ++oy) {
      float iy;
      int y0, y1;
      bl_interp(oy, hs, half_pixel_centers, H, &iy, &y0, &y1);
      const float dy = iy - (float)y0, ry = 1.0f - dy;
      const float *r0 = xb + (size_t)y0 * W * C, *r1 = xb + (size_t)y1 * W * C;
      float *yr = y + (((size_t)b * OH + oy) * OW) * C;
      for (int ox = 0; ox < OW; ++ox) {
        float ix;
        int x0, x1;
        bl_interp(ox, ws, half_pixel_centers, W, &ix, &x0, &x1);
        const float dx = ix - (float)x0, rx = 1.0f - dx;
        const float *restrict p00 = r0 + (size_t)x0 * C, *restrict p01 = r0 + (size_t)x1 * C;
        const float *restrict p10 = r1 + (size_t)x0 * C, *restrict p11 = r1 + (size_t)x1 * C;
        float *restrict yp = yr + (size_t)ox * C;
        /* same association as TFLite: in * wy * wx, summed left to right */
        for (int ch = 0; ch < C; ++ch)
          yp[ch] = p00[ch] * ry * rx + p10[ch] * dy * rx + p01[ch] * ry * dx + p11[ch] * dy * dx;
      }
    }
  }
}

/* TFLite GetNearestNeighbor. */
static int nn_index(int v, int in_size, int out_size, int align_corners, int half_pixel) {
  const float scale = (align_corners && out_size > 1)
                          ? (float)(in_size - 1) / (float)(out_size - 1)
                          : (float)in_size / (float)out_size;
  const float off = half_pixel ? 0.5f : 0.0f;
  const float s = ((float)v + off) * scale;
  int o = align_corners ? (int)roundf(s) : (int)floorf(s);
  if (o > in_size - 1) o = in_size - 1;
  if (half_pixel && o < 0) o = 0;
  return o;
}

void fx_resize_nearest(const void *x, const fx_shape *xs, void *y, const fx_shape *ys, size_t esize,
                       int align_corners, int half_pixel_centers) {
  const int N = xs->d[0], H = xs->d[1], W = xs->d[2], C = xs->d[3];
  const int OH = ys->d[1], OW = ys->d[2];
  if (N <= 0 || OH <= 0 || OW <= 0 || C <= 0) return;
  const size_t row = (size_t)C * esize;
  char *yp = y;
  for (int b = 0; b < N; ++b) {
    const char *xb = (const char *)x + (size_t)b * H * W * row;
    for (int oy = 0; oy < OH; ++oy) {
      const int iy = nn_index(oy, H, OH, align_corners, half_pixel_centers);
      const char *xr = xb + (size_t)iy * W * row;
      for (int ox = 0; ox < OW; ++ox) {
        const int ix = nn_index(ox, W, OW, align_corners, half_pixel_centers);
        memcpy(yp, xr + (size_t)ix * row, row);
        yp += row;
      }
    }
  }
}
