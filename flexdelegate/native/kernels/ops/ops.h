/* Pure FP32 op kernels: plain arrays + explicit parameters, no TfLite types.
 * The partition runtime translates TfLite params into these calls; shape
 * inference helpers here are shared by the runtime and the kernels so the two
 * can never disagree. All tensors are dense, row-major (NHWC for images). */
#ifndef FLEX_OPS_H
#define FLEX_OPS_H
#include <stddef.h>
#include <stdint.h>
#include "flex_api.h"
#include "runtime/pool.h" /* heavy kernels split their work over the pool (NULL: inline) */

#define FX_MAX_RANK 8

typedef struct { int rank; int d[FX_MAX_RANK]; } fx_shape;

size_t fx_shape_numel(const fx_shape *s);
int fx_shape_equal(const fx_shape *a, const fx_shape *b);

/* Fused activations are FLEX_ACT_* (flex_api.h): TFLite's, then our own, set at init when a
 * conv/FC/depthwise output feeds only a LOGISTIC (SIGMOID) or only LOGISTIC + MUL by itself
 * (SWISH = x * sigmoid(x)): applied to each output tile while it is still in cache. */
/* Clamp bounds for the clamp-style activations (the others have none: lo=-inf, hi=inf for
 * TANH, +-FLT_MAX for SIGMOID/SWISH, as for NONE). */
void fx_act_bounds(int act, float *lo, float *hi);
/* Applies a fused activation in place (clamp, tanh, sigmoid or swish). */
void fx_apply_act(int act, float *y, size_t n);
/* Clamps in place to fx_act_bounds(act), whatever act is (NONE too: +-inf to +-FLT_MAX, as
 * stock's output stage does); the curve of a curve activation is not applied. */
void fx_clamp_act(int act, float *y, size_t n);
/* The activations a clamp cannot express (SIGMOID, SWISH): kernels apply them per tile. */
static inline int fx_act_is_curve(int act) {
  return act == FLEX_ACT_SIGMOID || act == FLEX_ACT_SWISH || act == FLEX_ACT_GELU || act == FLEX_ACT_GELU_TANH;
}


/* ---- elementwise ---- */
enum fx_unary { FX_U_RELU, FX_U_RELU6, FX_U_RELU_N1_TO_1, FX_U_LOGISTIC, FX_U_TANH,
                FX_U_HARD_SWISH, FX_U_LEAKY_RELU,
                FX_U_SWISH /* x * sigmoid(x): fused LOGISTIC + MUL, never from a TFLite op */,
                FX_U_NEG, FX_U_ABS, FX_U_SQUARE, FX_U_SQRT, FX_U_RSQRT, FX_U_EXP, FX_U_LOG,
                FX_U_GELU, FX_U_GELU_TANH /* kernels/vgelu: exact (erf) and approximate (tanh) */ };
void fx_unary_f32(int kind, float alpha, const float *x, float *y, size_t n);
/* The same, split across the pool's threads for big tensors. */
void fx_unary_f32_pool(fx_pool *pool, int kind, float alpha, const float *x, float *y, size_t n);

/* y = act(a OP b) with numpy-style broadcasting; shapes right-aligned, ranks may differ.
 * PRELU is y = a >= 0 ? a : a * b (b = alpha, broadcast); SQDIFF (a - b)²; POW powf(a, b). */
enum fx_binop { FX_B_ADD, FX_B_SUB, FX_B_MUL, FX_B_DIV, FX_B_MAX, FX_B_MIN, FX_B_PRELU, FX_B_SQDIFF, FX_B_POW,
                FX_B_COUNT };
int fx_broadcast_shape(const fx_shape *a, const fx_shape *b, fx_shape *out); /* 0 ok, -1 incompatible */
void fx_binary_f32(fx_pool *pool, int op, const float *a, const fx_shape *as,
                   const float *b, const fx_shape *bs, float *y, const fx_shape *ys, int act);

/* ---- bool and integer element-wise (select.c), numpy broadcasting; y's shape is the
 * broadcast of the operands'. Element types: FX_ELEM_*. ---- */
enum fx_elem { FX_ELEM_F32, FX_ELEM_I32, FX_ELEM_I64, FX_ELEM_BOOL };
enum fx_compare_op { FX_CMP_LESS, FX_CMP_LESS_EQUAL, FX_CMP_GREATER, FX_CMP_GREATER_EQUAL, FX_CMP_EQUAL,
                     FX_CMP_NOT_EQUAL };
enum fx_logic_op { FX_LOGIC_AND, FX_LOGIC_OR, FX_LOGIC_NOT };
/* y[i] = a OP b as 0 / 1 bytes (TFLite's bool). */
void fx_compare(int op, int elem, const void *a, const fx_shape *as, const void *b, const fx_shape *bs, uint8_t *y,
                const fx_shape *ys);
