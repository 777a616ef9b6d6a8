/* AVX2 + FMA stem-conv microkernel over the 16-column panels of f32-gemm-6x16-avx2: 6 pixels x 2
 * ymm columns = 12 accumulators, as that kernel, every input addressed from 6 pixel pointers per
 * tap row (no pointer table, no im2col). The tap loops stay loops: unrolled (27 or 9 steps), GCC
 * hoists the broadcasts and weight loads of later steps and spills accumulators to the stack
 * (a single-row timing loop: 20-70 GFLOP/s unrolled, 82 as loops, on Zen 3). */
#if defined(__x86_64__)
#include <immintrin.h>
#include "stem.h"
#include "kernels/gemm/store-16-avx2.h"

#define MR 6

__attribute__((target("avx2,fma")))
void fx_f32_conv_stem_6x16_avx2(FX_STEM_ARGS) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  const __m256 b0 = _mm256_loadu_ps(w), b1 = _mm256_loadu_ps(w + 8);
  for (size_t i0 = 0; i0 < px; i0 += MR) {
    const size_t m = px - i0 < MR ? px - i0 : MR;
    /* pixels past m re-read the last one: in bounds, never stored */
    const size_t o0 = i0 * xs, last = (m - 1) * xs;
    const size_t o1 = o0 + (m > 1 ? xs : last), o2 = o0 + (m > 2 ? 2 * xs : last);
    const size_t o3 = o0 + (m > 3 ? 3 * xs : last), o4 = o0 + (m > 4 ? 4 * xs : last);
    const size_t o5 = o0 + (m > 5 ? 5 * xs : last);
    __m256 c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1;
    __m256 c30 = b0, c31 = b1, c40 = b0, c41 = b1, c50 = b0, c51 = b1;
    const float *wk = w + 16;
    for (int ky = 0; ky < 3; ky++) {
      const float *rk = ky == 0 ? r0 : ky == 1 ? r1 : r2;
      const float *a0 = rk + o0, *a1 = rk + o1, *a2 = rk + o2, *a3 = rk + o3, *a4 = rk + o4, *a5 = rk + o5;
      for (int q = 0; q < FX_STEM_ROW; q++, wk += 16) {
        const __m256 w0 = _mm256_loadu_ps(wk), w1 = _mm256_loadu_ps(wk + 8);
        __m256 av;
#define FX_TAP(i)                                  \
        av = _mm256_broadcast_ss(a##i + q);        \
        c##i##0 = _mm256_fmadd_ps(av, w0, c##i##0); \
        c##i##1 = _mm256_fmadd_ps(av, w1, c##i##1);
        FX_TAP(0) FX_TAP(1) FX_TAP(2) FX_TAP(3) FX_TAP(4) FX_TAP(5)
#undef FX_TAP
      }
    }
    float *ct = c + i0 * c_stride;
    const float *rt = r ? r + i0 * c_stride : NULL;
#define FX_STORE_ROW(i) \
    if (m > i) fx_store_row_16_avx2(ct + i * c_stride, rt ? rt + i * c_stride : NULL, nc, c##i##0, c##i##1, o);
    FX_STORE_ROW(0) FX_STORE_ROW(1) FX_STORE_ROW(2) FX_STORE_ROW(3) FX_STORE_ROW(4) FX_STORE_ROW(5)
#undef FX_STORE_ROW
  }
}
#endif
