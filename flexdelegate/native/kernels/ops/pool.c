/* MAX_POOL_2D / AVERAGE_POOL_2D (NHWC), TFLite float semantics:
 * out-of-bounds taps are skipped; average divides by the in-bounds count. */
#include "ops.h"

#include <float.h>

typedef struct {
  const float *x;
  float *y;
  int H, W, C, OH, OW;
  fx_window w;
  int is_max;
  float lo, hi;
} pool_ctx;

static void pool_rows(void *vctx, size_t begin, size_t end) {
  const pool_ctx *c = (const pool_ctx *)vctx;
  const int H = c->H, W = c->W, C = c->C, OH = c->OH, OW = c->OW;
  const int kh = c->w.kh, kw = c->w.kw, sh = c->w.stride_h, sw = c->w.stride_w;
  const float lo = c->lo, hi = c->hi;
  for (size_t r = begin; r < end; ++r) {
    const int b = (int)(r / (size_t)OH), oy = (int)(r % (size_t)OH);
    const int iy0 = oy * sh - c->w.pad_top;
    const int fy0 = iy0 < 0 ? -iy0 : 0;
    const int fy1 = (H - iy0) < kh ? (H - iy0) : kh;
    const float *xb = c->x + (size_t)b * H * W * C;
    float *yr = c->y + r * (size_t)OW * C;
    for (int ox = 0; ox < OW; ++ox) {
      const int ix0 = ox * sw - c->w.pad_left;
      const int fx0 = ix0 < 0 ? -ix0 : 0;
      const int fx1 = (W - ix0) < kw ? (W - ix0) : kw;
      float *restrict yp = yr + (size_t)ox * C;
      if (c->is_max) {
        for (int ch = 0; ch < C; ++ch) yp[ch] = -FLT_MAX;
        for (int fy = fy0; fy < fy1; ++fy) {
          const float *xrow = xb + ((size_t)(iy0 + fy) * W) * C;
          for (int fx = fx0; fx < fx1; ++fx) {
            const float *restrict xp = xrow + (size_t)(ix0 + fx) * C;
            for (int ch = 0; ch < C; ++ch) {
              const float v = xp[ch], m = yp[ch];
              yp[ch] = m < v ? v : m;
            }
          }
        }
        for (int ch = 0; ch < C; ++ch) {
          float v = yp[ch];
          v = v < lo ? lo : v;
          yp[ch] = v > hi ? hi : v;
        }
      } else {
        for (int ch = 0; ch < C; ++ch) yp[ch] = 0.0f;
        for (int fy = fy0; fy < fy1; ++fy) {
          const float *xrow = xb + ((size_t)(iy0 + fy) * W) * C;
          for (int fx = fx0; fx < fx1; ++fx) {
            const float *restrict xp = xrow + (size_t)(ix0 + fx) * C;
            for (int ch = 0; ch < C; ++ch) yp[ch] += xp[ch];
          }
        }
        const int cnt = (fy1 > fy0 && fx1 > fx0) ? (fy1 - fy0) * (fx1 - fx0) : 0;
        if (cnt == 0) {
          for (int ch = 0; ch < C; ++ch) yp[ch] = 0.0f; /* TFLite errors; keep 0 */
        } else {
          const float fc = (float)cnt;
          for (int ch = 0; ch < C; ++ch) {
            float v = yp[ch] / fc;
            v = v < lo ? lo : v;
            yp[ch] = v > hi ? hi : v;
          }
        }
      }
    }
  }
}

void fx_pool2d_f32(fx_pool *pool, int is_max, const float *x, const fx_shape *xs,
                   const fx_window *w, float *y, const fx_shape *ys, int act) {
  pool_ctx c;
  c.x = x; c.y = y;
  c.H = xs->d[1]; c.W = xs->d[2]; c.C = xs->d[3];
  c.OH = ys->d[1]; c.OW = ys->d[2];
  c.w = *w;
  c.is_max = is_max;
  fx_act_bounds(act, &c.lo, &c.hi);
  fx_window_rows(pool, ys, w, pool_rows, &c);
  if (act == FLEX_ACT_TANH) fx_apply_act(act, y, fx_shape_numel(ys));
}
