/* TRANSPOSE_CONV (NHWC), TFLite float semantics: every input pixel scatters
 * x[b,iy,ix,ic] * f[oc,fy,fx,ic] into y[b, iy*sh - pad_top + fy, ix*sw - pad_left + fx, oc]
 * (out-of-range targets dropped), then bias and the fused activation.
 * Computed here in the equivalent gather form (per output row, so rows can run
 * in parallel without write conflicts), with the filter repacked to
 * [kh, kw, cin, cout] so the inner loop runs contiguously over cout. */
#include "ops.h"

#include <stdlib.h>

typedef struct {
  const float *x, *f, *bias;
  float *y;
  int H, W, CI, OH, OW, CO, kh, kw, sh, sw, pt, pl;
  /* filter element (fy, fx, ic, oc) = f[fy*s_fy + fx*s_fx + ic*s_ic + oc*s_oc] */
  size_t s_fy, s_fx, s_ic, s_oc;
  float lo, hi;
} tc_ctx;

static void tc_rows(void *vctx, size_t begin, size_t end) {
  const tc_ctx *c = (const tc_ctx *)vctx;
  const int H = c->H, W = c->W, CI = c->CI, OH = c->OH, OW = c->OW, CO = c->CO;
  const int kh = c->kh, kw = c->kw, sh = c->sh, sw = c->sw;
  const float lo = c->lo, hi = c->hi;
  for (size_t r = begin; r < end; ++r) {
    const int b = (int)(r / (size_t)OH), oy = (int)(r % (size_t)OH);
    const float *xb = c->x + (size_t)b * H * W * CI;
    float *yr = c->y + r * (size_t)OW * CO;
    for (int ox = 0; ox < OW; ++ox) {
      float *restrict yp = yr + (size_t)ox * CO;
      for (int oc = 0; oc < CO; ++oc) yp[oc] = 0.0f;
      for (int fy = 0; fy < kh; ++fy) {
        const int ty = oy + c->pt - fy;
        if (ty < 0 || ty % sh) continue;
        const int iy = ty / sh;
        if (iy >= H) continue;
        for (int fx = 0; fx < kw; ++fx) {
          const int tx = ox + c->pl - fx;
          if (tx < 0 || tx % sw) continue;
          const int ix = tx / sw;
          if (ix >= W) continue;
          const float *xp = xb + ((size_t)iy * W + ix) * CI;
          const float *ftap = c->f + (size_t)fy * c->s_fy + (size_t)fx * c->s_fx;
          if (c->s_oc == 1) {
            for (int ic = 0; ic < CI; ++ic) {
              const float xv = xp[ic];
              const float *restrict fp = ftap + (size_t)ic * c->s_ic;
              for (int oc = 0; oc < CO; ++oc) yp[oc] += xv * fp[oc];
            }
          } else {
            const size_t s_oc = c->s_oc;
            for (int ic = 0; ic < CI; ++ic) {
              const float xv = xp[ic];
              const float *fp = ftap + (size_t)ic * c->s_ic;
              for (int oc = 0; oc < CO; ++oc) yp[oc] += xv * fp[(size_t)oc * s_oc];
            }
          }
        }
      }
      for (int oc = 0; oc < CO; ++oc) {
        float v = yp[oc] + (c->bias ? c->bias[oc] : 0.0f);
        v = v < lo ? lo : v;
        yp[oc] = v > hi ? hi : v;
      }
    }
  }
}

void fx_transpose_conv_f32(fx_pool *pool, const float *x, const fx_shape *xs, const float *filter,
                           const fx_shape *fs, const float *bias, int stride_h, int stride_w,
                           int pad_top, int pad_left, float *y, const fx_shape *ys, int act) {
  tc_ctx c;
  c.x = x; c.bias = bias; c.y = y;
  c.H = xs->d[1]; c.W = xs->d[2]; c.CI = xs->d[3];
  c.OH = ys->d[1]; c.OW = ys->d[2]; c.CO = ys->d[3];
  c.kh = fs->d[1]; c.kw = fs->d[2];
  c.sh = stride_h > 0 ? stride_h : 1; c.sw = stride_w > 0 ? stride_w : 1;
  c.pt = pad_top; c.pl = pad_left;
  fx_act_bounds(act, &c.lo, &c.hi);
  const size_t rows = (size_t)ys->d[0] * (size_t)c.OH;
  if (rows == 0 || c.OW <= 0 || c.CO <= 0) return;
  const size_t CI = (size_t)c.CI, CO = (size_t)c.CO, KH = (size_t)c.kh, KW = (size_t)c.kw;
  const size_t fn = KH * KW * CI * CO;
  float *ft = fn ? (float *)malloc(fn * sizeof(float)) : NULL;
  if (ft) {
    for (size_t oc = 0; oc < CO; ++oc)
      for (size_t t = 0; t < KH * KW; ++t)
        for (size_t ic = 0; ic < CI; ++ic)
          ft[(t * CI + ic) * CO + oc] = filter[(oc * KH * KW + t) * CI + ic];
    c.f = ft;
    c.s_fy = KW * CI * CO; c.s_fx = CI * CO; c.s_ic = CO; c.s_oc = 1;
  } else {
    c.f = filter; /* original [cout, kh, kw, cin] layout, strided over cout */
    c.s_fy = KW * CI; c.s_fx = CI; c.s_ic = 1; c.s_oc = KH * KW * CI;
  }
  /* per output row: OW * CO * (taps hit ~ kh*kw/(sh*sw)) * CI MACs */
  size_t work = (size_t)c.OW * CO * CI * (KH * KW / ((size_t)c.sh * (size_t)c.sw) + 1);
  size_t grain = (size_t)32768 / (work ? work : 1);
  if (grain < 1) grain = 1;
  fx_parallel_for(pool, rows, grain, tc_rows, &c);
  free(ft);
  if (act == FLEX_ACT_TANH) fx_apply_act(act, y, fx_shape_numel(ys));
}
