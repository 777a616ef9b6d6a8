/* RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (NHWC), TFLite reference semantics; bilinear on
 * int8 / uint8 as stock's integer kernels compute it. */
#include "ops.h"

#include <math.h>
#include <string.h>
#include "kernels/simd/nofuse.h"

/* TFLite ComputeInterpolationValues: lower bound clamped at 0, upper at size-1;
 * the fractional weight uses the unclamped scaled value (so with
 * half_pixel_centers a negative position weights row 0 twice). */
static void bl_interp(int v, float scale, int half_pixel, int in_size, float *scaled, int *lo,
                      int *hi) {
  float s = (float)v * scale;
  if (half_pixel) {
    s = ((float)v + 0.5f) * scale;
    FX_NOFUSE(s); /* two roundings, as stock's x86 builds */
    s = s - 0.5f;
  }
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

/* ---- RESIZE_BILINEAR on int8 / uint8 ---- */
/* int8: reference_ops::ResizeBilinearInteger (optimized_ops' int8 entry is that function): scales
 * and positions in 10-bit fixed point, lower bound the position / 1024 truncated toward zero
 * (clamped at 0), upper bound rounded up (clamped at size - 1). */
static int32_t scale_q10(int in, int out, int align_corners) {
  if (align_corners && out > 1) return ((1 << 10) * (in - 1) + (out - 1) / 2) / (out - 1);
  return ((1 << 10) * in + out / 2) / out;
}

static void interp_q10(int v, int32_t scale, int half_pixel, int in_size, int32_t *scaled, int *lo, int *hi) {
  const int32_t s = half_pixel ? v * scale + scale / 2 - (1 << 9) : v * scale;
  const int32_t up = (s + (1 << 10) - 1) / (1 << 10);
  *scaled = s;
  *lo = s / (1 << 10) > 0 ? s / (1 << 10) : 0;
  *hi = up < in_size - 1 ? up : in_size - 1;
}

int fx_resize_bilinear_q8_fits(const fx_shape *xs, const fx_shape *ys) {
  const int64_t lim = 1 << 20; /* 1024 * size and position * scale stay in int32 */
  return xs->d[1] < lim && xs->d[2] < lim && ys->d[1] < lim && ys->d[2] < lim;
}

/* One output pixel's C channels from its four taps (rows 0 / 1, columns 0 / 1). int8: the
 * int64 products by the 10-bit weights w[] (w00, w10, w01, w11), (sum +- 2^19) / 2^20 truncated
 * (half away from zero: no TFLITE_SINGLE_ROUNDING in either wheel). */
static void pixel_s8(const int8_t *p00, const int8_t *p01, const int8_t *p10, const int8_t *p11, int C,
                     const int64_t w[4], int8_t *out) {
  for (int c = 0; c < C; ++c) {
    const int64_t o = p00[c] * w[0] + p10[c] * w[1] + p01[c] * w[2] + p11[c] * w[3];
    out[c] = (int8_t)(uint8_t)((o + (o > 0 ? 1 << 19 : -(1 << 19))) / (1 << 20));
  }
}

/* uint8: the taps (y0,x0), (y0,x1), (y1,x0), (y1,x1) times the float weights s[] summed left to
 * right, + 0.5, truncated. */
static void pixel_u8(const uint8_t *p00, const uint8_t *p01, const uint8_t *p10, const uint8_t *p11, int C,
                     const float s[4], uint8_t *out) {
  for (int c = 0; c < C; ++c) {
    float acc = (float)p00[c] * s[0], t1 = (float)p01[c] * s[1], t2 = (float)p10[c] * s[2], t3 = (float)p11[c] * s[3];
    FX_NOFUSE(acc); /* separate roundings, in stock's order */
    FX_NOFUSE(t1);
    FX_NOFUSE(t2);
    FX_NOFUSE(t3);
    acc = acc + t1;
    acc = acc + t2;
    acc = acc + t3;
    out[c] = (uint8_t)(int32_t)(acc + 0.5f);
  }
}

/* uint8 is optimized_ops::ResizeBilinear's float loop (ResizeBilinearGenericSmallChannel: the float
 * scales and positions of the FP32 kernel, weights (1 - dy)(1 - dx), (1 - dy) dx, dy (1 - dx),
 * dy dx); its 8x half-pixel special case (ResizeBilinear888Uint8, 8.8 fixed point) is exact, as
 * this is there. int8 walks the same rows and columns in 10-bit fixed point. */
void fx_resize_bilinear_q8(int is_unsigned, const void *x, const fx_shape *xs, void *y, const fx_shape *ys,
                           int align_corners, int half_pixel_centers, size_t r0, size_t r1) {
  const int H = xs->d[1], W = xs->d[2], C = xs->d[3], OH = ys->d[1], OW = ys->d[2];
  if (C <= 0) return;
  const int32_t hq = is_unsigned ? 0 : scale_q10(H, OH, align_corners), wq = is_unsigned ? 0 : scale_q10(W, OW, align_corners);
  float hs = (float)H / (float)OH, ws = (float)W / (float)OW;
  if (align_corners && OH > 1) hs = (float)(H - 1) / (float)(OH - 1);
  if (align_corners && OW > 1) ws = (float)(W - 1) / (float)(OW - 1);
  for (size_t r = r0; r < r1; r++) {
    const int b = (int)(r / (size_t)OH), oy = (int)(r % (size_t)OH);
    int y0, y1;
    int32_t iyq = 0;
    float iy = 0.0f;
    if (is_unsigned) bl_interp(oy, hs, half_pixel_centers, H, &iy, &y0, &y1);
    else interp_q10(oy, hq, half_pixel_centers, H, &iyq, &y0, &y1);
    const int64_t dyq = is_unsigned ? 0 : iyq - (1 << 10) * y0;
    const float dy = iy - (float)y0;
    const uint8_t *xb = (const uint8_t *)x + (size_t)b * H * W * C;
    const uint8_t *row0 = xb + (size_t)y0 * W * C, *row1 = xb + (size_t)y1 * W * C;
    uint8_t *yr = (uint8_t *)y + r * (size_t)OW * C;
    for (int ox = 0; ox < OW; ++ox) {
      int x0, x1;
      uint8_t *out = yr + (size_t)ox * C;
      if (is_unsigned) {
        float ix;
        bl_interp(ox, ws, half_pixel_centers, W, &ix, &x0, &x1);
        const float dx = ix - (float)x0;
        const float s[4] = {(1.0f - dy) * (1.0f - dx), (1.0f - dy) * dx, dy * (1.0f - dx), dy * dx};
        pixel_u8(row0 + (size_t)x0 * C, row0 + (size_t)x1 * C, row1 + (size_t)x0 * C, row1 + (size_t)x1 * C, C, s,
                 out);
      } else {
        int32_t ixq;
        interp_q10(ox, wq, half_pixel_centers, W, &ixq, &x0, &x1);
        const int64_t dx = ixq - (1 << 10) * x0, rx = (1 << 10) - dx, ry = (1 << 10) - dyq;
        const int64_t w[4] = {ry * rx, dyq * rx, ry * dx, dyq * dx};
        pixel_s8((const int8_t *)row0 + (size_t)x0 * C, (const int8_t *)row0 + (size_t)x1 * C,
                 (const int8_t *)row1 + (size_t)x0 * C, (const int8_t *)row1 + (size_t)x1 * C, C, w, (int8_t *)out);
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
