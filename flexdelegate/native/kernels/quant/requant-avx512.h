/* requant-avx2.h's fast form on 16 lanes in one zmm, from the two 8-lane halves' constants
 * (so there is still one place that computes them), then vpmovsdb: half the instructions of
 * two ymm output stages and their packs. The products' high dwords come together in one
 * vpermt2d. Only for kernels whose ISA has AVX512F/BW/VL; valid when both halves are in the
 * fast form (`on`).
 *
 * No flag is tested per output vector: a flag reloaded from the stack for every vector (GCC
 * keeps few in registers in a kernel's output stage) made the speed hang on where the stack
 * slots fell: the same source ran an int8 1x1 64->256 @56 layer in 174 or 280 us from one build
 * to the next. A vector takes every step, with constants that make the unused ones no-ops
 * (nudge 0 where ties do not go away, zero point 0 where the nudge carries it), or, in the lean
 * form (`lean`, a constant the caller's loop is compiled for: FX_RQ16_LEAN), only the steps of
 * the usual stage: no tie away from zero, the zero point in the nudge, no clamp above (vpmovsdb
 * saturates there). FX_RQ16_AWAY_LEAN (lean 2) is the lean form with ties away from zero (the
 * portable kernels' depthwise rounding, tflite-runtime's). */
#ifndef FLEX_QUANT_REQUANT_AVX512_H
#define FLEX_QUANT_REQUANT_AVX512_H
#define FX_RQ16_AWAY_LEAN 2
#include "requant-avx2.h"

#define FX_REQUANT_AVX512 \
  __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw"), always_inline)) static inline

typedef struct {
  __m512i m, m_odd, rnd_e, rnd_o, neg_e, neg_o, sh32, zp, lo, hi;
  __m512i high; /* vpermt2d indices of the products' high dwords, lanes in order */
  int on;       /* both halves in the fast form */
  int lean;     /* the lean form applies: 1, or FX_RQ16_AWAY_LEAN with ties away; else 0 */
} fx_rq16_avx512;

/* Fills *q in place (fx_rq8_init_avx2 says why). */
#define FX_RQ16_JOIN(f) _mm512_inserti64x4(_mm512_castsi256_si512(r0->f), r1->f, 1)
FX_REQUANT_AVX512 void fx_rq16_init_avx512(fx_rq16_avx512 *q, const fx_rq8_avx2 *r0, const fx_rq8_avx2 *r1) {
  if (!(r0->fast && r1->fast)) {
    *q = (fx_rq16_avx512){0};
    return;
  }
  q->on = 1;
  q->m = FX_RQ16_JOIN(m), q->m_odd = FX_RQ16_JOIN(m_odd), q->rnd_e = FX_RQ16_JOIN(rnd_e);
  q->rnd_o = FX_RQ16_JOIN(rnd_o), q->sh32 = FX_RQ16_JOIN(sh32);
  /* 2^31 in the lanes whose ties go away, else 0 (the halves keep it for a single rounding's
   * lanes too, which take it only under fast_away) */
  const int away = r0->fast_away || r1->fast_away;
  q->neg_e = away ? FX_RQ16_JOIN(neg_e) : _mm512_setzero_si512();
  q->neg_o = away ? FX_RQ16_JOIN(neg_o) : _mm512_setzero_si512();
  q->zp = FX_RQ16_JOIN(zp), q->lo = FX_RQ16_JOIN(lo), q->hi = FX_RQ16_JOIN(hi);
  q->high = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  /* floor(S / 2^t) + zp = floor((S + zp * 2^t) / 2^t), t = 32 + sh32: the zero point joins the
   * nudge when the high dword cannot overflow: |S| / 2^32 < 2^30 + 1 and |zp| * 2^sh32 <= 2^29
   * (|zp| <= 256, sh32 <= 21); the 64-bit sum stays below 2^62 + 2^54 + 2^62. */
  const __m512i zp = q->zp;
  const int add_zp = _mm512_cmpgt_epi32_mask(q->sh32, _mm512_set1_epi32(21)) != 0 ||
                     _mm512_cmpgt_epi32_mask(_mm512_abs_epi32(zp), _mm512_set1_epi32(256)) != 0;
  if (!add_zp) {
    const __m512i low = _mm512_set1_epi64(0xffffffff), t32 = _mm512_set1_epi64(32);
    const __m512i zp_e = _mm512_srai_epi64(_mm512_slli_epi64(zp, 32), 32), zp_o = _mm512_srai_epi64(zp, 32);
    q->rnd_e = _mm512_add_epi64(q->rnd_e, _mm512_sllv_epi64(zp_e, _mm512_add_epi64(_mm512_and_si512(q->sh32, low), t32)));
    q->rnd_o = _mm512_add_epi64(q->rnd_o, _mm512_sllv_epi64(zp_o, _mm512_add_epi64(_mm512_srli_epi64(q->sh32, 32), t32)));
    q->zp = _mm512_setzero_si512();
  }
  q->lean = add_zp || _mm512_cmplt_epi32_mask(q->hi, _mm512_set1_epi32(INT8_MAX)) ? 0 : away ? FX_RQ16_AWAY_LEAN : 1;
}
#undef FX_RQ16_JOIN

