/* Tester and benchmark entries (flexdelegate._native_testing_ext): each drives one kernel
 * variant, or one planner, outside any model, for tests/ and bench/; the shipped library never
 * imports them. Fed verbatim to cffi's cdef like flex_api.h ('#' lines are dropped).
 *
 * One convention for the kernel entries: `variant` is an index into the family's variants this
 * CPU runs (flex_variant; 0 = the portable reference), the problem follows, and the entry runs
 * it max(iters, 1) times, each run timed into seconds[i] when seconds is not NULL (room for
 * max(iters, 1) values). They return 0, or -1 for bad arguments, an unavailable variant or no
 * memory. */
#ifndef FLEX_TESTING_H
#define FLEX_TESTING_H
#include <stddef.h>
#include <stdint.h>

/* Kernel families with one variant per ISA (kernels/). */
enum { FLEX_FAMILY_GEMM = 0, FLEX_FAMILY_IGEMM = 1, FLEX_FAMILY_DWCONV = 2, FLEX_FAMILY_VSIGMOID = 3,
       FLEX_FAMILY_STEM = 4, FLEX_FAMILY_QS8_GEMM = 5, FLEX_FAMILY_QS8_DWCONV = 6,
       FLEX_FAMILY_QS8_OPS = 7 };
/* Name of variant i of a family this CPU runs, NULL past the end; i = -1: the one the delegate
 * runs. Families list their variants by ISA family alike, so IGEMM (STEM) variant i is the
 * direct-conv (stem-conv) kernel that reads GEMM variant i's panels; a QS8_GEMM variant runs its
 * GEMM and its IGEMM twin alike. */
const char *flex_variant(int family, int i);
/* 1 when dynamic-range (hybrid) convs and FCs run on this CPU's int8 GEMM (its variant has a
 * float output stage), 0 when they run on the FP32 kernels (conv/choose.c). */
int flex_hybrid_int8(void);

/* c[m x n] = clamp(a[m x k] * w[n x k]^T + bias, lo, hi), w packed as the delegate packs it;
 * then, with res [m x n], c = clamp(c + res, rlo, rhi) (a fused residual ADD). */
int flex_gemm_run(int variant, int m, int n, int k, const float *a, const float *w, const float *bias,
                  float *c, float lo, float hi, const float *res, float rlo, float rhi, int iters,
                  double *seconds);

/* DEPTHWISE_CONV_2D of x [n,h,w,cin] with filter [kh,kw,cin*mult] and optional bias into
 * y [n,oh,ow,cin*mult] (oh/ow must match TFLite's SAME/VALID sizes), one thread. */
int flex_dwconv_run(int variant, int n, int h, int w, int cin, int mult, int kh, int kw,
                    int stride_h, int stride_w, int dil_h, int dil_w, int same, const float *x,
                    const float *filter, const float *bias, int act, float *y, int oh, int ow,
                    int iters, double *seconds);

/* y = sigmoid(x) over n floats (swish = 1: x * sigmoid(x)). */
int flex_vsigmoid_run(int variant, const float *x, float *y, size_t n, int swish, int iters, double *seconds);

/* Winograd F(tile x tile, 3x3) stride-1 convolution (tile 4 or 6) on GEMM variant `variant`:
 * packs filter [cout][3][3][cin], then runs x [n,h,w,cin] into y [n,oh,ow,cout] (pad_top/pad_left
 * leading zeros; oh/ow as given) on `threads` threads. slice_panels > 0 runs it as a budget plan
 * does: slices of that many GEMM panels, each from its own copy of its packed bytes. from_gemm:
 * packs the filter as GEMM panels and transforms it at every run (the run-time Winograd). */
int flex_winograd_run(int variant, int tile, int threads, int n, int h, int w, int cin, int cout,
                      int pad_top, int pad_left, int oh, int ow, const float *x,
                      const float *filter, const float *bias, int act, float *y, int slice_panels,
                      int from_gemm, int iters, double *seconds);

/* How flex_conv2d_run runs a conv: im2col GEMM, direct conv through the paired IGEMM kernel, or
 * through the paired stem kernel (a 3x3 conv of 3 channels only). */
