/* GELU per element: the scalar references (f32-vgelu-scalar.c) and the constants the vector
 * body (vgelu_impl.inc) shares, step for step (same FMAs, so the same bits).
 *
 * Exact: gelu(x) = 0.5 x erfc(v'), v' = -x/sqrt2. With v = |x|/sqrt2, t = 2/(2+v):
 *   erfc(v) = t Q(t) e^(-v^2),  Q(t) = erfcx(v)/t, a degree-9 polynomial in t - 1/2 (fitted
 *   towards minimax relative error, float32 coefficients refitted one by one after rounding:
 *   1.9 ulp in float over v in [0, 10.5]). e^(-v^2) takes v^2 = x^2/2 as two floats (x*x and
 *   its FMA remainder), so its argument is exact. Then x < 0: (0.5x t Q) e^(-v^2) (only the last
 *   multiply rounds into the subnormals), x >= 0: 0.5x (2 - t Q e^(-v^2)). v is clamped at
 *   10.5, where e^(-v^2) has underflowed to 0 anyway. For |x| < 0.75 (where 2 - erfc would
 *   pass erfc's error on undiminished) 1 + erf(x/sqrt2) = 1 + x P(x^2) instead, one FMA.
 * Tanh form: 0.5 x (1 + tanh z) = x sigma(2z); 2z = K x (1 + C x^2) carried in two floats
 *   (the error of one float, times |2z| up to 104, would cost up to 100 ulp in the tail) and
 *   sigma(a) = e/(1+e) (a < 0) or 1/(1+e), e = exp(-|a|) (no overflow, no cancellation).
 * K and C are stock's float constants (float(sqrt(2/pi)) doubled, 0.044715f).
 * Every multiply-add is an explicit fmaf / FXV_FMA, so -ffp-contract cannot make the scalar and
 * vector forms round differently. */
#ifndef FLEX_GELU_MATH_H
#define FLEX_GELU_MATH_H
#include <math.h>
#include "../simd/vexp.h"

#define FX_GELU_RSQRT2 0.70710678118654752f
#define FX_GELU_VMAX 10.5f
#define FX_GELU_Q9 1.0448838584125042e-2f
#define FX_GELU_Q8 (-6.688237935304642e-2f)
#define FX_GELU_Q7 4.6878501772880554e-2f
#define FX_GELU_Q6 9.717202186584473e-2f
#define FX_GELU_Q5 (-1.0301124304533005e-1f)
#define FX_GELU_Q4 (-1.7200633883476257e-1f)
#define FX_GELU_Q3 1.4574678242206573e-1f
#define FX_GELU_Q2 5.589425563812256e-1f
#define FX_GELU_Q1 6.87160849571228e-1f
#define FX_GELU_Q0 5.107913613319397e-1f
/* |x| < FX_GELU_SMALL: 1 + erf(x/sqrt2) = 1 + x P(x^2), P of degree 4 (7e-8 relative in float) */
#define FX_GELU_SMALL 0.75f
#define FX_GELU_P4 2.3225980112329125e-4f
#define FX_GELU_P3 (-2.39276560023427e-3f)
#define FX_GELU_P2 1.99555866420269e-2f
#define FX_GELU_P1 (-1.3298186659812927e-1f)
#define FX_GELU_P0 7.978845834732056e-1f
#define FX_GELU_K2 1.5957691216057308f /* 2 * 0.7978846f, exact */
#define FX_GELU_C 0.044715f

static inline float fx_gelu_q_ref(float s) {
  float q = fmaf(FX_GELU_Q9, s, FX_GELU_Q8);
  q = fmaf(q, s, FX_GELU_Q7);
  q = fmaf(q, s, FX_GELU_Q6);
  q = fmaf(q, s, FX_GELU_Q5);
  q = fmaf(q, s, FX_GELU_Q4);
  q = fmaf(q, s, FX_GELU_Q3);
  q = fmaf(q, s, FX_GELU_Q2);
  q = fmaf(q, s, FX_GELU_Q1);
  return fmaf(q, s, FX_GELU_Q0);
}

static inline float fx_gelu_exact_ref(float x) {
  if (isnan(x)) return x;
  const float d = fminf(fmaf(fabsf(x), FX_GELU_RSQRT2, 2.0f), 2.0f + FX_GELU_VMAX), t = 2.0f / d;
  const float q = fx_gelu_q_ref(t - 0.5f);
  const float x2 = x * x, x2e = fmaf(x, x, -x2);
  float k;
  const float m = fx_exp_dd_parts_ref(-0.5f * x2, -0.5f * x2e, &k);
  if (fabsf(x) < FX_GELU_SMALL) {
    const float w = x * x;
    float p = fmaf(FX_GELU_P4, w, FX_GELU_P3);
    p = fmaf(p, w, FX_GELU_P2);
    p = fmaf(p, w, FX_GELU_P1);
    p = fmaf(p, w, FX_GELU_P0);
    return 0.5f * x * fmaf(x, p, 1.0f);
  }
  if (x < 0.0f) return ldexpf((x / d) * q * m, (int)k); /* 0.5 x t = x / (2 + v): one rounding */
  return 0.5f * x * fmaf(-(t * q), ldexpf(m, (int)k), 2.0f);
}

static inline float fx_gelu_tanh_ref(float x) {
  if (isnan(x)) return x;
  const float x2 = x * x, x2e = fmaf(x, x, -x2);
  const float uh = FX_GELU_C * x2, ul = fmaf(FX_GELU_C, x2e, fmaf(FX_GELU_C, x2, -uh));
  const float wh = 1.0f + uh, bb = wh - 1.0f; /* w = 1 + u, two-sum */
  const float wl = ((1.0f - (wh - bb)) + (uh - bb)) + ul;
  const float kh = FX_GELU_K2 * x, kl = fmaf(FX_GELU_K2, x, -kh);
  const float ah = kh * wh;
  const float al = fmaf(kh, wh, -ah) + fmaf(kh, wl, kl * wh);
  const int neg = ah < 0.0f;
  float k;
  const float m = fx_exp_dd_parts_ref(neg ? ah : -ah, neg ? al : -al, &k);
  const float d = 1.0f + ldexpf(m, (int)k);
  if (neg) return ldexpf((x / d) * m, (int)k); /* x e / (1 + e), e's 2^k applied last */
  return x / d;
}
#endif
