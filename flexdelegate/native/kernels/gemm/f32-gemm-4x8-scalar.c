/* Portable reference microkernel: readable, and what every SIMD kernel is tested against. */
#include "gemm.h"

#define MR 4
#define NR 8

void fx_f32_gemm_4x8_scalar(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                            const float *w, float *c, size_t c_stride, const float *r,
                            const fx_gemm_out *o) {
  float acc[MR][NR];
  for (size_t i = 0; i < mr; i++)
    for (int j = 0; j < NR; j++) acc[i][j] = w[j];
  const float *wk = w + NR;
  for (size_t k = 0; k < kc; k++, wk += NR)
    for (size_t i = 0; i < mr; i++) {
      float av = a[i * a_stride + k];
      for (int j = 0; j < NR; j++) acc[i][j] += av * wk[j];
    }
  for (size_t i = 0; i < mr; i++)
    for (size_t j = 0; j < nc; j++) c[i * c_stride + j] = fx_gemm_out_one(acc[i][j], r ? r + i * c_stride + j : 0, o);
}