enum { FLEX_CONV_IM2COL = 0, FLEX_CONV_DIRECT = 1, FLEX_CONV_STEM = 2 };
/* CONV_2D of x [n,h,w,cin] with filter [cout][kh][kw][cin] into y [n,oh,ow,cout] (pad_top/pad_left
 * leading zeros; oh/ow as given) over weights packed for GEMM variant `variant`, in `form`
 * (FLEX_CONV_*; -1 where the form does not run this conv), on `threads` threads. */
int flex_conv2d_run(int variant, int form, int threads, int n, int h, int w, int cin, int cout, int kh,
                    int kw, int stride_h, int stride_w, int dil_h, int dil_w, int pad_top, int pad_left,
                    int oh, int ow, const float *x, const float *filter, const float *bias, int act,
                    float *y, int iters, double *seconds);

/* The unlimited planner's placement (plan/greedy.c): buffers with byte sizes and inclusive
 * [first, last] lifetimes (node indices) get offsets; greedy 0 lays them back to back instead
 * (the baseline). Returns the arena size, or (size_t)-1 on bad input. */
size_t flex_plan_arena(int greedy, int n, const size_t *sizes, const int *first, const int *last,
                       size_t *offsets);

/* ---- integer (QS8 / QU8) kernels (testing/qs8_tester.c) ----
 * TFLite's QuantizeMultiplier and CalculateActivationRangeQuantized (act: 0 NONE, 1 RELU,
 * 2 RELU_N1_TO_1, 3 RELU6; -1 for others). */
void flex_quantize_multiplier(double real, int single_rounding, int32_t *m, int32_t *shift);
int flex_qs8_act_range(int act, float scale, int zp, int qmin, int qmax, int32_t *lo, int32_t *hi);
/* CONV_2D (and FULLY_CONNECTED as a 1x1 conv of h = w = 1) on QS8_GEMM variant `variant`,
 * single-threaded: x [n,h,w,cin], filter [cout,kh,kw,cin], int8 (u8 = 0) or uint8 (u8 = 1, with
 * filter zero point zw), bias int32 or NULL, per-channel requant mult/shift
 * (flex_quantize_multiplier), output zero point zy and clamp [lo, hi] in the output type,
 * rounding FLEX_RQ_* (requant.h); in the form the delegate would run it (conv/choose.c).
 * Packing is not timed. */
int flex_qs8_conv_run(int variant, int u8, int n, int h, int w, int cin, int cout, int kh, int kw,
                      int sh, int sw, int dh, int dw, int pt, int pl, int oh, int ow, const void *x,
                      int zx, const void *filter, int zw, const int32_t *bias, const int32_t *mult,
                      const int32_t *shift, int zy, int lo, int hi, int rounding, void *y,
                      int iters, double *seconds);
/* DEPTHWISE_CONV_2D likewise on QS8_DWCONV variant `variant`: filter [kh,kw,cin*mult];
 * channels c >= tail_from use tail_rounding (LiteRT's split; INT32_MAX for none). */
int flex_qs8_dwconv_run(int variant, int u8, int n, int h, int w, int cin, int mult, int kh,
                        int kw, int sh, int sw, int dh, int dw, int pt, int pl, int oh, int ow,
                        const void *x, int zx, const void *filter, int zw, const int32_t *bias,
                        const int32_t *qmult, const int32_t *shift, int zy, int lo, int hi,
                        int rounding, int tail_rounding, int tail_from, void *y, int iters,
                        double *seconds);
/* ---- integer element-wise ops (kernels/qs8-ops; testing/qs8_ops_tester.c) ----
 * On QS8_OPS variant `variant`. `stock`: the arithmetic to reproduce (FLEX_STOCK_*); `chunk` > 0
 * runs the output in pieces of that many elements (rows, pixels), as a thread split would. -1
 * also where the kernels refuse the op (stock's refusals, unreproduced paths). */
