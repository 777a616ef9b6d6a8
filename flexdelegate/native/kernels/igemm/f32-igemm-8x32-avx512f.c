/* AVX-512F IGEMM microkernel, the direct-conv twin of f32-gemm-8x32-avx512f (same 32-column
 * panels): 8 rows x 2 zmm columns = 16 named accumulators (see that kernel for why not an
 * array), masked stores for the N remainder. Per tap it reloads the 8 row pointers and runs
 * the GEMM's k loop over the tap's kc channels; the weights stream on linearly across taps.
 * Panels of at most 16 live columns (cout 16, or the last panel of 48, 80, ...) multiply only
 * the first zmm column, as the GEMM does. */
#if defined(__x86_64__)
#include <immintrin.h>
#include "kernels/gemm/store-32-avx512f.h"
#include "igemm.h"

#define AVX512 __attribute__((target("avx512f")))

AVX512 static void igemm_8x16(size_t mr, size_t nc, size_t kc, size_t ks, const float *const *a,
                              const float *w, float *c, size_t c_stride, const float *r, const fx_gemm_out *o) {
  const __mmask16 m = fx_cols_mask16(nc);
  __m512 c0 = _mm512_loadu_ps(w), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  w += 32;
  for (size_t t = 0; t < ks; t++, a += 8) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    const float *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
    for (size_t k = 0; k < kc; k++, w += 32) {
      _mm_prefetch((const char *)(w + FX_PREFETCH_FLOATS), _MM_HINT_T0);
      const __m512 w0 = _mm512_loadu_ps(w);
#define FX_TAP_ROW16(i) c##i = _mm512_fmadd_ps(_mm512_set1_ps(a##i[k]), w0, c##i);
      FX_TAP_ROW16(0) FX_TAP_ROW16(1) FX_TAP_ROW16(2) FX_TAP_ROW16(3)
      FX_TAP_ROW16(4) FX_TAP_ROW16(5) FX_TAP_ROW16(6) FX_TAP_ROW16(7)
#undef FX_TAP_ROW16
    }
  }
  const __m512 rows[8] = {c0, c1, c2, c3, c4, c5, c6, c7}; /* after the loop: no spills inside it */
  for (size_t i = 0; i < mr; i++) fx_store16_avx512f(c + i * c_stride, r ? r + i * c_stride : NULL, m, rows[i], o);
}

AVX512 void fx_f32_igemm_8x32_avx512f(FX_IGEMM_ARGS) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  if (nc <= 16) {
    igemm_8x16(mr, nc, kc, ks, a, w, c, c_stride, r, o);
    return;
  }
  const __mmask16 m1 = fx_cols_mask16(nc - 16);
  __m512 c00 = _mm512_loadu_ps(w), c01 = _mm512_loadu_ps(w + 16);
  __m512 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01;
  __m512 c40 = c00, c41 = c01, c50 = c00, c51 = c01, c60 = c00, c61 = c01, c70 = c00, c71 = c01;
  w += 32;
  for (size_t t = 0; t < ks; t++, a += 8) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    const float *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
    for (size_t k = 0; k < kc; k++, w += 32) { /* weights prefetched ahead as in the GEMM */
      _mm_prefetch((const char *)(w + FX_PREFETCH_FLOATS), _MM_HINT_T0);
      _mm_prefetch((const char *)(w + FX_PREFETCH_FLOATS + 16), _MM_HINT_T0);
      const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16);
      __m512 av;
#define FX_TAP_ROW(i)                               \
      av = _mm512_set1_ps(a##i[k]);                 \
      c##i##0 = _mm512_fmadd_ps(av, w0, c##i##0);   \
      c##i##1 = _mm512_fmadd_ps(av, w1, c##i##1);
      FX_TAP_ROW(0) FX_TAP_ROW(1) FX_TAP_ROW(2) FX_TAP_ROW(3)
      FX_TAP_ROW(4) FX_TAP_ROW(5) FX_TAP_ROW(6) FX_TAP_ROW(7)
#undef FX_TAP_ROW
    }
  }
  const __m512 lo_half[8] = {c00, c10, c20, c30, c40, c50, c60, c70};
  const __m512 hi_half[8] = {c01, c11, c21, c31, c41, c51, c61, c71};
  for (size_t i = 0; i < mr; i++) {
    const float *ri = r ? r + i * c_stride : NULL;
    fx_store16_avx512f(c + i * c_stride, ri, 0xFFFF, lo_half[i], o);
    fx_store16_avx512f(c + i * c_stride + 16, ri ? ri + 16 : NULL, m1, hi_half[i], o);
  }
}
#endif
