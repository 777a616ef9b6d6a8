/* AVX2 microkernels: 8 elements per step in int32 lanes, computing ref.h's definitions exactly
 * (64-bit products for the doubling high multiply, the overflow-free rounding shift); the last
 * n % 8 elements (and a whole call of fewer) go through the scalar kernel. ADD and MUL take runs
 * of 64 and more elements in float first, exact where the error bound decides (float-form.h). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <float.h>
#include <math.h>
#include "float-form.h"
#include "qs8-ops.h"

#define OPS_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

OPS_AVX2 __m256i load8(const void *p, int u8) {
  const __m128i v = _mm_loadl_epi64((const __m128i *)p);
  return u8 ? _mm256_cvtepu8_epi32(v) : _mm256_cvtepi8_epi32(v);
}

/* 8 int32 lanes already within the type's range, stored as bytes. */
OPS_AVX2 void store8(void *p, __m256i v, int u8) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64((__m128i *)p, u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w));
}

/* fxq_srdhm for m >= 0 (never both INT32_MIN): (x*m + 2^30) >> 31 per lane. */
OPS_AVX2 __m256i srdhm(__m256i x, __m256i m) {
  const __m256i half = _mm256_set1_epi64x((int64_t)1 << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), half);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), half);
  /* bits 31..62 of each sum: even lanes shifted down, odd lanes up into the high half */
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
}

/* fxq_rdbpot: x / 2^e, ties away from zero (e in [0, 31]), its constants set up by the caller:
 * mask 2^e - 1, half = mask >> 1, count e. */
OPS_AVX2 __m256i rdbpot_k(__m256i x, __m256i mask, __m256i half, __m128i e) {
  const __m256i thr = _mm256_sub_epi32(half, _mm256_srai_epi32(x, 31));
  const __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(x, mask), thr);
  return _mm256_sub_epi32(_mm256_sra_epi32(x, e), up);
}

/* The NEON output narrowing: int16 wrap, + zero point in int16 (wrapping), saturated to the
 * type: sign-extend the low 16 bits twice. */
OPS_AVX2 __m256i wrap16(__m256i x) { return _mm256_srai_epi32(_mm256_slli_epi32(x, 16), 16); }
OPS_AVX2 __m256i neon_out(__m256i r, __m256i zo, int u8) {
  r = wrap16(_mm256_add_epi32(wrap16(r), zo));
  const __m256i lo = _mm256_set1_epi32(u8 ? 0 : -128), hi = _mm256_set1_epi32(u8 ? 255 : 127);
  return _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
}

/* 256-entry byte table by vpshufb, which looks up 16 entries and gives 0 where the index byte
 * has bit 7 set: 16 lookups with the index stepped down by 16 each time (wrapping for steps
 * 1..8, saturating after), XORed together. For x = 16h + l, step k reads row v[k] at l exactly
 * when its index byte has bit 7 clear, which is k in 0..h for h < 8 and k in h-7..h for h >= 8;
 * so v[0] = t[0], v[k] = t[k] ^ t[k-1] ^ (k >= 8 ? v[k-8] : 0) makes the XOR telescope to t[h].
 * (XNNPACK's x8-lut kernels use this scheme.) */
__attribute__((target("avx2,fma"))) void fx_qs8_lut__avx2(size_t n, const uint8_t *x,
                                                         const uint8_t *t, uint8_t *y) {
  if (n < 128) { /* building the rows costs more than it saves */
    fx_qs8_lut__scalar(n, x, t, y);
    return;
  }
  __m128i r[16];
  r[0] = _mm_loadu_si128((const __m128i *)t);
  for (int k = 1; k < 16; k++) {
    r[k] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(t + 16 * k)),
                         _mm_loadu_si128((const __m128i *)(t + 16 * (k - 1))));
    if (k >= 8) r[k] = _mm_xor_si128(r[k], r[k - 8]);
  }
  __m256i v[16];
  for (int k = 0; k < 16; k++) v[k] = _mm256_broadcastsi128_si256(r[k]);
  const __m256i step = _mm256_set1_epi8(16);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i vx = _mm256_loadu_si256((const __m256i *)(x + i));
    __m256i vy = _mm256_shuffle_epi8(v[0], vx);
    for (int k = 1; k <= 8; k++) {
      vx = _mm256_sub_epi8(vx, step);
      vy = _mm256_xor_si256(vy, _mm256_shuffle_epi8(v[k], vx));
    }
    for (int k = 9; k < 16; k++) {
      vx = _mm256_subs_epi8(vx, step);
      vy = _mm256_xor_si256(vy, _mm256_shuffle_epi8(v[k], vx));
    }
    _mm256_storeu_si256((__m256i *)(y + i), vy);
  }
  if (i < n) fx_qs8_lut__scalar(n - i, x + i, t, y + i);
}

