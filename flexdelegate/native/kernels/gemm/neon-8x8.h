/* What the NEON 8x8 GEMM and IGEMM kernels share: the start and output stage of a row of two q
 * registers (gemm.h's fx_gemm_out, first nc <= 8 columns) and the lane-indexed FMA step of 16 accumulators
 * c00..c71 against A vectors va0..va7 (see f32-gemm-8x8-neon.c). */
#ifndef FLEX_NEON_8X8_H
#define FLEX_NEON_8X8_H
#include <arm_neon.h>
#include <stddef.h>
#include <string.h>
#include "gemm.h"

static inline float32x4_t fx_clamp4_neon(float32x4_t v, float lo, float hi) {
  /* max then min, as the scalar reference (FMAX/FMIN propagate a NaN accumulator as it does). */
  return vminq_f32(vmaxq_f32(v, vdupq_n_f32(lo)), vdupq_n_f32(hi));
}

/* Output stage of one row (gemm.h's fx_gemm_out): ri = its residual or NULL. Partial rows go
 * through an 8-float buffer, so no access strays past column nc. */
static inline void fx_store_row_8_neon(float *ci, const float *ri, size_t nc, float32x4_t r0, float32x4_t r1,
                                       const fx_gemm_out *o) {
  r0 = fx_clamp4_neon(r0, o->lo, o->hi);
  r1 = fx_clamp4_neon(r1, o->lo, o->hi);
  if (ri) {
    float part[8];
    const float *res = ri;
    if (nc < 8) { /* zero-filled past nc, only on partial rows */
      for (size_t j = 0; j < 8; j++) part[j] = j < nc ? ri[j] : 0.0f;
      res = part;
    }
    r0 = fx_clamp4_neon(vaddq_f32(r0, vld1q_f32(res)), o->rlo, o->rhi);
    r1 = fx_clamp4_neon(vaddq_f32(r1, vld1q_f32(res + 4)), o->rlo, o->rhi);
  }
  if (nc == 8) {
    vst1q_f32(ci, r0);
    vst1q_f32(ci + 4, r1);
    return;
  }
  float buf[8];
  vst1q_f32(buf, r0);
  vst1q_f32(buf + 4, r1);
  memcpy(ci, buf, nc * sizeof(float));
}

#define FX_FMA_LANE_8X8(L, W0, W1)                        \
  do {                                             \
    c00 = vfmaq_laneq_f32(c00, W0, va0, L);        \
    c01 = vfmaq_laneq_f32(c01, W1, va0, L);        \
    c10 = vfmaq_laneq_f32(c10, W0, va1, L);        \
    c11 = vfmaq_laneq_f32(c11, W1, va1, L);        \
    c20 = vfmaq_laneq_f32(c20, W0, va2, L);        \
    c21 = vfmaq_laneq_f32(c21, W1, va2, L);        \
    c30 = vfmaq_laneq_f32(c30, W0, va3, L);        \
    c31 = vfmaq_laneq_f32(c31, W1, va3, L);        \
    c40 = vfmaq_laneq_f32(c40, W0, va4, L);        \
    c41 = vfmaq_laneq_f32(c41, W1, va4, L);        \
    c50 = vfmaq_laneq_f32(c50, W0, va5, L);        \
    c51 = vfmaq_laneq_f32(c51, W1, va5, L);        \
    c60 = vfmaq_laneq_f32(c60, W0, va6, L);        \
    c61 = vfmaq_laneq_f32(c61, W1, va6, L);        \
    c70 = vfmaq_laneq_f32(c70, W0, va7, L);        \
    c71 = vfmaq_laneq_f32(c71, W1, va7, L);        \
  } while (0)

/* GCC's pre-register-allocation scheduler hoists all eight weight loads of a 4-k step, which
 * with 16 accumulators and 8 A vectors needs more than 32 registers, and pays for it with ~9
 * vector register moves per iteration of 64 FMAs; without it the loop is exactly 64 FMAs,
 * 12 loads and 4 scalar instructions. */
#if defined(__GNUC__) && !defined(__clang__)
#define FX_NO_PRE_RA_SCHED __attribute__((optimize("no-schedule-insns")))
#else
#define FX_NO_PRE_RA_SCHED
#endif

/* The k loop over KC floats of rows a0..a7 into accumulators c00..c71, advancing w: 4 k at a
 * time with lane-indexed FMAs, then scalar-times-vector FMAs for the 1..3 left. */
