/* The scalar definitions of the integer element-wise ops: per element, what stock TFLite
 * computes (NOTES.md beside this file has the recipes, their sources and how each was
 * confirmed on both wheels). Every variant, LUT builder and driver is checked against these.
 *
 * Values are the stored integers (int8 or uint8, widened to int32); zero points as stored. Two
 * stock builds exist on x86-64 (NOTES.md "Two stock builds"): tflite-runtime 2.14 compiles the
 * portable C++ loops, ai-edge-litert 2.3 the NEON loops through NEON_2_SSE, which differ in
 * rounding and narrowing; an op's NEON loop covers whole blocks of its vector width from the
 * start of each call and leaves the rest to the portable loop. The functions below are the two
 * arithmetics; the drivers decide which element gets which. */
#ifndef FLEX_QS8_OPS_REF_H
#define FLEX_QS8_OPS_REF_H
#include <math.h>
#include <stdint.h>
#include "../quant/requant.h"
#include "flex_api.h"

/* gemmlowp SaturatingRoundingDoublingHighMul (= NEON vqrdmulh): (a*b + 2^30) >> 31, ties up,
 * the one overflow (INT32_MIN^2) saturated. */
static inline int32_t fxq_srdhm(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT: x / 2^e to nearest, ties away from zero; e in [0, 31]. */
static inline int32_t fxq_rdbpot(int32_t x, int e) {
  const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
  const int32_t thr = (mask >> 1) + (x < 0);
  return (x >> e) + ((x & mask) > thr);
}

/* NEON vshl by s (vector of one count): left wrapping for s >= 0, arithmetic (flooring) right
 * shift for s < 0. */
static inline int32_t fxq_vshl(int32_t x, int s) {
  return s >= 0 ? (int32_t)((uint32_t)x << s) : x >> (-s > 31 ? 31 : -s);
}

/* int16 wrap and saturation helpers (NEON vmovn / vqmovn / vaddq_s16). */
static inline int32_t fxq_wrap16(int32_t x) { return (int16_t)(uint16_t)(uint32_t)x; }
static inline int32_t fxq_sat(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* TFLite MultiplyByQuantizedMultiplier with one of requant.h's roundings (FLEX_RQ_AWAY: the
 * portable loops; FLEX_RQ_UP: NEON's MultiplyByQuantizedMultiplier4Rows). */
static inline int32_t fxq_mbqm(int32_t x, int32_t m, int32_t shift, int rounding) {
  return fx_rq_double(x, m, shift, rounding != FLEX_RQ_UP, 0);
}

/* ---- ADD / SUB (TFLite's 8-bit add: inputs rescaled onto twice the larger input scale with 20
 * bits of headroom, summed, rescaled to the output) ---- */
typedef struct fx_qs8_add_params {
  int32_t z1, z2, zo;          /* zero points as stored */
  int32_t m1, s1, m2, s2;      /* input multipliers (Q31) and shifts (<= 0) */
  int32_t mo, so;              /* output multiplier and shift (<= 0) */
  int32_t lo, hi;              /* fused activation range in the stored type */
  int32_t u8, sub;             /* uint8 data; 0 ADD, 1 SUB a - b, 2 SUB b - a (inputs swapped) */
} fx_qs8_add_params;

/* Which per-element arithmetic (the drivers pick it per element range). */
enum {
  FX_ADD_PORTABLE = 0, /* x << 20, SRDHM, RoundingDivideByPOT; int32 sum; int32 output stage */
  FX_ADD_NEON_PRE = 1, /* int8 element-wise NEON loop: x << (20 + s) then SRDHM */
  FX_ADD_NEON_POST = 2 /* int8 scalar-broadcast and every uint8 NEON loop: SRDHM(x << 20) >> -s */
};
/* The NEON output stage (both NEON forms): SRDHM + RoundingDivideByPOT, narrowed to int16 by
 * truncation, + zero point in int16 (wrapping), saturated to the type, then clamped. */
static inline int32_t fxq_add_one(int32_t a, int32_t b, const fx_qs8_add_params *p, int form) {
  const int32_t xa = a - p->z1, xb = b - p->z2;
  int32_t ya, yb;
  if (form == FX_ADD_PORTABLE) {
    ya = fxq_rdbpot(fxq_srdhm(xa * (1 << 20), p->m1), -p->s1);
    yb = fxq_rdbpot(fxq_srdhm(xb * (1 << 20), p->m2), -p->s2);
  } else if (form == FX_ADD_NEON_PRE) {
    ya = fxq_srdhm(fxq_vshl(xa, 20 + p->s1), p->m1);
    yb = fxq_srdhm(fxq_vshl(xb, 20 + p->s2), p->m2);
  } else {
    ya = fxq_vshl(fxq_srdhm(xa * (1 << 20), p->m1), p->s1);
    yb = fxq_vshl(fxq_srdhm(xb * (1 << 20), p->m2), p->s2);
  }
  const int32_t raw = (int32_t)(p->sub == 1   ? (uint32_t)ya - (uint32_t)yb
                                : p->sub == 2 ? (uint32_t)yb - (uint32_t)ya
                                              : (uint32_t)ya + (uint32_t)yb);
  int32_t r = fxq_rdbpot(fxq_srdhm(raw, p->mo), -p->so);
  if (form == FX_ADD_PORTABLE) {
    r = (int32_t)((uint32_t)r + (uint32_t)p->zo);
  } else {
    r = fxq_wrap16(fxq_wrap16(r) + p->zo);
    r = p->u8 ? fxq_sat(r, 0, 255) : fxq_sat(r, -128, 127);
  }
  return fxq_sat(r, p->lo, p->hi);
}

/* ---- MUL ---- */
typedef struct fx_qs8_mul_params {
  int32_t z1, z2, zo;
  int32_t m, s;                /* (s1 * s2 / so computed in float) as QuantizeMultiplier */
  int32_t lo, hi;
  int32_t u8;
} fx_qs8_mul_params;

enum {
  FX_MUL_PORTABLE = 0, /* MultiplyByQuantizedMultiplier of the product, int32 output stage */
  FX_MUL_NEON_SAT = 1, /* NEON: the same product, saturated to int16, + zero point in int16 */
  FX_MUL_NEON_TRUNC = 2 /* uint8 scalar-broadcast NEON loop: truncated to int16 instead */
};
static inline int32_t fxq_mul_one(int32_t a, int32_t b, const fx_qs8_mul_params *p, int form) {
  int32_t r = fxq_mbqm((a - p->z1) * (b - p->z2), p->m, p->s, FLEX_RQ_AWAY);
  if (form == FX_MUL_PORTABLE) {
    r = (int32_t)((uint32_t)r + (uint32_t)p->zo);
  } else {
    r = form == FX_MUL_NEON_SAT ? fxq_sat(r, INT16_MIN, INT16_MAX) : fxq_wrap16(r);
    r = fxq_wrap16(r + p->zo);
    r = p->u8 ? fxq_sat(r, 0, 255) : fxq_sat(r, -128, 127);
  }
  return fxq_sat(r, p->lo, p->hi);
}

/* ---- PRELU (reference_ops::Prelu / BroadcastPrelu4DSlow: the same loop on both wheels) ---- */
typedef struct fx_qs8_prelu_params {
  int32_t zx, za, zo;          /* input, alpha and output zero points */
  int32_t m1, s1;              /* x >= zx: (sx / so in float) as QuantizeMultiplier ("identity") */
  int32_t m2, s2;              /* x < zx: (sx * sa / so in float) ("alpha") */
  int32_t u8;
  int32_t alpha_first;         /* the walk's first operand is alpha (inputs exchanged) */
} fx_qs8_prelu_params;

/* x >= zx: MBQM(x - zx) by the identity multiplier, else MBQM((x - zx)(alpha - za)) by the
 * alpha one (ties away both), + zo in int32, saturated to the type. */
static inline int32_t fxq_prelu_one(int32_t x, int32_t alpha, const fx_qs8_prelu_params *p) {
  const int32_t xv = x - p->zx;
  const int32_t r = xv >= 0 ? fxq_mbqm(xv, p->m1, p->s1, FLEX_RQ_AWAY)
                            : fxq_mbqm(xv * (alpha - p->za), p->m2, p->s2, FLEX_RQ_AWAY);
  const int32_t v = (int32_t)((uint32_t)r + (uint32_t)p->zo);
  return p->u8 ? fxq_sat(v, 0, 255) : fxq_sat(v, -128, 127);
}

/* ---- QUANTIZE float -> int8 / uint8 ---- */
typedef struct fx_qs8_quant_params {
  double scale;                /* the output scale (float) as a double */
  float inv_scale;             /* (float)(1.0 / scale): the NEON loop's reciprocal */
  int32_t zp, lo, hi;          /* zero point; the clamp (the type's range) */
  int32_t u8;                  /* stored as uint8 (else int8) */
} fx_qs8_quant_params;

/* The rule (flex_api.h): FLEX_QUANT_AWAY, the portable round((double)x / scale) half away from
 * zero; FLEX_QUANT_RECIP_EVEN, NEON's x * inv_scale in float, converted to nearest even. */

/* x86's conversions to int32 (cvttsd2si, cvtps2dq): out of range and NaN give INT32_MIN. */
static inline int32_t fxq_cvt_trunc_d(double v) {
  return (v > -2147483649.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN;
}
static inline int32_t fxq_cvt_trunc_f(float v) { /* cvttss2si: C's (int32_t) cast in range */
  return (v >= -2147483648.0f && v < 2147483648.0f) ? (int32_t)v : INT32_MIN;
}
static inline int32_t fxq_cvt_rne_f(float v) {
  const float r = rintf(v); /* the default rounding mode: to nearest even */
  return (r >= -2147483648.0f && r < 2147483648.0f) ? (int32_t)r : INT32_MIN;
}

static inline int32_t fxq_quantize_one(float x, const fx_qs8_quant_params *p, int form) {
  int32_t q;
  if (form == FLEX_QUANT_AWAY) {
    q = fxq_cvt_trunc_d(round((double)x / p->scale)); /* TfLiteRound: half away from zero */
  } else {
    q = fxq_cvt_rne_f(x * p->inv_scale);
  }
  return fxq_sat((int32_t)((uint32_t)q + (uint32_t)p->zp), p->lo, p->hi);
}
#endif
