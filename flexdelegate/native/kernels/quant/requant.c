/* QuantizeMultiplier, the activation range and the scalar output stage (requant.h). */
#include <math.h>
#include "requant.h"

void fx_quantize_multiplier(double real, int single_rounding, int32_t *multiplier, int32_t *shift) {
  if (real == 0.0) {
    *multiplier = 0;
    *shift = 0;
    return;
  }
  int e;
  const double q = frexp(real, &e);
  int64_t fixed = (int64_t)round(q * (double)(1LL << 31)); /* exact: q has 53 bits */
  if (fixed == (1LL << 31)) { /* the mantissa rounded up to 1.0 */
    fixed /= 2;
    e++;
  }
  if (e < -31) { /* every bit would be shifted out: TFLite flushes to zero */
    e = 0;
    fixed = 0;
  }
  if (single_rounding && e > 30) {
    e = 30;
    fixed = (1LL << 31) - 1;
  }
  *multiplier = (int32_t)fixed;
  *shift = e;
}

/* Channel c's real multiplier under `mode` (requant.h). */
static double real_multiplier(float s_in, const float *s_w, int mode, float s_out, int c) {
  if (mode == FX_QS8_SCALES_LEGACY) {
    const float product = s_in * s_w[0]; /* a float: C++'s float * float, stored */
    return (double)product / (double)s_out;
  }
  return (double)s_in * (double)s_w[mode == FX_QS8_SCALES_PER_CHANNEL ? c : 0] / (double)s_out;
}

int fx_qs8_requant_params(int n, float s_in, const float *s_w, int mode, float s_out,
                          int single_rounding, int32_t *m, int32_t *shift) {
  int rc = 0;
  for (int c = 0; c < n; c++) {
    const double real = real_multiplier(s_in, s_w, mode, s_out, c);
    fx_quantize_multiplier(real, single_rounding, &m[c], &shift[c]);
    if (shift[c] > 30) rc = -1;
  }
  return rc;
}

/* static_cast<int32_t>(float) as the stock wheels compile it. */
static int32_t f2i(float r) {
#if defined(__x86_64__) || defined(__i386__)
  return (r >= -2147483648.0f && r < 2147483648.0f) ? (int32_t)r : INT32_MIN; /* cvttss2si */
#else
  if (r != r) return 0; /* fcvtzs: NaN -> 0, saturating */
  return r >= 2147483648.0f ? INT32_MAX : r < -2147483648.0f ? INT32_MIN : (int32_t)r;
#endif
}

/* zp + (int32)round(f / scale); -1 where TFLite's no_integer_overflow_from_quantization check
 * refuses the model (the rounded float outside [INT32_MIN, INT32_MAX] as floats, or NaN). */
static int quantize_bound(float f, float scale, int32_t zp, int32_t *q) {
  const float r = roundf(f / scale);
  if (!(r >= (float)INT32_MIN && r <= (float)INT32_MAX)) return -1;
  *q = (int32_t)((uint32_t)zp + (uint32_t)f2i(r));
  return 0;
}

int fx_qs8_act_range(int act, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t *lo,
                     int32_t *hi) {
  int32_t a = qmin, b = qmax, q0, q1;
  switch (act) {
    case 0: break; /* NONE */
    case 1:        /* RELU */
      if (quantize_bound(0.0f, scale, zp, &q0)) return -1;
      a = q0 > qmin ? q0 : qmin;
      break;
    case 2: /* RELU_N1_TO_1 */
    case 3: /* RELU6 */
      if (quantize_bound(act == 2 ? -1.0f : 0.0f, scale, zp, &q0) ||
          quantize_bound(act == 2 ? 1.0f : 6.0f, scale, zp, &q1))
        return -1;
      a = q0 > qmin ? q0 : qmin;
      b = q1 < qmax ? q1 : qmax;
      break;
    default: return -1;
  }
  *lo = a;
  *hi = b;
  return 0;
}

int fx_qs8_out_check(const fx_qs8_out *o) {
  if (!o || o->rounding < FLEX_RQ_AWAY || o->rounding > FLEX_RQ_AWAY_SAT) return -1;
  if (o->rounding < FLEX_RQ_SINGLE && o->tail_rounding != FLEX_RQ_AWAY && o->tail_rounding != FLEX_RQ_UP)
    return -1;
  return (o->lo < -128 || o->hi > 127 || o->lo > o->hi) ? -1 : 0;
}

void fx_qs8_requant_row_scalar(size_t n, const int32_t *acc, const int32_t *m,
                               const int32_t *shift, size_t c0, const fx_qs8_out *o, int8_t *y) {
  for (size_t c = 0; c < n; c++)
    y[c] = fx_qs8_out_one(acc[c], m[c], shift[c], fx_qs8_rounding_of(o, c0 + c), o);
}
