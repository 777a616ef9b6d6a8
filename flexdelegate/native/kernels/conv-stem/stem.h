/* f32 stem-conv microkernels: the first layer of image CNNs, a 3x3 conv over the 3 channels of
 * the raw image (MobileNets, EfficientNets: stride 2), reading the GEMM's packed panels.
 *
 * With cin = 3 a tap row of one output pixel is 9 contiguous floats of the NHWC input, and the
 * next pixel's starts xs = stride * 3 floats further: three row pointers and that stride address
 * every input a tile reads, so there is no im2col copy and no per-tap pointer table (IGEMM).
 *
 * C[i][:nc] = out(bias + sum over ky < 3, q < 9 of r_ky[i * xs + q] * W[ky * 9 + q][:nc]) for
 * the px output pixels i, W the GEMM panel (gemm.h: nr bias floats, then K = 27 rows of nr in
 * (ky, kx, cin) order); a kernel's NR is that of the GEMM kernel of its ISA family. Each r_ky
 * must have (px - 1) * xs + 9 readable floats; `out` is the GEMM's output stage with its
 * residual r (row stride c_stride). */
#ifndef FLEX_CONV_STEM_H
#define FLEX_CONV_STEM_H
#include <stddef.h>
#include "kernels/gemm/gemm.h"

/* Taps of a tap row (kw * cin) and of the window: the only K these kernels run. */
#define FX_STEM_ROW 9
#define FX_STEM_K 27

#define FX_STEM_ARGS                                                                            \
  size_t px, const float *r0, const float *r1, const float *r2, size_t xs, const float *w, size_t nc, \
      float *c, size_t c_stride, const float *r, const fx_gemm_out *out
typedef void (*fx_stem_ukernel_fn)(FX_STEM_ARGS);

typedef struct fx_stem_config {
  const char *name; /* dtype-op-tile-isa, e.g. "f32-conv-stem-6x16-avx2" */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  int mr, nr;       /* pixels per tile, columns per panel */
  fx_stem_ukernel_fn fn;
} fx_stem_config;

/* The variants of f32-conv-stem.inc (stem_config.c). */
extern fx_isa_menu fx_stem_menu;
/* The stem kernel that reads the panels of GEMM kernel g (same ISA family, same NR), or NULL. */
const fx_stem_config *fx_stem_config_for(const fx_gemm_config *g);

#define FX_UKERNEL(isa, name, fn, mr, nr) void fn(FX_STEM_ARGS);
#include "f32-conv-stem.inc"
#undef FX_UKERNEL
#endif
