/* AVX-512F microkernel: 8 rows x 2 zmm columns = 16 accumulators of 32; masked stores
 * handle the N remainder without a scalar tail.
 *
 * As in the AVX2 kernel, the accumulators are named scalars, never an array indexed by the
 * run-time row count: with `__m512 acc[8][2]` GCC kept the loop in registers but spilled all
 * 16 accumulators to the stack before and after it (~48 extra 64-byte moves per call), which
 * cost as much as the FMAs on the small-K 1x1 convs of MobileNet/EfficientNet. Rows past mr
 * read row 0 of A (harmless) and are not stored. The weights are prefetched ahead (gemm.h). */
#if defined(__x86_64__)
#include <immintrin.h>
#include "gemm.h"
#include "store-32-avx512f.h"

#define AVX512 __attribute__((target("avx512f")))

/* Output stage of row i (row pointers into C and the residual, both of stride cs). */
#define FX_ROW_PTRS(i) (c + (i) * cs), (r ? r + (i) * cs : NULL)

AVX512 static inline void store_row(float *ci, const float *ri, __mmask16 m0, __mmask16 m1, __m512 v0,
                                    __m512 v1, const fx_gemm_out *o) {
  fx_store16_avx512f(ci, ri, m0, v0, o);
  fx_store16_avx512f(ci + 16, ri ? ri + 16 : NULL, m1, v1, o);
}

/* One row (FULLY_CONNECTED on one vector, the last row of an odd M): the 8-row body would
 * run 8x the FMAs. Each column sums its k-steps in the body's order (bias, then k = 0, 1, ...)
 * so a row's result does not depend on which tile it falls in: bands and thread splits that
 * leave a single-row tile give the same bits as the whole GEMM. (Splitting k over 4
 * accumulators hid more FMA latency but changed the last bit: test_band caught it.) */
AVX512 static void gemm_1x32(size_t kc, const float *a, const float *w, float *c, const float *r,
                             __mmask16 m0, __mmask16 m1, const fx_gemm_out *o) {
  __m512 p0 = _mm512_loadu_ps(w), p1 = _mm512_loadu_ps(w + 16);
  w += 32;
  for (size_t k = 0; k < kc; k++, w += 32) {
    const __m512 av = _mm512_set1_ps(a[k]);
    p0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(w), p0);
    p1 = _mm512_fmadd_ps(av, _mm512_loadu_ps(w + 16), p1);
  }
  store_row(c, r, m0, m1, p0, p1, o);
}

/* At most 16 columns (N = 16, or the last panel of N = 80, 144, 240, ...): half the panel is
 * zero padding, so only its first zmm column is multiplied. */
AVX512 static void gemm_8x16(size_t mr, size_t kc, const float *a, size_t a_stride, const float *w, float *c,
                             size_t cs, const float *r, __mmask16 m0, const fx_gemm_out *o) {
  const float *a0 = a;
  const float *a1 = mr > 1 ? a0 + a_stride : a0;
  const float *a2 = mr > 2 ? a1 + a_stride : a0;
  const float *a3 = mr > 3 ? a2 + a_stride : a0;
  const float *a4 = mr > 4 ? a3 + a_stride : a0;
  const float *a5 = mr > 5 ? a4 + a_stride : a0;
  const float *a6 = mr > 6 ? a5 + a_stride : a0;
  const float *a7 = mr > 7 ? a6 + a_stride : a0;
  __m512 c0 = _mm512_loadu_ps(w), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  w += 32;
  for (size_t k = 0; k < kc; k++, w += 32) {
    _mm_prefetch((const char *)(w + FX_PREFETCH_FLOATS), _MM_HINT_T0);
    const __m512 w0 = _mm512_loadu_ps(w);
    c0 = _mm512_fmadd_ps(_mm512_set1_ps(a0[k]), w0, c0);
    c1 = _mm512_fmadd_ps(_mm512_set1_ps(a1[k]), w0, c1);
    c2 = _mm512_fmadd_ps(_mm512_set1_ps(a2[k]), w0, c2);
    c3 = _mm512_fmadd_ps(_mm512_set1_ps(a3[k]), w0, c3);
    c4 = _mm512_fmadd_ps(_mm512_set1_ps(a4[k]), w0, c4);
    c5 = _mm512_fmadd_ps(_mm512_set1_ps(a5[k]), w0, c5);
    c6 = _mm512_fmadd_ps(_mm512_set1_ps(a6[k]), w0, c6);
    c7 = _mm512_fmadd_ps(_mm512_set1_ps(a7[k]), w0, c7);
  }
#define FX_STORE16(i) if (mr > i) fx_store16_avx512f(FX_ROW_PTRS(i), m0, c##i, o);
  FX_STORE16(0) FX_STORE16(1) FX_STORE16(2) FX_STORE16(3) FX_STORE16(4) FX_STORE16(5) FX_STORE16(6) FX_STORE16(7)
#undef FX_STORE16
}

AVX512 void fx_f32_gemm_8x32_avx512f(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                                     const float *w, float *c, size_t cs, const float *r,
                                     const fx_gemm_out *out) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  const __mmask16 m0 = fx_cols_mask16(nc), m1 = fx_cols_mask16(nc > 16 ? nc - 16 : 0);
  if (mr > 1 && nc <= 16) {
    gemm_8x16(mr, kc, a, a_stride, w, c, cs, r, m0, o);
    return;
  }
  if (mr == 1) {
    gemm_1x32(kc, a, w, c, r, m0, m1, o);
    return;
  }
  const float *a0 = a;
  const float *a1 = mr > 1 ? a0 + a_stride : a0;
  const float *a2 = mr > 2 ? a1 + a_stride : a0;
  const float *a3 = mr > 3 ? a2 + a_stride : a0;
  const float *a4 = mr > 4 ? a3 + a_stride : a0;
  const float *a5 = mr > 5 ? a4 + a_stride : a0;
  const float *a6 = mr > 6 ? a5 + a_stride : a0;
  const float *a7 = mr > 7 ? a6 + a_stride : a0;
  __m512 c00 = _mm512_loadu_ps(w), c01 = _mm512_loadu_ps(w + 16);
  __m512 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01;
  __m512 c40 = c00, c41 = c01, c50 = c00, c51 = c01, c60 = c00, c61 = c01, c70 = c00, c71 = c01;
  w += 32;
  for (size_t k = 0; k < kc; k++, w += 32) { /* 128 bytes of weights per k: two lines ahead */
    _mm_prefetch((const char *)(w + FX_PREFETCH_FLOATS), _MM_HINT_T0);
    _mm_prefetch((const char *)(w + FX_PREFETCH_FLOATS + 16), _MM_HINT_T0);
    const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16);
    __m512 av;
#define FX_ROW(i)                                   \
    av = _mm512_set1_ps(a##i[k]);                   \
    c##i##0 = _mm512_fmadd_ps(av, w0, c##i##0);     \
    c##i##1 = _mm512_fmadd_ps(av, w1, c##i##1);
    FX_ROW(0) FX_ROW(1) FX_ROW(2) FX_ROW(3) FX_ROW(4) FX_ROW(5) FX_ROW(6) FX_ROW(7)
#undef FX_ROW
  }
#define FX_STORE(i) if (mr > i) store_row(FX_ROW_PTRS(i), m0, m1, c##i##0, c##i##1, o);
  FX_STORE(0) FX_STORE(1) FX_STORE(2) FX_STORE(3) FX_STORE(4) FX_STORE(5) FX_STORE(6) FX_STORE(7)
#undef FX_STORE
}
#endif
