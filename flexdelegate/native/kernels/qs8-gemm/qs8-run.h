/* Whole-layer drivers over the QS8 microkernels, single-threaded over a caller-chosen range
 * (the delegate splits output rows / pixels and panels across threads and budget slices). */
#ifndef FLEX_QS8_RUN_H
#define FLEX_QS8_RUN_H
#include "qs8-gemm.h"

#define FX_QS8_MR_MAX 8 /* the largest MR of qs8-gemm.inc's per-tile kernels */

/* Rows per gathered step of fx_qs8_gather_run (its buffer holds step x kc bytes) on a variant
 * with a whole-panel GEMM (gemm_rows) or a range kernel, over kc-byte rows and `panels` panels:
 * a multiple of MR (at least MR) whose rows and outputs fit in ~16 KB of L1 (a range kernel's
 * ~64 KB: it blocks them in L2 itself). Rows handed to the whole-panel GEMM directly are blocked
 * by A alone (panel_rows, qs8-gemm-run.c). */
static inline size_t fx_qs8_row_block(const fx_qs8_gemm_config *g, size_t kc, size_t panels) {
  const size_t mr = (size_t)g->mr, bytes = g->range ? 65536 : 16384;
  const size_t rows = bytes / (kc + panels * (size_t)g->nr) / mr * mr;
  return rows < mr ? mr : rows;
}

/* C[m][n] = out(A[m][kc] x panels [p0, p1)), `packed` pointing at panel p0 (the whole blob when
 * p0 is 0; a budget plan's streamed slice otherwise); row_factor != 0 adds row_factor * (row sum
 * of A) per row (QU8: fx_qu8_row_factor). o->rounding on every channel (the GEMM kernels have
 * no tail: requant.h). */
void fx_qs8_gemm_run(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a,
                     size_t a_stride, const void *packed, int8_t *c, size_t c_stride,
                     int32_t row_factor, const fx_qs8_out *o, size_t p0, size_t p1);
/* The same under o's whole rule: channels from o->tail_from on round under o->tail_rounding
 * (LiteRT's split8, requant.h), which costs the panels holding them (at most two) a second run,
 * a block of rows at a time through a small buffer. */
void fx_qs8_gemm_run_split(const fx_qs8_gemm_config *g, size_t m, size_t n, size_t kc, const int8_t *a,
                           size_t a_stride, const void *packed, int8_t *c, size_t c_stride, int32_t row_factor,
                           const fx_qs8_out *o, size_t p0, size_t p1);

/* Where gathered A rows come from: fill(geom, x, zx, row, count, rows) writes `count` A rows
 * (kc bytes each, back to back) of GEMM rows [row, row + count) from input x of a layer of
 * geometry geom (its own type), zx its zero point (the bytes of taps that read nothing). */
typedef struct {
  void (*fill)(const void *geom, const int8_t *x, int8_t zx, size_t row, size_t count, int8_t *rows);
  const void *geom;
  const int8_t *x;
  int8_t zx;
} fx_qs8_gather;
/* Rows [m0, m1) of C[.][n] (c_stride n) = out(A x panels [p0, p1)) as fx_qs8_gemm_run (split:
 * fx_qs8_gemm_run_split), the A rows gathered on the fly a block at a time (im2col): MR rows, or
 * a whole-panel or range kernel's row block. 0, or -1 when the block cannot be allocated. */
int fx_qs8_gather_run(const fx_qs8_gemm_config *g, size_t kc, size_t n, const fx_qs8_gather *src, const void *packed,
                      int8_t *y, int32_t row_factor, const fx_qs8_out *o, int split, size_t m0, size_t m1, size_t p0,
                      size_t p1);

/* An NHWC convolution: input [batch][h][w][cin], output [batch][oh][ow][cout], window
 * kh x kw, strides, dilations, top/left padding (bottom/right follow from the sizes). */
typedef struct {
  int batch, h, w, cin;
  int kh, kw, sh, sw, dh, dw, pt, pl;
  int oh, ow, cout;
} fx_qs8_conv_geom;

/* The output columns [*lo, *hi) whose window (dilation included) reads no padding column, so
 * their taps need no bounds tests (empty when every window touches the padding). */
static inline void fx_qs8_interior_cols(const fx_qs8_conv_geom *cg, int *lo, int *hi) {
  const int reach = cg->w - 1 - (cg->kw - 1) * cg->dw + cg->pl, first = (cg->pl + cg->sw - 1) / cg->sw;
  *hi = reach < 0 ? 0 : reach / cg->sw + 1 < cg->ow ? reach / cg->sw + 1 : cg->ow;
  *lo = first < *hi ? first : *hi;
}

/* The ways a convolution runs on these kernels (conv/choose.c fx_conv_choose_qs8_form picks
 * one per layer): GEMM, a pointwise conv whose input already is the GEMM's A (fx_qs8_gemm_run);
 * IM2COL, one flat K = kh*kw*cin that the driver gathers per tile of output pixels and runs
 * through the GEMM; IGEMM, K = kh*kw taps of cin channels read through an indirection buffer. */
enum { FX_QS8_CONV_GEMM = 0, FX_QS8_CONV_IM2COL = 1, FX_QS8_CONV_IGEMM = 2 };

/* The packing geometry of a convolution on variant g run in `form` (FX_QS8_CONV_*); pack with
 * it, and run fx_qs8_conv_run in the same form. A variant without an IGEMM kernel runs the
 * IGEMM form as im2col (and packs for that). */
fx_qs8_gemm_geom fx_qs8_conv_pack_geom(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form);

/* Output pixels [m0, m1) (over batch*oh*ow), channel panels [p0, p1) (`packed` pointing at panel
 * p0, as for fx_qs8_gemm_run), in `form`: through im2col tiles and the GEMM (FX_QS8_CONV_IM2COL),
 * else through the IGEMM with padding taps reading zero_row (cin bytes of the input zero point).
 * 0, or -1 when a huge window's scratch cannot be allocated. */
int fx_qs8_conv_run(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form, const int8_t *x,
                     const int8_t *zero_row, const void *packed, int8_t *y, int32_t row_factor,
                     const fx_qs8_out *o, size_t m0, size_t m1, size_t p0, size_t p1);

/* A fused curve on float outputs, in place: apply(act, y, n) (the delegate's fx_apply_act for
 * SIGMOID / SWISH / GELU; the kernels do not link the op kernels). */
typedef struct {
  void (*apply)(int act, float *y, size_t n);
  int act;
} fx_qs8_curve;

/* A hybrid layer (float activations the caller quantized to x: quant/dynamic.h) on a variant with
 * range_f32: output rows [m0, m1) x panels [p0, p1) of n channels (`packed` at panel p0) as
 * floats into y ([rows][n]) through o, whose rows (scales, zero points, residual) count from row
 * 0 of the layer. cg NULL: x is the GEMM's A, rows of k bytes (FULLY_CONNECTED, a pointwise
 * conv); else a conv in `form`, rows [m0, m1) within one image whose padding reads zx, its im2col
 * rows gathered (k unused). curve (NULL: none) is applied to each chunk of rows while it is in
 * cache (o->range then covers what it leaves). 0, or -1 when the im2col rows cannot be allocated. */
int fx_qs8_hybrid_run(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int form, const int8_t *x, int8_t zx,
                      size_t k, size_t n, const void *packed, float *y, const fx_qs8_f32_out *o,
                      const fx_qs8_curve *curve, size_t m0, size_t m1, size_t p0, size_t p1);
#endif
