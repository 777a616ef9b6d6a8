/* AVX-512 ADD and MUL: 16 elements a step in int32 lanes, ref.h's definitions exactly, with
 * about half the AVX2 kernel's instructions per element: the inputs' rescale in int32
 * (qs8-ops-avx2.c's split multiplier, every form as one rounding) and the output's SRDHM and
 * RoundingDivideByPOT as one rounding of the 64-bit product (vpsraq). An element-wise ADD takes
 * 32 elements a step first (add_loop32: the inputs as int16 word pairs). Parameters outside what
 * those single roundings cover, and the last n % 16 elements, go to the AVX2 kernel. Runs of 64
 * and more elements go first to a float form with an error bound, exact where the bound decides
 * the rounding and by ref.h's definition where it does not (float-form.h). */
#if defined(__x86_64__)
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include "float-form.h"
#include "qs8-ops.h"

#define OPS512 __attribute__((target("avx2,fma,avx512f,avx512bw"), always_inline)) static inline

OPS512 __m512i load16(const uint8_t *p, int u8) {
  const __m128i v = _mm_loadu_si128((const __m128i *)p);
  return u8 ? _mm512_cvtepu8_epi32(v) : _mm512_cvtepi8_epi32(v);
}

/* 16 lanes already within the type's range, stored as bytes (truncation keeps them). */
OPS512 void store16(uint8_t *p, __m512i v) { _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(v)); }

/* rdbpot(srdhm(x, m), e) for m >= 0 and e in [0, 31], as one rounding of P = x*m: srdhm is
 * floor((P + 2^30) / 2^31) for either sign, negative exactly when P < -2^30; rdbpot adds
 * 2^(e-1), less one for a negative value, and floors by 2^e (e = 0: nothing); nested floors of
 * whole numbers merge into floor((P + 2^30 + (2^(e-1) - [P < -2^30]) * 2^31) / 2^(31+e)).
 * For -2^30 <= P < 0 the srdhm is 0 and both offsets floor alike, so the test is P < 0, as in
 * quant/requant-avx512.h. |P| < 2^62, so the sum stays in int64. */
typedef struct {
  __m512i m, bias, neg, high; /* high: vpermt2d indices of the sums' high dwords */
  __m128i cnt;                /* 31 + e; e >= 1: e - 1, the shift of the high dword */
  int hi_form;                /* e >= 1: 31 + e >= 32, so the result is the high dword >> (e - 1) */
} out_k;

OPS512 out_k out_of(int32_t m, int e) {
  return (out_k){.m = _mm512_set1_epi32(m),
                 .bias = _mm512_set1_epi64(((int64_t)1 << 30) + (e ? (int64_t)1 << (30 + e) : 0)),
                 .neg = _mm512_set1_epi64(e ? (int64_t)1 << 31 : 0),
                 .high = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31),
                 .cnt = _mm_cvtsi32_si128(e ? e - 1 : 31), .hi_form = e >= 1};
}

/* The 64-bit sums of the even (te) and odd (to) lanes' products, nudged. */
OPS512 void out_sums(__m512i x, const out_k *o, __m512i *te, __m512i *to) {
  const __m512i pe = _mm512_mul_epi32(x, o->m), po = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), o->m);
  const __m512i zero = _mm512_setzero_si512();
  *te = _mm512_add_epi64(pe, o->bias), *to = _mm512_add_epi64(po, o->bias);
  *te = _mm512_mask_sub_epi64(*te, _mm512_cmplt_epi64_mask(pe, zero), *te, o->neg);
  *to = _mm512_mask_sub_epi64(*to, _mm512_cmplt_epi64_mask(po, zero), *to, o->neg);
}

/* round_out where hi_form holds (e >= 1: every output scale but those 2^20 times below the
 * inputs'), with no test of it per vector. */
OPS512 __m512i round_out_hi(__m512i x, const out_k *o) {
  __m512i te, to;
  out_sums(x, o, &te, &to);
  return _mm512_sra_epi32(_mm512_permutex2var_epi32(te, o->high, to), o->cnt);
}