/* srdhm(x << 20, m) for |x| < 2^9 and m >= 0 without 64-bit products: it is
 * floor((x*m + 2^10) / 2^11) (the 2^20 cancels), and with m = mh * 2^11 + ml that is
 * x*mh + floor((x*ml + 2^10) / 2^11), where |x*ml| < 2^20 and |x*mh| < 2^29: two vpmulld. */
typedef struct { __m256i mh, ml; } in_scale;
OPS_AVX2 in_scale in_scale_of(int32_t m) {
  return (in_scale){_mm256_set1_epi32(m >> 11), _mm256_set1_epi32(m & 2047)};
}
OPS_AVX2 __m256i srdhm_shl20(__m256i x, in_scale m) {
  const __m256i low = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, m.ml), _mm256_set1_epi32(1024)), 11);
  return _mm256_add_epi32(_mm256_mullo_epi32(x, m.mh), low);
}

/* One input's rescale, its constants set up once per call (x = input - zero point: |x| < 2^9,
 * so the left shift by 20 is exact). */
typedef struct {
  __m256i z, m, k, neg, mask, half;
  in_scale ms;
  __m128i e, pre_l, pre_r;
} add_in;

/* The rescale's kinds: the three forms, and PORTABLE's single rounding (below) when e <= 20. */
enum { IN_ONE_ROUNDING, IN_PORTABLE, IN_NEON_PRE, IN_NEON_POST };

OPS_AVX2 add_in add_in_of(int32_t z, int32_t m, int32_t s) {
  const int e = -s, pre = 20 + s; /* s <= 0 */
  add_in c = {.z = _mm256_set1_epi32(z), .m = _mm256_set1_epi32(m), .ms = in_scale_of(m)};
  c.k = _mm256_set1_epi32(e >= 1 && e <= 20 ? (1 << 10) + (1 << (e + 10)) : 1 << 10);
  c.neg = _mm256_set1_epi32(e >= 1 ? -2048 : 0);
  c.mask = _mm256_set1_epi32(e >= 1 && e <= 31 ? (int32_t)(((uint32_t)1 << e) - 1u) : 0);
  c.half = _mm256_srli_epi32(c.mask, 1);
  c.e = _mm_cvtsi32_si128(e > 31 ? 31 : e);
  c.pre_l = _mm_cvtsi32_si128(pre > 0 ? pre : 0);
  c.pre_r = _mm_cvtsi32_si128(pre >= 0 ? 0 : -pre > 31 ? 31 : -pre);
  return c;
}

/* rdbpot (ties away from zero) with the call's mask, half and count. */
OPS_AVX2 __m256i rdbpot_c(__m256i x, const add_in *c) { return rdbpot_k(x, c->mask, c->half, c->e); }

/* PORTABLE's rdbpot(srdhm(x << 20, m), e) as one rounding. srdhm(x << 20, m) = v =
 * floor((x*m + 2^10) / 2^11) (srdhm_shl20), and rdbpot(v, e) = floor((v + 2^(e-1) - [v < 0]) /
 * 2^e); nested floors of whole numbers merge: floor((x*m + 2^10 + (2^(e-1) - [v < 0]) * 2^11)
 * / 2^(11+e)), with v < 0 exactly when x < 0 (m is 0 or >= 2^30). Split as srdhm_shl20:
 * (x*mh + ((x*ml + 2^10 + 2^(e+10) - [x < 0] * 2^11) >> 11)) >> e, every term in int32 for
 * e <= 20. e = 0: v itself. */
