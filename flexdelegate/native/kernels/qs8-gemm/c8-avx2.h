/* The AVX2 c8 scheme shared by qs8-gemm-3x8c8-avx2 and qs8-igemm-3x8c8-avx2 (the design of
 * XNNPACK's qs8 c8 AVX2 kernels): a panel k-group is 8 channels x 8 bytes; a row's 8 bytes of
 * A are sign-extended to int16 and broadcast to both 128-bit lanes, two channels' 8 weights are
 * sign-extended to one ymm (channel 2q in the low lane, 2q+1 in the high one), and vpmaddwd
 * leaves 4 int32 partial sums per channel (products fit int16 x int16, pairs fit int32:
 * exact). Four accumulators per row hold channels {0,1} {2,3} {4,5} {6,7}; three horizontal
 * adds and a permute reduce them to the 8 channels at the end. 3 rows x 4 accumulators + 3 A
 * vectors + 1 weight vector = the 16 ymm registers. */
#ifndef FLEX_QS8_C8_AVX2_H
#define FLEX_QS8_C8_AVX2_H
#include <immintrin.h>
#include <string.h>
#include "../quant/requant-avx2.h"
#include "qs8-gemm.h"

#define FX_C8_AVX2 __attribute__((target("avx2,fma"), always_inline)) static inline

FX_C8_AVX2 __m256i fx_c8_widen_a_avx2(__m128i a8) {
  return _mm256_cvtepi8_epi16(_mm_unpacklo_epi64(a8, a8));
}
FX_C8_AVX2 __m256i fx_c8_load_a_avx2(const int8_t *p) {
  return fx_c8_widen_a_avx2(_mm_loadl_epi64((const __m128i *)p));
}
/* The last n < 8 bytes of a row: exactly n bytes read, the rest zero (their weights are 0). */
FX_C8_AVX2 __m256i fx_c8_load_a_part_avx2(const int8_t *p, size_t n) {
  return fx_c8_widen_a_avx2(_mm_cvtsi64_si128((long long)fx_qs8_load_tail(p, n)));
}
FX_C8_AVX2 __m256i fx_c8_load_w_avx2(const int8_t *w) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w));
}

/* Accumulators of channels {0,1} {2,3} {4,5} {6,7} -> one lane per channel 0..7. */
FX_C8_AVX2 __m256i fx_c8_reduce_avx2(__m256i a01, __m256i a23, __m256i a45, __m256i a67) {
  const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(a01, a23), _mm256_hadd_epi32(a45, a67));
  return _mm256_permutevar8x32_epi32(s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* Declares row i's accumulators. */
#define FX_C8_ACC(i) __m256i acc##i##0 = _mm256_setzero_si256(), acc##i##1 = acc##i##0, \
                             acc##i##2 = acc##i##0, acc##i##3 = acc##i##0;
#define FX_C8_MADD(i, q) acc##i##q = _mm256_add_epi32(acc##i##q, _mm256_madd_epi16(va##i, wq));
/* One k-group: the rows' A vectors va<i> are loaded; 4 weight pairs, MR x 4 vpmaddwd. */
#define FX_C8_GROUP(ROWS2, w)                                   \
  do {                                                          \
    __m256i wq = fx_c8_load_w_avx2(w);                          \
    ROWS2(FX_C8_MADD, 0)                                        \
    wq = fx_c8_load_w_avx2((w) + 16);                           \
    ROWS2(FX_C8_MADD, 1)                                        \
    wq = fx_c8_load_w_avx2((w) + 32);                           \
    ROWS2(FX_C8_MADD, 2)                                        \
    wq = fx_c8_load_w_avx2((w) + 48);                           \
    ROWS2(FX_C8_MADD, 3)                                        \
  } while (0)

/* The k-loop over one run of kc bytes per row (a GEMM's rows, or one IGEMM tap): full k-groups,
 * then a partial one; the rows' pointers are a0.. and wk walks the panel. */
#define FX_C8_LOAD_A(i) const __m256i va##i = fx_c8_load_a_avx2(a##i + k);
#define FX_C8_LOAD_A_PART(i) const __m256i va##i = fx_c8_load_a_part_avx2(a##i + k, kc - k);
#define FX_C8_KLOOP(ROWS, ROWS2)                  \
  {                                               \
    size_t k = 0;                                 \
    for (; k + 8 <= kc; k += 8, wk += 64) {       \
      ROWS(FX_C8_LOAD_A)                          \
      FX_C8_GROUP(ROWS2, wk);                     \
    }                                             \
    if (k < kc) {                                 \
      ROWS(FX_C8_LOAD_A_PART)                     \
      FX_C8_GROUP(ROWS2, wk);                     \
      wk += 64;                                   \
    }                                             \
  }

/* The output stage of one row pair (i, i + 1 share a pack; ci1 may be NULL). */
FX_C8_AVX2 void fx_c8_store2_avx2(int8_t *ci0, int8_t *ci1, size_t nc, __m256i v0, __m256i v1) {
  const __m128i p = fx_pack16_avx2(v0, v1);
  if (nc == 8) {
    _mm_storel_epi64((__m128i *)ci0, p);
    if (ci1) _mm_storel_epi64((__m128i *)ci1, _mm_unpackhi_epi64(p, p));
    return;
  }
  int8_t buf[16];
  _mm_storeu_si128((__m128i *)buf, p);
  memcpy(ci0, buf, nc);
  if (ci1) memcpy(ci1, buf + 8, nc);
}

/* Row i's final accumulator: reduced, + bias (+ its row correction). */
#define FX_C8_FINISH(i)                                                                     \
  __m256i v##i = _mm256_add_epi32(fx_c8_reduce_avx2(acc##i##0, acc##i##1, acc##i##2, acc##i##3), vbias); \
  if (row_corr) v##i = _mm256_add_epi32(v##i, _mm256_set1_epi32(row_corr[(i) < mr ? (i) : 0]));  \
  v##i = fx_rq8_apply_avx2(v##i, rq);

/* The output stage of the 3 rows, the requant constants *rq in scope. The bias is loaded only
 * now: 12 accumulators + 3 A + 1 weight vector already fill the registers in the k-loop. */
#define FX_C8_STORE_3ROWS(ROWS)                                                           \
  const __m256i vbias = _mm256_loadu_si256((const __m256i *)w);                           \
  ROWS(FX_C8_FINISH)                                                                      \
  fx_c8_store2_avx2(c, mr > 1 ? c + c_stride : NULL, nc, v0, v1);                         \
  if (mr > 2) fx_c8_store2_avx2(c + 2 * c_stride, NULL, nc, v2, v2);

/* After the k-loops (wk at the panel's requant parameters): the 3 rows' output stage. */
#define FX_C8_OUTPUT_3ROWS(ROWS)                                                          \
  const int32_t *rqp = (const int32_t *)wk;                                               \
  fx_rq8_avx2 rq_;                                                                        \
  fx_rq8_init_avx2(&rq_, rqp, rqp + 8, fx_rq8_away_all_avx2(o), o);                       \
  const fx_rq8_avx2 *rq = &rq_;                                                           \
  FX_C8_STORE_3ROWS(ROWS)
#endif
