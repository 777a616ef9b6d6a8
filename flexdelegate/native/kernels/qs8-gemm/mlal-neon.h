/* The NEON baseline scheme of qs8-gemm/igemm-4x16-neon (the "mlal lane" design of XNNPACK's
 * qs8 NEON kernels): panels of KR = 1 (per k, the 16 channels' weights); 8 bytes of each row of
 * A are widened to int16 once, and each k's 16 weights, widened to two int16x8, are multiplied
 * by lane k of the row with vmlal(_high)_laneq_s16 into four int32x4 per row (exact: int16 x
 * int16 -> int32). 4 rows x 4 accumulators + 4 A vectors + 2 weight vectors of the 32. */
#ifndef FLEX_QS8_MLAL_NEON_H
#define FLEX_QS8_MLAL_NEON_H
#include <arm_neon.h>
#include <string.h>
#include "../quant/requant-neon.h"
#include "qs8-gemm.h"

#define FX_ML_ACC(i) int32x4_t acc##i##0 = vdupq_n_s32(0), acc##i##1 = acc##i##0, \
                               acc##i##2 = acc##i##0, acc##i##3 = acc##i##0;
#define FX_ML_LANE(i, L)                                                  \
  acc##i##0 = vmlal_laneq_s16(acc##i##0, vget_low_s16(wl), va##i, L);     \
  acc##i##1 = vmlal_high_laneq_s16(acc##i##1, wl, va##i, L);              \
  acc##i##2 = vmlal_laneq_s16(acc##i##2, vget_low_s16(wh), va##i, L);     \
  acc##i##3 = vmlal_high_laneq_s16(acc##i##3, wh, va##i, L);
/* k + L of a block of 8: the weights of that k, then every row's lane L. */
#define FX_ML_STEP(ROWS2, L)                                  \
  {                                                           \
    const int8x16_t wb = vld1q_s8(wk + 16 * (L));             \
    const int16x8_t wl = vmovl_s8(vget_low_s8(wb)), wh = vmovl_high_s8(wb); \
    ROWS2(FX_ML_LANE, L)                                      \
  }
#define FX_ML_BLOCK8(ROWS2) \
  FX_ML_STEP(ROWS2, 0) FX_ML_STEP(ROWS2, 1) FX_ML_STEP(ROWS2, 2) FX_ML_STEP(ROWS2, 3) \
  FX_ML_STEP(ROWS2, 4) FX_ML_STEP(ROWS2, 5) FX_ML_STEP(ROWS2, 6) FX_ML_STEP(ROWS2, 7)
/* One leftover k: row i's single value. */
#define FX_ML_ONE(i, unused)                                              \
  {                                                                       \
    const int16_t av = a##i[k];                                           \
    acc##i##0 = vmlal_n_s16(acc##i##0, vget_low_s16(wl), av);             \
    acc##i##1 = vmlal_n_s16(acc##i##1, vget_high_s16(wl), av);            \
    acc##i##2 = vmlal_n_s16(acc##i##2, vget_low_s16(wh), av);             \
    acc##i##3 = vmlal_n_s16(acc##i##3, vget_high_s16(wh), av);            \
  }
#define FX_ML_TAIL1(ROWS2)                                                \
  {                                                                       \
    const int8x16_t wb = vld1q_s8(wk);                                    \
    const int16x8_t wl = vmovl_s8(vget_low_s8(wb)), wh = vmovl_high_s8(wb); \
    ROWS2(FX_ML_ONE, 0)                                                   \
  }

/* The k-loop over one run of kc bytes per row: blocks of 8 k with lane-indexed vmlal, then
 * single k. */
#define FX_ML_LOAD_A(i) const int16x8_t va##i = vmovl_s8(vld1_s8(a##i + k));
#define FX_ML_KLOOP(ROWS, ROWS2)                  \
  {                                               \
    size_t k = 0;                                 \
    for (; k + 8 <= kc; k += 8, wk += 128) {      \
      ROWS(FX_ML_LOAD_A)                          \
      FX_ML_BLOCK8(ROWS2)                         \
    }                                             \
    for (; k < kc; k++, wk += 16) FX_ML_TAIL1(ROWS2) \
  }

/* The output stage of 16 channels, shared by the NEON kernels: 4 accumulators of a row. */
typedef struct { fx_rq4_neon q[4]; int32x4_t b[4]; } fx_rq16_neon;

static inline fx_rq16_neon fx_rq16_init_neon(const int32_t *bias, const int32_t *rqp, const fx_qs8_out *o) {
  fx_rq16_neon r;
  for (int q = 0; q < 4; q++) {
    /* the GEMMs use o->rounding on every channel: no tail */
    r.q[q] = fx_rq4_init_neon(rqp + 4 * q, rqp + 16 + 4 * q, vdupq_n_s32(o->rounding == FLEX_RQ_UP ? 0 : -1), o);
    r.b[q] = vld1q_s32(bias + 4 * q);
  }
  return r;
}

static inline void fx_rq16_store_neon(int8_t *ci, size_t nc, int32_t corr, const fx_rq16_neon *r,
                                      int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3) {
  const int32x4_t vc = vdupq_n_s32(corr);
  a0 = fx_rq4_apply_neon(vaddq_s32(vaddq_s32(a0, r->b[0]), vc), &r->q[0]);
  a1 = fx_rq4_apply_neon(vaddq_s32(vaddq_s32(a1, r->b[1]), vc), &r->q[1]);
  a2 = fx_rq4_apply_neon(vaddq_s32(vaddq_s32(a2, r->b[2]), vc), &r->q[2]);
  a3 = fx_rq4_apply_neon(vaddq_s32(vaddq_s32(a3, r->b[3]), vc), &r->q[3]);
  fx_store_bytes_neon(ci, vcombine_s8(fx_pack8_neon(a0, a1), fx_pack8_neon(a2, a3)), nc);
}

#define FX_NEON16_STORE(i) \
  if (mr > (i)) fx_rq16_store_neon(c + (i) * c_stride, nc, row_corr ? row_corr[i] : 0, &rq, acc##i##0, acc##i##1, acc##i##2, acc##i##3);
/* After the k-loops (wk at the panel's requant parameters): every row's output stage. */
#define FX_NEON16_OUTPUT(ROWS)                                                  \
  const fx_rq16_neon rq = fx_rq16_init_neon((const int32_t *)w, (const int32_t *)wk, o); \
  ROWS(FX_NEON16_STORE)
#endif
