/* Winograd F(m x m, 3 x 3) convolution, stride 1, no dilation, NHWC, FP32: m = 4 (6x6 input
 * tiles, points 0, +-1, +-2, inf) or m = 6 (8x8 tiles, points 0, +-1, +-2, +-1/2, inf).
 *
 *   packed = fx_winograd_pack(...)          once (deterministic: a pure function of its
 *                                           arguments, so it can live in the weight cache)
 *   fx_winograd_run_panels(...)             per invoke (all panels, or a slice of them),
 *                                           with fx_winograd_scratch_bytes() of scratch
 *
 * Per block of output tiles (per thread): input transform V = B^T d B of every tile into
 * scratch, then for each of the (m+2)^2 transform points one GEMM [tiles x cin] x [cin x cout]
 * with the GEMM microkernel of fx_gemm_config_get() (weights in its packed panel layout), then
 * the output transform A^T M A + bias + clamp into y (partial tiles at the right/bottom edges
 * are clipped). Padding: any pad_top/pad_left >= 0 (SAME, VALID or explicit); the output
 * size is taken from ys, positions outside the input read as zeros. Other tile sizes: packed
 * size and scratch 0, pack and run do nothing.
 *
 * Packed weights are (m+2)^2 / 9 times the 3x3 weights: 4x for F(4,3), 7.1x for F(6,3). They
 * are panel-major: for each panel of NR output channels, its (m+2)^2 per-point GEMM panels one
 * after the other, so the weights of any run of panels are one contiguous byte range (a budget
 * plan streams them as a slice and runs fx_winograd_run_panels on it). */
#ifndef FLEX_WINOGRAD_H
#define FLEX_WINOGRAD_H
#include <stddef.h>
#include "kernels/gemm/gemm.h"
#include "kernels/ops/ops.h"

/* Floats of the packed filter: ceil(cout / nr) panels of fx_winograd_panel_floats each. */
size_t fx_winograd_packed_floats(int tile, int cout, int cin, int nr);
/* Floats of one panel: (tile+2)^2 GEMM panels (a zero bias row, then cin rows, nr wide). */
size_t fx_winograd_panel_floats(int tile, int cin, int nr);
/* w: [cout][3][3][cin] (TFLite CONV_2D layout). nr must be the NR of the GEMM config the run
 * will use (fx_gemm_config_get()->nr). */
void fx_winograd_pack(int tile, int cout, int cin, int nr, const float *w, float *dst);

/* Scratch for `threads` threads (independent of the spatial size). */
size_t fx_winograd_scratch_bytes(int tile, int cout, int cin, int threads);

/* The same for an explicit GEMM config (tests and benchmarks run every kernel the CPU has). */
size_t fx_winograd_scratch_bytes_with(const fx_gemm_config *uk, int tile, int cout, int cin,
                                      int threads);

/* x: xs = [n, h, w, cin]; y: ys = [n, oh, ow, cout]; bias may be NULL; act as in ops.h. Runs
 * the output channels of panels [pan0, pan1) (all: 0, ceil(cout / uk->nr)) into their columns
 * of y, with `packed` pointing at panel pan0 (e.g. a slice streamed on its own, packed with
 * uk->nr); the input transform is redone per call, the scratch is the whole convolution's. The
 * transforms use the ISA of uk. */
void fx_winograd_run_panels(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *packed,
                            int pan0, int pan1, int cout, int cin, const float *bias, const float *x,
                            const fx_shape *xs, int pad_top, int pad_left, float *y, const fx_shape *ys,
                            float *scratch, int act);

/* Winograd from the GEMM panels themselves (winograd_rt.c): `panels` = all of a 3x3 conv's
 * fx_gemm_pack panels for uk (K = 9 * cin in (ky, kx, cin) order), filters transformed per
 * invoke; stride 1, no dilation; x, y, pads, bias and act as above. Scratch: the whole
 * input transform plus per-thread buffers, fx_winograd_rt_scratch_bytes() for the run's
 * tiles (batch * ceil(oh / tile) * ceil(ow / tile)). */
size_t fx_winograd_rt_scratch_bytes(const fx_gemm_config *uk, int tile, int cin, size_t tiles, int threads);
/* Output channels of panels [pan0, pan1) only, `panels` pointing at panel pan0 (a budget
 * plan's slot); the input is transformed again for each such call. */
void fx_winograd_rt_run_panels(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *panels, int pan0,
                               int pan1, int cout, int cin, const float *bias, const float *x, const fx_shape *xs,
                               int pad_top, int pad_left, float *y, const fx_shape *ys, float *scratch, int act);
void fx_winograd_rt_run(const fx_gemm_config *uk, fx_pool *pool, int tile, const float *panels, int cout, int cin,
                        const float *bias, const float *x, const fx_shape *xs, int pad_top, int pad_left, float *y,
                        const fx_shape *ys, float *scratch, int act);
#endif
