/* The NEON output stage (requant.h, requant-avx2.h has the derivation): 4 int32 accumulators
 * -> requant -> + zero point -> clamp, and the narrowing to int8. The products are formed in
 * 64 bits (vmull_s32) rather than with vqrdmulh, so every FLEX_RQ_* rule has one exact form;
 * FLEX_RQ_AWAY_SAT's saturating left shift is vqshl. */
#ifndef FLEX_QUANT_REQUANT_NEON_H
#define FLEX_QUANT_REQUANT_NEON_H
#include <arm_neon.h>
#include "requant.h"

#define FX_REQUANT_NEON __attribute__((always_inline)) static inline

typedef struct {
  int32x4_t m, ls, neg_rs, mask, half, away; /* double rounding */
  int64x2_t neg_tl, neg_th, rndl, rndh;      /* single rounding: lanes 0-1 and 2-3 */
  int32x4_t zp, lo, hi;
  int single, sat;
} fx_rq4_neon;

FX_REQUANT_NEON int32x4_t fx_rq4_away_neon(const fx_qs8_out *o, size_t c0) {
  const int32x4_t main = vdupq_n_s32(o->rounding == FLEX_RQ_UP ? 0 : -1);
  if (o->rounding >= FLEX_RQ_SINGLE || (int64_t)c0 + 4 <= (int64_t)o->tail_from) return main;
  const int32x4_t tail = vdupq_n_s32(o->tail_rounding == FLEX_RQ_AWAY ? -1 : 0);
  const int32_t idx_init[4] = {0, 1, 2, 3};
  const int32x4_t idx = vaddq_s32(vdupq_n_s32((int32_t)c0), vld1q_s32(idx_init));
  const uint32x4_t is_tail = vcgtq_s32(idx, vdupq_n_s32(o->tail_from - 1));
  return vbslq_s32(is_tail, tail, main);
}

FX_REQUANT_NEON fx_rq4_neon fx_rq4_init_neon(const int32_t *m, const int32_t *shift, int32x4_t away,
                                        const fx_qs8_out *o) {
  fx_rq4_neon r;
  const int32x4_t zero = vdupq_n_s32(0), one = vdupq_n_s32(1);
  const int32x4_t sh = vld1q_s32(shift);
  r.m = vld1q_s32(m);
  r.single = o->rounding == FLEX_RQ_SINGLE;
  r.sat = o->rounding == FLEX_RQ_AWAY_SAT;
  r.ls = vmaxq_s32(sh, zero);
  const int32x4_t rs = vmaxq_s32(vnegq_s32(sh), zero);
  r.neg_rs = vnegq_s32(rs);
  r.mask = vsubq_s32(vshlq_s32(one, rs), one);
  r.half = vshrq_n_s32(r.mask, 1);
  r.away = away;
  const int32x4_t total = vsubq_s32(vdupq_n_s32(31), sh); /* 1..62 */
  const int64x2_t tl = vmovl_s32(vget_low_s32(total)), th = vmovl_high_s32(total);
  const int64x2_t one64 = vdupq_n_s64(1);
  r.neg_tl = vnegq_s64(tl);
  r.neg_th = vnegq_s64(th);
  r.rndl = vshlq_s64(one64, vsubq_s64(tl, one64));
  r.rndh = vshlq_s64(one64, vsubq_s64(th, one64));
  r.zp = vdupq_n_s32(o->zp);
  r.lo = vdupq_n_s32(o->lo);
  r.hi = vdupq_n_s32(o->hi);
  return r;
}

FX_REQUANT_NEON int32x4_t fx_rq4_apply_neon(int32x4_t acc, const fx_rq4_neon *r) {
  int32x4_t v;
  if (r->single) {
    const int64x2_t pl = vaddq_s64(vmull_s32(vget_low_s32(acc), vget_low_s32(r->m)), r->rndl);
    const int64x2_t ph = vaddq_s64(vmull_high_s32(acc, r->m), r->rndh);
    v = vcombine_s32(vmovn_s64(vshlq_s64(pl, r->neg_tl)), vmovn_s64(vshlq_s64(ph, r->neg_th)));
  } else {
    const int64x2_t half30 = vdupq_n_s64(1LL << 30);
    const int32x4_t x = r->sat ? vqshlq_s32(acc, r->ls) : vshlq_s32(acc, r->ls); /* gemmlowp saturates */
    const int64x2_t pl = vaddq_s64(vmull_s32(vget_low_s32(x), vget_low_s32(r->m)), half30);
    const int64x2_t ph = vaddq_s64(vmull_high_s32(x, r->m), half30);
    const int32x4_t high = vcombine_s32(vshrn_n_s64(pl, 31), vshrn_n_s64(ph, 31));
    const int32x4_t thr = vsubq_s32(r->half, vandq_s32(r->away, vshrq_n_s32(high, 31)));
    const uint32x4_t up = vcgtq_s32(vandq_s32(high, r->mask), thr);
    v = vsubq_s32(vshlq_s32(high, r->neg_rs), vreinterpretq_s32_u32(up));
  }
  v = vaddq_s32(v, r->zp);
  return vminq_s32(vmaxq_s32(v, r->lo), r->hi);
}

/* 8 clamped lanes as 8 int8. */
FX_REQUANT_NEON int8x8_t fx_pack8_neon(int32x4_t a, int32x4_t b) {
  return vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b)));
}

FX_REQUANT_NEON void fx_store_bytes_neon(int8_t *y, int8x16_t v, size_t n) {
  if (n == 16) {
    vst1q_s8(y, v);
    return;
  }
  int8_t buf[16];
  vst1q_s8(buf, v);
  for (size_t i = 0; i < n; i++) y[i] = buf[i];
}
#endif