OPS512 __m512i round_out(__m512i x, const out_k *o) {
  if (o->hi_form) return round_out_hi(x, o);
  __m512i te, to;
  out_sums(x, o, &te, &to);
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_sra_epi64(te, o->cnt), _mm512_slli_epi64(_mm512_sra_epi64(to, o->cnt), 32));
}

/* The NEON output narrowing before the clamp: int16 wrap (vmovn), + zero point in int16
 * (wrapping), saturated to the type; the two wraps are one, and the clamp to lo..hi (within the
 * type) makes the saturation moot. */
OPS512 __m512i neon_out(__m512i r, __m512i zo) {
  return _mm512_srai_epi32(_mm512_slli_epi32(_mm512_add_epi32(r, zo), 16), 16);
}

/* An ADD input's rescale, every form as (x*mh + ((x*ml + k) >> 11) + (sign ? x >> 31 : 0)) >> e
 * with m = mh * 2^11 + ml and x = input - zero point (|x| < 2^9: each term fits int32):
 * portable (e <= 20), srdhm(x << 20) = floor((x*m + 2^10) / 2^11) then rdbpot's 2^(e-1) and -1
 * for a negative x, merged (k = 2^10 + 2^(e+10), sign; see qs8-ops-avx2.c); NEON_PRE (e <= 20),
 * srdhm(x << (20 - e)) = floor((x*m + 2^(10+e)) / 2^(11+e)) (k = 2^(10+e)); NEON_POST,
 * srdhm(x << 20) >> e (k = 2^10). */
typedef struct { __m512i z, mh, ml, k, sign; __m128i e; } in_k;

OPS512 in_k in_of(int32_t z, int32_t m, int e, int form) {
  const int32_t k = form == FX_ADD_NEON_PRE ? 1 << (10 + e)
                    : form == FX_ADD_PORTABLE && e ? (1 << 10) + (1 << (e + 10)) : 1 << 10;
  return (in_k){.z = _mm512_set1_epi32(z), .mh = _mm512_set1_epi32(m >> 11), .ml = _mm512_set1_epi32(m & 2047),
                .k = _mm512_set1_epi32(k), .sign = _mm512_set1_epi32(form == FX_ADD_PORTABLE && e ? -1 : 0),
                .e = _mm_cvtsi32_si128(e > 31 ? 31 : e)};
}

OPS512 __m512i rescale(__m512i v, const in_k *c) {
  const __m512i x = _mm512_sub_epi32(v, c->z);
  const __m512i low = _mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, c->ml), c->k), 11);
  const __m512i t = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, c->mh), low),
                                     _mm512_and_si512(_mm512_srai_epi32(x, 31), c->sign));
  return _mm512_sra_epi32(t, c->e);
}

/* An input whose multiplier is 1/2 exactly (m = 2^30, shift 0: the input of the larger scale)
 * rescales to x * 2^19 in every form. */
static int half_of(int32_t m, int e) { return m == 1 << 30 && e == 0; }

typedef struct {
  in_k a, b;
  out_k o;
  __m512i zo, lo, hi;
  int u8, a_step;
} add_k;

/* The rescaled inputs' sum or difference; sub a constant: 0 a + b, 1 a - b, 2 b - a. */
OPS512 __m512i combine(__m512i ya, __m512i yb, const int sub) {
  return sub == 1 ? _mm512_sub_epi32(ya, yb) : sub == 2 ? _mm512_sub_epi32(yb, ya) : _mm512_add_epi32(ya, yb);
}

/* One kernel loop; constant: sub (combine()), portable (the output stage) and half_a (a's
 * rescale is a shift, half_of). A broadcast a (no a_step) is read once, before the loop. */
