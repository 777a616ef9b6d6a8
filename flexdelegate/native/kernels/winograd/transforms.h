/* Winograd input/output transforms, one implementation per ISA
 * (f32-winograd-avx512f.c, -avx2.c, -generic.c), all built from transforms_2d.inc. Used by the
 * Winograd drivers in conv/. */
#ifndef FLEX_WG_KERNELS_H
#define FLEX_WG_KERNELS_H
#include <stddef.h>
#include "runtime/cpu.h"

typedef struct {
  int m, n;                 /* output tile m x m, input tile n x n, n = m + 2 */
  int H, W, cin, OH, OW;
  int cout;                 /* channels computed (all, or a slice of panels) */
  int y_cs;                 /* channels per pixel of y (all of them: a slice writes its own) */
  int pad_top, pad_left;
  int tiles_h, tiles_w;     /* tiles per image */
  size_t cin_pad, cout_pad; /* row strides of V and M, multiples of 16 */
} fx_wg_geom;

/* Tiles [t0, t0 + tb) (tile t: image t / (tiles_h*tiles_w), then row-major) into
 * V[xi * vs + i * cin_pad + c], xi = transform point (row-major over n x n), i = t - t0. */
#define FX_WG_INPUT_ARGS const fx_wg_geom *g, const float *x, size_t t0, int tb, float *V, size_t vs
/* From M[xi * ms + i * cout_pad + c] into channels [0, cout) of y (pixel stride y_cs), adding
 * bias (may be NULL), clamping to [lo, hi]. */
#define FX_WG_OUTPUT_ARGS                                                                        \
  const fx_wg_geom *g, const float *M, size_t ms, size_t t0, int tb, const float *bias, float lo, float hi, \
      float *y
/* Row i of the filter transform of a GEMM panel's 3x3 weights (transforms_2d.inc). */
#define FX_WG_FILTER_ROW_ARGS int n, const float *gi, const float *G, int cin, int nr, const float *w, float *U, size_t us

/* One ISA family's transforms (f32-winograd.inc), chosen to match a GEMM kernel. */
typedef struct {
  const char *name;
  int isa; /* its ISA family (runtime/cpu.h FX_ISA_*) */
  void (*input)(FX_WG_INPUT_ARGS);
  void (*output)(FX_WG_OUTPUT_ARGS);
  void (*filter_row)(FX_WG_FILTER_ROW_ARGS);
} fx_wg_transforms;

/* The variants of f32-winograd.inc (winograd_config.c). */
extern fx_isa_menu fx_wg_menu;
/* The transforms in the ISA family of GEMM kernel uk (so FLEXDELEGATE_ISA narrows both), or the
 * generic ones where that family has none of its own. */
struct fx_gemm_config;
const fx_wg_transforms *fx_wg_transforms_for(const struct fx_gemm_config *uk);

#define FX_UKERNEL(isa, name, sfx)                  \
  void fx_wg_input_##sfx(FX_WG_INPUT_ARGS);         \
  void fx_wg_output_##sfx(FX_WG_OUTPUT_ARGS);       \
  void fx_wg_filter_row_##sfx(FX_WG_FILTER_ROW_ARGS);
#include "f32-winograd.inc"
#undef FX_UKERNEL

/* The geometry of F(tile x tile, 3x3) from x [n, H, W, cin] to y [n, OH, OW, y_cs] (its channels
 * [0, cout)); returns the number of tiles, batch included. */
size_t fx_wg_geom_init(fx_wg_geom *g, int tile, const int *xs, const int *ys, int cin, int cout, int pad_top,
                       int pad_left);

static inline size_t pad16(int c) { return ((size_t)c + 15u) / 16u * 16u; }
static inline int tile_ok(int tile) { return tile == 4 || tile == 6; }
#endif
