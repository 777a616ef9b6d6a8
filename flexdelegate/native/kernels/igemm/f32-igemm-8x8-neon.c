/* AArch64 NEON IGEMM microkernel, the direct-conv twin of f32-gemm-8x8-neon (same 8-column
 * panels, same k loop from neon-8x8.h): per tap it reloads the 8 row pointers and runs the
 * GEMM's k loop over the tap's kc channels; the weights stream on linearly across taps. */
#if defined(__aarch64__)
#include <arm_neon.h>
#include "igemm.h"
#include "kernels/gemm/neon-8x8.h"

FX_NO_PRE_RA_SCHED
void fx_f32_igemm_8x8_neon(FX_IGEMM_ARGS) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  FX_NEON_8X8_START();
  w += 8;
  for (size_t t = 0; t < ks; t++, a += 8) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    const float *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
    FX_NEON_8X8_K_LOOP(kc);
  }
  FX_NEON_8X8_STORE();
}
#endif
