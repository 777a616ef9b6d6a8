/* Sigmoid and swish (x * sigmoid(x)) over arrays: the activations EfficientNet applies to
 * every conv output, so they run at arithmetic speed, not at the auto-vectoriser's. One
 * variant per ISA (f32-vsigmoid.inc), chosen once like the GEMM and depthwise tables
 * (FLEXDELEGATE_ISA narrows it); f32-vsigmoid-scalar.c is the portable reference the SIMD
 * variants are tested against.
 *
 * All variants: e = exp(-|x|) by n = round(-|x| / ln2), r = -|x| - n ln2 (two-part ln2),
 * e^r = 1 + r + r^2 q(r) with q a cubic fitted (weighted least squares, float32-evaluated) for
 * relative error < 1.7e-7 on |r| <= ln2/2 (kernels/ops/fastmath.h's fx_expf uses two more terms: 16%
 * slower for ~1 ulp less), 2^n applied exactly; then
 * f = e / (1 + e) and sigmoid = x > 0 ? 1 - f : f. Below -|x| = -87.3, e flushes to 0 (as
 * kernels/ops/fastmath.h's fx_expf does: sigmoid(-inf) = 0 exactly, as stock; AVX-512 goes through
 * the subnormals instead, as libm's expf would). NaN propagates. */
#ifndef FLEX_VSIGMOID_H
#define FLEX_VSIGMOID_H
#include <stddef.h>
#include "runtime/cpu.h"

#define FX_VSIGMOID_ARGS const float *x, float *y, size_t n, int swish
typedef void (*fx_vsigmoid_fn)(FX_VSIGMOID_ARGS);
typedef struct {
  const char *name; /* e.g. "f32-vsigmoid-avx512f" */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  fx_vsigmoid_fn fn;
} fx_vsigmoid_config;

/* The variants of f32-vsigmoid.inc (vsigmoid_config.c). */
extern fx_isa_menu fx_vsigmoid_menu;
/* y = sigmoid(x) (swish: x * sigmoid(x)); y may equal x. Runs the SIMD variant for this CPU
 * and returns 1, or returns 0 when there is none (the caller's portable loop, which the
 * compiler vectorises for the baseline ISA, e.g. NEON, does the work). */
int fx_vsigmoid(const float *x, float *y, size_t n, int swish);
/* The variant for this CPU. */
const fx_vsigmoid_config *fx_vsigmoid_config_get(void);
/* Every variant this CPU can run (index 0 = the portable reference); NULL past the end. */
const fx_vsigmoid_config *fx_vsigmoid_config_at(int i);

#define FX_UKERNEL(isa, name, fn) void fn(FX_VSIGMOID_ARGS);
#include "f32-vsigmoid.inc"
#undef FX_UKERNEL
#endif
