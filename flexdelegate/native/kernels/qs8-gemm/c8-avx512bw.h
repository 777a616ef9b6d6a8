/* The AVX-512BW c8 scheme of qs8-gemm/igemm-4x16c8-avx512bw: c8-avx2.h on zmm. A row's 8 bytes
 * of A, widened to int16, fill all four 128-bit lanes; a weight zmm holds 4 channels x 8 int16
 * (one channel per lane); vpmaddwd leaves 4 partial sums per channel. Four accumulators per row
 * cover channels 0-3, 4-7, 8-11, 12-15 (4 rows: 16 of the 32 zmm). At the end each zmm's two
 * ymm halves are exactly c8-avx2's {0,1}{2,3} accumulators, so the reduction and the whole
 * output stage are the AVX2 code (requant-avx2.h), the part tested on AVX2-only machines. */
#ifndef FLEX_QS8_C8_AVX512BW_H
#define FLEX_QS8_C8_AVX512BW_H
#include <immintrin.h>
#include <string.h>
#include "c8-avx2.h"

#define FX_C8Z __attribute__((target("avx2,fma,avx512f,avx512bw"), always_inline)) static inline
#define FX_C8Z_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw")))

FX_C8Z __m512i fx_c8z_load_a(const int8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return _mm512_cvtepi8_epi16(_mm256_set1_epi64x(v));
}
FX_C8Z __m512i fx_c8z_load_a_part(const int8_t *p, size_t n) {
  return _mm512_cvtepi8_epi16(_mm256_set1_epi64x((long long)fx_qs8_load_tail(p, n)));
}
FX_C8Z __m512i fx_c8z_load_w(const int8_t *w) {
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)w));
}

#define FX_C8Z_ACC(i) __m512i acc##i##0 = _mm512_setzero_si512(), acc##i##1 = acc##i##0, \
                              acc##i##2 = acc##i##0, acc##i##3 = acc##i##0;
#define FX_C8Z_MADD(i, q) acc##i##q = _mm512_add_epi32(acc##i##q, _mm512_madd_epi16(va##i, wq));
/* One k-group of 16 channels x 8 bytes (128 bytes of panel). */
#define FX_C8Z_GROUP(ROWS2, w)             \
  do {                                     \
    __m512i wq = fx_c8z_load_w(w);         \
    ROWS2(FX_C8Z_MADD, 0)                  \
    wq = fx_c8z_load_w((w) + 32);          \
    ROWS2(FX_C8Z_MADD, 1)                  \
    wq = fx_c8z_load_w((w) + 64);          \
    ROWS2(FX_C8Z_MADD, 2)                  \
    wq = fx_c8z_load_w((w) + 96);          \
    ROWS2(FX_C8Z_MADD, 3)                  \
  } while (0)

#define FX_C8Z_LOAD_A(i) const __m512i va##i = fx_c8z_load_a(a##i + k);
#define FX_C8Z_LOAD_A_PART(i) const __m512i va##i = fx_c8z_load_a_part(a##i + k, kc - k);
/* The k-loop over one run of kc bytes per row (c8-avx2.h's FX_C8_KLOOP on 128-byte groups). */
#define FX_C8Z_KLOOP(ROWS, ROWS2)                 \
  {                                               \
    size_t k = 0;                                 \
    for (; k + 8 <= kc; k += 8, wk += 128) {      \
      ROWS(FX_C8Z_LOAD_A)                         \
      FX_C8Z_GROUP(ROWS2, wk);                    \
    }                                             \
    if (k < kc) {                                 \
      ROWS(FX_C8Z_LOAD_A_PART)                    \
      FX_C8Z_GROUP(ROWS2, wk);                    \
      wk += 128;                                  \
    }                                             \
  }

#define FX_LO(z) _mm512_castsi512_si256(z)
#define FX_HI(z) _mm512_extracti64x4_epi64((z), 1)
/* Row i: channels 0-7 and 8-15 reduced, + bias, + row correction, requantized (AVX2). */
#define FX_C8Z_FINISH(i)                                                                           \
  __m256i v##i##l = _mm256_add_epi32(fx_c8_reduce_avx2(FX_LO(acc##i##0), FX_HI(acc##i##0),        \
                                                       FX_LO(acc##i##1), FX_HI(acc##i##1)), vb0);  \
  __m256i v##i##h = _mm256_add_epi32(fx_c8_reduce_avx2(FX_LO(acc##i##2), FX_HI(acc##i##2),        \
                                                       FX_LO(acc##i##3), FX_HI(acc##i##3)), vb1);  \
  if (row_corr) {                                                                                  \
    const __m256i rc = _mm256_set1_epi32(row_corr[(i) < mr ? (i) : 0]);                            \
    v##i##l = _mm256_add_epi32(v##i##l, rc);                                                       \
    v##i##h = _mm256_add_epi32(v##i##h, rc);                                                       \
  }                                                                                                \
  if (mr > (i))                                                                                    \
    fx_store_bytes_avx2(c + (i) * c_stride,                                                        \
                        fx_pack16_avx2(fx_rq8_apply_avx2(v##i##l, &rq0), fx_rq8_apply_avx2(v##i##h, &rq1)), nc);

/* After the k-loops (wk at the panel's requant parameters): every row's output stage. */
#define FX_C8Z_OUTPUT(ROWS)                                                                   \
  const int32_t *rqp = (const int32_t *)wk;                                                   \
  fx_rq8_avx2 rq0, rq1;                                                                       \
  fx_rq8_init_avx2(&rq0, rqp, rqp + 16, fx_rq8_away_all_avx2(o), o);                          \
  fx_rq8_init_avx2(&rq1, rqp + 8, rqp + 24, fx_rq8_away_all_avx2(o), o);                      \
  ROWS(FX_C8Z_FINISH)
#endif
