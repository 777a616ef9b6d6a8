/* The AVX2 output stage: 8 int32 accumulators -> requant (requant.h) -> + zero point -> clamp,
 * and the packing of clamped lanes to int8. Shared by every x86 integer kernel: the AVX-512
 * ones run it on the two ymm halves of their zmm results, so the output stage is one piece of
 * code, exercised on every AVX2 machine (requant-avx512.h runs the fast form on 16 lanes from
 * these same constants).
 *
 * x*m needs 64 bits: vpmuldq multiplies the even lanes, and the odd lanes after a 32-bit shift;
 * bits [31, 62] of (x*m + 2^30) are the rounded high half (even: logical >> 31, odd: << 1 into
 * the high dword, then one blend). The rounding shift is RoundingDivideByPOT's overflow-free
 * form: (high >> rs) + ((high & mask) > thr), thr = mask/2 (+1 for a negative value when the
 * lane rounds ties away from zero). FLEX_RQ_SINGLE shifts the 64-bit sum right by 31 - shift
 * with a logical shift of the sum biased by 2^63 (AVX2 has no 64-bit arithmetic shift), whose
 * low dword is then off by exactly the low dword of 2^(63 - total). FLEX_RQ_AWAY_SAT saturates
 * the left shift where shifting back does not give acc again.
 *
 * The fast form, for FLEX_RQ_SINGLE and the double roundings when every lane shifts right
 * (shift <= -1, i.e. M < 1/2: nearly every layer): each is one rounding of the 64-bit product,
 * floor((x*m + rnd) / 2^total) with total = 31 - shift >= 32 and rnd = 2^(total-1), plus 2^30
 * for the double ones. (UP's two roundings, floor((floor((p + 2^30) / 2^31) + 2^(rs-1)) / 2^rs),
 * are one: floor(floor(y) / n) = floor(y / n) for whole n. AWAY's second adds one less for a
 * negative high half, which is 2^31 less in the product's terms; keyed on p < 0 rather than on
 * p < -2^30 it gives the same results, as both give 0 between.) With total >= 32 that is the
 * high dword of the sum, an int32, shifted right arithmetically by total - 32: no 64-bit
 * shifts, no bias. */
#ifndef FLEX_QUANT_REQUANT_AVX2_H
#define FLEX_QUANT_REQUANT_AVX2_H
#include <immintrin.h>
#include "requant.h"

#define FX_REQUANT_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

/* The constants of 8 channels. */
typedef struct {
  __m256i m, m_odd;
  __m256i rnd_e, rnd_o, sh32;           /* the fast form: 64-bit nudges, shift of the high dword */
  __m256i neg_e, neg_o;                 /* and 2^31 in the 64-bit lanes that round ties away */
  __m256i ls, rs, mask, half, away;     /* double rounding */
  __m256i te, to, rnde, rndo, bias;     /* single rounding: per-lane 64-bit shifts and nudges */
  __m256i zp, lo, hi;
  int fast, single, sat;
  int shl, away_any; /* some lane shifts left / rounds ties away: else those steps are skipped */
  int fast_away;     /* the fast form with a lane that rounds ties away */
} fx_rq8_avx2;

/* Lanes c0..c0+7: which round ties away from zero under o. */
FX_REQUANT_AVX2 __m256i fx_rq8_away_avx2(const fx_qs8_out *o, size_t c0) {
  const __m256i main = _mm256_set1_epi32(o->rounding == FLEX_RQ_UP ? 0 : -1);
  const __m256i tail = _mm256_set1_epi32(o->tail_rounding == FLEX_RQ_AWAY ? -1 : 0);
  if (o->rounding >= FLEX_RQ_SINGLE || (int64_t)c0 + 8 <= (int64_t)o->tail_from) return main;
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int32_t)c0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i is_tail = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(o->tail_from - 1));
  return _mm256_blendv_epi8(main, tail, is_tail);
}

/* Every lane under o->rounding (the GEMMs: one rule per call, no tail). */
FX_REQUANT_AVX2 __m256i fx_rq8_away_all_avx2(const fx_qs8_out *o) {
  return _mm256_set1_epi32(o->rounding == FLEX_RQ_UP ? 0 : -1);
}