OPS512 size_t add_loop(size_t n, const uint8_t *pa, const uint8_t *pb, uint8_t *py, const add_k *k,
                       const int sub, const int portable, const int half_a) {
  const add_k c = *k;
  __m512i ya = c.a_step ? _mm512_setzero_si512() : rescale(_mm512_set1_epi32(c.u8 ? pa[0] : (int8_t)pa[0]), &c.a);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (c.a_step && half_a) ya = _mm512_slli_epi32(_mm512_sub_epi32(load16(pa + i, c.u8), c.a.z), 19);
    else if (c.a_step) ya = rescale(load16(pa + i, c.u8), &c.a);
    const __m512i yb = rescale(load16(pb + i, c.u8), &c.b);
    __m512i r = round_out(combine(ya, yb, sub), &c.o);
    r = portable ? _mm512_add_epi32(r, c.zo) : neon_out(r, c.zo);
    store16(py + i, _mm512_min_epi32(_mm512_max_epi32(r, c.lo), c.hi));
  }
  return i;
}

/* ---- ADD with both inputs element-wise, 32 elements a step ----
 * Each input as int16 (x = v - z: |x| <= 255) and then as word pairs (x, 64x) in int32 lanes:
 * vpmaddwd multiplies such a lane by any factor f < 2^21 as (f & 63, f >> 6), exactly, so the
 * rescale's two products take two vpmaddwd instead of two vpmulld, and the shifts of the
 * widening happen on 32 lanes at once. The pairs hold elements {0-3, 8-11, 16-19, 24-27} (lo)
 * and {4-7, 12-15, 20-23, 28-31} (hi); vpackssdw / vpackusdw of the two results puts them back
 * in order, and the output's zero point, saturation and clamp run on 32 int16 lanes. */
OPS512 __m512i load32(const uint8_t *p, int u8) {
  const __m256i v = _mm256_loadu_si256((const __m256i *)p);
  return u8 ? _mm512_cvtepu8_epi16(v) : _mm512_cvtepi8_epi16(v);
}

/* rescale()'s constants as word-pair factors (mh < 2^20, ml < 2^11). */
typedef struct { __m512i z, mh, ml, k, sign; __m128i e; } in16_k;

OPS512 in16_k in16_of(const in_k *c, int32_t z, int32_t m) {
  const int32_t mh = m >> 11;
  return (in16_k){.z = _mm512_set1_epi16((int16_t)z), .mh = _mm512_set1_epi32((mh & 63) | (mh >> 6) << 16),
                  .ml = _mm512_set1_epi32(m & 2047), .k = c->k, .sign = c->sign, .e = c->e};
}

/* rescale() of a pair lane (its sign is x's); `sign` a constant: the portable form's term for a
 * negative x may apply (c->sign), else it is 0. */
OPS512 __m512i rescale16(__m512i p, const in16_k *c, const int sign) {
  const __m512i low = _mm512_srai_epi32(_mm512_add_epi32(_mm512_madd_epi16(p, c->ml), c->k), 11);
  __m512i t = _mm512_add_epi32(_mm512_madd_epi16(p, c->mh), low);
  if (sign) t = _mm512_add_epi32(t, _mm512_and_si512(_mm512_srai_epi32(p, 31), c->sign));
  return _mm512_sra_epi32(t, c->e);
}