OPS_AVX2 __m256i rescale_one_rounding(__m256i x, const add_in *c) {
  const __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, c->ms.ml), c->k),
                                     _mm256_and_si256(_mm256_srai_epi32(x, 31), c->neg));
  return _mm256_sra_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, c->ms.mh), _mm256_srai_epi32(t, 11)), c->e);
}

OPS_AVX2 __m256i rescale(__m256i x, const add_in *c, const int kind) {
  if (kind == IN_ONE_ROUNDING) return rescale_one_rounding(x, c);
  if (kind == IN_PORTABLE) return rdbpot_c(srdhm_shl20(x, c->ms), c);
  if (kind == IN_NEON_PRE) return srdhm(_mm256_sra_epi32(_mm256_sll_epi32(x, c->pre_l), c->pre_r), c->m);
  return _mm256_sra_epi32(srdhm_shl20(x, c->ms), c->e); /* NEON_POST: vshl by s <= 0 */
}

typedef struct {
  add_in a, b, o;  /* o: the output's srdhm multiplier and rdbpot */
  __m256i zo, lo, hi, sa, sb;
  int u8, a_step;
} add_k;

/* The element-wise loop of one kind (a constant: each call below is its own loop). sub: the
 * inputs' signs sa, sb (+1 or -1, vpsignd) instead of a plain sum; wrapping as stock's uint32. */
OPS_AVX2 size_t add_loop(size_t n, const uint8_t *pa, const uint8_t *pb, uint8_t *py, const add_k *k,
                         const int kind, const int sub, const int portable_out) {
  const add_k c = *k;
  __m256i ya = _mm256_setzero_si256();
  if (!c.a_step) {
    const int32_t a0 = c.u8 ? pa[0] : (int8_t)pa[0];
    ya = rescale(_mm256_sub_epi32(_mm256_set1_epi32(a0), c.a.z), &c.a, kind);
    if (sub) ya = _mm256_sign_epi32(ya, c.sa);
  }
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (c.a_step) {
      ya = rescale(_mm256_sub_epi32(load8(pa + i, c.u8), c.a.z), &c.a, kind);
      if (sub) ya = _mm256_sign_epi32(ya, c.sa);
    }
    __m256i yb = rescale(_mm256_sub_epi32(load8(pb + i, c.u8), c.b.z), &c.b, kind);
    if (sub) yb = _mm256_sign_epi32(yb, c.sb);
    __m256i r = rdbpot_c(srdhm(_mm256_add_epi32(ya, yb), c.o.m), &c.o);
    r = portable_out ? _mm256_add_epi32(r, c.zo) : neon_out(r, c.zo, c.u8);
    store8(py + i, _mm256_min_epi32(_mm256_max_epi32(r, c.lo), c.hi), c.u8);
  }
  return i;
}

/* The exact kernels over n elements (also the AVX-512 kernels' exact fallback: qs8-ops.h). */
__attribute__((target("avx2,fma"))) void fx_qs8_add_exact__avx2(size_t n, const void *a, size_t a_step, const void *b,
                                                               void *y, const fx_qs8_add_params *p, int form) {
  const add_k k = {.a = add_in_of(p->z1, p->m1, p->s1), .b = add_in_of(p->z2, p->m2, p->s2),
                   .o = add_in_of(0, p->mo, p->so), .zo = _mm256_set1_epi32(p->zo),
                   .lo = _mm256_set1_epi32(p->lo), .hi = _mm256_set1_epi32(p->hi),
                   .sa = _mm256_set1_epi32(p->sub == 2 ? -1 : 1), .sb = _mm256_set1_epi32(p->sub == 1 ? -1 : 1),
                   .u8 = p->u8, .a_step = a_step != 0};
  const uint8_t *pa = a, *pb = b;
  uint8_t *py = y;
  const int sub = p->sub != 0;
  size_t i;
  if (form == FX_ADD_PORTABLE && -p->s1 <= 20 && -p->s2 <= 20)
    i = sub ? add_loop(n, pa, pb, py, &k, IN_ONE_ROUNDING, 1, 1) : add_loop(n, pa, pb, py, &k, IN_ONE_ROUNDING, 0, 1);
  else if (form == FX_ADD_PORTABLE)
    i = add_loop(n, pa, pb, py, &k, IN_PORTABLE, sub, 1);
  else if (form == FX_ADD_NEON_PRE)
    i = add_loop(n, pa, pb, py, &k, IN_NEON_PRE, sub, 0);
  else
    i = add_loop(n, pa, pb, py, &k, IN_NEON_POST, sub, 0);
  if (i < n) fx_qs8_add__scalar(n - i, pa + i * a_step, a_step, pb + i, py + i, p, form);
}