/* Fills *r (every field; those of the other form zero) from m, shift: 8 channels' multipliers
 * and shifts (unaligned); away: fx_rq8_away_avx2. In place, not returned: the struct is 700
 * bytes, and a returned or zero-initialised copy cost more than the rest (~100 ns a panel). */
FX_REQUANT_AVX2 void fx_rq8_init_avx2(fx_rq8_avx2 *r, const int32_t *m, const int32_t *shift, __m256i away,
                                      const fx_qs8_out *o) {
  const __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256();
  r->m = _mm256_loadu_si256((const __m256i *)m);
  /* A lane of m = 0 (a flushed multiplier, a padding channel) gives 0 under any shift: the
   * largest keeps it in the fast form. */
  const __m256i sh = _mm256_blendv_epi8(_mm256_loadu_si256((const __m256i *)shift), _mm256_set1_epi32(-31),
                                        _mm256_cmpeq_epi32(r->m, zero));
  r->m_odd = _mm256_srli_epi64(r->m, 32);
  r->single = o->rounding == FLEX_RQ_SINGLE;
  r->sat = o->rounding == FLEX_RQ_AWAY_SAT;
  r->away = away;
  r->away_any = _mm256_movemask_epi8(away) != 0;
  const __m256i total = _mm256_sub_epi32(_mm256_set1_epi32(31), sh); /* 1..62 */
  r->te = _mm256_and_si256(total, _mm256_set1_epi64x(0xffffffff));
  r->to = _mm256_srli_epi64(total, 32);
  const __m256i one64 = _mm256_set1_epi64x(1); /* 2^(total - 1): the single rounding's nudge */
  const __m256i half_e = _mm256_sllv_epi64(one64, _mm256_sub_epi64(r->te, one64));
  const __m256i half_o = _mm256_sllv_epi64(one64, _mm256_sub_epi64(r->to, one64));
  r->fast = !_mm256_movemask_epi8(_mm256_cmpgt_epi32(sh, _mm256_set1_epi32(-1))); /* AWAY_SAT: no left shift */
  r->fast_away = 0;
  r->shl = 0;
  r->rnd_e = r->rnd_o = r->sh32 = r->neg_e = r->neg_o = zero;
  r->ls = r->rs = r->mask = r->half = r->rnde = r->rndo = r->bias = zero;
  if (r->fast) {
    const __m256i up = _mm256_set1_epi64x(r->single ? 0 : 1LL << 30);
    r->rnd_e = _mm256_add_epi64(half_e, up);
    r->rnd_o = _mm256_add_epi64(half_o, up);
    r->sh32 = _mm256_sub_epi32(total, _mm256_set1_epi32(32));
    r->fast_away = !r->single && r->away_any;
    const __m256i bit31 = _mm256_set1_epi64x(1LL << 31); /* lane 2i's mask in the low dword, 2i+1's high */
    r->neg_e = _mm256_and_si256(away, bit31);
    r->neg_o = _mm256_and_si256(_mm256_srli_epi64(away, 32), bit31);
  } else {
    r->ls = _mm256_max_epi32(sh, zero);
    r->rs = _mm256_max_epi32(_mm256_sub_epi32(zero, sh), zero);
    r->mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, r->rs), one);
    r->half = _mm256_srli_epi32(r->mask, 1);
    r->shl = _mm256_movemask_epi8(_mm256_cmpgt_epi32(sh, zero)) != 0;
    const __m256i sign64 = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    r->rnde = _mm256_or_si256(half_e, sign64);
    r->rndo = _mm256_or_si256(half_o, sign64);
    r->bias = _mm256_sllv_epi32(one, _mm256_sub_epi32(_mm256_set1_epi32(63), total)); /* 0 if >= 32 */
  }
  r->zp = _mm256_set1_epi32(o->zp);
  r->lo = _mm256_set1_epi32(o->lo);
  r->hi = _mm256_set1_epi32(o->hi);
}

