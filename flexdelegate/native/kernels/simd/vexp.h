/* exp for non-positive arguments, the one the attention softmax and GELU share:
 * n = round(x / ln2) by adding a magic constant in an FMA (x*log2e + 1.5*2^23 + bias: the FMA
 * rounds the exact product once, and the sum's low mantissa bits are n + bias, so shifting its
 * bits left by 23 builds 2^(n + bias - 127) with no round / convert instructions), r = x - n ln2
 * (ln2 in two parts, exact for |n| < 2^15), e^r = 1 + (r + r^2 q(r)), q of degree 4 fitted
 * (weighted least squares towards minimax, float32 coefficients) for relative error 3.1e-9 on
 * |r| <= ln2/2, evaluated by Estrin's scheme (3 dependent FMAs, for latency); in float the result
 * is within 6.6e-8 relative of e^x (about 1 ulp).
 *
 * These are the scalar references; vexp.inc has the same steps on FXV_* vectors (the same FMAs
 * in the same order, so the same bits). */
#ifndef FLEX_VEXP_H
#define FLEX_VEXP_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#define FX_EXP_LOG2E 1.44269504088896341f
#define FX_EXP_LN2_HI 0.693359375f
#define FX_EXP_LN2_LO (-2.12194440e-4f)
#define FX_EXP_Q4 1.3814106350764632e-3f
#define FX_EXP_Q3 8.368896320462227e-3f
#define FX_EXP_Q2 4.166840761899948e-2f
#define FX_EXP_Q1 1.666651964187622e-1f
#define FX_EXP_Q0 4.999999403953552e-1f
/* 1.5 * 2^23 plus the exponent bias b: x*log2e + FX_EXP_MAGIC(b) holds n + b in its low bits. */
#define FX_EXP_MAGIC(b) (12582912.0f + (float)(b))
/* Below FX_EXP_FTZ_MIN the flushing exp returns 0 (e^-87.3 = 1.2e-38, the smallest normal's
 * scale: 2^n stays normal); below FX_EXP_DD_MIN the scaled one does (by then the results its
 * callers build are under half the smallest subnormal). */
#define FX_EXP_FTZ_MIN (-87.3f)
#define FX_EXP_DD_MIN (-110.0f)

/* e^r for |r| <= ln2/2 (plus a little). */
static inline float fx_exp_poly_ref(float r) {
  const float r2 = r * r;
  const float lo = fmaf(FX_EXP_Q1, r, FX_EXP_Q0), hi = fmaf(FX_EXP_Q3, r, FX_EXP_Q2);
  const float q = fmaf(fmaf(FX_EXP_Q4, r2, hi), r2, lo);
  return 1.0f + fmaf(q, r2, r);
}

/* The float whose bits are nb's shifted left by 23 (2^(n + b - 127) for nb = x*log2e + FX_EXP_MAGIC(b)). */
static inline float fx_exp_shl23_ref(float nb) {
  uint32_t u;
  memcpy(&u, &nb, sizeof u);
  u <<= 23;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* e^x for x <= 0 (up to 88 works too), flushing results below 1.2e-38 to 0: the softmax's exp,
 * whose terms that small vanish beside the row maximum's 1. NaN in, NaN out; -inf gives 0. */
static inline float fx_exp_ftz_ref(float x) {
  if (isnan(x)) return x;
  if (x < FX_EXP_FTZ_MIN) return 0.0f;
  const float nb = fmaf(x, FX_EXP_LOG2E, FX_EXP_MAGIC(127)), n = nb - FX_EXP_MAGIC(127);
  float r = fmaf(-n, FX_EXP_LN2_HI, x);
  r = fmaf(-n, FX_EXP_LN2_LO, r);
  return fx_exp_poly_ref(r) * fx_exp_shl23_ref(nb);
}

/* e^(hi + lo) * 2^(b - 127), for hi <= 0 and |lo| <= ulp(hi): an argument carried in two floats
 * (-x^2/2 of GELU, where one float's rounding would cost up to 40 ulp at x = 13), scaled by a
 * power of 2 (b in [159, 199]) that keeps it normal down to hi = -110: a caller multiplies it by
 * its own factors, then by 2^(127 - b), so only that last multiply rounds into the subnormals.
 * 0 below FX_EXP_DD_MIN (and for -inf); NaN for a NaN hi. */
static inline float fx_exp_dd_scaled_ref(float hi, float lo, int b) {
  if (isnan(hi)) return hi;
  if (hi < FX_EXP_DD_MIN) return 0.0f;
  const float nb = fmaf(hi, FX_EXP_LOG2E, FX_EXP_MAGIC(b)), n = nb - FX_EXP_MAGIC(b);
  float r = fmaf(-n, FX_EXP_LN2_HI, hi);
  r = fmaf(-n, FX_EXP_LN2_LO, r) + lo;
  return fx_exp_poly_ref(r) * fx_exp_shl23_ref(nb);
}
#endif
