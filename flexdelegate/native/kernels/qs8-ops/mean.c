/* MEAN over H and W of a 4-D int8 tensor with keep_dims: stock's fast path
 * (optimized_integer_ops::Mean; NOTES.md "MEAN"). Channel sums in int32, then
 * MultiplyByQuantizedMultiplier by si / (H*W*so) plus a float-rounded zero-point bias, clamped
 * to int8. On LiteRT the NEON loop takes whole blocks of 16 channels from the start of each of
 * stock's thread ranges and rounds ties up (MultiplyByQuantizedMultiplier4Rows); the rest, and
 * every channel on tflite-runtime, round them away from zero. */
#include <string.h>
#include "qs8-ops.h"
#include "kernels/simd/nofuse.h"

static int fast_path_axes(const int32_t *axes, int naxes, int stock);

int fx_qs8_mean_fast_path(int rank, int keep_dims, const int32_t *axes, int naxes, int stock) {
  return rank == 4 && keep_dims && fast_path_axes(axes, naxes, stock);
}

/* Whether stock's reduce.cc takes the H, W fast path for this axis tensor. */
static int fast_path_axes(const int32_t *axes, int naxes, int stock) {
  if (naxes == 2 && ((axes[0] == 1 && axes[1] == 2) || (axes[0] == 2 && axes[1] == 1))) return 1;
  if (stock != FLEX_STOCK_NEON) return 0;
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

/* Requantize channels [j0, j1) of one pixel with one rounding; acc[0] is channel c0's sum. */
static void finish(const fx_qs8_mean_op *op, const int32_t *acc, int c0, int rounding, int j0, int j1,
                   int8_t *y) {
  for (int j = j0; j < j1; j++) {
    int32_t r = fxq_mbqm(acc[j - c0], op->m, op->shift, rounding);
    r = (int32_t)((uint32_t)r + (uint32_t)op->bias);
    y[j] = (int8_t)fxq_sat(r, -128, 127);
  }
}

size_t fx_qs8_mean_hw_units(const fx_qs8_mean_op *op, size_t chunk) {
  return (size_t)op->batch * (((size_t)op->c + chunk - 1) / chunk);
}

void fx_qs8_mean_hw_run(const fx_qs8_ops_config *v, const fx_qs8_mean_op *op, const int8_t *x,
                        int8_t *y, size_t chunk, size_t u0, size_t u1, int32_t *acc) {
  const size_t c = (size_t)op->c, k = (size_t)op->h * (size_t)op->w, per = (c + chunk - 1) / chunk;
  for (size_t u = u0; u < u1; u++) {
    const size_t p = u / per, c0 = u % per * chunk, c1 = c0 + chunk < c ? c0 + chunk : c;
    memset(acc, 0, (c1 - c0) * sizeof *acc);
    v->sum_rows(c1 - c0, k, x + p * k * c + c0, c, 0, acc);
    if (op->stock != FLEX_STOCK_NEON) {
      finish(op, acc, (int)c0, FLEX_RQ_AWAY, (int)c0, (int)c1, y + p * c);
      continue;
    }
    /* stock's threads' ranges: each rounds ties up in its whole blocks of 16, away after */
    for (int t = 0; t < op->nsplit; t++) {
      const int s = op->split[t], e = op->split[t + 1], mid = s + (e - s) / 16 * 16;
      const int a = s > (int)c0 ? s : (int)c0, m = mid < (int)c1 ? mid : (int)c1, b = e < (int)c1 ? e : (int)c1;
      if (a < m) finish(op, acc, (int)c0, FLEX_RQ_UP, a, m, y + p * c);
      if ((m > a ? m : a) < b) finish(op, acc, (int)c0, FLEX_RQ_AWAY, m > a ? m : a, b, y + p * c);
    }
  }
}

/* ---- stock's general path (reference_ops::QuantizedMeanOrSum, both wheels) ---- */
int fx_qs8_mean_prepare(int u8, const fx_qs8_shape *in, uint32_t axis_mask, float si, int32_t zi,
                        float so, int32_t zo, fx_qs8_mean_any_op *op) {
  memset(op, 0, sizeof *op);
  if (!(si > 0) || !(so > 0) || in->rank > FX_QS8_MAX_RANK || in->rank < 1) return -1;
  if (zi < (u8 ? 0 : -128) || zi > (u8 ? 255 : 127) || zo < (u8 ? 0 : -128) || zo > (u8 ? 255 : 127)) return -1;
  int first = -1, last = -1;
  int64_t outer = 1, red = 1, inner = 1;
  for (int i = 0; i < in->rank; i++) {
    if (!((axis_mask >> i) & 1)) continue;
    if (first < 0) first = i;
    else if (last != i - 1) return -1; /* reduced axes must be adjacent here */
    last = i;
  }
  if (first < 0 || (axis_mask >> in->rank)) return -1;
  for (int i = 0; i < in->rank; i++) {
    int64_t *f = i < first ? &outer : i <= last ? &red : &inner;
    *f *= in->d[i];
  }
  if (red <= 0 || red > (1 << 23) || outer * inner > INT32_MAX || red * inner > INT32_MAX) return -1;
  int32_t m, shift;
  fx_quantize_multiplier((double)si / (double)so, 0, &m, &shift);
  if (shift > 30) return -1;
  /* the 1/count folded into the multiplier as stock does: floor(log2 count) more bits, capped */
  int sh = 63 - __builtin_clzll((unsigned long long)red);
  sh = sh < 32 ? sh : 32;
  sh = sh < 31 + shift ? sh : 31 + shift;
  op->m = (int32_t)(((int64_t)m << sh) / red);
  op->shift = shift - sh;
  op->outer = (int32_t)outer, op->red = (int32_t)red, op->inner = (int32_t)inner;
  op->zi = zi, op->zo = zo, op->u8 = u8;
  return 0;
}

size_t fx_qs8_mean_outputs(const fx_qs8_mean_any_op *op) { return (size_t)op->outer * (size_t)op->inner; }

void fx_qs8_mean_run(const fx_qs8_ops_config *v, const fx_qs8_mean_any_op *op, const void *x,
                     void *y, size_t o0, size_t o1, int32_t *scratch) {
  const size_t inner = (size_t)op->inner, red = (size_t)op->red, es = 1;
  const int32_t lo = op->u8 ? 0 : -128, hi = op->u8 ? 255 : 127;
  const uint32_t bias = (uint32_t)op->zi * (uint32_t)op->red; /* zi * count in int32, wrapping */
  for (size_t o = o0; o < o1;) {
    const size_t row = o / inner, j0 = o % inner;
    const size_t j1 = inner < j0 + (o1 - o) ? inner : j0 + (o1 - o);
    memset(scratch, 0, (j1 - j0) * sizeof *scratch);
    v->sum_rows(j1 - j0, red, (const uint8_t *)x + (row * red * inner + j0) * es, inner, op->u8, scratch);
    for (size_t j = j0; j < j1; j++) {
      const int32_t s = (int32_t)((uint32_t)scratch[j - j0] - bias);
      const int32_t r = (int32_t)((uint32_t)fxq_mbqm(s, op->m, op->shift, FLEX_RQ_AWAY) + (uint32_t)op->zo);
      ((uint8_t *)y)[row * inner + j] = (uint8_t)fxq_sat(r, lo, hi);
    }
    o += j1 - j0;
  }
}
