/* AVX-512F microkernel: 8 rows x 2 zmm columns = 16 accumulators of 32; masked stores
 * handle the N remainder without a scalar tail. */
#if defined(__x86_64__)
#include <immintrin.h>
#include "gemm.h"

#define MR 8

__attribute__((target("avx512f")))
void fx_f32_gemm_8x32_avx512f(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                              const float *w, float *c, size_t c_stride, float lo, float hi) {
  const float *ar[MR];
  for (int i = 0; i < MR; i++) ar[i] = a + (i < (int)mr ? i : 0) * a_stride; /* clamp unused rows */
  __m512 acc[MR][2];
  __m512 b0 = _mm512_loadu_ps(w), b1 = _mm512_loadu_ps(w + 16);
  for (int i = 0; i < MR; i++) { acc[i][0] = b0; acc[i][1] = b1; }
  w += 32;
  for (size_t k = 0; k < kc; k++, w += 32) {
    __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16);
    for (int i = 0; i < MR; i++) {
      __m512 av = _mm512_set1_ps(ar[i][k]);
      acc[i][0] = _mm512_fmadd_ps(av, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, w1, acc[i][1]);
    }
  }
  __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  __mmask16 m0 = nc >= 16 ? 0xFFFF : (__mmask16)((1u << nc) - 1);
  __mmask16 m1 = nc >= 32 ? 0xFFFF : nc <= 16 ? 0 : (__mmask16)((1u << (nc - 16)) - 1);
  for (size_t i = 0; i < mr; i++) {
    float *ci = c + i * c_stride;
    _mm512_mask_storeu_ps(ci, m0, _mm512_min_ps(_mm512_max_ps(acc[i][0], vlo), vhi));
    _mm512_mask_storeu_ps(ci + 16, m1, _mm512_min_ps(_mm512_max_ps(acc[i][1], vlo), vhi));
  }
}
#endif
