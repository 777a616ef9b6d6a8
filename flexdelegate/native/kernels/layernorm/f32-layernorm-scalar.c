/* LayerNorm rows, portable scalar reference (sequential sums): what the vector variants are
 * tested against. */
#include <math.h>
#include "../simd/nofuse.h"
#include "layernorm.h"

void fx_f32_layernorm_scalar(size_t rows, size_t c, const float *x, size_t x_stride, float *y, size_t y_stride,
                             const fx_layernorm_params *p) {
  for (size_t i = 0; i < rows; i++, x += x_stride, y += y_stride) {
    float sum = 0.0f;
    for (size_t j = 0; j < c; j++) sum += x[j];
    const float mean = sum / (float)c;
    float ss = 0.0f;
    for (size_t j = 0; j < c; j++) {
      const float d = x[j] - mean;
      ss = fmaf(d, d, ss);
    }
    const float r = 1.0f / sqrtf(ss / (float)c + p->eps);
    if (p->mode == FX_LN_KERAS_RMS) {
      for (size_t j = 0; j < c; j++) y[j] = p->gamma ? (x[j] * r) * p->gamma[j] : x[j] * r;
      continue;
    }
    for (size_t j = 0; j < c; j++) { /* stock's MUL, MUL, ADD, ADD: each rounded */
      const float g = p->gamma ? r * p->gamma[j] : r;
      float xg = x[j] * g, t = -mean * g;
      FX_NOFUSE(xg);
      FX_NOFUSE(t);
      if (p->beta) t += p->beta[j];
      y[j] = xg + t;
    }
  }
}
