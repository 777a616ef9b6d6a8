/* Integer (int8 QS8 / uint8 QU8) kernels of the ops around the convolutions, each bit-exact with
 * the stock TFLite build in use (NOTES.md: the facts per op and runtime, how each was found).
 *
 * Every op is a prepare function, which takes TFLite's quantization parameters (float scales,
 * zero points, options), computes what stock computes at Prepare (multipliers, tables), and
 * returns -1 where stock would refuse the model or where these kernels do not reproduce it (the
 * delegate leaves that node to stock); and a run function over a range of the output, so the
 * caller can split an op across threads: the result of any split is the same.
 *
 * `stock` names the arithmetic of the runtime in use (quant_rounding.detect() finds it):
 * FLEX_STOCK_PORTABLE (tflite-runtime 2.14: TFLite's portable loops) or FLEX_STOCK_NEON
 * (ai-edge-litert 2.3 on x86: the NEON loops through NEON_2_SSE, whole vector blocks from the
 * start of each loop, the rest portable). Data are the stored bytes (int8, or uint8 when `u8`), dense, row-major.
 *
 * The vectorizable inner loops are microkernels with one variant per ISA (qs8-ops.inc); the
 * scalar variant is the reference the others are tested against (ref.h has its per-element
 * arithmetic). */
#ifndef FLEX_QS8_OPS_H
#define FLEX_QS8_OPS_H
#include <stddef.h>
#include <stdint.h>
#include "runtime/cpu.h"
#include "ref.h"

#define FX_QS8_MAX_RANK 6

/* ---- microkernels (one variant per ISA family, qs8-ops.inc; names "qs8-ops-<isa>") ---- */
typedef struct fx_qs8_ops_config {
  const char *name;
  /* y[i] = t[x[i]] over bytes (x's bits as the index: int8 -1 is entry 255) */
  void (*lut)(size_t n, const uint8_t *x, const uint8_t *t, uint8_t *y);
  /* y[i] = add(a[i * a_step], b[i]) in one form (FX_ADD_*); a_step 0 broadcasts a[0] */
  void (*add)(size_t n, const void *a, size_t a_step, const void *b, void *y,
              const fx_qs8_add_params *p, int form);
  void (*mul)(size_t n, const void *a, size_t a_step, const void *b, void *y,
              const fx_qs8_mul_params *p, int form);
  /* acc[j] += sum_i x[i * stride + j] for i < k, j < c (int8 or uint8) */
  void (*sum_rows)(size_t c, size_t k, const void *x, size_t stride, int u8, int32_t *acc);
  /* float -> int8 / uint8 (p->u8) QUANTIZE, y[i] = fxq_quantize_one(x[i], p, form) */
  void (*quantize)(size_t n, const float *x, void *y, const fx_qs8_quant_params *p, int form);
} fx_qs8_ops_config;

#define FX_QS8_OPS(isa, name, lut, binary, quant, sums)                                      \
  void fx_qs8_lut__##lut(size_t n, const uint8_t *x, const uint8_t *t, uint8_t *y);             \
  void fx_qs8_add__##binary(size_t n, const void *a, size_t a_step, const void *b, void *y,     \
                            const fx_qs8_add_params *p, int form);                             \
  void fx_qs8_mul__##binary(size_t n, const void *a, size_t a_step, const void *b, void *y,     \
                            const fx_qs8_mul_params *p, int form);                             \
  void fx_qs8_sum_rows__##sums(size_t c, size_t k, const void *x, size_t stride, int u8,        \
                               int32_t *acc);                                                  \
  void fx_qs8_quantize__##quant(size_t n, const float *x, void *y, const fx_qs8_quant_params *p, \
                                int form);
#include "qs8-ops.inc"
#undef FX_QS8_OPS

#if defined(__x86_64__)
/* The AVX2 ADD / MUL in their exact integer forms only (no float form): where the AVX-512 kernels
 * leave a call, they have already tried or refused the float form. */
void fx_qs8_add_exact__avx2(size_t n, const void *a, size_t a_step, const void *b, void *y,
                            const fx_qs8_add_params *p, int form);
void fx_qs8_mul_exact__avx2(size_t n, const void *a, size_t a_step, const void *b, void *y,
                            const fx_qs8_mul_params *p, int form);
