/* Winograd input/output transforms, one implementation per ISA
 * (f32-winograd-avx512f.c, -avx2.c, -generic.c), all built from transforms_2d.inc. Used by the
 * Winograd drivers in conv/. */
#ifndef FLEX_WG_KERNELS_H
#define FLEX_WG_KERNELS_H
#include <stddef.h>

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
typedef void (*fx_wg_input_fn)(const fx_wg_geom *g, const float *x, size_t t0, int tb, float *V,
                               size_t vs);
/* From M[xi * ms + i * cout_pad + c] into channels [0, cout) of y (pixel stride y_cs), adding
 * bias (may be NULL), clamping to [lo, hi]. */
typedef void (*fx_wg_output_fn)(const fx_wg_geom *g, const float *M, size_t ms, size_t t0, int tb,
                                const float *bias, float lo, float hi, float *y);

/* Row i of the filter transform of a GEMM panel's 3x3 weights (transforms_2d.inc). */
typedef void (*fx_wg_filter_row_fn)(int n, const float *gi, const float *G, int cin, int nr, const float *w,
                                    float *U, size_t us);

void fx_wg_filter_row_generic(int, const float *, const float *, int, int, const float *, float *, size_t);
void fx_wg_input_generic(const fx_wg_geom *, const float *, size_t, int, float *, size_t);
void fx_wg_output_generic(const fx_wg_geom *, const float *, size_t, size_t, int, const float *,
                          float, float, float *);
#if defined(__x86_64__)
void fx_wg_filter_row_avx2(int, const float *, const float *, int, int, const float *, float *, size_t);
void fx_wg_filter_row_avx512f(int, const float *, const float *, int, int, const float *, float *, size_t);
void fx_wg_input_avx2(const fx_wg_geom *, const float *, size_t, int, float *, size_t);
void fx_wg_output_avx2(const fx_wg_geom *, const float *, size_t, size_t, int, const float *,
                       float, float, float *);
void fx_wg_input_avx512f(const fx_wg_geom *, const float *, size_t, int, float *, size_t);
void fx_wg_output_avx512f(const fx_wg_geom *, const float *, size_t, size_t, int, const float *,
                          float, float, float *);
#endif

/* One ISA's transforms, chosen to match a GEMM kernel (conv/winograd.c). */
typedef struct {
  const char *isa;
  fx_wg_input_fn input;
  fx_wg_output_fn output;
  fx_wg_filter_row_fn filter_row;
} wg_isa;
struct fx_gemm_config;
const wg_isa *fx_wg_isa_for(const struct fx_gemm_config *uk);

/* The geometry of F(tile x tile, 3x3) from x [n, H, W, cin] to y [n, OH, OW, y_cs] (its channels
 * [0, cout)); returns the number of tiles, batch included. */
size_t fx_wg_geom_init(fx_wg_geom *g, int tile, const int *xs, const int *ys, int cin, int cout, int pad_top,
                       int pad_left);

static inline size_t pad16(int c) { return ((size_t)c + 15u) / 16u * 16u; }
static inline int tile_ok(int tile) { return tile == 4 || tile == 6; }
#endif
