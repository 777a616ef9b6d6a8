/* Portable reference GEMM (scalar-4x4.h): readable, and what every SIMD variant is tested
 * against. */
#include "scalar-4x4.h"

void fx_qs8_gemm_4x4__scalar(FX_QS8_GEMM_ARGS) {
  const int8_t *rows[4];
  for (size_t i = 0; i < 4; i++) rows[i] = a + (i < mr ? i : 0) * a_stride;
  fx_s44 s;
  fx_s44_init(&s, mr, w, row_corr);
  fx_s44_run(&s, mr, kc, rows);
  fx_s44_store(&s, mr, nc, c, c_stride, o);
}