#endif

/* The variants of qs8-ops.inc (config.c). */
extern fx_isa_menu fx_qs8_ops_menu;
const fx_qs8_ops_config *fx_qs8_ops_config_get(void);
const fx_qs8_ops_config *fx_qs8_ops_config_at(int i);

/* ---- shapes ---- */
typedef struct { int rank; int d[FX_QS8_MAX_RANK]; } fx_qs8_shape;
size_t fx_qs8_numel(const fx_qs8_shape *s);

/* TFLite's CalculateActivationRangeQuantized for act NONE/RELU/RELU_N1_TO_1/RELU6 (0..3) in the
 * stored type; -1 for another act or where stock refuses the model. */
int fx_qs8_act_range_of(int act, float scale, int32_t zp, int u8, int32_t *lo, int32_t *hi);

/* ---- table ops: output byte = table[input byte] ---- */
/* Two tables where stock's NEON loop and its tail differ: elements below floor(n/block)*block
 * (n the tensor's size) read t[0], the others t[1]; block 0: t[0] everywhere. */
typedef struct { uint8_t t[2][256]; int32_t block; } fx_qs8_lut_op;

/* QUANTIZE int8/uint8 -> int8/uint8 (a rescale: MultiplyByQuantizedMultiplier of x - z_in). */
int fx_qs8_requantize_prepare(int in_u8, float s_in, int32_t z_in, int out_u8, float s_out,
                              int32_t z_out, int stock, fx_qs8_lut_op *op);
/* RELU (lo 0, hi +inf), RELU6 (0, 6), RELU_N1_TO_1 (-1, 1), RELU_0_TO_1 (0, 1): requantized
 * input clamped to the output's image of [lo, hi] (TFLite's QuantizedReluX). */
enum { FX_QS8_RELU = 0, FX_QS8_RELU6 = 1, FX_QS8_RELU_N1_TO_1 = 2, FX_QS8_RELU_0_TO_1 = 3 };
int fx_qs8_relu_prepare(int kind, int u8, float s_in, int32_t z_in, float s_out, int32_t z_out,
                        fx_qs8_lut_op *op);
int fx_qs8_leaky_relu_prepare(int u8, float alpha, float s_in, int32_t z_in, float s_out,
                              int32_t z_out, fx_qs8_lut_op *op);
int fx_qs8_hard_swish_prepare(int u8, float s_in, int32_t z_in, float s_out, int32_t z_out,
                              fx_qs8_lut_op *op);
/* LOGISTIC (output scale must be 1/256, as stock checks), TANH, GELU (approximate: tanh form). */
enum { FX_QS8_LOGISTIC = 0, FX_QS8_TANH = 1, FX_QS8_GELU = 2, FX_QS8_GELU_TANH = 3 };
int fx_qs8_curve_prepare(int kind, int u8, float s_in, int32_t z_in, float s_out, int32_t z_out,
                         fx_qs8_lut_op *op);
/* One uint8 CONCATENATION input whose scale or zero point differs from the output's. */
int fx_qs8_concat_requant_prepare(float s_in, int32_t z_in, float s_out, int32_t z_out,
                                  fx_qs8_lut_op *op);
/* Elements [e0, e1) of an n-element tensor. */
void fx_qs8_lut_run(const fx_qs8_ops_config *v, const fx_qs8_lut_op *op, size_t n,
                    const void *x, void *y, size_t e0, size_t e1);

/* ---- ADD / SUB / MUL with broadcasting ---- */
/* How stock walks a broadcast (ProcessBroadcastShapes / BinaryBroadcastFiveFold): kind
 * FX_BC_NONE (equal shapes: one element-wise loop), FX_BC_FIVEFOLD (loops of y4 = d[4] elements,
 * or, when d[4] == 1, scalar-broadcast loops of d[3]; `swap` when the second input is the one
 * broadcast fastest) or FX_BC_GENERIC (an element at a time). */
enum { FX_BC_NONE = 0, FX_BC_FIVEFOLD = 1, FX_BC_GENERIC = 2 };
typedef struct {
  int kind, swap;
  int64_t d[5];
  fx_qs8_shape a, b, out; /* extended to the output's rank */
} fx_qs8_bcast;
int fx_qs8_bcast_plan(const fx_qs8_shape *a, const fx_qs8_shape *b, fx_qs8_bcast *bc);