OPS512 size_t add_loop32(size_t n, const uint8_t *pa, const uint8_t *pb, uint8_t *py, const add_k *k,
                         const in16_k *k16a, const in16_k *k16b, const int sub, const int portable, const int half_a) {
  const add_k c = *k;
  const in16_k ca = *k16a, cb = *k16b;
  /* the int32 constants' low words in every word */
  const __m512i zo = _mm512_packs_epi32(c.zo, c.zo), lo = _mm512_packs_epi32(c.lo, c.lo);
  const __m512i hi = _mm512_packs_epi32(c.hi, c.hi), low16 = _mm512_set1_epi32(0xffff);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i xa = _mm512_sub_epi16(load32(pa + i, c.u8), ca.z), xb = _mm512_sub_epi16(load32(pb + i, c.u8), cb.z);
    __m512i ya_lo, ya_hi;
    if (half_a) { /* x << 19: the pair (0, 8x) */
      const __m512i x8 = _mm512_slli_epi16(xa, 3), zero = _mm512_setzero_si512();
      ya_lo = _mm512_unpacklo_epi16(zero, x8), ya_hi = _mm512_unpackhi_epi16(zero, x8);
    } else {
      const __m512i x64 = _mm512_slli_epi16(xa, 6);
      ya_lo = rescale16(_mm512_unpacklo_epi16(xa, x64), &ca, portable), ya_hi = rescale16(_mm512_unpackhi_epi16(xa, x64), &ca, portable);
    }
    const __m512i xb64 = _mm512_slli_epi16(xb, 6);
    const __m512i yb_lo = rescale16(_mm512_unpacklo_epi16(xb, xb64), &cb, portable);
    const __m512i yb_hi = rescale16(_mm512_unpackhi_epi16(xb, xb64), &cb, portable);
    const __m512i r_lo = round_out_hi(combine(ya_lo, yb_lo, sub), &c.o), r_hi = round_out_hi(combine(ya_hi, yb_hi, sub), &c.o);
    /* portable: + zero point in int32, where the int16 saturations cannot move a value across
     * the clamp (|zo| <= 255); NEON: int16 wrap, + zero point wrapping (the saturation to the
     * type is within the clamp) */
    const __m512i w = portable ? _mm512_adds_epi16(_mm512_packs_epi32(r_lo, r_hi), zo)
                               : _mm512_add_epi16(_mm512_packus_epi32(_mm512_and_si512(r_lo, low16), _mm512_and_si512(r_hi, low16)), zo);
    _mm256_storeu_si256((__m256i *)(py + i), _mm512_cvtepi16_epi8(_mm512_min_epi16(_mm512_max_epi16(w, lo), hi)));
  }
  return i;
}

/* The exact kernel (above) over n elements. */
__attribute__((target("avx2,fma,avx512f,avx512bw"))) static void add_exact(size_t n, const void *a, size_t a_step,
                                                                          const void *b, void *y,
                                                                          const fx_qs8_add_params *p, int form) {
  const int e1 = -p->s1, e2 = -p->s2, eo = -p->so;
  const int in_ok = form == FX_ADD_NEON_POST || (e1 <= 20 && e2 <= 20);
  if (n < 16 || !in_ok || e1 < 0 || e2 < 0 || eo < 0 || eo > 31 || p->mo < 0) {
    fx_qs8_add_exact__avx2(n, a, a_step, b, y, p, form);
    return;
  }
  const uint8_t *pa = a, *pb = b;
  uint8_t *py = y;
  /* the halved input as `a` (the op's a - b is then b - a) */
  const int swap = a_step && half_of(p->m2, e2) && !half_of(p->m1, e1);
  const add_k k = {.a = swap ? in_of(p->z2, p->m2, e2, form) : in_of(p->z1, p->m1, e1, form),
                   .b = swap ? in_of(p->z1, p->m1, e1, form) : in_of(p->z2, p->m2, e2, form),
                   .o = out_of(p->mo, eo), .zo = _mm512_set1_epi32(p->zo),
                   .lo = _mm512_set1_epi32(p->lo), .hi = _mm512_set1_epi32(p->hi), .u8 = p->u8, .a_step = a_step != 0};
  const int sub = swap && p->sub ? 3 - p->sub : p->sub, half = swap || half_of(p->m1, e1);
  const uint8_t *qa = swap ? pb : pa, *qb = swap ? pa : pb;
  size_t i = 0;
  if (a_step && k.o.hi_form) {
    const in16_k ka = in16_of(&k.a, swap ? p->z2 : p->z1, swap ? p->m2 : p->m1);
    const in16_k kb = in16_of(&k.b, swap ? p->z1 : p->z2, swap ? p->m1 : p->m2);
#define FX_ADD_LOOP32(s)                                                                                   \
  (form == FX_ADD_PORTABLE                                                                                 \
       ? (half ? add_loop32(n, qa, qb, py, &k, &ka, &kb, s, 1, 1) : add_loop32(n, qa, qb, py, &k, &ka, &kb, s, 1, 0)) \
       : (half ? add_loop32(n, qa, qb, py, &k, &ka, &kb, s, 0, 1) : add_loop32(n, qa, qb, py, &k, &ka, &kb, s, 0, 0)))
    i = sub == 1 ? FX_ADD_LOOP32(1) : sub == 2 ? FX_ADD_LOOP32(2) : FX_ADD_LOOP32(0);
#undef FX_ADD_LOOP32
  }
  const size_t m = n - i;
  const uint8_t *ra = qa + i * a_step, *rb = qb + i;
  uint8_t *ry = py + i;
#define FX_ADD_LOOP(s) \
  (form == FX_ADD_PORTABLE ? (half ? add_loop(m, ra, rb, ry, &k, s, 1, 1) : add_loop(m, ra, rb, ry, &k, s, 1, 0)) \
                           : (half ? add_loop(m, ra, rb, ry, &k, s, 0, 1) : add_loop(m, ra, rb, ry, &k, s, 0, 0)))
  i += sub == 1 ? FX_ADD_LOOP(1) : sub == 2 ? FX_ADD_LOOP(2) : FX_ADD_LOOP(0);
#undef FX_ADD_LOOP
  if (i < n) fx_qs8_add_exact__avx2(n - i, pa + i * a_step, a_step, pb + i, py + i, p, form);
}