__attribute__((target("avx2,fma"))) void fx_qs8_mul_exact__avx2(size_t n, const void *a, size_t a_step, const void *b,
                                                               void *y, const fx_qs8_mul_params *p, int form) {
  const int u8 = p->u8;
  const int ls = p->s > 0 ? p->s : 0, rs = p->s > 0 ? 0 : -p->s;
  const __m256i m = _mm256_set1_epi32(p->m), zo = _mm256_set1_epi32(p->zo);
  const __m256i z1 = _mm256_set1_epi32(p->z1), z2 = _mm256_set1_epi32(p->z2);
  const __m256i lo = _mm256_set1_epi32(p->lo), hi = _mm256_set1_epi32(p->hi);
  const __m256i lo16 = _mm256_set1_epi32(INT16_MIN), hi16 = _mm256_set1_epi32(INT16_MAX);
  const __m256i mask = _mm256_set1_epi32((int32_t)(((uint32_t)1 << rs) - 1u)), half = _mm256_srli_epi32(mask, 1);
  const __m128i lcnt = _mm_cvtsi32_si128(ls), rcnt = _mm_cvtsi32_si128(rs);
  const uint8_t *pa = a, *pb = b;
  uint8_t *py = y;
  __m256i xa = _mm256_setzero_si256();
  if (a_step == 0) xa = _mm256_set1_epi32((u8 ? pa[0] : (int8_t)pa[0]) - p->z1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (a_step) xa = _mm256_sub_epi32(load8(pa + i, u8), z1);
    const __m256i xb = _mm256_sub_epi32(load8(pb + i, u8), z2);
    const __m256i prod = _mm256_sll_epi32(_mm256_mullo_epi32(xa, xb), lcnt);
    __m256i r = rdbpot_k(srdhm(prod, m), mask, half, rcnt);
    if (form == FX_MUL_PORTABLE) {
      r = _mm256_add_epi32(r, zo);
    } else {
      if (form == FX_MUL_NEON_SAT) r = _mm256_min_epi32(_mm256_max_epi32(r, lo16), hi16);
      r = neon_out(r, zo, u8);
    }
    store8(py + i, _mm256_min_epi32(_mm256_max_epi32(r, lo), hi), u8);
  }
  if (i < n) fx_qs8_mul__scalar(n - i, pa + i * a_step, a_step, pb + i, py + i, p, form);
}

/* ---- ADD and MUL in float, checked (float-form.h: the bound and its constants), 32 elements a
 * step; qs8-ops-avx512bw.c has the same on zmm ---- */
typedef struct {
  __m256 alpha, beta, gamma, d, neg, za, zb;
  __m256i lo, hi, order;
} fast_k;

OPS_AVX2 fast_k fast_k_of(const fx_qs8_fast *f) {
  return (fast_k){.alpha = _mm256_set1_ps(f->alpha), .beta = _mm256_set1_ps(f->beta),
                  .gamma = _mm256_set1_ps(f->gamma), .d = _mm256_set1_ps(f->d), .neg = _mm256_set1_ps(f->neg),
                  .za = _mm256_set1_ps(f->za), .zb = _mm256_set1_ps(f->zb),
                  .lo = _mm256_set1_epi8((int8_t)f->lo), .hi = _mm256_set1_epi8((int8_t)f->hi), /* (as stored) */
                  .order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)};
}

/* 8 results (before the clamp), rounded from t - d (MXCSR: to nearest); lanes where t + d
 * rounds elsewhere nonzero in *unsure. */