/* The steps after the products, shared by both forms: two sets of 64-bit products p0, p1,
 * their nudges r0, r1 and tie-away nudges n0, n1 (lanes as the products'), `high` the vpermt2d
 * indices that gather the sums' high dwords in channel order. */
FX_REQUANT_AVX512 __m128i fx_rq16_finish_avx512(__m512i p0, __m512i p1, __m512i r0, __m512i r1, __m512i n0,
                                                __m512i n1, __m512i high, __m512i sh32, __m512i zp, __m512i lo,
                                                __m512i hi, const int lean) {
  __m512i s0 = _mm512_add_epi64(p0, r0), s1 = _mm512_add_epi64(p1, r1);
  if (lean != 1) {
    const __m512i zero = _mm512_setzero_si512();
    s0 = _mm512_mask_sub_epi64(s0, _mm512_cmplt_epi64_mask(p0, zero), s0, n0);
    s1 = _mm512_mask_sub_epi64(s1, _mm512_cmplt_epi64_mask(p1, zero), s1, n1);
  }
  __m512i v = _mm512_srav_epi32(_mm512_permutex2var_epi32(s0, high, s1), sh32);
  if (!lean) v = _mm512_min_epi32(_mm512_add_epi32(v, zp), hi);
  return _mm512_cvtsepi32_epi8(_mm512_max_epi32(v, lo));
}

/* 16 accumulators (lanes in channel order) requantized, as int8 in the low 16 bytes. */
FX_REQUANT_AVX512 __m128i fx_rq16_apply_avx512(__m512i acc, const fx_rq16_avx512 *q, const int lean) {
  const __m512i pe = _mm512_mul_epi32(acc, q->m), po = _mm512_mul_epi32(_mm512_srli_epi64(acc, 32), q->m_odd);
  return fx_rq16_finish_avx512(pe, po, q->rnd_e, q->rnd_o, q->neg_e, q->neg_o, q->high, q->sh32, q->zp, q->lo, q->hi,
                               lean);
}

/* The same, stored: the first n (<= 16) bytes at y. */
FX_REQUANT_AVX512 void fx_rq16_store_avx512(int8_t *y, __m512i acc, const fx_rq16_avx512 *q, size_t n, const int lean) {
  _mm_mask_storeu_epi8(y, (__mmask16)((1u << n) - 1u), fx_rq16_apply_avx512(acc, q, lean));
}

/* Runs the statements compiled twice: with `lean` 1 where stage q allows it (q->lean == 1), else
 * 0 (the kernels whose stages never round ties away). */
#define FX_RQ16_LEAN(q, ...) \
  if ((q)->lean == 1) {      \
    const int lean = 1;      \
    __VA_ARGS__              \
  } else {                   \
    const int lean = 0;      \
    __VA_ARGS__              \
  }

/* The fast form on a c8 kernel's accumulator pairs (qs8-gemm/c8-avx512vnni.h): channel c's
 * int32 sum is the low dword of qword c of sa (channels 0-7) or sb (8-15), its high dword
 * ignored. vpmuldq takes those low dwords as they are, so the lanes need not be put in channel
 * order before the products (the form above needs two permutes and a shift for it): one
 * permute gathers the high dwords of the two sets of products. The same constants, moved to
 * qwords in channel order; valid when `on`. */
typedef struct {
  __m512i m_a, m_b, rnd_a, rnd_b, neg_a, neg_b, high, sh32, zp, lo, hi;
  int on, lean;
} fx_rq16p_avx512;

FX_REQUANT_AVX512 void fx_rq16p_init_avx512(fx_rq16p_avx512 *p, const fx_rq16_avx512 *q) {
  if (!q->on) {
    *p = (fx_rq16p_avx512){0};
    return;
  }
  const __m512i first = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), last = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
  p->m_a = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(q->m));
  p->m_b = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(q->m, 1));
  p->rnd_a = _mm512_permutex2var_epi64(q->rnd_e, first, q->rnd_o);
  p->rnd_b = _mm512_permutex2var_epi64(q->rnd_e, last, q->rnd_o);
  p->neg_a = _mm512_permutex2var_epi64(q->neg_e, first, q->neg_o);
  p->neg_b = _mm512_permutex2var_epi64(q->neg_e, last, q->neg_o);
  p->high = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  p->sh32 = q->sh32, p->zp = q->zp, p->lo = q->lo, p->hi = q->hi;
  p->on = 1, p->lean = q->lean;
}

/* The 16 channel sums in sa, sb requantized, as int8 in the low 16 bytes. */
FX_REQUANT_AVX512 __m128i fx_rq16p_apply_avx512(__m512i sa, __m512i sb, const fx_rq16p_avx512 *p, const int lean) {
  const __m512i pa = _mm512_mul_epi32(sa, p->m_a), pb = _mm512_mul_epi32(sb, p->m_b);
  return fx_rq16_finish_avx512(pa, pb, p->rnd_a, p->rnd_b, p->neg_a, p->neg_b, p->high, p->sh32, p->zp, p->lo, p->hi,
                               lean);
}
#endif
