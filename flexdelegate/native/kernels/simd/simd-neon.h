/* The FXV_* vector vocabulary for AArch64 Advanced SIMD (4 floats; baseline there, no target
 * attributes). See README.md. Tails go through a small stack buffer (NEON has no masked
 * loads). */
#ifndef FLEX_SIMD_NEON_H
#define FLEX_SIMD_NEON_H
#include <arm_neon.h>
#include <stddef.h>
#include <string.h>

#define FXV_ISA "neon"
#define FXV_T float32x4_t
#define FXV_M uint32x4_t
#define FXV_L 4
#define FXV_FN static inline __attribute__((always_inline))
#define FXV_ENTRY
#define FXV_NAME(x) x##_neon

#define FXV_TAIL_T int
#define FXV_TAIL(n) ((int)(n))
FXV_FN float32x4_t fxv_loadt_neon(const float *p, int n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  memcpy(t, p, (size_t)n * sizeof(float));
  return vld1q_f32(t);
}
FXV_FN void fxv_storet_neon(float *p, float32x4_t v, int n) {
  float t[4];
  vst1q_f32(t, v);
  memcpy(p, t, (size_t)n * sizeof(float));
}
#define FXV_LOAD(p) vld1q_f32(p)
#define FXV_LOADT(p, t) fxv_loadt_neon((p), (t))
#define FXV_STORE(p, v) vst1q_f32((p), (v))
#define FXV_STORET(p, v, t) fxv_storet_neon((p), (v), (t))
FXV_FN float32x4_t fxv_tail_keep_neon(float32x4_t v, int n) {
  const uint32_t lanes[4] = {0, 1, 2, 3};
  const uint32x4_t m = vcltq_u32(vld1q_u32(lanes), vdupq_n_u32((uint32_t)n));
  return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), m));
}
#define FXV_TAIL_KEEP(v, t) fxv_tail_keep_neon((v), (t))

#define FXV_SET1(f) vdupq_n_f32(f)
#define FXV_ZERO() vdupq_n_f32(0.0f)
#define FXV_ADD(a, b) vaddq_f32((a), (b))
#define FXV_SUB(a, b) vsubq_f32((a), (b))
#define FXV_MUL(a, b) vmulq_f32((a), (b))
#define FXV_DIV(a, b) vdivq_f32((a), (b))
#define FXV_SQRT(a) vsqrtq_f32(a)
#define FXV_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define FXV_FNMA(a, b, c) vfmsq_f32((c), (a), (b))
#define FXV_FMS(a, b, c) vnegq_f32(vfmsq_f32((c), (a), (b))) /* -(c - a*b): exact negation */
/* FMIN/FMAX return NaN when either operand is NaN: a NaN x is kept whatever the order. */
#define FXV_MIN(a, b) vminq_f32((a), (b))
#define FXV_MAX(a, b) vmaxq_f32((a), (b))
#define FXV_ABS(a) vabsq_f32(a)
#define FXV_ROUND(a) vrndnq_f32(a)

#define FXV_LT(a, b) vcltq_f32((a), (b))
#define FXV_GE(a, b) vcgeq_f32((a), (b))
#define FXV_SEL(m, a, b) vbslq_f32((m), (a), (b))
#define FXV_ZERO_IF(m, a) vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(a), (m)))

FXV_FN float32x4_t fxv_scale2_neon(float32x4_t a, float32x4_t n) {
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(a, vreinterpretq_f32_s32(e));
}
#define FXV_SCALE2(a, n) fxv_scale2_neon((a), (n))
#define FXV_SHL23(v) vreinterpretq_f32_s32(vshlq_n_s32(vreinterpretq_s32_f32(v), 23))

#define FXV_HSUM(v) vaddvq_f32(v)
FXV_FN float32x4_t fxv_iota_neon(void) {
  const float i[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  return vld1q_f32(i);
}
#define FXV_IOTA() fxv_iota_neon()
/* The lanes whose byte p[j] is nonzero (4 bytes read). */
FXV_FN uint32x4_t fxv_mask_u8_neon(const unsigned char *p) {
  uint32_t w;
  memcpy(&w, p, 4);
  const uint16x4_t h = vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w))));
  return vcgtq_u32(vmovl_u16(h), vdupq_n_u32(0));
}
#define FXV_MASK_U8(p) fxv_mask_u8_neon(p)

/* dst[c * ds + r] = src[r * ss + c] for r, c < 4. */
FXV_FN void fxv_transpose_neon(const float *src, ptrdiff_t ss, float *dst, ptrdiff_t ds) {
  const float32x4x2_t a = vtrnq_f32(vld1q_f32(src), vld1q_f32(src + ss));
  const float32x4x2_t b = vtrnq_f32(vld1q_f32(src + 2 * ss), vld1q_f32(src + 3 * ss));
  vst1q_f32(dst, vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0])));
  vst1q_f32(dst + ds, vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1])));
  vst1q_f32(dst + 2 * ds, vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0])));
  vst1q_f32(dst + 3 * ds, vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1])));
}
#define FXV_TRANSPOSE(src, ss, dst, ds) fxv_transpose_neon((src), (ss), (dst), (ds))
#define FXV_HMAX(v) vmaxvq_f32(v)
#endif
