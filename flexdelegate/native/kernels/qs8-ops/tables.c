/* The ops whose output element depends on one input element only: QUANTIZE (int -> int,
 * int8 <-> uint8), the RELUs, LEAKY_RELU, HARD_SWISH, LOGISTIC, TANH, GELU and a
 * rescaled uint8 CONCATENATION input. An integer input has 256 values, so each is a table built
 * here from stock's own per-element arithmetic (NOTES.md) and applied by the variant's lut
 * microkernel: exact by construction. */
#include <math.h>
#include <string.h>
#include "qs8-ops.h"
#include "kernels/simd/nofuse.h"

size_t fx_qs8_numel(const fx_qs8_shape *s) {
  size_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= (size_t)s->d[i];
  return n;
}

int fx_qs8_act_range_of(int act, float scale, int32_t zp, int u8, int32_t *lo, int32_t *hi) {
  return fx_qs8_act_range(act, scale, zp, u8 ? 0 : -128, u8 ? 255 : 127, lo, hi);
}

/* The stored value of table entry i (the byte i read as the type). */
static int32_t value_of(int u8, int i) { return u8 ? i : (int8_t)(uint8_t)i; }
static int32_t type_lo(int u8) { return u8 ? 0 : -128; }
static int32_t type_hi(int u8) { return u8 ? 255 : 127; }

/* Requantization by a real multiplier (double): stock's QuantizeMultiplier; -1 for multipliers
 * the output stage does not take (shift above 30). */
static int multiplier_of(double real, int32_t *m, int32_t *shift) {
  fx_quantize_multiplier(real, 0, m, shift);
  return *shift > 30 ? -1 : 0;
}

int fx_qs8_requantize_prepare(int in_u8, float s_in, int32_t z_in, int out_u8, float s_out,
                              int32_t z_out, int stock, fx_qs8_lut_op *op) {
  int32_t m, shift;
  if (!(s_in > 0) || !(s_out > 0) || multiplier_of((double)s_in / (double)s_out, &m, &shift)) return -1;
  /* stock's NEON loop: 16 elements at a time (MultiplyByQuantizedMultiplier4Rows: ties up) */
  op->block = stock == FLEX_STOCK_NEON ? 16 : 0;
  for (int t = 0; t < 2; t++) {
    const int rounding = (t == 0 && stock == FLEX_STOCK_NEON) ? FLEX_RQ_UP : FLEX_RQ_AWAY;
    for (int i = 0; i < 256; i++) {
      const int32_t r = fxq_mbqm(value_of(in_u8, i) - z_in, m, shift, rounding);
      op->t[t][i] = (uint8_t)fxq_sat((int32_t)((uint32_t)r + (uint32_t)z_out), type_lo(out_u8), type_hi(out_u8));
    }
  }
  return 0;
}

/* zp + (int32)roundf(f / scale), as QuantizedReluX computes its bounds (no overflow check in
 * stock: a bound that leaves int32 is refused here). */
static int relu_bound(float f, float scale, int32_t zp, int32_t *q) {
  float r = f / scale;
  FX_NOFUSE(r);
  r = roundf(r);
  if (!(r >= -2147483648.0f && r < 2147483648.0f)) return -1;
  *q = (int32_t)((uint32_t)zp + (uint32_t)(int32_t)r);
  return 0;
}

int fx_qs8_relu_prepare(int kind, int u8, float s_in, int32_t z_in, float s_out, int32_t z_out,
                        fx_qs8_lut_op *op) {
  static const float k_lo[] = {0.0f, 0.0f, -1.0f, 0.0f}, k_hi[] = {INFINITY, 6.0f, 1.0f, 1.0f};
  int32_t m, shift, lo, hi = type_hi(u8);
  if (kind < 0 || kind > 3 || !(s_in > 0) || !(s_out > 0)) return -1;
  /* real multiplier s_in / s_out divided in float (ReluPrepare), then widened */
  if (multiplier_of((double)(s_in / s_out), &m, &shift) || relu_bound(k_lo[kind], s_out, z_out, &lo)) return -1;
  if (kind != FX_QS8_RELU && relu_bound(k_hi[kind], s_out, z_out, &hi)) return -1;
  lo = lo > type_lo(u8) ? lo : type_lo(u8);
  hi = hi < type_hi(u8) ? hi : type_hi(u8);
  op->block = 0;
  for (int i = 0; i < 256; i++) {
    const int32_t r = fxq_mbqm(value_of(u8, i) - z_in, m, shift, FLEX_RQ_AWAY);
    int32_t v = (int32_t)((uint32_t)z_out + (uint32_t)r);
    v = v > lo ? v : lo; /* max with the low bound first, as stock: lo > hi ends at hi */
    v = v < hi ? v : hi;
    op->t[0][i] = (uint8_t)v;
  }
  memcpy(op->t[1], op->t[0], 256);
  return 0;
}