/* MUL: (a - z1) * (b - z2) (|product| <= 2^16) << left shift (wrapping, as stock), then
 * round_out; the NEON forms saturate (NEON_SAT) or wrap (NEON_TRUNC) to int16 first. */
OPS512 size_t mul_loop(size_t n, const uint8_t *pa, size_t a_step, const uint8_t *pb, uint8_t *py,
                       const fx_qs8_mul_params *p, const int form) {
  const int u8 = p->u8, ls = p->s > 0 ? p->s : 0;
  const out_k o = out_of(p->m, p->s > 0 ? 0 : -p->s);
  const __m512i z1 = _mm512_set1_epi32(p->z1), z2 = _mm512_set1_epi32(p->z2), zo = _mm512_set1_epi32(p->zo);
  const __m512i lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
  const __m512i lo16 = _mm512_set1_epi32(INT16_MIN), hi16 = _mm512_set1_epi32(INT16_MAX);
  const __m128i lcnt = _mm_cvtsi32_si128(ls);
  __m512i xa = _mm512_sub_epi32(_mm512_set1_epi32(u8 ? pa[0] : (int8_t)pa[0]), z1);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (a_step) xa = _mm512_sub_epi32(load16(pa + i, u8), z1);
    const __m512i xb = _mm512_sub_epi32(load16(pb + i, u8), z2);
    __m512i r = round_out(_mm512_sll_epi32(_mm512_mullo_epi32(xa, xb), lcnt), &o);
    if (form == FX_MUL_PORTABLE) {
      r = _mm512_add_epi32(r, zo);
    } else {
      if (form == FX_MUL_NEON_SAT) r = _mm512_min_epi32(_mm512_max_epi32(r, lo16), hi16);
      r = neon_out(r, zo);
    }
    store16(py + i, _mm512_min_epi32(_mm512_max_epi32(r, lo), hi));
  }
  return i;
}

