/* Requantization of int32 accumulators to int8, exactly as stock TFLite does it (the facts and
 * how they were established: NOTES.md beside this file).
 *
 * A real multiplier M = s_in * s_w / s_out becomes a Q31 multiplier m (>= 0) and a shift
 * (> 0: left) by fx_quantize_multiplier (TFLite's QuantizeMultiplier). An accumulator acc then
 * maps to  clamp(requant(acc, m, shift) + zp_out, lo, hi)  where requant is one of:
 *   FLEX_RQ_AWAY      TFLite's MultiplyByQuantizedMultiplier / gemmlowp: x = acc << ls (wrapping),
 *                     high = x*m / 2^31 to nearest with ties toward +inf (SaturatingRounding-
 *                     DoublingHighMul: its nudge-then-truncate rounds -0.5 to 0), then high / 2^rs
 *                     with ties away from zero (RoundingDivideByPOT). Depthwise (both runtimes),
 *                     uint8 GEMM ops on tflite-runtime 2.14, the tail channels of LiteRT's int8
 *                     depthwise.
 *   FLEX_RQ_UP        the same, but the second rounding also takes ties toward +inf: ruy's x86
 *                     8-bit kernels (int8 CONV_2D / FULLY_CONNECTED everywhere here, uint8 ones on
 *                     LiteRT) and NEON's vqrdmulh + vrshl (LiteRT's int8 depthwise on whole groups
 *                     of 8 channels).
 *   FLEX_RQ_SINGLE    TFLITE_SINGLE_ROUNDING and ruy's reference / ARM paths: one rounding,
 *                     (acc*m + 2^(30-shift)) >> (31-shift), ties toward +inf.
 *   FLEX_RQ_AWAY_SAT  FLEX_RQ_AWAY with a saturating left shift: gemmlowp's output pipeline
 *                     (ShiftLeft saturates), i.e. uint8 CONV_2D / FULLY_CONNECTED on
 *                     tflite-runtime 2.14. Differs from FLEX_RQ_AWAY only when acc << shift
 *                     overflows int32 (real multipliers >= 2 with large accumulators).
 * Shifts are in [-31, 30] (fx_quantize_multiplier flushes smaller ones to m = 0; larger ones,
 * i.e. M >= 2^30, are refused by the packers). */
#ifndef FLEX_QUANT_REQUANT_H
#define FLEX_QUANT_REQUANT_H
#include <stddef.h>
#include <stdint.h>
#include "flex_api.h"

/* The output stage of a layer. Channels c < tail_from use `rounding`, the others
 * `tail_rounding` (LiteRT's int8 depthwise and TRANSPOSE_CONV: UP on the first 8*floor(C/8)
 * channels, AWAY on the rest); only the depthwise kernels look at the tail, the GEMMs use
 * `rounding` throughout (fx_qs8_gemm_run_split, qs8-run.h, runs a GEMM's tail panels again).
 * A tail may only mix AWAY and UP (FLEX_RQ_SINGLE and FLEX_RQ_AWAY_SAT are all or nothing). */
typedef struct fx_qs8_out {
  int32_t zp;             /* output zero point */
  int32_t lo, hi;         /* fused activation range, within [-128, 127] */
  int32_t rounding;       /* FLEX_RQ_* */
  int32_t tail_rounding;  /* FLEX_RQ_AWAY or FLEX_RQ_UP; ignored when tail_from >= channels */
  int32_t tail_from;
} fx_qs8_out;

/* TFLite's QuantizeMultiplier(double): frexp, round half away from zero to Q31, a mantissa that
 * rounds up to 2^31 halves and bumps the shift, shifts below -31 flush to (0, 0), and with
 * single_rounding shifts above 30 saturate to (2^31 - 1, 30). */
void fx_quantize_multiplier(double real, int single_rounding, int32_t *multiplier, int32_t *shift);

/* How stock derives a layer's real multipliers M from its float32 scales (NOTES.md):
 * PER_TENSOR / PER_CHANNEL, PopulateConvolutionQuantizationParams' per-channel arrays (int8
 * CONV_2D, DEPTHWISE_CONV_2D, per-channel FULLY_CONNECTED): M = (double)s_in * (double)s_w /
 * (double)s_out, one weight scale broadcast or one per channel; LEGACY, the one multiplier of
 * GetQuantizedConvolutionMultipler (every uint8 layer, int8 FULLY_CONNECTED with per-tensor
 * weights): the product s_in * s_w rounded to float first, then / (double)s_out. */
enum { FX_QS8_SCALES_PER_TENSOR = 0, FX_QS8_SCALES_PER_CHANNEL = 1, FX_QS8_SCALES_LEGACY = 2 };

