/* AArch64 NEON microkernel: 8 rows x 2 q-register columns = 16 accumulators of the 32 vector
 * registers. The main loop takes 4 k at a time: one 128-bit load of A per row (8 registers)
 * and 8 weight vectors, then each FMA picks its A scalar with a lane index (vfmaq_laneq_f32),
 * so there is no broadcast instruction on the critical path. A k tail of 1..3 steps uses
 * scalar-times-vector FMAs. Rows past mr read row 0 of A and are not stored. */
#if defined(__aarch64__)
#include <arm_neon.h>
#include "gemm.h"
#include "neon-8x8.h"

FX_NO_PRE_RA_SCHED
void fx_f32_gemm_8x8_neon(size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride,
                          const float *w, float *c, size_t c_stride, const float *r,
                          const fx_gemm_out *out) {
  const fx_gemm_out local = *out, *o = &local; /* a copy C's stores cannot alias */
  const float *a0 = a;
  const float *a1 = mr > 1 ? a0 + a_stride : a0;
  const float *a2 = mr > 2 ? a1 + a_stride : a0;
  const float *a3 = mr > 3 ? a2 + a_stride : a0;
  const float *a4 = mr > 4 ? a3 + a_stride : a0;
  const float *a5 = mr > 5 ? a4 + a_stride : a0;
  const float *a6 = mr > 6 ? a5 + a_stride : a0;
  const float *a7 = mr > 7 ? a6 + a_stride : a0;
  FX_NEON_8X8_START();
  w += 8;
  FX_NEON_8X8_K_LOOP(kc);
  FX_NEON_8X8_STORE();
}
#endif
