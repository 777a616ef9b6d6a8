/* AVX2 + FMA microkernel: 6 rows x 2 ymm columns = 12 accumulators, leaving registers for
 * two weight vectors and one broadcast.
 *
 * The accumulators are named scalars of the function, never an array: with `__m256 acc[6][2]`
 * indexed by the run-time row count in the store loop, GCC keeps the array in memory and
 * writes all 12 accumulators back to the stack on every k step (12 stores per 12 FMAs), which
 * halved throughput (~60 of ~115 GFLOP/s on Zen 5). Rows past mr read row 0 of A
 * (harmless) and are simply not stored. */
#if defined(__x86_64__)
#include <immintrin.h>
#include "gemm.h"
#include "store-16-avx2.h"

__attribute__((target("avx2,fma")))
void fx_f32_gemm_6x16_avx2(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                           const float *w, float *c, size_t cs, const float *r, const fx_gemm_out *out) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  const float *a0 = a;
  const float *a1 = mr > 1 ? a0 + a_stride : a0;
  const float *a2 = mr > 2 ? a1 + a_stride : a0;
  const float *a3 = mr > 3 ? a2 + a_stride : a0;
  const float *a4 = mr > 4 ? a3 + a_stride : a0;
  const float *a5 = mr > 5 ? a4 + a_stride : a0;
  __m256 c00 = _mm256_loadu_ps(w), c01 = _mm256_loadu_ps(w + 8);
  __m256 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01;
  __m256 c40 = c00, c41 = c01, c50 = c00, c51 = c01;
  w += 16;
  for (size_t k = 0; k < kc; k++, w += 16) {
    const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
    __m256 av;
    av = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(av, w0, c00);
    c01 = _mm256_fmadd_ps(av, w1, c01);
    av = _mm256_broadcast_ss(a1 + k);
    c10 = _mm256_fmadd_ps(av, w0, c10);
    c11 = _mm256_fmadd_ps(av, w1, c11);
    av = _mm256_broadcast_ss(a2 + k);
    c20 = _mm256_fmadd_ps(av, w0, c20);
    c21 = _mm256_fmadd_ps(av, w1, c21);
    av = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(av, w0, c30);
    c31 = _mm256_fmadd_ps(av, w1, c31);
    av = _mm256_broadcast_ss(a4 + k);
    c40 = _mm256_fmadd_ps(av, w0, c40);
    c41 = _mm256_fmadd_ps(av, w1, c41);
    av = _mm256_broadcast_ss(a5 + k);
    c50 = _mm256_fmadd_ps(av, w0, c50);
    c51 = _mm256_fmadd_ps(av, w1, c51);
  }
#define FX_STORE(i) if (mr > i) fx_store_row_16_avx2(c + i * cs, r ? r + i * cs : NULL, nc, c##i##0, c##i##1, o);
  FX_STORE(0) FX_STORE(1) FX_STORE(2) FX_STORE(3) FX_STORE(4) FX_STORE(5)
#undef FX_STORE
}
#endif