/* PRELU: the first input x, the second alpha (s2, z2), no fused activation. */
enum { FX_QS8_ADD = 0, FX_QS8_SUB = 1, FX_QS8_MUL = 2, FX_QS8_PRELU = 3 };
typedef struct {
  int32_t op, stock;
  fx_qs8_add_params add;     /* ADD, SUB */
  fx_qs8_mul_params mul;     /* MUL */
  fx_qs8_prelu_params prelu; /* PRELU */
  fx_qs8_bcast bc;
} fx_qs8_binary_op;
/* act: the fused activation (0..3 as fx_qs8_act_range_of). PRELU's output must have x's shape
 * (stock checks it); tflite-runtime 2.14's PRELU aborts beyond 4-D where alpha's shape is not
 * x's (BroadcastPrelu4DSlow), so such a PRELU is refused unless stock is FLEX_STOCK_NEON. */
int fx_qs8_binary_prepare(int op, int u8, float s1, int32_t z1, float s2, int32_t z2, float so,
                          int32_t zo, int act, const fx_qs8_shape *a, const fx_qs8_shape *b,
                          int stock, fx_qs8_binary_op *bop);
/* Output elements [e0, e1). */
/* y = MUL(x, f(x)) (x_at 0; MUL(f(x), x) for x_at 1) as one table, f an element-wise table op
 * of x (swish: x * LOGISTIC(x)): exact by construction, since both MUL inputs follow from the
 * byte x; stock's NEON blocks of the MUL become the table split. mul: an element-wise (no
 * broadcast) MUL prepared for the two inputs as the model has them. -1 if not that. */
int fx_qs8_mul_of_table_prepare(const fx_qs8_binary_op *mul, const fx_qs8_lut_op *f, int x_at,
                                fx_qs8_lut_op *op);
void fx_qs8_binary_run(const fx_qs8_ops_config *v, const fx_qs8_binary_op *bop, const void *a,
                       const void *b, void *y, size_t e0, size_t e1);

/* ---- MEAN over H, W of a 4-D tensor with keep_dims (stock's fast path, int8) ---- */
typedef struct {
  int32_t batch, h, w, c;
  int32_t m, shift, bias;     /* QuantizeMultiplier(si / (H*W*so)); zo - round(zi*si/so) */
  int32_t stock;
  int32_t split[9];           /* FLEX_STOCK_NEON: channel bounds of stock's threads */
  int32_t nsplit;
} fx_qs8_mean_op;
/* axes: the model's axis tensor as written (stock picks the fast path from its entries:
 * tflite-runtime 2.14 only for exactly {1, 2} or {2, 1}, LiteRT after resolving negative and
 * repeated axes). stock_threads: the interpreter's thread count (its MEAN splits channels per
 * thread, which moves the NEON loop's 16-channel blocks). -1 where stock takes another path
 * (the caller leaves the op to stock) or refuses. */
int fx_qs8_mean_hw_prepare(int batch, int h, int w, int c, const int32_t *axes, int naxes,
                           float si, int32_t zi, float so, int32_t zo, int stock,
                           int stock_threads, fx_qs8_mean_op *op);
/* The work in units of (output pixel, `chunk` channels): batch * ceil(c / chunk) of them, pixel
 * by pixel (a squeeze-excite MEAN is one pixel, so threads split its channels). */
size_t fx_qs8_mean_hw_units(const fx_qs8_mean_op *op, size_t chunk);
/* Units [u0, u1); scratch: 4 * chunk bytes. */
void fx_qs8_mean_hw_run(const fx_qs8_ops_config *v, const fx_qs8_mean_op *op, const int8_t *x,
                        int8_t *y, size_t chunk, size_t u0, size_t u1, int32_t *scratch);

/* Whether stock runs a MEAN (int8 or uint8) on its fast path (the uint8 one is not reproduced
 * here: such a MEAN stays with stock); else its general path (fx_qs8_mean_prepare). */
int fx_qs8_mean_fast_path(int rank, int keep_dims, const int32_t *axes, int naxes, int stock);

