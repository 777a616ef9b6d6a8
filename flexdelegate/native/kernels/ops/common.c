/* Shared helpers: shape arithmetic, fused activations, SAME/VALID padding,
 * broadcast shape inference. */
#include "ops.h"

#include <float.h>
#include <math.h>

size_t fx_shape_numel(const fx_shape *s) {
  size_t n = 1;
  for (int i = 0; i < s->rank; ++i) n *= (size_t)(s->d[i] > 0 ? s->d[i] : 0);
  return n;
}

int fx_shape_equal(const fx_shape *a, const fx_shape *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->d[i] != b->d[i]) return 0;
  return 1;
}

/* Same ranges as TFLite's CalculateActivationRange<float>: NONE (and any other
 * non-clamping activation) clamps to [lowest, max], so +-inf saturate exactly as
 * in the stock kernels. TANH is not a clamp: it gets [-inf, inf]. */
void fx_act_bounds(int act, float *lo, float *hi) {
  switch (act) {
    case FLEX_ACT_RELU: *lo = 0.0f; *hi = FLT_MAX; break;
    case FLEX_ACT_RELU_N1_TO_1: *lo = -1.0f; *hi = 1.0f; break;
    case FLEX_ACT_RELU6: *lo = 0.0f; *hi = 6.0f; break;
    case FLEX_ACT_TANH: *lo = -INFINITY; *hi = INFINITY; break;
    default: *lo = -FLT_MAX; *hi = FLT_MAX; break;
  }
}

/* In-place activation. NONE is a no-op (no pass over memory). */
void fx_apply_act(int act, float *y, size_t n) {
  if (act == FLEX_ACT_NONE) return;
  if (act == FLEX_ACT_TANH || fx_act_is_curve(act)) {
    const int kind = act == FLEX_ACT_TANH      ? FX_U_TANH
                     : act == FLEX_ACT_SIGMOID ? FX_U_LOGISTIC
                     : act == FLEX_ACT_GELU    ? FX_U_GELU
                     : act == FLEX_ACT_GELU_TANH ? FX_U_GELU_TANH
                                               : FX_U_SWISH;
    fx_unary_f32(kind, 0.0f, y, y, n);
    return;
  }
  fx_clamp_act(act, y, n);
}

void fx_clamp_act(int act, float *y, size_t n) {
  float lo, hi;
  fx_act_bounds(act, &lo, &hi);
  for (size_t i = 0; i < n; ++i) {
    float v = y[i];
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    y[i] = v;
  }
}

/* TFLite ComputeOutSize + ComputePaddingWithOffset (padding.h). *out is not clamped, as
 * stock's is not: a VALID window past the input gives a negative extent, which shape
 * inference refuses. */
void fx_same_valid(int same, int in, int k, int stride, int dil, int *out, int *pad_before) {
  if (stride <= 0) { *out = 0; *pad_before = 0; return; }
  if (dil <= 0) dil = 1;
  const int eff = (k - 1) * dil + 1;
  int o = same ? (in + stride - 1) / stride : (in + stride - eff) / stride;
  int total = (o - 1) * stride + eff - in;
  if (total < 0) total = 0;
  *out = o;
  *pad_before = total / 2;
}

int fx_broadcast_shape(const fx_shape *a, const fx_shape *b, fx_shape *out) {
  if (a->rank < 0 || b->rank < 0 || a->rank > FX_MAX_RANK || b->rank > FX_MAX_RANK) return -1;
  const int r = a->rank > b->rank ? a->rank : b->rank;
  fx_shape o;
  o.rank = r;
  for (int i = 0; i < FX_MAX_RANK; ++i) o.d[i] = 0;
  for (int i = 0; i < r; ++i) {
    const int ia = a->rank - r + i, ib = b->rank - r + i;
    const int da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
    if (da == db) o.d[i] = da;
    else if (da == 1) o.d[i] = db;
    else if (db == 1) o.d[i] = da;
    else return -1;
  }
  *out = o;
  return 0;
}

void fx_window_rows(fx_pool *pool, const fx_shape *ys, const fx_window *w, fx_task_fn fn, void *ctx) {
  const size_t rows = (size_t)ys->d[0] * (size_t)ys->d[1];
  if (rows == 0 || ys->d[2] <= 0 || ys->d[3] <= 0) return;
  const size_t work = (size_t)ys->d[2] * (size_t)ys->d[3] * (size_t)(w->kh > 0 ? w->kh : 1) *
                      (size_t)(w->kw > 0 ? w->kw : 1);
  size_t grain = (size_t)32768 / (work ? work : 1);
  fx_parallel_for(pool, rows, grain < 1 ? 1 : grain, fn, ctx);
}
