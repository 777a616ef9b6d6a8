/* NEON ADD / MUL: the checked float form (float-form.h), 16 elements a step; what it leaves
 * (short calls, parameters outside its bound, results on halves) goes to the scalar exact
 * definitions. The table lookup, QUANTIZE and the column sums are the scalar ones (qs8-ops.inc). */
#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>
#include "float-form.h"
#include "qs8-ops.h"

#define OPS_NEON __attribute__((always_inline)) static inline

typedef struct {
  float32x4_t alpha, beta, gamma, d, neg, za, zb;
  uint8x16_t lo, hi; /* (as stored) */
} fast_k;

static fast_k fast_k_of(const fx_qs8_fast *f) {
  return (fast_k){.alpha = vdupq_n_f32(f->alpha), .beta = vdupq_n_f32(f->beta), .gamma = vdupq_n_f32(f->gamma),
                  .d = vdupq_n_f32(f->d), .neg = vdupq_n_f32(f->neg), .za = vdupq_n_f32(f->za),
                  .zb = vdupq_n_f32(f->zb), .lo = vdupq_n_u8((uint8_t)f->lo), .hi = vdupq_n_u8((uint8_t)f->hi)};
}

/* 16 bytes as four float32x4, in order. */
OPS_NEON void load16(const uint8_t *p, const int u8, float32x4_t v[4]) {
  const uint8x16_t x = vld1q_u8(p);
  if (u8) {
    const uint16x8_t l = vmovl_u8(vget_low_u8(x)), h = vmovl_high_u8(x);
    v[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(l))), v[1] = vcvtq_f32_u32(vmovl_high_u16(l));
    v[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(h))), v[3] = vcvtq_f32_u32(vmovl_high_u16(h));
  } else {
    const int8x16_t s = vreinterpretq_s8_u8(x);
    const int16x8_t l = vmovl_s8(vget_low_s8(s)), h = vmovl_high_s8(s);
    v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(l))), v[1] = vcvtq_f32_s32(vmovl_high_s16(l));
    v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(h))), v[3] = vcvtq_f32_s32(vmovl_high_s16(h));
  }
}

/* 4 results (before the clamp), rounded from t - d; lanes where t + d rounds elsewhere all ones
 * in *unsure. The arithmetic rounds by FPCR (checked: to nearest), the conversions to nearest. */
OPS_NEON int32x4_t fast4(float32x4_t va, float32x4_t vb, const fast_k *k, const int mul, const int a_step,
                         uint32x4_t *unsure) {
  float32x4_t t;
  if (mul) {
    const float32x4_t xa = a_step ? vsubq_f32(va, k->za) : k->za;
    const float32x4_t prod = vmulq_f32(xa, vsubq_f32(vb, k->zb));
    t = vfmaq_f32(k->gamma, prod, k->alpha);
    const uint32x4_t neg = vandq_u32(vcltq_f32(prod, vdupq_n_f32(0)), vreinterpretq_u32_f32(k->neg));
    t = vsubq_f32(t, vreinterpretq_f32_u32(neg));
  } else {
    t = vfmaq_f32(k->gamma, vb, k->beta);
    if (a_step) t = vfmaq_f32(t, va, k->alpha);
  }
  const int32x4_t r = vcvtnq_s32_f32(vsubq_f32(t, k->d));
  *unsure = vmvnq_u32(vceqq_s32(r, vcvtnq_s32_f32(vaddq_f32(t, k->d))));
  return r;
}

/* 16 results as bytes, their undecided lanes all ones in unsure[q] (element 4q + i in lane i). */
OPS_NEON uint8x16_t fast16(const uint8_t *pa, const uint8_t *pb, const fast_k *k, const int mul, const int u8,
                           const int a_step, uint32x4_t unsure[4]) {
  float32x4_t va[4] = {k->za, k->za, k->za, k->za}, vb[4];
  if (a_step) load16(pa, u8, va);
  load16(pb, u8, vb);
  int32x4_t r[4];
  for (int q = 0; q < 4; q++) r[q] = fast4(va[q], vb[q], k, mul, a_step, &unsure[q]);
  /* |r| < 2^15: the int16 narrowing is exact, the byte narrowing saturates to the type, inside
   * which lo..hi lie */
  const int16x8_t w0 = vcombine_s16(vqmovn_s32(r[0]), vqmovn_s32(r[1]));
  const int16x8_t w1 = vcombine_s16(vqmovn_s32(r[2]), vqmovn_s32(r[3]));
  if (u8) return vminq_u8(vmaxq_u8(vcombine_u8(vqmovun_s16(w0), vqmovun_s16(w1)), k->lo), k->hi);
  const int8x16_t v = vcombine_s8(vqmovn_s16(w0), vqmovn_s16(w1));
  return vreinterpretq_u8_s8(vminq_s8(vmaxq_s8(v, vreinterpretq_s8_u8(k->lo)), vreinterpretq_s8_u8(k->hi)));
}