OPS_AVX2 __m256i fast8(const uint8_t *pa, const uint8_t *pb, const fast_k *k, const int mul, const int u8,
                       const int a_step, __m256i *unsure) {
  const __m256 vb = _mm256_cvtepi32_ps(load8(pb, u8));
  __m256 t;
  if (mul) {
    const __m256 xa = a_step ? _mm256_sub_ps(_mm256_cvtepi32_ps(load8(pa, u8)), k->za) : k->za;
    const __m256 prod = _mm256_mul_ps(xa, _mm256_sub_ps(vb, k->zb));
    t = _mm256_fmadd_ps(prod, k->alpha, k->gamma);
    t = _mm256_sub_ps(t, _mm256_and_ps(_mm256_cmp_ps(prod, _mm256_setzero_ps(), _CMP_LT_OQ), k->neg));
  } else {
    t = _mm256_fmadd_ps(vb, k->beta, k->gamma);
    if (a_step) t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(load8(pa, u8)), k->alpha, t);
  }
  const __m256i r = _mm256_cvtps_epi32(_mm256_sub_ps(t, k->d));
  *unsure = _mm256_xor_si256(r, _mm256_cvtps_epi32(_mm256_add_ps(t, k->d)));
  return r;
}

/* 32 results as bytes in order; *unsure nonzero in the dwords of undecided lanes (dword i of
 * unsure[q] for element 8q + i). */
OPS_AVX2 __m256i fast32(const uint8_t *pa, const uint8_t *pb, const fast_k *k, const int mul, const int u8,
                        const int a_step, __m256i unsure[4]) {
  const __m256i r0 = fast8(pa, pb, k, mul, u8, a_step, &unsure[0]);
  const __m256i r1 = fast8(pa + 8 * a_step, pb + 8, k, mul, u8, a_step, &unsure[1]);
  const __m256i r2 = fast8(pa + 16 * a_step, pb + 16, k, mul, u8, a_step, &unsure[2]);
  const __m256i r3 = fast8(pa + 24 * a_step, pb + 24, k, mul, u8, a_step, &unsure[3]);
  /* as the AVX-512 kernel's: exact int16 packs, byte packs saturating to the type, vpermd */
  const __m256i w0 = _mm256_packs_epi32(r0, r1), w1 = _mm256_packs_epi32(r2, r3);
  const __m256i v = _mm256_permutevar8x32_epi32(u8 ? _mm256_packus_epi16(w0, w1) : _mm256_packs_epi16(w0, w1), k->order);
  return u8 ? _mm256_min_epu8(_mm256_max_epu8(v, k->lo), k->hi) : _mm256_min_epi8(_mm256_max_epi8(v, k->lo), k->hi);
}

/* 32 elements a step, up to the end or up to the first step with an undecided lane (*hit; not
 * stored: fix_any() does it). */
OPS_AVX2 size_t fast_run(size_t n, const uint8_t *pa, const uint8_t *pb, uint8_t *py, const fast_k *k, const int mul,
                         const int u8, const int a_step, int *hit) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i m[4];
    const __m256i v = fast32(pa + i * a_step, pb + i, k, mul, u8, a_step, m);
    const __m256i any = _mm256_or_si256(_mm256_or_si256(m[0], m[1]), _mm256_or_si256(m[2], m[3]));
    if (!_mm256_testz_si256(any, any)) {
      *hit = 1;
      break;
    }
    _mm256_storeu_si256((__m256i *)(py + i), v);
  }
  return i;
}