enum { FLEX_BINARY_ADD = 0, FLEX_BINARY_SUB = 1, FLEX_BINARY_MUL = 2, FLEX_BINARY_PRELU = 3 };
/* op (FLEX_BINARY_*) of a [ra dims da] and b [rb dims db] with broadcasting into y (the
 * broadcast shape), fused act 0..3 (NONE, RELU, RELU_N1_TO_1, RELU6). PRELU: a is x, b alpha. */
int flex_qs8_binary_run(int variant, int op, int u8, float s1, int z1, float s2, int z2, float so,
                        int zo, int act, int ra, const int *da, int rb, const int *db,
                        const void *a, const void *b, void *y, int stock, int chunk, int iters,
                        double *seconds);
/* Float -> int8 / uint8 (out_u8) QUANTIZE of n values (form: FLEX_QUANT_*) clamped to
 * [qlo, qhi]. */
int flex_qs8_quantize_run(int variant, int form, int out_u8, float scale, int zp, int qlo, int qhi,
                          size_t n, const float *x, void *y, int chunk, int iters, double *seconds);
/* The table ops: REQUANTIZE is QUANTIZE int->int (in_u8 -> out_u8); LEAKY_RELU takes alpha;
 * CONCAT_REQUANT is a uint8 CONCATENATION input's rescale. The others keep the input's type. */
enum { FLEX_LUT_REQUANTIZE = 0, FLEX_LUT_RELU = 1, FLEX_LUT_RELU6 = 2, FLEX_LUT_RELU_N1_TO_1 = 3,
       FLEX_LUT_RELU_0_TO_1 = 4, FLEX_LUT_LEAKY_RELU = 5, FLEX_LUT_HARD_SWISH = 6,
       FLEX_LUT_LOGISTIC = 7, FLEX_LUT_TANH = 8, FLEX_LUT_GELU = 9, FLEX_LUT_GELU_APPROX = 10,
       FLEX_LUT_CONCAT_REQUANT = 11 };
/* Table op `kind` (FLEX_LUT_*) over n elements. */
int flex_qs8_lut_op_run(int variant, int kind, int in_u8, int out_u8, float s_in,
                        int z_in, float s_out, int z_out, float alpha, size_t n, const void *x,
                        void *y, int stock, int chunk, int iters, double *seconds);
/* MEAN of x [batch,h,w,c] int8 over H, W (keep_dims; axes: the model's axis tensor) into
 * y [batch,1,1,c]; stock_threads: the interpreter's thread count. */
int flex_qs8_mean_hw_run(int variant, int batch, int h, int w, int c, const int32_t *axes,
                         int naxes, float si, int zi, float so, int zo, const void *x, void *y,
                         int stock, int stock_threads, int chunk, int iters, double *seconds);
/* MEAN on stock's general path: x (int8/uint8) of rank r dims d over the axes in axis_mask
 * into y (the kept dimensions, in order). */
int flex_qs8_mean_run(int variant, int u8, int r, const int *d, unsigned axis_mask, float si,
                      int zi, float so, int zo, const void *x, void *y, int chunk, int iters,
                      double *seconds);
/* SUM likewise (stock's float rescale). */
int flex_qs8_sum_run(int variant, int u8, int r, const int *d, unsigned axis_mask, float si, int zi,
                     float so, int zo, const void *x, void *y, int chunk, int iters, double *seconds);
/* AVERAGE_POOL_2D of x [n,h,w,c] (int8/uint8) with window kh x kw, strides, leading pads pt/pl
 * into y [n,oh,ow,c], clamped to [lo, hi]. */
int flex_qs8_avgpool_run(int variant, int u8, int n, int h, int w, int c, int kh, int kw, int sh,
                         int sw, int pt, int pl, int oh, int ow, int lo, int hi, const void *x,
                         void *y, int chunk, int iters, double *seconds);
/* SOFTMAX over the last dim (cols) of rows x cols int8/uint8 (beta; output scale/zero point). */
int flex_qs8_softmax_run(int u8, float si, float beta, float so, int zo, size_t rows,
                         size_t cols, const void *x, void *y, int chunk, int iters,
                         double *seconds);
#endif