/* The exact kernel (above) over n elements. */
__attribute__((target("avx2,fma,avx512f,avx512bw"))) static void mul_exact(size_t n, const void *a, size_t a_step,
                                                                          const void *b, void *y,
                                                                          const fx_qs8_mul_params *p, int form) {
  if (n < 16 || p->s < -31 || p->s > 30 || p->m < 0) {
    fx_qs8_mul_exact__avx2(n, a, a_step, b, y, p, form);
    return;
  }
  const uint8_t *pa = a, *pb = b;
  uint8_t *py = y;
  const size_t i = form == FX_MUL_PORTABLE   ? mul_loop(n, pa, a_step, pb, py, p, FX_MUL_PORTABLE)
                   : form == FX_MUL_NEON_SAT ? mul_loop(n, pa, a_step, pb, py, p, FX_MUL_NEON_SAT)
                                             : mul_loop(n, pa, a_step, pb, py, p, FX_MUL_NEON_TRUNC);
  if (i < n) fx_qs8_mul_exact__avx2(n - i, pa + i * a_step, a_step, pb + i, py + i, p, form);
}

/* ---- ADD and MUL in float, checked (float-form.h: the bound and its constants) ---- */
typedef struct {
  __m512 alpha, beta, gamma, d, neg, za, zb;
  __m512i lo, hi, order;
} fast_k;

OPS512 fast_k fast_k_of(const fx_qs8_fast *f) {
  return (fast_k){.alpha = _mm512_set1_ps(f->alpha), .beta = _mm512_set1_ps(f->beta),
                  .gamma = _mm512_set1_ps(f->gamma), .d = _mm512_set1_ps(f->d), .neg = _mm512_set1_ps(f->neg),
                  .za = _mm512_set1_ps(f->za), .zb = _mm512_set1_ps(f->zb),
                  .lo = _mm512_set1_epi8((int8_t)f->lo), .hi = _mm512_set1_epi8((int8_t)f->hi), /* (as stored) */
                  .order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)};
}

#define FX_RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* 16 results (before the clamp), rounded from t - d; lanes where t + d rounds elsewhere set in
 * *unsure. */
OPS512 __m512i fast16(const uint8_t *pa, const uint8_t *pb, const fast_k *k, const int mul, const int u8,
                      const int a_step, __mmask16 *unsure) {
  const __m512 vb = _mm512_cvtepi32_ps(load16(pb, u8));
  __m512 t;
  if (mul) {
    const __m512 xa = a_step ? _mm512_sub_ps(_mm512_cvtepi32_ps(load16(pa, u8)), k->za) : k->za;
    const __m512 prod = _mm512_mul_ps(xa, _mm512_sub_ps(vb, k->zb));
    t = _mm512_fmadd_round_ps(prod, k->alpha, k->gamma, FX_RN);
    t = _mm512_mask_sub_round_ps(t, _mm512_cmp_ps_mask(prod, _mm512_setzero_ps(), _CMP_LT_OQ), t, k->neg, FX_RN);
  } else {
    t = _mm512_fmadd_round_ps(vb, k->beta, k->gamma, FX_RN);
    if (a_step) t = _mm512_fmadd_round_ps(_mm512_cvtepi32_ps(load16(pa, u8)), k->alpha, t, FX_RN);
  }
  const __m512i r = _mm512_cvt_roundps_epi32(_mm512_sub_round_ps(t, k->d, FX_RN), FX_RN);
  *unsure = _mm512_cmpneq_epi32_mask(r, _mm512_cvt_roundps_epi32(_mm512_add_round_ps(t, k->d, FX_RN), FX_RN));
  return r;
}

