/* QS8 GEMM and IGEMM microkernels: int8 activations, int8 weights packed in panels of NR output
 * channels (quant/pack.h), int32 accumulation, per-channel requantization to int8 (quant/
 * requant.h), fused activation clamp.
 *
 *   GEMM   C[i][j] = out(bias'[j] + row_corr[i] + sum_k A[i][k] * W[k][j]), i < mr, j < nc
 *          A: mr rows of kc bytes, a_stride bytes apart (FULLY_CONNECTED, 1x1 convs, im2col).
 *   IGEMM  the same over ks taps: a holds ks groups of MR row pointers (MR = the kernel's),
 *          a[t*MR + i] -> kc bytes of row i's input at tap t; a tap in the padding points at
 *          a row of input zero-point bytes (the packed bias' zp*sum(w) term then cancels it).
 *          Rows past mr may point anywhere readable (they are not stored).
 * w points at one panel; c at the tile's first output byte, c_stride bytes between rows;
 * row_corr: mr int32 added before requantization (QU8's weight zero point), or NULL.
 * Kernels read A exactly (kc bytes per row and tap: no over-read) and write exactly nc bytes
 * per row. */
#ifndef FLEX_QS8_GEMM_H
#define FLEX_QS8_GEMM_H
#include <stddef.h>
#include <stdint.h>
#include "runtime/cpu.h"
#include <string.h>
#include "../quant/pack.h"
#include "../quant/requant.h"

typedef void (*fx_qs8_gemm_fn)(size_t mr, size_t nc, size_t kc, const int8_t *a, size_t a_stride,
                               const void *w, int8_t *c, size_t c_stride, const int32_t *row_corr,
                               const fx_qs8_out *o);
typedef void (*fx_qs8_igemm_fn)(size_t mr, size_t nc, size_t kc, size_t ks,
                                const int8_t *const *a, const void *w, int8_t *c,
                                size_t c_stride, const int32_t *row_corr, const fx_qs8_out *o);

/* An IGEMM over m rows (any count) of one panel, tile by tile: tile t's rows are m rows
 * t*MR.., its pointers a + t*ks*MR (as fx_qs8_igemm_fn's), its row corrections row_corr +
 * t*MR (NULL: none). The per-tile setup paid once. */
typedef void (*fx_qs8_igemm_tiles_fn)(size_t m, size_t nc, size_t kc, size_t ks, const int8_t *const *a,
                                      const void *w, int8_t *c, size_t c_stride, const int32_t *row_corr,
                                      const fx_qs8_out *o);

/* A GEMM over m rows (any count) of one panel, no row correction: the per-tile setup paid once. */
typedef void (*fx_qs8_gemm_rows_fn)(size_t m, size_t nc, size_t kc, const int8_t *a, size_t a_stride,
                                    const void *w, int8_t *c, size_t c_stride, const fx_qs8_out *o);

/* A GEMM over m rows (any count) x panels [p0, p1) of n channels (packed: panel p0, panels
 * panel_bytes apart), row_factor as fx_qs8_gemm_run's: the kernel blocks rows and panels itself. */
typedef void (*fx_qs8_gemm_range_fn)(size_t m, size_t n, size_t kc, const int8_t *a, size_t a_stride,
                                     const void *packed, size_t panel_bytes, int8_t *c, size_t c_stride,
                                     int32_t row_factor, const fx_qs8_out *o, size_t p0, size_t p1);

/* A hybrid layer's float output stage (its float activations quantized per row or per image,
 * quant/dynamic.h; its panels quant/pack.h's hybrid ones), in stock's float operations, each
 * rounded (no fused multiply-add): for row i of the call and channel c,
 *   y = min(max(float(acc - zp_i * wsum[c]) * (x_scale_i * w_scale[c]) + bias[c], lo), hi)
 * and with a residual r (a fused ADD): y = min(max(y + r[i][c], res_lo), res_hi). Row i's scale and
 * zero point are x_scale[i * x_step], x_zp[i * x_step] (x_step 0: one for all rows, a conv's image;
 * x_zp NULL: symmetric, zero points 0); w_scale and bias by absolute output channel.
 * The clamp keeps a NaN (stock's conv: min(max(y, lo), hi) in std::, which passes it), or with
 * nan_to_lo turns it into lo (stock's hybrid FC: tensor_utils' ReLU loops, max(lo, min(y, hi)),
 * with +-inf where the activation has no bound; NONE there is no clamp at all). */