/* requant + zero point + clamp of 8 accumulators; `single` must equal r->single (a constant
 * lets the caller specialise its loop on it). */
FX_REQUANT_AVX2 __m256i fx_rq8_apply_mode_avx2(__m256i acc, const fx_rq8_avx2 *r, const int single) {
  __m256i v;
  if (r->fast) {
    const __m256i pe = _mm256_mul_epi32(acc, r->m);
    const __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(acc, 32), r->m_odd);
    __m256i se = _mm256_add_epi64(pe, r->rnd_e), so = _mm256_add_epi64(po, r->rnd_o);
    if (r->fast_away) {
      const __m256i zero = _mm256_setzero_si256();
      se = _mm256_sub_epi64(se, _mm256_and_si256(_mm256_cmpgt_epi64(zero, pe), r->neg_e));
      so = _mm256_sub_epi64(so, _mm256_and_si256(_mm256_cmpgt_epi64(zero, po), r->neg_o));
    }
    v = _mm256_srav_epi32(_mm256_blend_epi32(_mm256_srli_epi64(se, 32), so, 0xAA), r->sh32);
  } else if (single) {
    const __m256i pe = _mm256_mul_epi32(acc, r->m);
    const __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(acc, 32), r->m_odd);
    const __m256i ue = _mm256_srlv_epi64(_mm256_add_epi64(pe, r->rnde), r->te);
    const __m256i uo = _mm256_srlv_epi64(_mm256_add_epi64(po, r->rndo), r->to);
    v = _mm256_sub_epi32(_mm256_blend_epi32(ue, _mm256_slli_epi64(uo, 32), 0xAA), r->bias);
  } else {
    const __m256i half30 = _mm256_set1_epi64x(1LL << 30);
    __m256i x = r->shl ? _mm256_sllv_epi32(acc, r->ls) : acc;
    if (r->shl && r->sat) { /* gemmlowp: where x >> ls != acc the shift overflowed: saturate */
      const __m256i kept = _mm256_cmpeq_epi32(_mm256_srav_epi32(x, r->ls), acc);
      const __m256i lim = _mm256_xor_si256(_mm256_srai_epi32(acc, 31), _mm256_set1_epi32(INT32_MAX));
      x = _mm256_blendv_epi8(lim, x, kept);
    }
    const __m256i pe = _mm256_mul_epi32(x, r->m);
    const __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), r->m_odd);
    const __m256i he = _mm256_srli_epi64(_mm256_add_epi64(pe, half30), 31);
    const __m256i ho = _mm256_slli_epi64(_mm256_add_epi64(po, half30), 1);
    const __m256i high = _mm256_blend_epi32(he, ho, 0xAA);
    const __m256i thr = r->away_any ? _mm256_sub_epi32(r->half, _mm256_and_si256(r->away, _mm256_srai_epi32(high, 31)))
                                    : r->half;
    const __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(high, r->mask), thr);
    v = _mm256_sub_epi32(_mm256_srav_epi32(high, r->rs), up);
  }
  v = _mm256_add_epi32(v, r->zp);
  return _mm256_min_epi32(_mm256_max_epi32(v, r->lo), r->hi);
}

FX_REQUANT_AVX2 __m256i fx_rq8_apply_avx2(__m256i acc, const fx_rq8_avx2 *r) {
  return fx_rq8_apply_mode_avx2(acc, r, r->single);
}

/* 16 clamped lanes (a: 0..7, b: 8..15) as 16 int8 in order. */
FX_REQUANT_AVX2 __m128i fx_pack16_avx2(__m256i a, __m256i b) {
  const __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_setzero_si256());
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* Stores the first n (<= 16) bytes of v. */
FX_REQUANT_AVX2 void fx_store_bytes_avx2(int8_t *y, __m128i v, size_t n) {
  if (n == 16) {
    _mm_storeu_si128((__m128i *)y, v);
    return;
  }
  int8_t buf[16];
  _mm_storeu_si128((__m128i *)buf, v);
  for (size_t i = 0; i < n; i++) y[i] = buf[i];
}
#endif