#define FX_NEON_8X8_K_LOOP(KC)                                                  \
  do {                                                                          \
    size_t k = 0;                                                               \
    for (; k + 4 <= (KC); k += 4, w += 32) {                                    \
      const float32x4_t va0 = vld1q_f32(a0 + k), va1 = vld1q_f32(a1 + k);       \
      const float32x4_t va2 = vld1q_f32(a2 + k), va3 = vld1q_f32(a3 + k);       \
      const float32x4_t va4 = vld1q_f32(a4 + k), va5 = vld1q_f32(a5 + k);       \
      const float32x4_t va6 = vld1q_f32(a6 + k), va7 = vld1q_f32(a7 + k);       \
      const float32x4_t w00 = vld1q_f32(w), w01 = vld1q_f32(w + 4);             \
      FX_FMA_LANE_8X8(0, w00, w01);                                             \
      const float32x4_t w10 = vld1q_f32(w + 8), w11 = vld1q_f32(w + 12);        \
      FX_FMA_LANE_8X8(1, w10, w11);                                             \
      const float32x4_t w20 = vld1q_f32(w + 16), w21 = vld1q_f32(w + 20);       \
      FX_FMA_LANE_8X8(2, w20, w21);                                             \
      const float32x4_t w30 = vld1q_f32(w + 24), w31 = vld1q_f32(w + 28);       \
      FX_FMA_LANE_8X8(3, w30, w31);                                             \
    }                                                                           \
    for (; k < (KC); k++, w += 8) {                                             \
      const float32x4_t w0 = vld1q_f32(w), w1 = vld1q_f32(w + 4);               \
      float s;                                                                  \
      s = a0[k]; c00 = vfmaq_n_f32(c00, w0, s); c01 = vfmaq_n_f32(c01, w1, s);  \
      s = a1[k]; c10 = vfmaq_n_f32(c10, w0, s); c11 = vfmaq_n_f32(c11, w1, s);  \
      s = a2[k]; c20 = vfmaq_n_f32(c20, w0, s); c21 = vfmaq_n_f32(c21, w1, s);  \
      s = a3[k]; c30 = vfmaq_n_f32(c30, w0, s); c31 = vfmaq_n_f32(c31, w1, s);  \
      s = a4[k]; c40 = vfmaq_n_f32(c40, w0, s); c41 = vfmaq_n_f32(c41, w1, s);  \
      s = a5[k]; c50 = vfmaq_n_f32(c50, w0, s); c51 = vfmaq_n_f32(c51, w1, s);  \
      s = a6[k]; c60 = vfmaq_n_f32(c60, w0, s); c61 = vfmaq_n_f32(c61, w1, s);  \
      s = a7[k]; c70 = vfmaq_n_f32(c70, w0, s); c71 = vfmaq_n_f32(c71, w1, s);  \
    }                                                                           \
  } while (0)

/* The 16 accumulators, each starting at the bias (the panel's first 8 floats, at w). */
#define FX_NEON_8X8_START()                                                             \
  float32x4_t c00 = vld1q_f32(w), c01 = vld1q_f32(w + 4);                               \
  float32x4_t c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01;         \
  float32x4_t c40 = c00, c41 = c01, c50 = c00, c51 = c01, c60 = c00, c61 = c01;         \
  float32x4_t c70 = c00, c71 = c01

/* Output stage of rows [0, mr) to c (row stride c_stride, nc columns; residual r or NULL). */
#define FX_NEON_8X8_ROW(i, v0, v1) \
  if (mr > i) fx_store_row_8_neon(c + i * c_stride, r ? r + i * c_stride : NULL, nc, v0, v1, o)
#define FX_NEON_8X8_STORE()                                                     \
  do {                                                                          \
    FX_NEON_8X8_ROW(0, c00, c01);                                               \
    FX_NEON_8X8_ROW(1, c10, c11);                                               \
    FX_NEON_8X8_ROW(2, c20, c21);                                               \
    FX_NEON_8X8_ROW(3, c30, c31);                                               \
    FX_NEON_8X8_ROW(4, c40, c41);                                               \
    FX_NEON_8X8_ROW(5, c50, c51);                                               \
    FX_NEON_8X8_ROW(6, c60, c61);                                               \
    FX_NEON_8X8_ROW(7, c70, c71);                                               \
  } while (0)
#endif