/* ---- the int32 sums of a reduction over any axes (MEAN's general path, SUM) ---- */
/* The input as groups of adjacent dimensions, kept and reduced alternately (dimensions of 1
 * dropped), outputs in the kept dimensions' row-major order. */
typedef struct {
  int32_t ng, u8;
  int64_t n[FX_QS8_MAX_RANK], stride[FX_QS8_MAX_RANK]; /* group sizes, input strides */
  uint32_t red;          /* bit k: group k is reduced */
  int32_t inner_red;     /* the innermost reduced group, -1 for none */
  int64_t inner;         /* the last group's size if it is kept, else 1 */
  int64_t count, outputs; /* elements summed per output; outputs */
} fx_qs8_reduce_geom;
/* axis_mask: the resolved axes (bit i: dimension i). -1 for an empty input (stock leaves its
 * output unwritten) or over 2^23 elements per sum (int32 sums of 8-bit values stay exact). */
int fx_qs8_reduce_geom_of(int u8, const fx_qs8_shape *in, uint32_t axis_mask, fx_qs8_reduce_geom *g);
/* sums[o - o0] = the sum of output o's elements, o in [o0, o1). */
void fx_qs8_reduce_sums(const fx_qs8_ops_config *v, const fx_qs8_reduce_geom *g, const void *x,
                        size_t o0, size_t o1, int32_t *sums);

/* ---- MEAN on stock's general path (any axes, keep_dims or not; int8, uint8) ---- */
typedef struct {
  fx_qs8_reduce_geom g;
  int32_t m, shift;          /* QuantizeMultiplier(si / so) with 1/count folded in, as stock */
  int32_t zi, zo;
} fx_qs8_mean_any_op;
int fx_qs8_mean_prepare(int u8, const fx_qs8_shape *in, uint32_t axis_mask, float si, int32_t zi,
                        float so, int32_t zo, fx_qs8_mean_any_op *op);
/* Outputs [o0, o1) in row-major order; scratch: 4 * (o1 - o0) bytes. */
void fx_qs8_mean_run(const fx_qs8_ops_config *v, const fx_qs8_mean_any_op *op, const void *x,
                     void *y, size_t o0, size_t o1, int32_t *scratch);

/* ---- SUM (int8, uint8; optimized_ops::QuantizedMeanOrSum, both wheels): float arithmetic ---- */
typedef struct {
  fx_qs8_reduce_geom g;
  float scale, bias;         /* si / so; -zi * scale * count, in float as stock */
  int32_t zo;
} fx_qs8_sum_op;
int fx_qs8_sum_prepare(int u8, const fx_qs8_shape *in, uint32_t axis_mask, float si, int32_t zi,
                       float so, int32_t zo, fx_qs8_sum_op *op);
/* Outputs [o0, o1); scratch: 4 * (o1 - o0) bytes. */
void fx_qs8_sum_run(const fx_qs8_ops_config *v, const fx_qs8_sum_op *op, const void *x, void *y,
                    size_t o0, size_t o1, int32_t *scratch);

/* ---- AVERAGE_POOL_2D (NHWC, int8 / uint8; stock requires equal input and output quantization) ---- */
typedef struct {
  int32_t u8, batch, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
  int32_t lo, hi; /* the fused activation's range (fx_qs8_act_range_of on the output) */
} fx_qs8_pool_geom;
/* Output rows [r0, r1) of batch * oh. */
void fx_qs8_avgpool_rows(const fx_qs8_ops_config *v, const fx_qs8_pool_geom *p, const void *x,
                         void *y, size_t r0, size_t r1);

/* ---- SOFTMAX (last dim) ---- */
typedef struct {
  float table[256];  /* expf(-si * beta * v) at 255 - v */
  float out_scale;
  int32_t zo, u8;
} fx_qs8_softmax_op;
int fx_qs8_softmax_prepare(int u8, float si, float beta, float so, int32_t zo,
                           fx_qs8_softmax_op *op);
/* Rows [r0, r1) of `cols` elements. */
void fx_qs8_softmax_run(const fx_qs8_softmax_op *op, const void *x, void *y, size_t cols,
                        size_t r0, size_t r1);

#endif
