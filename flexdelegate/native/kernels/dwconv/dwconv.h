/* DEPTHWISE_CONV_2D variants. fx_depthwise_f32 (kernels/ops/ops.h) dispatches to the variant chosen once
 * for this CPU; every variant has fx_depthwise_f32's signature and semantics (TFLite filter
 * layout [1, kh, kw, cin*mult], output channel oc = ic*mult + m, out-of-bounds taps skipped,
 * optional bias added after the tap sum, fused activation). */
#ifndef FLEX_DEPTHWISE_H
#define FLEX_DEPTHWISE_H
#include "kernels/ops/ops.h"

typedef void (*fx_dwconv_fn)(fx_pool *pool, const float *x, const fx_shape *xs, const float *filter,
                             const float *bias, int mult, const fx_window *w, float *y,
                             const fx_shape *ys, int act);

typedef struct {
  const char *name; /* dtype-op-isa, e.g. "f32-dwconv-avx512f" */
  fx_dwconv_fn fn;
} fx_dwconv_config;

/* The variant for this CPU, probed once (FLEXDELEGATE_ISA=scalar|avx2|avx512 narrows it). */
const fx_dwconv_config *fx_dwconv_config_get(void);
/* Every variant this CPU can run (index 0 = the portable scalar reference); NULL past the end. */
const fx_dwconv_config *fx_dwconv_config_at(int i);

/* The portable reference (plain C, any target). */
void fx_depthwise_f32_ref(fx_pool *pool, const float *x, const fx_shape *xs, const float *filter,
                          const float *bias, int mult, const fx_window *w, float *y,
                          const fx_shape *ys, int act);
#if defined(__x86_64__)
void fx_depthwise_f32_avx2(fx_pool *pool, const float *x, const fx_shape *xs, const float *filter,
                           const float *bias, int mult, const fx_window *w, float *y,
                           const fx_shape *ys, int act);
void fx_depthwise_f32_avx512f(fx_pool *pool, const float *x, const fx_shape *xs,
                              const float *filter, const float *bias, int mult,
                              const fx_window *w, float *y, const fx_shape *ys, int act);
#endif
#if defined(__aarch64__)
void fx_depthwise_f32_neon(fx_pool *pool, const float *x, const fx_shape *xs, const float *filter,
                           const float *bias, int mult, const fx_window *w, float *y,
                           const fx_shape *ys, int act);
#endif
#endif