typedef struct {
  const float *x_scale;
  const int32_t *x_zp;
  size_t x_step;
  const float *w_scale, *bias;
  float lo, hi;
  int nan_to_lo;
  const float *res; /* NULL: none; else res_stride floats between rows */
  size_t res_stride;
  float res_lo, res_hi;
  float *range; /* non-NULL: the least and greatest value stored, merged into range[0], range[1] */
} fx_qs8_f32_out;

/* The range kernel's hybrid form: C[m][n] floats through fx_qs8_f32_out, no row factor. */
typedef void (*fx_qs8_gemm_range_f32_fn)(size_t m, size_t n, size_t kc, const int8_t *a, size_t a_stride,
                                         const void *packed, size_t panel_bytes, float *c, size_t c_stride,
                                         const fx_qs8_f32_out *o, size_t p0, size_t p1);

/* The IGEMM's hybrid form: m rows (tiles of MR, their pointers as fx_qs8_igemm_tiles_fn's) of
 * panel p (w: that panel; its channels p * NR..) as floats into c (row 0 of the call, channel 0;
 * c_stride floats between rows) through o, whose rows count from row 0 of the call. */
typedef void (*fx_qs8_igemm_tiles_f32_fn)(size_t m, size_t n, size_t kc, size_t ks, const int8_t *const *a,
                                          const void *w, size_t p, float *c, size_t c_stride,
                                          const fx_qs8_f32_out *o);

typedef struct fx_qs8_gemm_config {
  const char *name;       /* "qs8-gemm-<tile>-<isa>" */
  const char *igemm_name; /* "qs8-igemm-<tile>-<isa>" */
  int mr, nr, kr, a_offset, kg_align;
  fx_qs8_gemm_fn gemm;           /* NULL: range only */
  fx_qs8_igemm_fn igemm;         /* NULL: a conv's IGEMM form runs as im2col */
  fx_qs8_gemm_rows_fn gemm_rows; /* NULL: the driver calls gemm per tile */
  fx_qs8_igemm_tiles_fn igemm_tiles; /* NULL: the driver calls igemm per tile */
  fx_qs8_gemm_range_fn range;    /* non-NULL: it runs every GEMM (rows, panels, row factor) */
  fx_qs8_gemm_range_f32_fn range_f32; /* non-NULL: hybrid layers can run on it (conv/choose.c) */
  fx_qs8_igemm_tiles_f32_fn igemm_tiles_f32; /* non-NULL: hybrid convs can run as IGEMM */
} fx_qs8_gemm_config;

/* The variants of qs8-gemm.inc (config.c). */
extern fx_isa_menu fx_qs8_gemm_menu;
/* The variant for this CPU, probed once (FLEXDELEGATE_ISA narrows it, as for the f32 GEMM). */
const fx_qs8_gemm_config *fx_qs8_gemm_config_get(void);
/* Every variant this CPU runs (index 0 = the scalar reference); NULL past the end. */
const fx_qs8_gemm_config *fx_qs8_gemm_config_at(int i);
/* The packing geometry of variant g for n channels, ks taps of kc channels. */
fx_qs8_gemm_geom fx_qs8_gemm_geom_of(const fx_qs8_gemm_config *g, int n, int ks, int kc);

/* The last n (1..7) bytes of a row in the low bytes of a little-endian word, the rest zero,
 * reading exactly those n bytes: two overlapping fixed-size loads. (A memcpy of n bytes into a
 * zeroed word is a library call and a store-forwarding stall per row per k-loop: a third of a
 * 3-channel stem's time.) */
