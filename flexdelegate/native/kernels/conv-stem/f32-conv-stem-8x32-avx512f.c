/* AVX-512F stem-conv microkernel over the 32-column panels of f32-gemm-8x32-avx512f: 8 pixels x 2
 * zmm columns = 16 accumulators, structurally the AVX2 kernel (f32-conv-stem-6x16-avx2.c) with
 * masked stores for the column remainder. */
#if defined(__x86_64__)
#include <immintrin.h>
#include "stem.h"
#include "kernels/gemm/store-32-avx512f.h"

#define MR 8

__attribute__((target("avx512f")))
void fx_f32_conv_stem_8x32_avx512f(FX_STEM_ARGS) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  const __m512 b0 = _mm512_loadu_ps(w), b1 = _mm512_loadu_ps(w + 16);
  const __mmask16 m0 = fx_cols_mask16(nc), m1 = nc > 16 ? fx_cols_mask16(nc - 16) : 0;
  for (size_t i0 = 0; i0 < px; i0 += MR) {
    const size_t m = px - i0 < MR ? px - i0 : MR;
    /* pixels past m re-read the last one: in bounds, never stored */
    const size_t o0 = i0 * xs, last = (m - 1) * xs;
    const size_t o1 = o0 + (m > 1 ? xs : last), o2 = o0 + (m > 2 ? 2 * xs : last);
    const size_t o3 = o0 + (m > 3 ? 3 * xs : last), o4 = o0 + (m > 4 ? 4 * xs : last);
    const size_t o5 = o0 + (m > 5 ? 5 * xs : last), o6 = o0 + (m > 6 ? 6 * xs : last);
    const size_t o7 = o0 + (m > 7 ? 7 * xs : last);
    __m512 c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1;
    __m512 c40 = b0, c41 = b1, c50 = b0, c51 = b1, c60 = b0, c61 = b1, c70 = b0, c71 = b1;
    const float *wk = w + 32;
    for (int ky = 0; ky < 3; ky++) {
      const float *rk = ky == 0 ? r0 : ky == 1 ? r1 : r2;
      const float *a0 = rk + o0, *a1 = rk + o1, *a2 = rk + o2, *a3 = rk + o3;
      const float *a4 = rk + o4, *a5 = rk + o5, *a6 = rk + o6, *a7 = rk + o7;
      for (int q = 0; q < FX_STEM_ROW; q++, wk += 32) {
        const __m512 w0 = _mm512_loadu_ps(wk), w1 = _mm512_loadu_ps(wk + 16);
        __m512 av;
#define FX_TAP(i)                                  \
        av = _mm512_set1_ps(a##i[q]);              \
        c##i##0 = _mm512_fmadd_ps(av, w0, c##i##0); \
        c##i##1 = _mm512_fmadd_ps(av, w1, c##i##1);
        FX_TAP(0) FX_TAP(1) FX_TAP(2) FX_TAP(3) FX_TAP(4) FX_TAP(5) FX_TAP(6) FX_TAP(7)
#undef FX_TAP
      }
    }
    float *ct = c + i0 * c_stride;
    const float *rt = r ? r + i0 * c_stride : NULL;
#define FX_STORE_ROW(i)                                                                              \
    if (m > i) {                                                                                     \
      fx_store16_avx512f(ct + i * c_stride, rt ? rt + i * c_stride : NULL, m0, c##i##0, o);          \
      if (m1) fx_store16_avx512f(ct + i * c_stride + 16, rt ? rt + i * c_stride + 16 : NULL, m1, c##i##1, o); \
    }
    FX_STORE_ROW(0) FX_STORE_ROW(1) FX_STORE_ROW(2) FX_STORE_ROW(3)
    FX_STORE_ROW(4) FX_STORE_ROW(5) FX_STORE_ROW(6) FX_STORE_ROW(7)
#undef FX_STORE_ROW
  }
}
#endif
