/* GELU per element: the scalar references (f32-vgelu-scalar.c) and the constants the vector
 * body (vgelu_impl.inc) shares, step for step (same FMAs, so the same bits).
 *
 * Exact: gelu(x) = x Phi(x), Phi(x) = 0.5 erfc(-x/sqrt2). With a = |x|, v = a/sqrt2,
 * t = 2/(2+v): Phi(-a) = 0.5 t Q(t) e^(-a^2/2), Q(t) = erfcx(v)/t a degree-9 polynomial in t - 1/2
 * (fitted towards minimax relative error 2.2e-8, float32 coefficients refitted one by one after
 * rounding; evaluated in float as below, 2.5 ulp over v in [0, 10.5]); e^(-a^2/2) takes a^2/2 as two floats (x*x and
 * its FMA remainder: exact), comes scaled by 2^63 (vexp.h: normal down to e^-110) and absorbs the
 * 0.5; g = ((x t) Q) e = x Phi(-a) 2^64, then x <= 0: g 2^-64 (only that multiply rounds into the
 * subnormals), x > 0: x - g 2^-64 in one FMA (Phi(x) = 1 - Phi(-x)). One division, no branch.
 * Tanh form: 0.5 x (1 + tanh z) = x sigma(2z); 2z = K x (1 + C x^2) carried in two floats (the
 * error of one float, times |2z| up to 104, would cost up to 100 ulp in the tail), e = exp(-|2z|)
 * scaled by 2^64, d = 1 + e, then x/d (2z >= 0) or (x/d) e 2^-64: one division, no overflow, no
 * cancellation. K and C are stock's float constants (float(sqrt(2/pi)) doubled, 0.044715f).
 * Both: the exp is 0 below -110 (and for infinite x), which leaves x (x > 0) or x * 0 (-0, or
 * NaN for -inf, as stock); +inf is clamped to FLT_MAX where it would meet that 0. Measured against float64 over every 4099th float and [-16, 16] densely
 * (tests/native/vgelu_check.c): exact within 5.6 ulp, tanh form within 3.2 ulp. Every multiply-add is an explicit fmaf / FXV_FMA, so -ffp-contract cannot
 * make the scalar and vector forms round differently. */
#ifndef FLEX_GELU_MATH_H
#define FLEX_GELU_MATH_H
#include <float.h>
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
#define FX_GELU_K2 1.5957691216057308f /* 2 * 0.7978846f, exact */
#define FX_GELU_C 0.044715f

/* Q(s) by Horner: GELU is bound by the FMA pipes' throughput, not by this chain's latency, and
 * Horner is the fewest FMAs and the most accurate. */
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
  const float u = -0.5f * x, hi = u * x, lo = fmaf(u, x, -hi); /* -x^2/2 as two floats, exactly */
  const float e = fx_exp_dd_scaled_ref(hi, lo, 190);            /* 0 once it underflows */
  const float g = ((fminf(x, FLT_MAX) * t) * q) * e;           /* +inf: 0, not inf * 0 */
  return x > 0.0f ? fmaf(-g, 0x1p-64f, x) : g * 0x1p-64f;      /* -0 keeps its sign */
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
  const float e = fx_exp_dd_scaled_ref(neg ? ah : -ah, neg ? al : -al, 191); /* e^-|2z| 2^64, or 0 */
  const float xd = x / fmaf(e, 0x1p-64f, 1.0f);
  return neg ? (xd * e) * 0x1p-64f : xd;
}
#endif