/* fx_qs8_fast_isa's two loops: the kernels above compiled for each op, type and broadcast. */
__attribute__((target("avx2,fma"), noinline)) static size_t run_any(
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
__attribute__((target("avx2,fma"), noinline)) static void fix_any(
    const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y, const void *k, const fx_qs8_exact_op *op) {
  const int u8 = fx_qs8_exact_u8(op);
  __m256i x[4], v;
#define FX_FAST(mul) \
  (u8 ? (a_step ? fast32(a, b, k, mul, 1, 1, x) : fast32(a, b, k, mul, 1, 0, x)) \
      : (a_step ? fast32(a, b, k, mul, 0, 1, x) : fast32(a, b, k, mul, 0, 0, x)))
  v = op->add ? FX_FAST(0) : FX_FAST(1);
#undef FX_FAST
  uint8_t out[32];
  _mm256_storeu_si256((__m256i *)out, v);
  for (int q = 0; q < 4; q++) {
    const __m256i same = _mm256_cmpeq_epi32(x[q], _mm256_setzero_si256());
    for (unsigned m = ~(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(same)) & 0xffu; m; m &= m - 1) {
      const size_t j = 8 * (size_t)q + (size_t)__builtin_ctz(m);
      out[j] = fx_qs8_exact_one(op, a[j * a_step], b[j]);
    }
  }
  _mm256_storeu_si256((__m256i *)y, _mm256_loadu_si256((const __m256i *)out));
}

static const fx_qs8_fast_isa k_fast = {run_any, fix_any, 32};

/* The float form's prefix of the op (the count done). */
__attribute__((target("avx2,fma"))) static size_t fast_prefix(
    size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_exact_op *op) {
  fx_qs8_fast f;
  if (!fx_qs8_fast_of(op, n, a, a_step, &f)) return 0;
  const fast_k k = fast_k_of(&f);
  return fx_qs8_fast_drive(n, a, a_step, b, y, &k, op, &k_fast);
}

__attribute__((target("avx2,fma"))) void fx_qs8_add__avx2(
    size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_add_params *p, int form) {
  const fx_qs8_exact_op op = {.add = p, .form = form};
  const size_t i = fast_prefix(n, a, a_step, b, y, &op);
  if (i < n) fx_qs8_add_exact__avx2(n - i, (const uint8_t *)a + i * a_step, a_step, (const uint8_t *)b + i, (uint8_t *)y + i, p, form);
}

__attribute__((target("avx2,fma"))) void fx_qs8_mul__avx2(
    size_t n, const void *a, size_t a_step, const void *b, void *y, const fx_qs8_mul_params *p, int form) {
  const fx_qs8_exact_op op = {.mul = p, .form = form};
  const size_t i = fast_prefix(n, a, a_step, b, y, &op);
  if (i < n) fx_qs8_mul_exact__avx2(n - i, (const uint8_t *)a + i * a_step, a_step, (const uint8_t *)b + i, (uint8_t *)y + i, p, form);
}

/* Columns in blocks of 32 (four int32 accumulators in registers across the k rows). */
__attribute__((target("avx2,fma"))) void fx_qs8_sum_rows__avx2(size_t c, size_t k, const void *x,
                                                              size_t stride, int u8,
                                                              int32_t *acc) {
  const uint8_t *px = x;
  size_t j = 0;
  for (; j + 32 <= c; j += 32) {
    __m256i s0 = _mm256_loadu_si256((const __m256i *)(acc + j));
    __m256i s1 = _mm256_loadu_si256((const __m256i *)(acc + j + 8));
    __m256i s2 = _mm256_loadu_si256((const __m256i *)(acc + j + 16));
    __m256i s3 = _mm256_loadu_si256((const __m256i *)(acc + j + 24));
    for (size_t i = 0; i < k; i++) {
      const uint8_t *row = px + i * stride + j;
      s0 = _mm256_add_epi32(s0, load8(row, u8));
      s1 = _mm256_add_epi32(s1, load8(row + 8, u8));
      s2 = _mm256_add_epi32(s2, load8(row + 16, u8));
      s3 = _mm256_add_epi32(s3, load8(row + 24, u8));
    }
    _mm256_storeu_si256((__m256i *)(acc + j), s0);
    _mm256_storeu_si256((__m256i *)(acc + j + 8), s1);
    _mm256_storeu_si256((__m256i *)(acc + j + 16), s2);
    _mm256_storeu_si256((__m256i *)(acc + j + 24), s3);
  }
  for (; j + 8 <= c; j += 8) {
    __m256i s = _mm256_loadu_si256((const __m256i *)(acc + j));
    for (size_t i = 0; i < k; i++) s = _mm256_add_epi32(s, load8(px + i * stride + j, u8));
    _mm256_storeu_si256((__m256i *)(acc + j), s);
  }
  if (j < c) fx_qs8_sum_rows__scalar(c - j, k, px + j, stride, u8, acc + j);
}
/* float -> int QUANTIZE, 8 values a step. FLEX_QUANT_AWAY: quantize8_fma (below) where it is
 * exact, else the quotient in double (vdivpd is IEEE division, as the scalar one), rounded half
 * away from zero as trunc(q) + sign(q) where |q - trunc(q)| >= 0.5 (that difference is exact),
 * in twice the time; FLEX_QUANT_RECIP_EVEN: the float product converted
 * under the default rounding mode (nearest even, as rintf). x86's conversions give INT32_MIN for
 * NaN and out-of-range values, the scalar reference's rule. */
OPS_AVX2 __m128i quantize4_divide(__m128 x, __m256d scale) {
  const __m256d q = _mm256_div_pd(_mm256_cvtps_pd(x), scale);
  const __m256d t = _mm256_round_pd(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256d sign = _mm256_set1_pd(-0.0), one = _mm256_set1_pd(1.0);
  const __m256d tie = _mm256_cmp_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(q, t)), _mm256_set1_pd(0.5), _CMP_GE_OQ);
  const __m256d step = _mm256_and_pd(tie, _mm256_or_pd(_mm256_and_pd(q, sign), one));
  return _mm256_cvttpd_epi32(_mm256_add_pd(t, step));
}