int fx_qs8_leaky_relu_prepare(int u8, float alpha, float s_in, int32_t z_in, float s_out,
                              int32_t z_out, fx_qs8_lut_op *op) {
  int32_t mi, si, ma, sa;
  /* a negative alpha rounds its ties differently in the two wheels' sources: left to stock */
  if (!(alpha >= 0) || !(s_in > 0) || !(s_out > 0)) return -1;
  float alpha_real = s_in * alpha; /* input scale * alpha / output scale, in float */
  FX_NOFUSE(alpha_real);
  alpha_real = alpha_real / s_out;
  if (multiplier_of((double)alpha_real, &ma, &sa) || multiplier_of((double)(s_in / s_out), &mi, &si)) return -1;
  op->block = 0;
  for (int i = 0; i < 256; i++) {
    const int32_t x = value_of(u8, i) - z_in;
    const int32_t r = x >= 0 ? fxq_mbqm(x, mi, si, FLEX_RQ_AWAY) : fxq_mbqm(x, ma, sa, FLEX_RQ_AWAY);
    op->t[0][i] = (uint8_t)fxq_sat((int32_t)((uint32_t)z_out + (uint32_t)r), type_lo(u8), type_hi(u8));
  }
  memcpy(op->t[1], op->t[0], 256);
  return 0;
}

/* ---- HARD_SWISH: TFLite's int16 fixed-point recipe (reference_ops::HardSwish; the x86 wheels
 * have no vector form of it) ---- */
static int16_t i16(int32_t v) { return (int16_t)(uint16_t)(uint32_t)v; }
static int16_t srdhm16(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  return i16(((int32_t)a * b + (1 << 14)) >> 15);
}
static int16_t sdhm16(int16_t a, int16_t b) { /* truncating: SQDMULH */
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  return i16(((int32_t)a * b) / (1 << 15));
}
static int16_t rdbpot16(int16_t x, int e) { /* e in [0, 15] */
  const int16_t mask = i16((1 << e) - 1);
  const int16_t thr = i16((mask >> 1) + (x < 0));
  return i16((x >> e) + ((x & mask) > thr));
}
static int16_t shl_sat16(int16_t v, int amount) {
  const int32_t r = (int32_t)v * (1 << amount);
  return (int16_t)fxq_sat(r, INT16_MIN, INT16_MAX);
}
static int16_t downscale16(int32_t m) { /* DownScaleInt32ToInt16Multiplier */
  if (m >= INT32_MAX - (1 << 15)) return INT16_MAX;
  return i16((m + (1 << 15)) >> 16);
}

int fx_qs8_hard_swish_prepare(int u8, float s_in, int32_t z_in, float s_out, int32_t z_out,
                              fx_qs8_lut_op *op) {
  if (!(s_in > 0) || !(s_out > 0)) return -1;
  float hires = (1.0f / 128.0f) * s_in;
  FX_NOFUSE(hires);
  float out_real = hires / s_out, reluish_real = hires / (3.0f / 32768.0f);
  int32_t m32, oexp, r32, rexp;
  fx_quantize_multiplier((double)out_real, 0, &m32, &oexp);
  fx_quantize_multiplier((double)reluish_real, 0, &r32, &rexp);
  /* stock requires oexp <= 0; its int16 RoundingDivideByPOT is defined up to 15 */
  if (oexp > 0 || oexp < -15 || rexp < -15 || rexp > 16) return -1;
  const int16_t m16 = downscale16(m32), r16 = downscale16(r32);
  op->block = 0;
  for (int i = 0; i < 256; i++) {
    const int16_t v = i16(value_of(u8, i) - z_in);
    const int16_t hires_v = i16(v * (1 << 7));
    const int16_t pre = srdhm16(hires_v, m16);
    int16_t rel = hires_v;
    if (rexp > 0) rel = shl_sat16(rel, rexp - 1);
    rel = srdhm16(rel, r16);
    if (rexp > 0) rel = shl_sat16(rel, 1);
    if (rexp < 0) rel = rdbpot16(rel, -rexp);
    rel = i16((rel + (1 << 15)) >> 1);
    int16_t out = rdbpot16(sdhm16(rel, pre), -oexp);
    out = i16(out + z_out);
    op->t[0][i] = (uint8_t)fxq_sat(out, type_lo(u8), type_hi(u8));
  }
  memcpy(op->t[1], op->t[0], 256);
  return 0;
}

