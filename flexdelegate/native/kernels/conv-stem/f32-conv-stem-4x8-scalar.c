/* Portable reference stem-conv microkernel: readable, and what every SIMD kernel is tested
 * against. */
#include "stem.h"

#define MR 4
#define NR 8

void fx_f32_conv_stem_4x8_scalar(FX_STEM_ARGS) {
  const float *rows[3] = {r0, r1, r2};
  for (size_t i0 = 0; i0 < px; i0 += MR) {
    const size_t m = px - i0 < MR ? px - i0 : MR;
    float acc[MR][NR];
    for (size_t i = 0; i < m; i++)
      for (int j = 0; j < NR; j++) acc[i][j] = w[j];
    const float *wk = w + NR;
    for (int ky = 0; ky < 3; ky++)
      for (int q = 0; q < FX_STEM_ROW; q++, wk += NR)
        for (size_t i = 0; i < m; i++) {
          const float av = rows[ky][(i0 + i) * xs + (size_t)q];
          for (int j = 0; j < NR; j++) acc[i][j] += av * wk[j];
        }
    for (size_t i = 0; i < m; i++) {
      const size_t at = (i0 + i) * c_stride;
      for (size_t j = 0; j < nc; j++) c[at + j] = fx_gemm_out_one(acc[i][j], r ? r + at + j : 0, out);
    }
  }
}
