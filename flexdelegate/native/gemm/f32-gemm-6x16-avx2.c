/* AVX2 + FMA microkernel: 6 rows x 2 ymm columns = 12 accumulators, leaving registers for
 * two weight vectors and one broadcast. */
#if defined(__x86_64__)
#include <immintrin.h>
#include "gemm.h"

#define MR 6

__attribute__((target("avx2,fma")))
void fx_f32_gemm_6x16_avx2(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                           const float *w, float *c, size_t c_stride, float lo, float hi) {
  const float *ar[MR];
  for (int i = 0; i < MR; i++) ar[i] = a + (i < (int)mr ? i : 0) * a_stride; /* clamp unused rows */
  __m256 acc[MR][2];
  __m256 b0 = _mm256_loadu_ps(w), b1 = _mm256_loadu_ps(w + 8);
  for (int i = 0; i < MR; i++) { acc[i][0] = b0; acc[i][1] = b1; }
  w += 16;
  for (size_t k = 0; k < kc; k++, w += 16) {
    __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
    for (int i = 0; i < MR; i++) {
      __m256 av = _mm256_broadcast_ss(ar[i] + k);
      acc[i][0] = _mm256_fmadd_ps(av, w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(av, w1, acc[i][1]);
    }
  }
  __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  for (size_t i = 0; i < mr; i++) {
    __m256 r0 = _mm256_min_ps(_mm256_max_ps(acc[i][0], vlo), vhi);
    __m256 r1 = _mm256_min_ps(_mm256_max_ps(acc[i][1], vlo), vhi);
    float *ci = c + i * c_stride;
    if (nc == 16) {
      _mm256_storeu_ps(ci, r0);
      _mm256_storeu_ps(ci + 8, r1);
    } else {
      float tmp[16];
      _mm256_storeu_ps(tmp, r0);
      _mm256_storeu_ps(tmp + 8, r1);
      for (size_t j = 0; j < nc; j++) ci[j] = tmp[j];
    }
  }
}
#endif
