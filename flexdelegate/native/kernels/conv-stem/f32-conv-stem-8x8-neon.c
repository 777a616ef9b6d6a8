/* AArch64 NEON stem-conv microkernel over the 8-column panels of f32-gemm-8x8-neon: 8 pixels x 2
 * q columns = 16 accumulators, structurally the AVX2 kernel (f32-conv-stem-6x16-avx2.c): per tap
 * row, 9 steps of two weight loads and a scalar-times-vector FMA per accumulator (loops, not unrolled: see there). */
#if defined(__aarch64__)
#include <arm_neon.h>
#include "stem.h"
#include "kernels/gemm/neon-8x8.h"

#define MR 8

void fx_f32_conv_stem_8x8_neon(FX_STEM_ARGS) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  const float32x4_t b0 = vld1q_f32(w), b1 = vld1q_f32(w + 4);
  for (size_t i0 = 0; i0 < px; i0 += MR) {
    const size_t m = px - i0 < MR ? px - i0 : MR;
    /* pixels past m re-read the last one: in bounds, never stored */
    const size_t o0 = i0 * xs, last = (m - 1) * xs;
    const size_t o1 = o0 + (m > 1 ? xs : last), o2 = o0 + (m > 2 ? 2 * xs : last);
    const size_t o3 = o0 + (m > 3 ? 3 * xs : last), o4 = o0 + (m > 4 ? 4 * xs : last);
    const size_t o5 = o0 + (m > 5 ? 5 * xs : last), o6 = o0 + (m > 6 ? 6 * xs : last);
    const size_t o7 = o0 + (m > 7 ? 7 * xs : last);
    float32x4_t c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1;
    float32x4_t c40 = b0, c41 = b1, c50 = b0, c51 = b1, c60 = b0, c61 = b1, c70 = b0, c71 = b1;
    const float *wk = w + 8;
    for (int ky = 0; ky < 3; ky++) {
      const float *rk = ky == 0 ? r0 : ky == 1 ? r1 : r2;
      const float *a0 = rk + o0, *a1 = rk + o1, *a2 = rk + o2, *a3 = rk + o3;
      const float *a4 = rk + o4, *a5 = rk + o5, *a6 = rk + o6, *a7 = rk + o7;
      for (int q = 0; q < FX_STEM_ROW; q++, wk += 8) {
        const float32x4_t w0 = vld1q_f32(wk), w1 = vld1q_f32(wk + 4);
        float av;
#define FX_TAP(i)                                   \
        av = a##i[q];                               \
        c##i##0 = vfmaq_n_f32(c##i##0, w0, av);     \
        c##i##1 = vfmaq_n_f32(c##i##1, w1, av);
        FX_TAP(0) FX_TAP(1) FX_TAP(2) FX_TAP(3) FX_TAP(4) FX_TAP(5) FX_TAP(6) FX_TAP(7)
#undef FX_TAP
      }
    }
    float *ct = c + i0 * c_stride;
    const float *rt = r ? r + i0 * c_stride : NULL;
#define FX_STORE_ROW(i) \
    if (m > i) fx_store_row_8_neon(ct + i * c_stride, rt ? rt + i * c_stride : NULL, nc, c##i##0, c##i##1, o);
    FX_STORE_ROW(0) FX_STORE_ROW(1) FX_STORE_ROW(2) FX_STORE_ROW(3)
    FX_STORE_ROW(4) FX_STORE_ROW(5) FX_STORE_ROW(6) FX_STORE_ROW(7)
#undef FX_STORE_ROW
  }
}
#endif
