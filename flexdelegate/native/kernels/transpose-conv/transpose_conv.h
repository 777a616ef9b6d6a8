/* TRANSPOSE_CONV (NHWC, TFLite float semantics) on the f32 GEMM microkernels (NOTES.md):
 *   y[b, iy*sh - pad_top + fy, ix*sw - pad_left + fx, oc] += x[b, iy, ix, ic] * f[oc, fy, fx, ic]
 * (targets outside the output dropped), then bias and the activation. */
#ifndef FLEX_TRANSPOSE_CONV_H
#define FLEX_TRANSPOSE_CONV_H
#include <stddef.h>
#include <stdint.h>
#include "kernels/gemm/gemm.h"
#include "kernels/quant/requant.h"

struct fx_pool;
struct fx_qs8_gemm_config;

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

/* int8 (qs8_transpose_conv.c): output pixels [m0, m1) (over batch * oh * ow), channel panels
 * [p0, p1) of y from x (input zero point zx) and the filter packed as a GEMM of K = kh * kw *
 * cin (quant/pack.h; `packed` pointing at panel p0, as fx_qs8_gemm_run's), bias and
 * requantization in the panels, output stage o: bit-identical to stock's int32 col2im sums.
 * 0, or -1 when the gather's row block cannot be allocated. */
int fx_tconv_qs8_run(const struct fx_qs8_gemm_config *g, const fx_tconv_geom *geo, const int8_t *x, int8_t zx,
                     const void *packed, int8_t *y, const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1);
#endif
