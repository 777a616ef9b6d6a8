/* Winograd F(m x m, 3 x 3) convolution, stride 1, no dilation, NHWC, FP32: m = 4 (6x6 input
 * tiles, points 0, +-1, +-2, inf) or m = 6 (8x8 tiles, points 0, +-1, +-2, +-1/2, inf).
 *
 *   packed = fx_winograd_pack(...)          once (deterministic: a pure function of its
 *                                           arguments, so it can live in the weight cache)
 *   fx_winograd_run(...)                    per invoke, with fx_winograd_scratch_bytes() of
 *                                           scratch
 *
 * Per block of output tiles (per thread): input transform V = B^T d B of every tile into
 * scratch, then for each of the (m+2)^2 transform points one GEMM [tiles x cin] x [cin x cout]
 * with the GEMM microkernel of fx_gemm_config_get() (weights in its packed panel layout), then
 * the output transform A^T M A + bias + clamp into y (partial tiles at the right/bottom edges
 * are clipped). Padding: any pad_top/pad_left >= 0 (SAME, VALID or explicit); the output
 * size is taken from ys, positions outside the input read as zeros. Other tile sizes: packed
 * size and scratch 0, pack and run do nothing.
 *
 * Packed weights are (m+2)^2 / 9 times the 3x3 weights: 4x for F(4,3), 7.1x for F(6,3). */
#ifndef FLEX_WINOGRAD_H
#define FLEX_WINOGRAD_H
#include <stddef.h>
#include "gemm/gemm.h"
#include "ops/ops.h"

/* Floats of the packed filter: (tile+2)^2 GEMM-packed matrices (k = cin, n = cout, NR = nr,
 * zero bias row), point after point. */
size_t fx_winograd_packed_floats(int tile, int cout, int cin, int nr);
/* w: [cout][3][3][cin] (TFLite CONV_2D layout). nr must be the NR of the GEMM config the run
 * will use (fx_gemm_config_get()->nr). */
void fx_winograd_pack(int tile, int cout, int cin, int nr, const float *w, float *dst);

/* Scratch for `threads` threads (independent of the spatial size). */
size_t fx_winograd_scratch_bytes(int tile, int cout, int cin, int threads);

/* x: xs = [n, h, w, cin]; y: ys = [n, oh, ow, cout]; bias may be NULL; act as in ops.h. */
void fx_winograd_run(fx_pool *pool, int tile, const float *packed, int cout, int cin,
                     const float *bias, const float *x, const fx_shape *xs, int pad_top,
                     int pad_left, float *y, const fx_shape *ys, float *scratch, int act);

/* The same with an explicit GEMM config (tests and benchmarks run every kernel the CPU has;
 * `packed` must have been packed with uk->nr). The transforms use the ISA of uk. */
size_t fx_winograd_scratch_bytes_with(const fx_gemm_config *uk, int tile, int cout, int cin,
                                      int threads);
void fx_winograd_run_with(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *packed,
                          int cout, int cin, const float *bias, const float *x, const fx_shape *xs,
                          int pad_top, int pad_left, float *y, const fx_shape *ys, float *scratch,
                          int act);
#endif