/* 64 results as bytes in order, their undecided lanes set in *unsure. */
OPS512 __m512i fast64(const uint8_t *pa, const uint8_t *pb, const fast_k *k, const int mul, const int u8,
                      const int a_step, __mmask64 *unsure) {
  __mmask16 m0, m1, m2, m3;
  const __m512i r0 = fast16(pa, pb, k, mul, u8, a_step, &m0);
  const __m512i r1 = fast16(pa + 16 * a_step, pb + 16, k, mul, u8, a_step, &m1);
  const __m512i r2 = fast16(pa + 32 * a_step, pb + 32, k, mul, u8, a_step, &m2);
  const __m512i r3 = fast16(pa + 48 * a_step, pb + 48, k, mul, u8, a_step, &m3);
  *unsure = (__mmask64)m0 | (__mmask64)m1 << 16 | (__mmask64)m2 << 32 | (__mmask64)m3 << 48;
  /* |r| < 2^15: the int16 packs are exact, the byte packs saturate to the type, inside which
   * lo..hi lie; the packs interleave 4-lane groups, vpermd puts them back in order */
  const __m512i w0 = _mm512_packs_epi32(r0, r1), w1 = _mm512_packs_epi32(r2, r3);
  const __m512i v = _mm512_permutexvar_epi32(k->order, u8 ? _mm512_packus_epi16(w0, w1) : _mm512_packs_epi16(w0, w1));
  return u8 ? _mm512_min_epu8(_mm512_max_epu8(v, k->lo), k->hi) : _mm512_min_epi8(_mm512_max_epi8(v, k->lo), k->hi);
}

/* 64 elements a step, up to the end or up to the first step with an undecided lane (*hit; not
 * stored: fix_any() does it). */
OPS512 size_t fast_run(size_t n, const uint8_t *pa, const uint8_t *pb, uint8_t *py, const fast_k *k, const int mul,
                       const int u8, const int a_step, int *hit) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __mmask64 m;
    const __m512i v = fast64(pa + i * a_step, pb + i, k, mul, u8, a_step, &m);
    if (m) {
      *hit = 1;
      break;
    }
    _mm512_storeu_si512(py + i, v);
  }
  return i;
}

/* fx_qs8_fast_isa's two loops: the kernels above compiled for each op, type and broadcast. */
__attribute__((target("avx2,fma,avx512f,avx512bw"), noinline)) static size_t run_any(
    size_t n, const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y, const void *k, const fx_qs8_exact_op *op,
    int *hit) {
#define FX_RUN(mul) \
  (fx_qs8_exact_u8(op) ? (a_step ? fast_run(n, a, b, y, k, mul, 1, 1, hit) : fast_run(n, a, b, y, k, mul, 1, 0, hit)) \
                       : (a_step ? fast_run(n, a, b, y, k, mul, 0, 1, hit) : fast_run(n, a, b, y, k, mul, 0, 0, hit)))
  return op->add ? FX_RUN(0) : FX_RUN(1);
#undef FX_RUN
}

/* One step with its undecided lanes by the scalar definition, every input read before the
 * output is written (y may be a or b). */
__attribute__((target("avx2,fma,avx512f,avx512bw"), noinline)) static void fix_any(
    const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y, const void *k, const fx_qs8_exact_op *op) {
  const int u8 = fx_qs8_exact_u8(op);
  __mmask64 m;
  __m512i v;
#define FX_FAST(mul) \
  (u8 ? (a_step ? fast64(a, b, k, mul, 1, 1, &m) : fast64(a, b, k, mul, 1, 0, &m)) \
      : (a_step ? fast64(a, b, k, mul, 0, 1, &m) : fast64(a, b, k, mul, 0, 0, &m)))
  v = op->add ? FX_FAST(0) : FX_FAST(1);
#undef FX_FAST
  uint8_t out[64];
  _mm512_storeu_si512(out, v);
  for (; m; m &= m - 1) {
    const size_t j = (size_t)__builtin_ctzll(m);
    out[j] = fx_qs8_exact_one(op, a[j * a_step], b[j]);
  }
  _mm512_storeu_si512(y, _mm512_loadu_si512(out));
}

static const fx_qs8_fast_isa k_fast = {run_any, fix_any, 64};

/* The float form's prefix of the op (the count done). */
__attribute__((target("avx2,fma,avx512f,avx512bw"))) static size_t fast_prefix(
    size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_exact_op *op) {
  fx_qs8_fast f;
  if (!fx_qs8_fast_of(op, n, a, a_step, &f)) return 0;
  const fast_k k = fast_k_of(&f);
  return fx_qs8_fast_drive(n, a, a_step, b, y, &k, op, &k_fast);
}

