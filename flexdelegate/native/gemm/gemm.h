/* f32 GEMM microkernels: C[mr x nc] = clamp(bias + A[mr x kc] * W[kc x nc], lo, hi).
 * W is packed per panel of NR output columns: NR bias values, then kc rows of NR weights
 * (zero-padded past N), which is what every microkernel reads linearly. */
#ifndef FLEX_GEMM_H
#define FLEX_GEMM_H
#include <stddef.h>

typedef void (*fx_gemm_ukernel_fn)(size_t mr, size_t nc, size_t kc, const float *a,
                                   size_t a_stride, const float *w, float *c, size_t c_stride,
                                   float lo, float hi);

typedef struct fx_gemm_config {
  const char *name; /* dtype-op-tile-isa, e.g. "f32-gemm-8x32-avx512f" */
  int mr, nr;
  fx_gemm_ukernel_fn fn;
} fx_gemm_config;

/* The kernel for this CPU, probed once (FLEXDELEGATE_ISA=scalar|avx2|avx512|neon narrows it). */
const fx_gemm_config *fx_gemm_config_get(void);
/* Every kernel this CPU can run (index 0 = scalar reference); NULL past the end. */
const fx_gemm_config *fx_gemm_config_at(int i);

void fx_f32_gemm_4x8_scalar(size_t, size_t, size_t, const float *, size_t, const float *, float *,
                            size_t, float, float);
#if defined(__x86_64__)
void fx_f32_gemm_6x16_avx2(size_t, size_t, size_t, const float *, size_t, const float *, float *,
                           size_t, float, float);
void fx_f32_gemm_8x32_avx512f(size_t, size_t, size_t, const float *, size_t, const float *,
                              float *, size_t, float, float);
#endif
#if defined(__aarch64__)
void fx_f32_gemm_8x8_neon(size_t, size_t, size_t, const float *, size_t, const float *, float *,
                          size_t, float, float);
#endif

/* Packs W ([n][k] row-major, TFLite's conv/FC layout) and bias (NULL = 0) for a kernel with
 * NR columns per panel into dst (fx_gemm_packed_floats() floats). */
size_t fx_gemm_packed_floats(int n, int k, int nr);
void fx_gemm_pack(int n, int k, int nr, const float *w, const float *bias, float *dst);
#endif
