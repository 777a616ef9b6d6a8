/* DEPTHWISE_CONV_2D variants. fx_depthwise_f32 (kernels/ops/ops.h) dispatches to the variant chosen once
 * for this CPU; every variant has fx_depthwise_f32's signature and semantics (TFLite filter
 * layout [1, kh, kw, cin*mult], output channel oc = ic*mult + m, out-of-bounds taps skipped,
 * optional bias added after the tap sum, fused activation). */
#ifndef FLEX_DEPTHWISE_H
#define FLEX_DEPTHWISE_H
#include "kernels/ops/ops.h"
#include "runtime/cpu.h"

#define FX_DWCONV_ARGS                                                                       \
  fx_pool *pool, const float *x, const fx_shape *xs, const float *filter, const float *bias, int mult, \
      const fx_window *w, float *y, const fx_shape *ys, int act
typedef void (*fx_dwconv_fn)(FX_DWCONV_ARGS);

typedef struct {
  const char *name; /* dtype-op-isa, e.g. "f32-dwconv-avx512f" */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  fx_dwconv_fn fn;
} fx_dwconv_config;

/* The variants of f32-dwconv.inc (dwconv_config.c). */
extern fx_isa_menu fx_dwconv_menu;
/* The variant for this CPU, probed once (FLEXDELEGATE_ISA=scalar|avx2|avx512 narrows it). */
const fx_dwconv_config *fx_dwconv_config_get(void);
/* Every variant this CPU can run (index 0 = the portable scalar reference); NULL past the end. */
const fx_dwconv_config *fx_dwconv_config_at(int i);

#define FX_UKERNEL(isa, name, fn) void fn(FX_DWCONV_ARGS);
#include "f32-dwconv.inc"
#undef FX_UKERNEL
#endif
