/* f32 indirect GEMM (IGEMM) microkernels: the direct convolution's inner loop.
 *
 * C[mr x nc] = out(bias + sum over ks taps t and kc channels k of A_t[i][k] * W[t*kc + k][:nc])
 * where A_t[i] is a pointer to kc contiguous floats: the NHWC input pixel that output row i
 * reads at tap t, or a shared row of zeros for a tap in the padding. The weights are the
 * GEMM's packed panels (gemm.h) with K = kh*kw*cin ordered (ky, kx, cin), so tap t's kc rows
 * are simply the t-th run of kc rows: one packed blob serves both im2col and direct conv, and
 * a kernel here must have the NR of the GEMM kernel whose panels it reads.
 *
 * `a` holds ks groups of MR pointers (the kernel's MR), a[t * MR + i]; the caller fills every
 * group completely (rows past mr may point anywhere readable, e.g. the zero row) and they are
 * not stored. `out` is the GEMM's output stage (gemm.h's fx_gemm_out, with its residual r). */
#ifndef FLEX_IGEMM_H
#define FLEX_IGEMM_H
#include <stddef.h>
#include "kernels/gemm/gemm.h"

#define FX_IGEMM_ARGS                                                                       \
  size_t mr, size_t nc, size_t kc, size_t ks, const float *const *a, const float *w, float *c, \
      size_t c_stride, const float *r, const fx_gemm_out *out
typedef void (*fx_igemm_ukernel_fn)(FX_IGEMM_ARGS);

typedef struct fx_igemm_config {
  const char *name; /* dtype-op-tile-isa, e.g. "f32-igemm-8x32-avx512f" */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  int mr, nr;
  fx_igemm_ukernel_fn fn;
} fx_igemm_config;

/* The variants of f32-igemm.inc (igemm_config.c). */
extern fx_isa_menu fx_igemm_menu;
/* The IGEMM kernel that reads the panels of GEMM kernel g (same ISA family, same NR), or NULL. */
const fx_igemm_config *fx_igemm_config_for(const fx_gemm_config *g);

#define FX_UKERNEL(isa, name, fn, mr, nr) void fn(FX_IGEMM_ARGS);
#include "f32-igemm.inc"
#undef FX_UKERNEL
#endif
