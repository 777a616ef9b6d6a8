/* Branch-free scalar math that gcc -O3 auto-vectorises (libm's expf is never vectorised without
 * -ffast-math): shared by the element-wise ops and the reductions (softmax). */
#ifndef FLEX_FASTMATH_H
#define FLEX_FASTMATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Note on the formulations below: gcc (with the default -ftrapping-math) will
 * not if-convert `c ? a : f(b)` when f may raise an FP exception, which kills
 * vectorisation (clamps to constants even get jump-threaded into branches).
 * fx_sel is a bitwise select between two already-computed
 * values, which gcc keeps branch-free and vectorises. */
static inline float fx_sel(int c, float a, float b) {
  uint32_t ua, ub;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  const uint32_t m = c ? 0xFFFFFFFFu : 0u;
  const uint32_t r = (ua & m) | (ub & ~m);
  float o;
  memcpy(&o, &r, sizeof o);
  return o;
}

/* ---------------------------------------------------------------------------
 * Vectorisable expf (Cephes-style range reduction + degree-6 polynomial,
 * ~1-2 ulp). Written branch-free so gcc -O3 auto-vectorises loops calling it
 * (libm expf is never vectorised without -ffast-math). Argument is clamped to
 * [-87.3, 88.3] so 2^n stays a normal float, results below
 * e^-87.3 flush to 0 (expf would go subnormal); past ln(FLT_MAX) the result is +inf, as expf's
 * (a SOFTMAX with beta < 0 over logits far apart then divides inf by inf into NaN as stock
 * does, where a saturated sum made every output 0); NaN propagates.
 * ------------------------------------------------------------------------- */
static inline float fx_expf(float x0) {
  float x = fx_sel(x0 > 88.3f, 88.3f, x0);
  x = fx_sel(x < -87.3f, -87.3f, x);
  /* n = round(x / ln2) via the 1.5*2^23 magic constant (exact for |n| < 2^22). */
  const float t = x * 1.44269504088896341f + 12582912.0f;
  const float n = t - 12582912.0f;
  uint32_t tb;
  memcpy(&tb, &t, sizeof tb);
  const uint32_t sb = (tb - 0x4B400000u + 127u) << 23; /* bits of 2^n */
  float s;
  memcpy(&s, &sb, sizeof s);
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * (r * r) + r + 1.0f;
  const float y = fx_sel(x0 > 88.7228394f, INFINITY, e * s); /* overflow: +inf like expf */
  return fx_sel(x0 < -87.3f, 0.0f, y);                       /* underflow flushes to 0 like expf */
}
#endif
