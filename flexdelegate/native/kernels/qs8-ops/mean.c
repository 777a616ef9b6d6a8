/* MEAN over H and W of a 4-D int8 tensor with keep_dims: stock's fast path
 * (optimized_integer_ops::Mean; NOTES.md "MEAN"). Channel sums in int32, then
 * MultiplyByQuantizedMultiplier by si / (H*W*so) plus a float-rounded zero-point bias, clamped
 * to int8. On LiteRT the NEON loop takes whole blocks of 16 channels from the start of each of
 * stock's thread ranges and rounds ties up (MultiplyByQuantizedMultiplier4Rows); the rest, and
 * every channel on tflite-runtime, round them away from zero.
 * Every other MEAN (stock's general path) and SUM: int32 sums over any axes (one walk for both),
 * then MEAN's integer rescale or SUM's float one. */
#include <math.h>
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

/* ---- the sums of any reduction: alternating groups of kept and reduced dimensions ---- */
int fx_qs8_reduce_geom_of(int u8, const fx_qs8_shape *in, uint32_t axis_mask, fx_qs8_reduce_geom *g) {
  memset(g, 0, sizeof *g);
  if (in->rank < 0 || in->rank > FX_QS8_MAX_RANK || (axis_mask >> in->rank)) return -1;
  g->u8 = u8, g->count = 1, g->outputs = 1, g->inner_red = -1;
  for (int i = 0; i < in->rank; i++) {
    const int64_t d = in->d[i];
    const uint32_t r = (axis_mask >> i) & 1u;
    if (d <= 0) return -1;
    if (r && (g->count *= d) > (1 << 23)) return -1;
    if (!r && (g->outputs *= d) > INT32_MAX) return -1;
    if (d == 1) continue;
    if (g->ng && ((g->red >> (g->ng - 1)) & 1u) == r) {
      g->n[g->ng - 1] *= d;
    } else {
      g->red |= r << g->ng;
      g->n[g->ng++] = d;
    }
  }
  for (int k = g->ng - 1; k >= 0; k--) {
    g->stride[k] = k == g->ng - 1 ? 1 : g->stride[k + 1] * g->n[k + 1];
    if (((g->red >> k) & 1u) && g->inner_red < 0) g->inner_red = k;
  }
  g->inner = g->ng && !((g->red >> (g->ng - 1)) & 1u) ? g->n[g->ng - 1] : 1;
  return 0;
}

void fx_qs8_reduce_sums(const fx_qs8_ops_config *v, const fx_qs8_reduce_geom *g, const void *x,
                        size_t o0, size_t o1, int32_t *sums) {
  const uint8_t *px = x;
  const size_t inner = (size_t)g->inner;
  const int ri = g->inner_red, kept_last = g->ng && !((g->red >> (g->ng - 1)) & 1u);
  const size_t rows = ri >= 0 ? (size_t)g->n[ri] : 1, row_stride = ri >= 0 ? (size_t)g->stride[ri] : 0;
  memset(sums, 0, (o1 - o0) * sizeof *sums);
  for (size_t o = o0; o < o1;) {
    const size_t j0 = o % inner, j1 = inner < j0 + (o1 - o) ? inner : j0 + (o1 - o);
    /* the input offset of output o's kept indices but a kept last group's (j0..j1) */
    size_t base = 0, q = o / inner;
    for (int k = g->ng - 1 - kept_last; k >= 0; k--) {
      if ((g->red >> k) & 1u) continue;
      base += q % (size_t)g->n[k] * (size_t)g->stride[k];
      q /= (size_t)g->n[k];
    }
    /* the innermost reduced group in one call per combination of the outer reduced ones */
    size_t idx[FX_QS8_MAX_RANK] = {0}, off = base;
    for (;;) {
      v->sum_rows(j1 - j0, rows, px + off + j0, row_stride, g->u8, sums + (o - o0));
      int k = ri - 1;
      for (; k >= 0; k--) {
        if (!((g->red >> k) & 1u)) continue;
        off += (size_t)g->stride[k];
        if (++idx[k] < (size_t)g->n[k]) break;
        off -= idx[k] * (size_t)g->stride[k];
        idx[k] = 0;
      }
      if (k < 0) break;
    }
    o += j1 - j0;
  }
}