/* AND / OR of two bool tensors, NOT of a (b NULL). */
void fx_logical(int op, const uint8_t *a, const fx_shape *as, const uint8_t *b, const fx_shape *bs, uint8_t *y,
                const fx_shape *ys);
/* out[i] = c ? x : y for elements of es bytes. */
void fx_select(size_t es, const uint8_t *c, const fx_shape *cs, const void *x, const fx_shape *xs, const void *y,
               const fx_shape *ys, void *out, const fx_shape *os);
/* int32 / int64 ADD, SUB, MUL (FX_B_*), wrapping as stock. */
void fx_binary_int(int op, int elem, const void *a, const fx_shape *as, const void *b, const fx_shape *bs, void *y,
                   const fx_shape *ys);

/* ---- spatial (NHWC) ---- */
/* Padding resolved by the caller: pad_top/left may be any >= 0 (SAME computes it as TFLite does). */
typedef struct {
  int stride_h, stride_w, dil_h, dil_w, kh, kw;
  int pad_top, pad_left;
} fx_window;
/* TFLite SAME/VALID output size and leading padding for one spatial dim. */
void fx_same_valid(int same, int in, int k, int stride, int dil, int *out, int *pad_before);

/* Runs fn over the output rows (batch x height) of a windowed op with output ys, split over the
 * pool in chunks of about 32K multiply-adds; nothing for an empty output. */
void fx_window_rows(fx_pool *pool, const fx_shape *ys, const fx_window *w, fx_task_fn fn, void *ctx);

/* MAX / AVERAGE pool; average counts only in-bounds elements (TFLite semantics). */
void fx_pool2d_f32(fx_pool *pool, int is_max, const float *x, const fx_shape *xs,
                   const fx_window *w, float *y, const fx_shape *ys, int act);

/* MAX_POOL_2D on int8 (or uint8: is_unsigned) data: max of the in-bounds taps, clamped to
 * [lo, hi] (the fused activation's quantized range, within the type). */
void fx_maxpool_q8(fx_pool *pool, int is_unsigned, const void *x, const fx_shape *xs, const fx_window *w,
                   void *y, const fx_shape *ys, int32_t lo, int32_t hi);
/* y = clamp(x, lo, hi) over n int8 (or uint8) elements: RELU-like ops whose input and output
 * share their quantization (in place allowed). */
void fx_clamp_q8(int is_unsigned, const void *x, void *y, size_t n, int32_t lo, int32_t hi);

/* Depthwise conv. filter is TFLite layout [1, kh, kw, cin*mult]; bias may be NULL. */
void fx_depthwise_f32(fx_pool *pool, const float *x, const fx_shape *xs, const float *filter,
                      const float *bias, int mult, const fx_window *w,
                      float *y, const fx_shape *ys, int act);

/* RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (TFLite semantics for both flags); nearest moves
 * elements of any size (esize bytes). */
void fx_resize_bilinear_f32(const float *x, const fx_shape *xs, float *y, const fx_shape *ys,
                            int align_corners, int half_pixel_centers);
void fx_resize_nearest(const void *x, const fx_shape *xs, void *y, const fx_shape *ys, size_t esize,
                       int align_corners, int half_pixel_centers);
/* RESIZE_BILINEAR on int8 (or uint8: is_unsigned) as stock computes it (resize.c: int8 in 10-bit
 * fixed point, uint8 in float); output rows [r0, r1) of batch x height. int8 sizes up to 2^20 a
 * side (fx_resize_bilinear_q8_fits: stock's int8 positions overflow int32 beyond). */
void fx_resize_bilinear_q8(int is_unsigned, const void *x, const fx_shape *xs, void *y, const fx_shape *ys,
                           int align_corners, int half_pixel_centers, size_t r0, size_t r1);
int fx_resize_bilinear_q8_fits(const fx_shape *xs, const fx_shape *ys);

/* ---- reductions / normalisation ---- */
/* MEAN over the axes whose flag is set in axis_mask (bit i = dim i); y has the kept-dims layout. */
void fx_mean_f32(const float *x, const fx_shape *xs, unsigned axis_mask, float *y);
/* The same, split across the pool's threads for a big spatial mean (axes 1, 2 of NHWC). */
void fx_mean_f32_pool(fx_pool *pool, const float *x, const fx_shape *xs, unsigned axis_mask, float *y);
/* SOFTMAX over the last dim: y = exp(beta*(x - max)) / sum. */
void fx_softmax_f32(const float *x, size_t rows, int cols, float beta, float *y);
/* LOG_SOFTMAX over the last dim: y = x - max - log(sum(exp(x - max))). */
void fx_log_softmax_f32(const float *x, size_t rows, int cols, float *y);

