/* TRANSPOSE_CONV (NHWC, TFLite float semantics) on the f32 GEMM microkernels (NOTES.md):
 *   y[b, iy*sh - pad_top + fy, ix*sw - pad_left + fx, oc] += x[b, iy, ix, ic] * f[oc, fy, fx, ic]
 * (targets outside the output dropped), then bias and the activation. */
#ifndef FLEX_TRANSPOSE_CONV_H
#define FLEX_TRANSPOSE_CONV_H
#include <stddef.h>
#include "kernels/gemm/gemm.h"

struct fx_pool;

typedef struct {
  int batch, ih, iw, cin, oh, ow, cout, kh, kw, stride_h, stride_w, pad_top, pad_left;
} fx_tconv_geom;

/* Floats of the filter packed for microkernel uk (NULL: this CPU's): per tap (fy, fx), the
 * [cin x cout] matrix as GEMM panels of uk->nr output channels. */
size_t fx_tconv_packed_floats(const fx_tconv_geom *g, const fx_gemm_config *uk);

/* y from x, the filter [cout, kh, kw, cin] and bias (NULL = 0), on the pool (NULL: inline);
 * the filter is packed into scratch (fx_tconv_packed_floats floats) first. */
void fx_tconv_f32(struct fx_pool *pool, const fx_tconv_geom *g, const fx_gemm_config *uk, const float *x,
                  const float *filter, const float *bias, float *y, float *scratch, int act);
#endif
