/* AVX2 + FMA IGEMM microkernel, the direct-conv twin of f32-gemm-6x16-avx2 (same 16-column
 * panels): 6 rows x 2 ymm columns = 12 accumulators, kept as named scalars for the reason that
 * kernel's comment gives. Per tap it reloads the 6 row pointers, then runs the GEMM's k loop
 * over that tap's kc channels; the weights stream on linearly across taps. */
#if defined(__x86_64__)
#include <immintrin.h>
#include "igemm.h"
#include "kernels/gemm/store-16-avx2.h"

__attribute__((target("avx2,fma")))
void fx_f32_igemm_6x16_avx2(FX_IGEMM_ARGS) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  __m256 c00 = _mm256_loadu_ps(w), c01 = _mm256_loadu_ps(w + 8);
  __m256 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01;
  __m256 c40 = c00, c41 = c01, c50 = c00, c51 = c01;
  w += 16;
  for (size_t t = 0; t < ks; t++, a += 6) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    for (size_t k = 0; k < kc; k++, w += 16) {
      const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8);
      __m256 av;
#define FX_TAP_ROW(i)                         \
      av = _mm256_broadcast_ss(a##i + k);     \
      c##i##0 = _mm256_fmadd_ps(av, w0, c##i##0); \
      c##i##1 = _mm256_fmadd_ps(av, w1, c##i##1);
      FX_TAP_ROW(0) FX_TAP_ROW(1) FX_TAP_ROW(2) FX_TAP_ROW(3) FX_TAP_ROW(4) FX_TAP_ROW(5)
#undef FX_TAP_ROW
    }
  }
#define FX_STORE_ROW(i) \
  if (mr > i) fx_store_row_16_avx2(c + i * c_stride, r ? r + i * c_stride : NULL, nc, c##i##0, c##i##1, o);
  FX_STORE_ROW(0) FX_STORE_ROW(1) FX_STORE_ROW(2) FX_STORE_ROW(3) FX_STORE_ROW(4) FX_STORE_ROW(5)
#undef FX_STORE_ROW
}
#endif
