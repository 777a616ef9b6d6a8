/* AVX2 GEMM, 3 rows x 8 channels, k-groups of 8 (c8-avx2.h). Rows past mr read row 0 of A
 * and are not stored. */
#if defined(__x86_64__)
#include "c8-avx2.h"

#define ROWS(X) X(0) X(1) X(2)
#define ROWS2(X, q) X(0, q) X(1, q) X(2, q)
#define LOAD_A(i) const __m256i va##i = fx_c8_load_a_avx2(a##i + k);
#define LOAD_A_PART(i) const __m256i va##i = fx_c8_load_a_part_avx2(a##i + k, kc - k);

__attribute__((target("avx2,fma")))
void fx_qs8_gemm_3x8c8__avx2(FX_QS8_GEMM_ARGS) {
  const int8_t *a0 = a;
  const int8_t *a1 = mr > 1 ? a0 + a_stride : a0;
  const int8_t *a2 = mr > 2 ? a1 + a_stride : a0;
  const __m256i vbias = _mm256_loadu_si256((const __m256i *)w);
  const int8_t *wk = (const int8_t *)w + 32;
  ROWS(FX_C8_ACC)
  size_t k = 0;
  for (; k + 8 <= kc; k += 8, wk += 64) {
    ROWS(LOAD_A)
    FX_C8_GROUP(ROWS2, wk);
  }
  if (k < kc) {
    ROWS(LOAD_A_PART)
    FX_C8_GROUP(ROWS2, wk);
    wk += 64;
  }
  const int32_t *rqp = (const int32_t *)wk;
  const fx_rq8_avx2 rq = fx_rq8_init_avx2(rqp, rqp + 8, fx_rq8_away_all_avx2(o), o);
  ROWS(FX_C8_FINISH)
  fx_c8_store2_avx2(c, mr > 1 ? c + c_stride : NULL, nc, v0, v1);
  if (mr > 2) fx_c8_store2_avx2(c + 2 * c_stride, NULL, nc, v2, v2);
}
#endif