static inline uint64_t fx_qs8_load_tail(const int8_t *p, size_t n) {
  if (n >= 4) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + n - 4, 4);
    return (uint64_t)lo | (uint64_t)hi << (8 * (n - 4));
  }
  if (n >= 2) {
    uint16_t lo, hi;
    memcpy(&lo, p, 2);
    memcpy(&hi, p + n - 2, 2);
    return (uint64_t)lo | (uint64_t)hi << (8 * (n - 2));
  }
  return (uint8_t)p[0];
}

#define FX_QS8_GEMM_ARGS                                                                    \
  size_t mr, size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w, int8_t *c, \
      size_t c_stride, const int32_t *row_corr, const fx_qs8_out *o
#define FX_QS8_IGEMM_ARGS                                                                    \
  size_t mr, size_t nc, size_t kc, size_t ks, const int8_t *const *a, const void *w, int8_t *c, \
      size_t c_stride, const int32_t *row_corr, const fx_qs8_out *o

#define FX_QS8_GEMM_ROWS_ARGS                                                              \
  size_t m, size_t nc, size_t kc, const int8_t *a, size_t a_stride, const void *w, int8_t *c, \
      size_t c_stride, const fx_qs8_out *o
#define FX_QS8_IGEMM_TILES_ARGS                                                                   \
  size_t m, size_t nc, size_t kc, size_t ks, const int8_t *const *a, const void *w, int8_t *c,     \
      size_t c_stride, const int32_t *row_corr, const fx_qs8_out *o
#define FX_QS8_GEMM_RANGE_ARGS                                                                       \
  size_t m, size_t n, size_t kc, const int8_t *a, size_t a_stride, const void *packed, size_t panel_bytes, \
      int8_t *c, size_t c_stride, int32_t row_factor, const fx_qs8_out *o, size_t p0, size_t p1
#define FX_QS8_GEMM_RANGE_F32_ARGS                                                                 \
  size_t m, size_t n, size_t kc, const int8_t *a, size_t a_stride, const void *packed, size_t panel_bytes, \
      float *c, size_t c_stride, const fx_qs8_f32_out *o, size_t p0, size_t p1
#define FX_QS8_IGEMM_TILES_F32_ARGS                                                                   \
  size_t m, size_t n, size_t kc, size_t ks, const int8_t *const *a, const void *w, size_t p, float *c, \
      size_t c_stride, const fx_qs8_f32_out *o
#if defined(__x86_64__)
void fx_qs8_gemm_rows_3x8c8__avx2(FX_QS8_GEMM_ROWS_ARGS);
void fx_qs8_gemm_rows_8x16c8__avx512vnni(FX_QS8_GEMM_ROWS_ARGS);
void fx_qs8_igemm_tiles_8x16c8__avx512vnni(FX_QS8_IGEMM_TILES_ARGS);
void fx_qs8_gemm_range_f32_8x16c8__avx512vnni(FX_QS8_GEMM_RANGE_F32_ARGS);
void fx_qs8_igemm_tiles_f32_8x16c8__avx512vnni(FX_QS8_IGEMM_TILES_F32_ARGS);
void fx_qs8_gemm_range_32x32c4__amx(FX_QS8_GEMM_RANGE_ARGS);
void fx_qs8_gemm_range_f32_32x32c4__amx(FX_QS8_GEMM_RANGE_F32_ARGS);
#endif

/* The per-tile kernels of the variants that have them (tiled 1), and NULL for the others. */
#define FX_QS8_TILED_1(name, args) void name(args);
#define FX_QS8_TILED_0(name, args)
#define FX_QS8_GEMM(isa, tile, suffix, MR, NR, KR, AOFF, KGA, TILED, ROWS, TILES, RANGE, RANGE_F32, TILES_F32) \
  FX_QS8_TILED_##TILED(fx_qs8_gemm_##tile##__##suffix, FX_QS8_GEMM_ARGS)                \
  FX_QS8_TILED_##TILED(fx_qs8_igemm_##tile##__##suffix, FX_QS8_IGEMM_ARGS)
#include "qs8-gemm.inc"
#undef FX_QS8_GEMM
#undef FX_QS8_TILED_1
#undef FX_QS8_TILED_0
#endif