OPS_NEON int any_unsure(const uint32x4_t m[4]) {
  return vmaxvq_u32(vorrq_u32(vorrq_u32(m[0], m[1]), vorrq_u32(m[2], m[3]))) != 0;
}

/* 16 elements a step, up to the end or up to the first step with an undecided lane (*hit; not
 * stored: fix_any() does it). */
OPS_NEON size_t fast_run(size_t n, const uint8_t *pa, const uint8_t *pb, uint8_t *py, const fast_k *k, const int mul,
                         const int u8, const int a_step, int *hit) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint32x4_t m[4];
    const uint8x16_t v = fast16(pa + i * a_step, pb + i, k, mul, u8, a_step, m);
    if (any_unsure(m)) {
      *hit = 1;
      break;
    }
    vst1q_u8(py + i, v);
  }
  return i;
}

/* fx_qs8_fast_isa's two loops: the kernels above compiled for each op, type and broadcast. */
__attribute__((noinline)) static size_t run_any(size_t n, const uint8_t *a, size_t a_step, const uint8_t *b,
                                                uint8_t *y, const void *k, const fx_qs8_exact_op *op, int *hit) {
#define FX_RUN(mul) \
  (fx_qs8_exact_u8(op) ? (a_step ? fast_run(n, a, b, y, k, mul, 1, 1, hit) : fast_run(n, a, b, y, k, mul, 1, 0, hit)) \
                       : (a_step ? fast_run(n, a, b, y, k, mul, 0, 1, hit) : fast_run(n, a, b, y, k, mul, 0, 0, hit)))
  return op->add ? FX_RUN(0) : FX_RUN(1);
#undef FX_RUN
}

/* One step with its undecided lanes by the scalar definition, every input read before the
 * output is written (y may be a or b). */
__attribute__((noinline)) static void fix_any(const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y,
                                              const void *k, const fx_qs8_exact_op *op) {
  const int u8 = fx_qs8_exact_u8(op);
  uint32x4_t m[4];
#define FX_FAST(mul) \
  (u8 ? (a_step ? fast16(a, b, k, mul, 1, 1, m) : fast16(a, b, k, mul, 1, 0, m)) \
      : (a_step ? fast16(a, b, k, mul, 0, 1, m) : fast16(a, b, k, mul, 0, 0, m)))
  const uint8x16_t v = op->add ? FX_FAST(0) : FX_FAST(1);
#undef FX_FAST
  uint8_t out[16];
  uint32_t unsure[16];
  vst1q_u8(out, v);
  for (int q = 0; q < 4; q++) vst1q_u32(unsure + 4 * q, m[q]);
  for (size_t j = 0; j < 16; j++) {
    if (unsure[j]) out[j] = fx_qs8_exact_one(op, a[j * a_step], b[j]);
  }
  memcpy(y, out, 16);
}

static const fx_qs8_fast_isa k_fast = {run_any, fix_any, 16};

/* The float form's prefix of the op (the count done). */
static size_t fast_prefix(size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_exact_op *op) {
  fx_qs8_fast f;
  if (!fx_qs8_fast_of(op, n, a, a_step, &f)) return 0;
  const fast_k k = fast_k_of(&f);
  return fx_qs8_fast_drive(n, a, a_step, b, y, &k, op, &k_fast);
}

void fx_qs8_add__neon(size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_add_params *p,
                      int form) {
  const fx_qs8_exact_op op = {.add = p, .form = form};
  const size_t i = fast_prefix(n, a, a_step, b, y, &op);
  if (i < n) fx_qs8_add__scalar(n - i, (const uint8_t *)a + i * a_step, a_step, (const uint8_t *)b + i, (uint8_t *)y + i, p, form);
}

void fx_qs8_mul__neon(size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_mul_params *p,
                      int form) {
  const fx_qs8_exact_op op = {.mul = p, .form = form};
  const size_t i = fast_prefix(n, a, a_step, b, y, &op);
  if (i < n) fx_qs8_mul__scalar(n - i, (const uint8_t *)a + i * a_step, a_step, (const uint8_t *)b + i, (uint8_t *)y + i, p, form);
}
#endif