/* FLEX_QUANT_AWAY without the division, for a float scale s > 0, on magnitudes: the answer is
 * sign(x) * floor(|x| / s + 1/2). m = |x| * (1/s) rounded to nearest is that or one step off,
 * and the signs of (m + 1/2) * s - |x| and (m - 1/2) * s - |x|, which one FMA rounding keeps,
 * say which (a zero is an exact tie, which rounds up). Exact where m +- 1/2 is a float: the
 * caller keeps |x| / s < 2^21 (NaN and the rest take quantize4_divide). vpsignd puts the sign
 * back (x's bits as int32 have x's sign; +0 gives 0, as m is). */
OPS_AVX2 __m256i quantize8_fma(__m256 x, __m256 a, __m256 c, __m256 s) {
  const __m256 half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps();
  const __m256 m = _mm256_round_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(_mm256_fmsub_ps(_mm256_add_ps(m, half), s, a), zero, _CMP_LE_OQ));
  const __m256i down = _mm256_castps_si256(_mm256_cmp_ps(_mm256_fmsub_ps(_mm256_sub_ps(m, half), s, a), zero, _CMP_GT_OQ));
  const __m256i q = _mm256_add_epi32(_mm256_sub_epi32(_mm256_cvtps_epi32(m), up), down);
  return _mm256_sign_epi32(q, _mm256_castps_si256(x));
}

__attribute__((target("avx2,fma"))) void fx_qs8_quantize__avx2(size_t n, const float *x, void *y,
                                                               const fx_qs8_quant_params *p, int form) {
  const __m256d scale = _mm256_set1_pd(p->scale);
  const __m256 inv = _mm256_set1_ps(p->inv_scale);
  const float sf = (float)p->scale;
  const int fma_ok = sf > 0.0f && (double)sf == p->scale && isfinite(p->inv_scale) && p->inv_scale >= FLT_MIN;
  const __m256 s = _mm256_set1_ps(sf), lim = _mm256_set1_ps(2097152.0f), abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i zp = _mm256_set1_epi32(p->zp), lo = _mm256_set1_epi32(p->lo), hi = _mm256_set1_epi32(p->hi);
  uint8_t *yb = (uint8_t *)y;
  const int u8 = p->u8; /* a local: stores through yb may alias *p */
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m256i q;
    if (form == FLEX_QUANT_AWAY) {
      const __m256 a = _mm256_and_ps(v, abs), c = _mm256_mul_ps(a, inv);
      if (fma_ok && _mm256_movemask_ps(_mm256_cmp_ps(c, lim, _CMP_LT_OQ)) == 0xff)
        q = quantize8_fma(v, a, c, s);
      else
        q = _mm256_setr_m128i(quantize4_divide(_mm256_castps256_ps128(v), scale),
                              quantize4_divide(_mm256_extractf128_ps(v, 1), scale));
    } else {
      q = _mm256_cvtps_epi32(_mm256_mul_ps(v, inv));
    }
    q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, zp), lo), hi);
    store8(yb + i, q, u8);
  }
  if (i < n) fx_qs8_quantize__scalar(n - i, x + i, yb + i, p, form);
}
#endif
