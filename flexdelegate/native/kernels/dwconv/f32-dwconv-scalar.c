/* DEPTHWISE_CONV_2D (NHWC), TFLite float semantics: output channel
 * oc = ic * mult + m, dilated taps, out-of-bounds taps skipped, bias added
 * after the tap sum, fused activation.
 *
 * The portable variant: the reference every SIMD variant is tested against (fx_depthwise_f32
 * runs the variant chosen once for this CPU, dwconv_config.c). */
#include "dwconv.h"

typedef struct {
  const float *x, *f, *bias;
  float *y;
  int H, W, CI, OH, OW, OC, mult;
  fx_window w;
  float lo, hi;
  int curve; /* SIGMOID / SWISH applied per output row, while it is in cache */
} dw_ctx;

static void dw_rows(void *vctx, size_t begin, size_t end) {
  const dw_ctx *c = (const dw_ctx *)vctx;
  const int H = c->H, W = c->W, CI = c->CI, OH = c->OH, OW = c->OW, OC = c->OC;
  const int mult = c->mult;
  const int kh = c->w.kh, kw = c->w.kw, sh = c->w.stride_h, sw = c->w.stride_w;
  const int dh = c->w.dil_h > 0 ? c->w.dil_h : 1, dwl = c->w.dil_w > 0 ? c->w.dil_w : 1;
  const float lo = c->lo, hi = c->hi;
  const float *restrict bias = c->bias;
  for (size_t r = begin; r < end; ++r) {
    const int b = (int)(r / (size_t)OH), oy = (int)(r % (size_t)OH);
    const int iy0 = oy * sh - c->w.pad_top;
    const float *xb = c->x + (size_t)b * H * W * CI;
    float *yr = c->y + r * (size_t)OW * OC;
    for (int ox = 0; ox < OW; ++ox) {
      const int ix0 = ox * sw - c->w.pad_left;
      float *restrict yp = yr + (size_t)ox * OC;
      for (int oc = 0; oc < OC; ++oc) yp[oc] = 0.0f;
      for (int fy = 0; fy < kh; ++fy) {
        const int iy = iy0 + fy * dh;
        if (iy < 0 || iy >= H) continue;
        const float *xrow = xb + (size_t)iy * W * CI;
        const float *frow = c->f + (size_t)fy * kw * OC;
        for (int fx = 0; fx < kw; ++fx) {
          const int ix = ix0 + fx * dwl;
          if (ix < 0 || ix >= W) continue;
          const float *restrict xp = xrow + (size_t)ix * CI;
          const float *restrict fp = frow + (size_t)fx * OC;
          if (mult == 1) {
            for (int ch = 0; ch < OC; ++ch) yp[ch] += xp[ch] * fp[ch];
          } else if (CI == 1) {
            const float xv = xp[0];
            for (int ch = 0; ch < OC; ++ch) yp[ch] += xv * fp[ch];
          } else {
            for (int ic = 0; ic < CI; ++ic) {
              const float xv = xp[ic];
              float *restrict yq = yp + (size_t)ic * mult;
              const float *restrict fq = fp + (size_t)ic * mult;
              for (int m = 0; m < mult; ++m) yq[m] += xv * fq[m];
            }
          }
        }
      }
      if (bias) {
        for (int oc = 0; oc < OC; ++oc) {
          float v = yp[oc] + bias[oc];
          v = v < lo ? lo : v;
          yp[oc] = v > hi ? hi : v;
        }
      } else {
        for (int oc = 0; oc < OC; ++oc) {
          float v = yp[oc];
          v = v < lo ? lo : v;
          yp[oc] = v > hi ? hi : v;
        }
      }
    }
    if (c->curve) fx_apply_act(c->curve, yr, (size_t)OW * OC);
  }
}

void fx_f32_dwconv_scalar(FX_DWCONV_ARGS) {
  dw_ctx c;
  c.x = x; c.f = filter; c.bias = bias; c.y = y;
  c.H = xs->d[1]; c.W = xs->d[2]; c.CI = xs->d[3];
  c.OH = ys->d[1]; c.OW = ys->d[2]; c.OC = ys->d[3];
  c.mult = mult > 0 ? mult : 1;
  c.w = *w;
  fx_act_bounds(act, &c.lo, &c.hi);
  c.curve = fx_act_is_curve(act) ? act : 0;
  fx_window_rows(pool, ys, w, dw_rows, &c);
  if (act == FLEX_ACT_TANH) fx_apply_act(act, y, fx_shape_numel(ys));
}