/* ---- MEAN on stock's general path (reference_ops::QuantizedMeanOrSum, both wheels) ---- */
int fx_qs8_mean_prepare(int u8, const fx_qs8_shape *in, uint32_t axis_mask, float si, int32_t zi,
                        float so, int32_t zo, fx_qs8_mean_any_op *op) {
  memset(op, 0, sizeof *op);
  if (!(si > 0) || !(so > 0) || in->rank < 1) return -1;
  if (zi < (u8 ? 0 : -128) || zi > (u8 ? 255 : 127) || zo < (u8 ? 0 : -128) || zo > (u8 ? 255 : 127)) return -1;
  if (!axis_mask || fx_qs8_reduce_geom_of(u8, in, axis_mask, &op->g)) return -1;
  int32_t m, shift;
  fx_quantize_multiplier((double)si / (double)so, 0, &m, &shift);
  if (shift > 30) return -1;
  /* the 1/count folded into the multiplier as stock does: floor(log2 count) more bits, capped */
  const int64_t count = op->g.count;
  int sh = 63 - __builtin_clzll((unsigned long long)count);
  sh = sh < 32 ? sh : 32;
  sh = sh < 31 + shift ? sh : 31 + shift;
  op->m = (int32_t)(((int64_t)m << sh) / count);
  op->shift = shift - sh;
  op->zi = zi, op->zo = zo;
  return 0;
}

void fx_qs8_mean_run(const fx_qs8_ops_config *v, const fx_qs8_mean_any_op *op, const void *x,
                     void *y, size_t o0, size_t o1, int32_t *scratch) {
  const int32_t lo = op->g.u8 ? 0 : -128, hi = op->g.u8 ? 255 : 127;
  const uint32_t bias = (uint32_t)op->zi * (uint32_t)op->g.count; /* zi * count in int32, wrapping */
  fx_qs8_reduce_sums(v, &op->g, x, o0, o1, scratch);
  for (size_t o = o0; o < o1; o++) {
    const int32_t s = (int32_t)((uint32_t)scratch[o - o0] - bias);
    const int32_t r = (int32_t)((uint32_t)fxq_mbqm(s, op->m, op->shift, FLEX_RQ_AWAY) + (uint32_t)op->zo);
    ((uint8_t *)y)[o] = (uint8_t)fxq_sat(r, lo, hi);
  }
}

/* ---- SUM: optimized_ops::QuantizedMeanOrSum's float output stage (both wheels) ---- */
int fx_qs8_sum_prepare(int u8, const fx_qs8_shape *in, uint32_t axis_mask, float si, int32_t zi,
                       float so, int32_t zo, fx_qs8_sum_op *op) {
  memset(op, 0, sizeof *op);
  if (!(si > 0) || !(so > 0)) return -1;
  if (zi < (u8 ? 0 : -128) || zi > (u8 ? 255 : 127) || zo < (u8 ? 0 : -128) || zo > (u8 ? 255 : 127)) return -1;
  if (fx_qs8_reduce_geom_of(u8, in, axis_mask, &op->g)) return -1;
  op->scale = si / so;
  float bias = (float)-zi * op->scale;
  FX_NOFUSE(bias);
  op->bias = bias * (float)op->g.count;
  op->zo = zo;
  return 0;
}

void fx_qs8_sum_run(const fx_qs8_ops_config *v, const fx_qs8_sum_op *op, const void *x, void *y,
                    size_t o0, size_t o1, int32_t *scratch) {
  const int32_t lo = op->g.u8 ? 0 : -128, hi = op->g.u8 ? 255 : 127;
  fx_qs8_reduce_sums(v, &op->g, x, o0, o1, scratch);
  for (size_t o = o0; o < o1; o++) {
    float f = (float)scratch[o - o0] * op->scale;
    FX_NOFUSE(f); /* two roundings, as stock's x86 builds */
    f = f + op->bias;
    const int32_t r = (int32_t)((uint32_t)fxq_cvt_trunc_f(roundf(f)) + (uint32_t)op->zo);
    ((uint8_t *)y)[o] = (uint8_t)fxq_sat(r, lo, hi);
  }
}