/* Per-channel requant parameters from TFLite's float32 scales, as its kernels compute them: M[c]
 * by `mode` (FX_QS8_SCALES_*), then fx_quantize_multiplier. Returns -1 if a multiplier needs a
 * shift above 30 (M >= 2^30; the kernels do not take it: leave such a layer to the stock
 * kernel), else 0. */
int fx_qs8_requant_params(int n, float s_in, const float *s_w, int mode, float s_out,
                          int single_rounding, int32_t *m, int32_t *shift);

/* CalculateActivationRangeQuantized for act in NONE/RELU/RELU_N1_TO_1/RELU6 (0..3, the TFLite
 * enum): zp + (int)round(f / scale) in float, clamped to [qmin, qmax]. Returns -1 for another
 * act, or where TFLite refuses the model (round(f / scale) outside int32 as floats). The one
 * float that passes that check yet overflows the cast, 2^31, gives INT32_MIN as x86's cvttss2si
 * does (AArch64's fcvtzs saturates). */
int fx_qs8_act_range(int act, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t *lo,
                     int32_t *hi);

/* acc << ls saturated to int32 (gemmlowp's ShiftLeft). */
static inline int32_t fx_shl_sat(int32_t acc, int ls) {
  const int64_t v = (int64_t)acc * ((int64_t)1 << ls);
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* The scalar definitions every kernel is checked against. m >= 0, shift in [-31, 30]. */
static inline int32_t fx_rq_double(int32_t acc, int32_t m, int32_t shift, int away, int sat) {
  const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
  /* TFLite / ruy: x * (1 << ls) wrapping; gemmlowp: saturating */
  const int32_t x = sat ? fx_shl_sat(acc, ls) : (int32_t)((uint32_t)acc << ls);
  const int64_t p = (int64_t)x * (int64_t)m;
  const int32_t high = (int32_t)((p + ((int64_t)1 << 30)) >> 31); /* nearest, ties up */
  const int32_t mask = (int32_t)(((uint32_t)1 << rs) - 1u);
  const int32_t thr = (mask >> 1) + (away && high < 0); /* away: a negative tie goes down */
  return (high >> rs) + ((high & mask) > thr);           /* RoundingDivideByPOT: no overflow */
}

static inline int32_t fx_rq_single(int32_t acc, int32_t m, int32_t shift) {
  const int total = 31 - shift;
  const int64_t p = (int64_t)acc * (int64_t)m + ((int64_t)1 << (total - 1));
  return (int32_t)(uint32_t)(uint64_t)(p >> total); /* TFLite casts the int64 to int32 */
}

static inline int32_t fx_rq_apply(int32_t acc, int32_t m, int32_t shift, int rounding) {
  return rounding == FLEX_RQ_SINGLE ? fx_rq_single(acc, m, shift)
                                  : fx_rq_double(acc, m, shift, rounding != FLEX_RQ_UP,
                                                 rounding == FLEX_RQ_AWAY_SAT);
}

/* The rounding of channel c under o (FLEX_RQ_SINGLE and FLEX_RQ_AWAY_SAT are all or nothing: they
 * ignore the tail). */
static inline int fx_qs8_rounding_of(const fx_qs8_out *o, size_t c) {
  if (o->rounding >= FLEX_RQ_SINGLE || (int64_t)c < (int64_t)o->tail_from) return o->rounding;
  return o->tail_rounding;
}

/* 0 if o is well formed: known roundings, a tail of AWAY/UP only, lo <= hi within int8. */
int fx_qs8_out_check(const fx_qs8_out *o);

/* One output value: requant, + zero point (wrapping int32 add, as TFLite), clamp. */
static inline int8_t fx_qs8_out_one(int32_t acc, int32_t m, int32_t shift, int rounding,
                                    const fx_qs8_out *o) {
  int32_t v = (int32_t)((uint32_t)fx_rq_apply(acc, m, shift, rounding) + (uint32_t)o->zp);
  v = v < o->lo ? o->lo : v;
  v = v > o->hi ? o->hi : v;
  return (int8_t)v;
}

/* The output stage over a row of n channels: y[c] from acc[c], m[c], shift[c]; channel c of the
 * row is channel c0 + c of the layer (for the tail rule). The portable reference of the
 * SIMD output stages (fx_qs8_requant_row_* below, tested against it). */
void fx_qs8_requant_row_scalar(size_t n, const int32_t *acc, const int32_t *m,
                               const int32_t *shift, size_t c0, const fx_qs8_out *o, int8_t *y);
#if defined(__x86_64__)
void fx_qs8_requant_row_avx2(size_t n, const int32_t *acc, const int32_t *m, const int32_t *shift,
                             size_t c0, const fx_qs8_out *o, int8_t *y);
#endif
#if defined(__aarch64__)
void fx_qs8_requant_row_neon(size_t n, const int32_t *acc, const int32_t *m, const int32_t *shift,
                             size_t c0, const fx_qs8_out *o, int8_t *y);
#endif
#endif