__attribute__((target("avx2,fma,avx512f,avx512bw"))) void fx_qs8_add__avx512bw(
    size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_add_params *p, int form) {
  const fx_qs8_exact_op op = {.add = p, .form = form};
  const size_t i = fast_prefix(n, a, a_step, b, y, &op);
  if (i < n) add_exact(n - i, (const uint8_t *)a + i * a_step, a_step, (const uint8_t *)b + i, (uint8_t *)y + i, p, form);
}

__attribute__((target("avx2,fma,avx512f,avx512bw"))) void fx_qs8_mul__avx512bw(
    size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_mul_params *p, int form) {
  const fx_qs8_exact_op op = {.mul = p, .form = form};
  const size_t i = fast_prefix(n, a, a_step, b, y, &op);
  if (i < n) mul_exact(n - i, (const uint8_t *)a + i * a_step, a_step, (const uint8_t *)b + i, (uint8_t *)y + i, p, form);
}

/* ---- QUANTIZE, 16 values a step: qs8-ops-avx2.c's quantize8_fma on zmm (mask registers for its
 * compares and the sign), the float product for FLEX_QUANT_RECIP_EVEN; a step with a lane the
 * exact FMA form does not cover (|x| / s >= 2^21, NaN) goes to the AVX2 kernel. ---- */
OPS512 __m512i quantize16_fma(__m512 x, __m512 a, __m512 c, __m512 s) {
  const __m512 half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
  const __m512 m = _mm512_roundscale_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_fmsub_ps(_mm512_add_ps(m, half), s, a), zero, _CMP_LE_OQ);
  const __mmask16 down = _mm512_cmp_ps_mask(_mm512_fmsub_ps(_mm512_sub_ps(m, half), s, a), zero, _CMP_GT_OQ);
  const __m512i one = _mm512_set1_epi32(1);
  __m512i q = _mm512_cvtps_epi32(m);
  q = _mm512_mask_sub_epi32(_mm512_mask_add_epi32(q, up, q, one), down, q, one);
  const __mmask16 neg = _mm512_cmplt_epi32_mask(_mm512_castps_si512(x), _mm512_setzero_si512());
  return _mm512_mask_sub_epi32(q, neg, _mm512_setzero_si512(), q);
}

__attribute__((target("avx2,fma,avx512f,avx512bw"))) void fx_qs8_quantize__avx512bw(size_t n, const float *x, void *y,
                                                                                   const fx_qs8_quant_params *p,
                                                                                   int form) {
  const float sf = (float)p->scale;
  const int fma_ok = sf > 0.0f && (double)sf == p->scale && isfinite(p->inv_scale) && p->inv_scale >= FLT_MIN;
  const __m512 inv = _mm512_set1_ps(p->inv_scale), s = _mm512_set1_ps(sf), lim = _mm512_set1_ps(2097152.0f);
  const __m512i zp = _mm512_set1_epi32(p->zp), lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
  uint8_t *yb = (uint8_t *)y;
  size_t i = 0;
  if (form != FLEX_QUANT_AWAY || fma_ok)
    for (; i + 16 <= n; i += 16) {
      const __m512 v = _mm512_loadu_ps(x + i);
      __m512i q;
      if (form == FLEX_QUANT_AWAY) {
        const __m512 a = _mm512_abs_ps(v), c = _mm512_mul_ps(a, inv);
        if (_mm512_cmp_ps_mask(c, lim, _CMP_LT_OQ) != 0xffff) {
          fx_qs8_quantize__avx2(16, x + i, yb + i, p, form);
          continue;
        }
        q = quantize16_fma(v, a, c, s);
      } else {
        q = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));
      }
      /* within the type after the clamp: the low byte is the stored value either way */
      _mm_storeu_si128((__m128i *)(yb + i), _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(q, zp), lo), hi)));
    }
  if (i < n) fx_qs8_quantize__avx2(n - i, x + i, yb + i, p, form);
}
#endif
