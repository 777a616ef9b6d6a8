/* MEAN over H and W of a 4-D int8 tensor with keep_dims: stock's fast path
 * (optimized_integer_ops::Mean; README.md "MEAN"). Channel sums in int32, then
 * MultiplyByQuantizedMultiplier by si / (H*W*so) plus a float-rounded zero-point bias, clamped
 * to int8. On LiteRT the NEON loop takes whole blocks of 16 channels from the start of each of
 * stock's thread ranges and rounds ties up (MultiplyByQuantizedMultiplier4Rows); the rest, and
 * every channel on tflite-runtime, round them away from zero. */
#include <string.h>
#include "qs8-ops.h"
#include "kernels/simd/nofuse.h"

/* Whether stock's reduce.cc takes the H, W fast path for this axis tensor. */
static int fast_path_axes(const int32_t *axes, int naxes, int stock) {
  if (naxes == 2 && ((axes[0] == 1 && axes[1] == 2) || (axes[0] == 2 && axes[1] == 1))) return 1;
  if (stock != FX_STOCK_NEON) return 0;
  unsigned seen = 0;
  for (int i = 0; i < naxes; i++) {
    const int a = axes[i] < 0 ? axes[i] + 4 : axes[i];
    if (a < 0 || a > 3) return 0;
    seen |= 1u << a;
  }
  return seen == 6u; /* {1, 2} */
}

int fx_qs8_mean_hw_prepare(int batch, int h, int w, int c, const int32_t *axes, int naxes,
                           float si, int32_t zi, float so, int32_t zo, int stock,
                           int stock_threads, fx_qs8_mean_op *op) {
  memset(op, 0, sizeof *op);
  if (!axes || !fast_path_axes(axes, naxes, stock)) return -1;
  if (batch < 0 || h <= 0 || w <= 0 || c < 0 || !(si > 0) || !(so > 0)) return -1;
  if ((int64_t)h * w > (1 << 23)) return -1; /* int32 sums of int8 stay exact below this */
  if (zi < -128 || zi > 127 || zo < -128 || zo > 127) return -1;
  const float count = (float)(w * h);
  float temp = (float)zi * si;
  FX_NOFUSE(temp);
  temp = temp / so;
  FX_NOFUSE(temp);
  temp = temp > 0 ? temp + 0.5f : temp - 0.5f;
  if (!(temp > -2147483648.0f && temp < 2147483648.0f)) return -1;
  op->bias = zo - (int32_t)temp;
  float den = count * so;
  FX_NOFUSE(den);
  const float real = si / den;
  fx_quantize_multiplier((double)real, 0, &op->m, &op->shift);
  if (op->shift > 30) return -1;
  op->batch = batch, op->h = h, op->w = w, op->c = c, op->stock = stock;
  /* stock's channel split: max(c / 8, 1) threads, capped by the interpreter's */
  int threads = c / 8 > 0 ? c / 8 : 1;
  if (stock_threads > 0 && stock_threads < threads) threads = stock_threads;
  if (stock_threads <= 0) threads = 1; /* -1: TFLite's default context runs one thread */
  if (threads > 8) return -1;
  op->nsplit = threads;
  int start = 0;
  for (int i = 0; i < threads; i++) {
    op->split[i] = start;
    start += (c - start) / (threads - i);
  }
  op->split[threads] = c;
  return 0;
}

/* Requantize channels [c0, c1) of one pixel with one rounding. */
static void finish(const fx_qs8_mean_op *op, const int32_t *acc, int rounding, int c0, int c1,
                   int8_t *y) {
  for (int j = c0; j < c1; j++) {
    int32_t r = fxq_mbqm(acc[j], op->m, op->shift, rounding);
    r = (int32_t)((uint32_t)r + (uint32_t)op->bias);
    y[j] = (int8_t)fxq_sat(r, -128, 127);
  }
}

void fx_qs8_mean_hw_run(const fx_qs8_ops_config *v, const fx_qs8_mean_op *op, const int8_t *x,
                        int8_t *y, size_t p0, size_t p1, int32_t *scratch) {
  const size_t c = (size_t)op->c, k = (size_t)op->h * (size_t)op->w;
  for (size_t p = p0; p < p1; p++) {
    memset(scratch, 0, c * sizeof *scratch);
    v->sum_rows(c, k, x + p * k * c, c, 0, scratch);
    if (op->stock != FX_STOCK_NEON) {
      finish(op, scratch, FX_RQ_AWAY, 0, op->c, y + p * c);
      continue;
    }
    for (int t = 0; t < op->nsplit; t++) {
      const int s = op->split[t], e = op->split[t + 1], mid = s + (e - s) / 16 * 16;
      finish(op, scratch, FX_RQ_UP, s, mid, y + p * c);
      finish(op, scratch, FX_RQ_AWAY, mid, e, y + p * c);
    }
  }
}