/* ---- LOGISTIC, TANH, GELU: stock's LUTPopulate over float formulas of libm ---- */
static float curve(int kind, float x) {
  float r;
  switch (kind) {
    case FX_QS8_LOGISTIC: r = 1.0f + expf(-x); FX_NOFUSE(r); return 1.0f / r;
    case FX_QS8_TANH: return tanhf(x);
    case FX_QS8_GELU: { /* 0.5 x erfc(-x / sqrt 2) */
      float h = 0.5f * x, t = x * (float)-M_SQRT1_2;
      FX_NOFUSE(h);
      FX_NOFUSE(t);
      return h * erfcf(t);
    }
    default: { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
      float c = 0.044715f * x;
      FX_NOFUSE(c);
      c = c * x;
      FX_NOFUSE(c);
      c = c * x;
      FX_NOFUSE(c);
      float inner = x + c;
      FX_NOFUSE(inner);
      inner = 0.7978845608028654f * inner;
      FX_NOFUSE(inner);
      float h = 0.5f * x, s = 1.0f + tanhf(inner);
      FX_NOFUSE(h);
      FX_NOFUSE(s);
      return h * s;
    }
  }
}

int fx_qs8_curve_prepare(int kind, int u8, float s_in, int32_t z_in, float s_out, int32_t z_out,
                         fx_qs8_lut_op *op) {
  if (kind < 0 || kind > 3 || !(s_in > 0) || !(s_out > 0)) return -1;
  if (kind == FX_QS8_LOGISTIC && s_out != 1.0f / 256) return -1; /* stock's check */
  const float inv = 1.0f / s_out;
  op->block = 0;
  for (int i = 0; i < 256; i++) {
    float d = s_in * (float)(value_of(u8, i) - z_in);
    FX_NOFUSE(d);
    float r = curve(kind, d) * inv;
    FX_NOFUSE(r);
    r = roundf(r) + (float)z_out;
    const int32_t q = (r >= -2147483648.0f && r < 2147483648.0f) ? (int32_t)r : INT32_MIN;
    op->t[0][i] = (uint8_t)fxq_sat(q, type_lo(u8), type_hi(u8));
  }
  memcpy(op->t[1], op->t[0], 256);
  return 0;
}

int fx_qs8_concat_requant_prepare(float s_in, int32_t z_in, float s_out, int32_t z_out,
                                  fx_qs8_lut_op *op) {
  if (!(s_in > 0) || !(s_out > 0)) return -1;
  const float inv = 1.f / s_out, scale = s_in * inv, bias = (float)-z_in * scale;
  const int same = s_in == s_out && z_in == z_out; /* stock copies such an input */
  op->block = 0;
  for (int i = 0; i < 256; i++) {
    if (same) {
      op->t[0][i] = (uint8_t)i;
      continue;
    }
    float r = (float)i * scale;
    FX_NOFUSE(r);
    r = roundf(r + bias);
    const int32_t q = (r >= -2147483648.0f && r < 2147483648.0f) ? (int32_t)r : INT32_MIN;
    op->t[0][i] = (uint8_t)fxq_sat((int32_t)((uint32_t)q + (uint32_t)z_out), 0, 255);
  }
  memcpy(op->t[1], op->t[0], 256);
  return 0;
}

/* The split of [e0, e1) at stock's block boundary: [e0, mid) reads table 0, [mid, e1) table 1. */
static size_t block_end(size_t n, int32_t block, size_t e0, size_t e1) {
  const size_t whole = block > 0 ? n / (size_t)block * (size_t)block : n;
  return whole < e0 ? e0 : whole > e1 ? e1 : whole;
}

void fx_qs8_lut_run(const fx_qs8_ops_config *v, const fx_qs8_lut_op *op, size_t n, const void *x,
                    void *y, size_t e0, size_t e1) {
  const size_t mid = block_end(n, op->block, e0, e1);
  const uint8_t *xb = (const uint8_t *)x;
  uint8_t *yb = (uint8_t *)y;
  if (mid > e0) v->lut(mid - e0, xb + e0, op->t[0], yb + e0);
  if (e1 > mid) v->lut(e1 - mid, xb + mid, op->t[1], yb + mid);
}
