/* Portable reference IGEMM (the direct-convolution twin of qs8-gemm-4x4-scalar, same panels):
 * per tap, 4 row pointers and that tap's kc rows of the panel. */
#include "../qs8-gemm/scalar-4x4.h"

void fx_qs8_igemm_4x4__scalar(FX_QS8_IGEMM_ARGS) {
  fx_s44 s;
  fx_s44_init(&s, mr, w, row_corr);
  for (size_t t = 0; t < ks; t++, a += 4) fx_s44_run(&s, mr, kc, a);
  fx_s44_store(&s, mr, nc, c, c_stride, o);
}
