/* Test and benchmark entries of the integer element-wise ops (kernels/qs8-ops; declared in
 * testing/flex_testing.h): prepare from TFLite's quantization parameters as the delegate will,
 * then run the output in chunks on one variant, timed by the testers' one loop. */
#include <stdlib.h>
#include <string.h>
#include "testing/flex_testing.h"
#include "testing/tester.h"
#include "kernels/qs8-ops/qs8-ops.h"

/* A prepared op and its buffers; part() runs output range [lo, hi) of it. */
typedef struct ops_case {
  const fx_qs8_ops_config *v;
  const void *op;
  const void *a, *b; /* inputs */
  void *y;
  int32_t *scratch;
  size_t n;          /* LUT ops: the element count; SOFTMAX: the row length */
  int form;          /* QUANTIZE: FLEX_QUANT_* */
  void (*part)(const struct ops_case *c, size_t lo, size_t hi);
  size_t total, step; /* the output, in chunks of step */
} ops_case;

static void run_chunks(void *arg) {
  const ops_case *c = arg;
  for (size_t lo = 0; lo < c->total; lo += c->step) c->part(c, lo, lo + c->step < c->total ? lo + c->step : c->total);
}

/* Runs c over [0, total) in chunks of `chunk` (<= 0: whole), timed per run. */
static int time_chunks(ops_case *c, size_t total, int chunk, int iters, double *seconds) {
  c->total = total;
  c->step = chunk > 0 ? (size_t)chunk : (total ? total : 1);
  fx_tester_time(iters, seconds, run_chunks, c);
  return 0;
}

/* The ops' output ranges, as the delegate's threads run them. */
static void binary_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_binary_run(c->v, c->op, c->a, c->b, c->y, lo, hi);
}
static void lut_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_lut_run(c->v, c->op, c->n, c->a, c->y, lo, hi);
}
static void quantize_part(const ops_case *c, size_t lo, size_t hi) {
  c->v->quantize(hi - lo, (const float *)c->a + lo, (uint8_t *)c->y + lo, c->op, c->form);
}
static void mean_hw_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_mean_hw_run(c->v, c->op, c->a, c->y, c->n, lo, hi, c->scratch);
}
static void mean_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_mean_run(c->v, c->op, c->a, c->y, lo, hi, c->scratch);
}
static void sum_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_sum_run(c->v, c->op, c->a, c->y, lo, hi, c->scratch);
}
static void avgpool_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_avgpool_rows(c->v, c->op, c->a, c->y, lo, hi);
}
static void softmax_part(const ops_case *c, size_t lo, size_t hi) {
  fx_qs8_softmax_run(c->op, c->a, c->y, c->n, lo, hi);
}

static int shape_of(int r, const int *d, fx_qs8_shape *s) {
  if (r < 0 || r > FX_QS8_MAX_RANK) return -1;
  s->rank = r;
  for (int i = 0; i < r; i++) s->d[i] = d[i];
  return 0;
}

int flex_qs8_binary_run(int variant, int op, int u8, float s1, int z1, float s2, int z2, float so,
                        int zo, int act, int ra, const int *da, int rb, const int *db,
                        const void *a, const void *b, void *y, int stock, int chunk, int iters,
                        double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_shape sa, sb;
  fx_qs8_binary_op bop;
  static const int kernel_op[] = {[FLEX_BINARY_ADD] = FX_QS8_ADD, [FLEX_BINARY_SUB] = FX_QS8_SUB,
                                  [FLEX_BINARY_MUL] = FX_QS8_MUL, [FLEX_BINARY_PRELU] = FX_QS8_PRELU};
  if (!v || op < 0 || op > FLEX_BINARY_PRELU || shape_of(ra, da, &sa) || shape_of(rb, db, &sb) ||
      fx_qs8_binary_prepare(kernel_op[op], u8, s1, z1, s2, z2, so, zo, act, &sa, &sb, stock, &bop)) return -1;
  ops_case run = {.v = v, .op = &bop, .a = a, .b = b, .y = y, .part = binary_part};
  return time_chunks(&run, fx_qs8_numel(&bop.bc.out), chunk, iters, seconds);
}

