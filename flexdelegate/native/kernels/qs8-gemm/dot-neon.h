/* The NEON dot-product scheme of qs8-gemm/igemm-4x16c4-neondot: a panel k-group is 16 channels
 * x 4 bytes (four q registers of 4 channels), and sdot (vdotq_laneq_s32) adds four int8 x int8
 * products of k-group L of a row's 16 loaded bytes into each channel's int32 lane: no widening,
 * no reduction. 4 rows x 4 accumulators + 4 A + 4 weight vectors of the 32. */
#ifndef FLEX_QS8_DOT_NEON_H
#define FLEX_QS8_DOT_NEON_H
#include "mlal-neon.h"

#define FX_DOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))

#define FX_DOT_LANE(i, L)                                  \
  acc##i##0 = vdotq_laneq_s32(acc##i##0, w0, va##i, L);    \
  acc##i##1 = vdotq_laneq_s32(acc##i##1, w1, va##i, L);    \
  acc##i##2 = vdotq_laneq_s32(acc##i##2, w2, va##i, L);    \
  acc##i##3 = vdotq_laneq_s32(acc##i##3, w3, va##i, L);
/* k-group L of the loaded A vectors (64 bytes of panel at wk + 64 L). */
#define FX_DOT_STEP(ROWS2, L)                                                      \
  {                                                                                \
    const int8x16_t w0 = vld1q_s8(wk + 64 * (L)), w1 = vld1q_s8(wk + 64 * (L) + 16); \
    const int8x16_t w2 = vld1q_s8(wk + 64 * (L) + 32), w3 = vld1q_s8(wk + 64 * (L) + 48); \
    ROWS2(FX_DOT_LANE, L)                                                          \
  }
#define FX_DOT_BLOCK16(ROWS2) \
  FX_DOT_STEP(ROWS2, 0) FX_DOT_STEP(ROWS2, 1) FX_DOT_STEP(ROWS2, 2) FX_DOT_STEP(ROWS2, 3)

#define FX_DOT_LOAD_A16(i) const int8x16_t va##i = vld1q_s8(a##i + k);
#define FX_DOT_LOAD_A4(i) const int8x16_t va##i = fx_dot_load4(a##i + k, kc - k < 4 ? kc - k : 4);
/* The k-loop over one run of kc bytes per row: 16 bytes a step, then single k-groups (the last
 * one partial). */
#define FX_DOT_KLOOP(ROWS, ROWS2)                 \
  {                                               \
    size_t k = 0;                                 \
    for (; k + 16 <= kc; k += 16, wk += 256) {    \
      ROWS(FX_DOT_LOAD_A16)                       \
      FX_DOT_BLOCK16(ROWS2)                       \
    }                                             \
    for (; k < kc; k += 4, wk += 64) {            \
      ROWS(FX_DOT_LOAD_A4)                        \
      FX_DOT_STEP(ROWS2, 0)                       \
    }                                             \
  }

/* Up to 4 bytes of a row (n < 4: the rest zero; their weights are 0) in lane 0. */
static inline int8x16_t fx_dot_load4(const int8_t *p, size_t n) {
  int32_t v;
  if (n < 4) v = (int32_t)fx_qs8_load_tail(p, n);
  else memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}
#endif