/* ---- sequence.c: the small ops of transformer graphs, on FX_ELEM_F32 / I32 / I64 ---- */
enum fx_reduce_op { FX_RED_SUM, FX_RED_MAX, FX_RED_MIN, FX_RED_PROD };
/* SUM / MAX / MIN / PROD over the axes set in axis_mask; y in the kept-dims layout; an empty
 * reduction gives 0, lowest, highest, 1 (stock's initial values). */
void fx_reduce(int op, int elem, const void *x, const fx_shape *xs, unsigned axis_mask, void *y);
/* BROADCAST_TO: x (right-aligned, dims 1 or equal) repeated into ys, elements of es bytes. */
void fx_broadcast_to(const void *x, const fx_shape *xs, const fx_shape *ys, size_t es, void *y);
/* GATHER_ND: slices of x at the index tuples of the last dim of idx (int32, or int64 when
 * idx_is_64); -1 when an index is outside its dim. */
int fx_gather_nd(const void *x, const fx_shape *xs, const void *idx, int idx_is_64, const fx_shape *is, size_t es,
                 void *y);
/* FILL: count copies of the es-byte *value. */
void fx_fill(void *y, size_t count, const void *value, size_t es);
/* RANGE: count values from *start by *delta. */
void fx_range(int elem, const void *start, const void *delta, size_t count, void *y);
/* CUMSUM along axis (inclusive or exclusive, forward or reversed). */
void fx_cumsum(int elem, const void *x, const fx_shape *xs, int axis, int exclusive, int reverse, void *y);

/* ---- layout ops: element-size generic (used for float data and for int32/int64 shape math) ---- */
/* Steps a multi-dimensional index idx over dims [0, k) (the last fastest, n[d] long each) to
 * the next position, moving the element offset *off by each dim's stride s[d]. */
static inline void fx_index_next(size_t *idx, const size_t *n, const ptrdiff_t *s, int k, ptrdiff_t *off) {
  for (int d = k - 1; d >= 0; --d) {
    *off += s[d];
    if (++idx[d] < n[d]) return;
    *off -= (ptrdiff_t)n[d] * s[d];
    idx[d] = 0;
  }
}
/* Copies n elements of es bytes from x (element stride sx) to contiguous y. */
void fx_copy_strided(char *y, const char *x, size_t n, ptrdiff_t sx, size_t es);
/* PAD with constant value (bytes of one element in *value, or zeros if NULL); pads[2*i], pads[2*i+1]. */
void fx_pad(const void *x, const fx_shape *xs, const int *pads, const void *value,
            size_t esize, void *y);
/* CONCATENATION / PACK along axis: n inputs, all same rank. */
void fx_concat(int n, const void *const *xs, const fx_shape *const *shapes, int axis,
               size_t esize, void *y);
/* TRANSPOSE: y.d[i] = x.d[perm[i]]. */
void fx_transpose(const void *x, const fx_shape *xs, const int *perm, size_t esize, void *y);
void fx_depth_to_space(const void *x, const fx_shape *xs, int block, size_t esize, void *y);
void fx_space_to_depth(const void *x, const fx_shape *xs, int block, size_t esize, void *y);
/* GATHER along axis with batch_dims; idx values are int32 (or int64 when idx_is_64);
 * returns -1 on an out-of-range index (the caller reports it). */
int fx_gather(const void *x, const fx_shape *xs, const void *idx, int idx_is_64, const fx_shape *is,
              int axis, int batch_dims, size_t esize, void *y);

/* STRIDED_SLICE: masks resolved once into per-dim begin/stride and the output shape
 * (shrunk dims removed from `out`, `full` keeps them with size 1 for the copy). */
typedef struct {
  int rank;                     /* rank of the input */
  int begin[FX_MAX_RANK], stride[FX_MAX_RANK], size[FX_MAX_RANK];  /* per input dim */
  fx_shape out;                 /* final output shape (after shrink / new axis) */
} fx_slice_plan;
/* begin/end/strides have `n` entries (n may be < rank); returns 0 ok, -1 unsupported
 * (ellipsis/new_axis combos we do not handle), -2 invalid. `offset` = TFLite's offset flag. */
int fx_strided_slice_plan(const fx_shape *xs, int n, const int *begin, const int *end,
                          const int *strides, int begin_mask, int end_mask, int ellipsis_mask,
                          int new_axis_mask, int shrink_axis_mask, int offset, fx_slice_plan *p);
void fx_strided_slice(const void *x, const fx_shape *xs, const fx_slice_plan *p, size_t esize, void *y);

#endif
