/* f32 GEMM microkernels: C[mr x nc] = out(bias + A[mr x kc] * W[kc x nc]).
 * W is packed per panel of NR output columns: NR bias values, then kc rows of NR weights
 * (zero-padded past N), which is what every microkernel reads linearly. */
#ifndef FLEX_GEMM_H
#define FLEX_GEMM_H
#include <stddef.h>
#include "runtime/cpu.h"

/* The output stage a microkernel applies to its tile before storing it, so that a layer's
 * epilogue costs no second pass over its output (a residual read while the tile is in
 * registers, not a 3 MB sweep of ResNet-50's 56x56 maps from L3 afterwards):
 *   v = clamp(bias + sum, lo, hi)               the layer's own activation
 *   v = clamp(v + r[i][j], rlo, rhi)            a fused residual ADD (r != NULL, C's stride) */
typedef struct fx_gemm_out {
  float lo, hi;
  float rlo, rhi;
} fx_gemm_out;

/* The output stage of a plain layer: clamp to [lo, hi]. */
static inline fx_gemm_out fx_gemm_out_clamp(float lo, float hi) {
  fx_gemm_out o = {lo, hi, lo, hi};
  return o;
}

/* How far ahead the x86 kernels prefetch the weights they stream (in floats: 8 KB). A big
 * layer's weights come from DRAM (ResNet-50's 100 MB do not fit in L3) and the hardware
 * prefetchers restart at every 4 KB page; measured on ResNet-50's 7x7 stage (in the model,
 * AVX-512): 1.45 ms -> 1.22 ms per 3x3 layer, 4 KB and 16 KB ahead did no better. */
#define FX_PREFETCH_FLOATS 2048

/* The output stage of one value (the scalar kernels' and the reference's); rv = its residual or NULL. */
static inline float fx_gemm_out_one(float v, const float *rv, const fx_gemm_out *o) {
  v = v < o->lo ? o->lo : v;
  v = v > o->hi ? o->hi : v;
  if (!rv) return v;
  v += *rv;
  v = v < o->rlo ? o->rlo : v;
  return v > o->rhi ? o->rhi : v;
}

#define FX_GEMM_ARGS                                                                        \
  size_t mr, size_t nc, size_t kc, const float *a, size_t a_stride, const float *w, float *c, \
      size_t c_stride, const float *r, const fx_gemm_out *o
typedef void (*fx_gemm_ukernel_fn)(FX_GEMM_ARGS);

typedef struct fx_gemm_config {
  const char *name; /* dtype-op-tile-isa, e.g. "f32-gemm-8x32-avx512f" */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  int mr, nr;
  fx_gemm_ukernel_fn fn;
} fx_gemm_config;

/* The variants of f32-gemm.inc (gemm_config.c). */
extern fx_isa_menu fx_gemm_menu;
/* The kernel for this CPU, probed once (FLEXDELEGATE_ISA=scalar|avx2|avx512|neon narrows it). */
const fx_gemm_config *fx_gemm_config_get(void);
/* Every kernel this CPU can run (index 0 = scalar reference); NULL past the end. */
const fx_gemm_config *fx_gemm_config_at(int i);

#define FX_UKERNEL(isa, name, fn, mr, nr) void fn(FX_GEMM_ARGS);
#include "f32-gemm.inc"
#undef FX_UKERNEL

/* Packs W ([n][k] row-major, TFLite's conv/FC layout) and bias (NULL = 0) for a kernel with
 * NR columns per panel into dst (fx_gemm_packed_floats() floats). */
size_t fx_gemm_packed_floats(int n, int k, int nr);
void fx_gemm_pack(int n, int k, int nr, const float *w, const float *bias, float *dst);
#endif
