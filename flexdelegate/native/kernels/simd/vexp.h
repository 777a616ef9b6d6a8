/* exp for non-positive arguments, the one the attention softmax, GELU and sigmoid-style curves
 * share: n = round(x / ln2), r = x - n ln2 (ln2 in two parts, exact for |n| < 2^15),
 * e^r = 1 + (r + r^2 q(r)) with q of degree 4 fitted (weighted least squares towards minimax,
 * float32 coefficients) for relative error 3.1e-9 on |r| <= ln2/2; evaluated in float the
 * result is within 6.6e-8 relative of e^x (about 1 ulp). Then 2^n exactly.
 *
 * These are the scalar references; vexp.inc has the same steps on FXV_* vectors (same FMAs, so
 * the same bits). */
#ifndef FLEX_VEXP_H
#define FLEX_VEXP_H
#include <math.h>

#define FX_EXP_LOG2E 1.44269504088896341f
#define FX_EXP_LN2_HI 0.693359375f
#define FX_EXP_LN2_LO (-2.12194440e-4f)
#define FX_EXP_Q4 1.3814106350764632e-3f
#define FX_EXP_Q3 8.368896320462227e-3f
#define FX_EXP_Q2 4.166840761899948e-2f
#define FX_EXP_Q1 1.666651964187622e-1f
#define FX_EXP_Q0 4.999999403953552e-1f
/* Below this the flushing exp returns 0 (e^-87.3 = 1.2e-38, the smallest normal's scale);
 * below FX_EXP_MIN_DD the exact one does (e^-104 is under half the smallest subnormal). */
#define FX_EXP_FTZ_MIN (-87.3f)
/* 1.5 * 2^23 + 127: x * log2e + this rounds to the integer n in the low mantissa bits, with
 * the exponent bias already added (vexp.inc's flushing exp builds 2^n from them directly). */
#define FX_EXP_MAGIC 12583039.0f
#define FX_EXP_DD_MIN (-110.0f)

/* e^r for |r| <= ln2/2 (plus a little). */
static inline float fx_exp_poly_ref(float r) {
  float q = fmaf(FX_EXP_Q4, r, FX_EXP_Q3);
  q = fmaf(q, r, FX_EXP_Q2);
  q = fmaf(q, r, FX_EXP_Q1);
  q = fmaf(q, r, FX_EXP_Q0);
  return 1.0f + fmaf(q, r * r, r);
}

/* e^x for x <= 0 (up to 88 works too), flushing results below 1.2e-38 to 0: the softmax's exp,
 * whose terms that small vanish beside the row maximum's 1. NaN in, NaN out; -inf gives 0. */
static inline float fx_exp_ftz_ref(float x) {
  if (isnan(x)) return x;
  if (x < FX_EXP_FTZ_MIN) return 0.0f;
  const float n = nearbyintf(x * FX_EXP_LOG2E);
  float r = fmaf(-n, FX_EXP_LN2_HI, x);
  r = fmaf(-n, FX_EXP_LN2_LO, r);
  return ldexpf(fx_exp_poly_ref(r), (int)n);
}

/* e^(hi + lo) for hi <= 0 and |lo| <= ulp(hi): an argument carried in two floats (-v^2 of the
 * erfc, where one float's rounding would cost up to 40 ulp at v = 9), as m * 2^k with m =
 * p 2^n1 normal (p = e^r) and k in [-75, 0]: a caller multiplies m by its own factors first and
 * applies 2^k last, so a product that ends normal never passes through a subnormal e^x (e^-89 is
 * subnormal, 10 e^-89 is not). hi < -104 (or -inf) gives m = 0. */
static inline float fx_exp_dd_parts_ref(float hi, float lo, float *k) {
  *k = 0.0f;
  if (isnan(hi)) return hi;
  if (hi < FX_EXP_DD_MIN) return 0.0f;
  const float n = nearbyintf(hi * FX_EXP_LOG2E);
  float r = fmaf(-n, FX_EXP_LN2_HI, hi);
  r = fmaf(-n, FX_EXP_LN2_LO, r) + lo;
  const float n1 = nearbyintf(n * 0.5f);
  *k = n - n1;
  return ldexpf(fx_exp_poly_ref(r), (int)n1);
}

/* e^(hi + lo) itself, with gradual underflow (only the last multiply rounds). */
static inline float fx_exp_dd_ref(float hi, float lo) {
  float k;
  const float m = fx_exp_dd_parts_ref(hi, lo, &k);
  return ldexpf(m, (int)k);
}
#endif
