/* Sigmoid / swish, portable: the reference the SIMD variants are tested against (the
 * algorithm: vsigmoid.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include "vsigmoid.h"
#include "vsigmoid_poly.h"

static float sigmoid1(float x) {
  float z = -fabsf(x);
  const int under = z < EXP_LO;
  if (under) z = EXP_LO;
  const float n = nearbyintf(z * LOG2E);
  float r = z - n * LN2_HI;
  r = r - n * LN2_LO;
  float p = Q3;
  p = p * r + Q2;
  p = p * r + Q1;
  p = p * r + Q0;
  const float e = under ? 0.0f : ldexpf(p * (r * r) + r + 1.0f, (int)n);
  const float f = e / (1.0f + e);
  if (isnan(x)) return x;
  return x > 0.0f ? 1.0f - f : f;
}

void fx_f32_vsigmoid_scalar(FX_VSIGMOID_ARGS) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = swish ? v * sigmoid1(v) : sigmoid1(v);
  }
}