int flex_qs8_lut_op_run(int variant, int kind, int in_u8, int out_u8, float s_in, int z_in,
                        float s_out, int z_out, float alpha, size_t n, const void *x, void *y,
                        int stock, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_lut_op op;
  int rc = -1;
  if (!v) return -1;
  if (kind != FLEX_LUT_REQUANTIZE && in_u8 != out_u8) return -1;
  switch (kind) {
    case FLEX_LUT_REQUANTIZE:
      rc = fx_qs8_requantize_prepare(in_u8, s_in, z_in, out_u8, s_out, z_out, stock, &op);
      break;
    case FLEX_LUT_RELU: rc = fx_qs8_relu_prepare(FX_QS8_RELU, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_RELU6: rc = fx_qs8_relu_prepare(FX_QS8_RELU6, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_RELU_N1_TO_1:
      rc = fx_qs8_relu_prepare(FX_QS8_RELU_N1_TO_1, in_u8, s_in, z_in, s_out, z_out, &op);
      break;
    case FLEX_LUT_RELU_0_TO_1:
      rc = fx_qs8_relu_prepare(FX_QS8_RELU_0_TO_1, in_u8, s_in, z_in, s_out, z_out, &op);
      break;
    case FLEX_LUT_LEAKY_RELU: rc = fx_qs8_leaky_relu_prepare(in_u8, alpha, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_HARD_SWISH: rc = fx_qs8_hard_swish_prepare(in_u8, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_LOGISTIC: rc = fx_qs8_curve_prepare(FX_QS8_LOGISTIC, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_TANH: rc = fx_qs8_curve_prepare(FX_QS8_TANH, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_GELU: rc = fx_qs8_curve_prepare(FX_QS8_GELU, in_u8, s_in, z_in, s_out, z_out, &op); break;
    case FLEX_LUT_GELU_APPROX:
      rc = fx_qs8_curve_prepare(FX_QS8_GELU_TANH, in_u8, s_in, z_in, s_out, z_out, &op);
      break;
    case FLEX_LUT_CONCAT_REQUANT: rc = in_u8 ? fx_qs8_concat_requant_prepare(s_in, z_in, s_out, z_out, &op) : -1; break;
  }
  if (rc) return -1;
  ops_case run = {.v = v, .op = &op, .a = x, .y = y, .n = n, .part = lut_part};
  return time_chunks(&run, n, chunk, iters, seconds);
}

int flex_qs8_quantize_run(int variant, int form, int out_u8, float scale, int zp, int qlo, int qhi,
                          size_t n, const float *x, void *y, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  if (!v || !(scale > 0) || (form != FLEX_QUANT_AWAY && form != FLEX_QUANT_RECIP_EVEN)) return -1;
  const fx_qs8_quant_params p = {.scale = (double)scale, .inv_scale = (float)(1.0 / (double)scale),
                                 .zp = zp, .lo = qlo, .hi = qhi, .u8 = out_u8};
  ops_case run = {.v = v, .op = &p, .a = x, .y = y, .form = form, .part = quantize_part};
  return time_chunks(&run, n, chunk, iters, seconds);
}

int flex_qs8_mean_hw_run(int variant, int batch, int h, int w, int c, const int32_t *axes,
                         int naxes, float si, int zi, float so, int zo, const void *x, void *y,
                         int stock, int stock_threads, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_mean_op op;
  if (!v || fx_qs8_mean_hw_prepare(batch, h, w, c, axes, naxes, si, zi, so, zo, stock, stock_threads, &op)) return -1;
  /* units of a third of the channels (at odd offsets), as the delegate's threads split them */
  const size_t cchunk = c > 2 ? ((size_t)c + 2) / 3 : 1;
  int32_t *scratch = malloc(sizeof(int32_t) * cchunk);
  if (!scratch) return -1;
  ops_case run = {.v = v, .op = &op, .a = x, .y = y, .n = cchunk, .scratch = scratch, .part = mean_hw_part};
  time_chunks(&run, fx_qs8_mean_hw_units(&op, cchunk), chunk, iters, seconds);
  free(scratch);
  return 0;
}

/* A reduction's run (MEAN's general path, SUM) over its n outputs, a scratch of n sums. */
static int reduction_chunks(ops_case *run, size_t n, int chunk, int iters, double *seconds) {
  int32_t *scratch = malloc(sizeof(int32_t) * (n + 1));
  if (!scratch) return -1;
  run->scratch = scratch;
  time_chunks(run, n, chunk, iters, seconds);
  free(scratch);
  return 0;
}

int flex_qs8_mean_run(int variant, int u8, int r, const int *d, unsigned axis_mask, float si,
                      int zi, float so, int zo, const void *x, void *y, int chunk, int iters,
                      double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_shape s;
  fx_qs8_mean_any_op op;
  if (!v || shape_of(r, d, &s) || fx_qs8_mean_prepare(u8, &s, axis_mask, si, zi, so, zo, &op)) return -1;
  ops_case run = {.v = v, .op = &op, .a = x, .y = y, .part = mean_part};
  return reduction_chunks(&run, (size_t)op.g.outputs, chunk, iters, seconds);
}

int flex_qs8_sum_run(int variant, int u8, int r, const int *d, unsigned axis_mask, float si, int zi,
                     float so, int zo, const void *x, void *y, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  fx_qs8_shape s;
  fx_qs8_sum_op op;
  if (!v || shape_of(r, d, &s) || fx_qs8_sum_prepare(u8, &s, axis_mask, si, zi, so, zo, &op)) return -1;
  ops_case run = {.v = v, .op = &op, .a = x, .y = y, .part = sum_part};
  return reduction_chunks(&run, (size_t)op.g.outputs, chunk, iters, seconds);
}

int flex_qs8_avgpool_run(int variant, int u8, int n, int h, int w, int c, int kh, int kw, int sh,
                         int sw, int pt, int pl, int oh, int ow, int lo, int hi, const void *x,
                         void *y, int chunk, int iters, double *seconds) {
  const fx_qs8_ops_config *v = fx_qs8_ops_config_at(variant);
  const fx_qs8_pool_geom p = {u8, n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl, lo, hi};
  if (!v || n < 0 || h < 1 || w < 1 || c < 0 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || oh < 0 || ow < 0)
    return -1;
  ops_case run = {.v = v, .op = &p, .a = x, .y = y, .part = avgpool_part};
  return time_chunks(&run, (size_t)n * (size_t)oh, chunk, iters, seconds);
}

int flex_qs8_softmax_run(int u8, float si, float beta, float so, int zo, size_t rows,
                         size_t cols, const void *x, void *y, int chunk, int iters,
                         double *seconds) {
  fx_qs8_softmax_op op;
  if (fx_qs8_softmax_prepare(u8, si, beta, so, zo, &op)) return -1;
  ops_case run = {.op = &op, .a = x, .y = y, .n = cols, .part = softmax_part};
  return time_chunks(&run, rows, chunk, iters, seconds);
}
