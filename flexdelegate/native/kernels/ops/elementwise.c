/* Elementwise kernels: unary activations and broadcasting binary ops. */
#include "fastmath.h"
#include "ops.h"
#include "kernels/vgelu/vgelu.h"
#include "kernels/vsigmoid/vsigmoid.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* sigmoid without overflow: e = exp(-|x|) in (0, 1]; x<0 -> e/(1+e). */
static inline float fx_sigmoidf(float x) {
  const float ax = fabsf(x);
  const float e = fx_expf(-ax);
  const float r = 1.0f / (1.0f + e);
  return fx_sel(x >= 0.0f, r, e * r);
}

/* tanh: odd Taylor polynomial for |x| < 0.3 (error < 1e-7 relative), otherwise
 * 1 - 2/(exp(2|x|)+1) with |x| capped at 10 (tanh(x) rounds to 1.0f beyond ~9.01). */
static inline float fx_tanhf(float x) {
  const float ax = fabsf(x);
  const float x2 = x * x;
  float q = 62.0f / 2835.0f;
  q = q * x2 + (-17.0f / 315.0f);
  q = q * x2 + (2.0f / 15.0f);
  q = q * x2 + (-1.0f / 3.0f);
  const float small = x + x * x2 * q;
  const float axc = fx_sel(ax > 10.0f, 10.0f, ax);
  const float e = fx_expf(2.0f * axc);
  const float tl = 1.0f - 2.0f / (e + 1.0f);
  const float large = fx_sel(x < 0.0f, -tl, tl);
  return fx_sel(ax < 0.3f, small, large);
}

/* One build for every x86-64: gcc compiles these loops for AVX-512, AVX2 and the baseline and
 * picks one at load time from the CPU (an ifunc), like the GEMM and depthwise tables. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FX_MULTIVERSION __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define FX_MULTIVERSION
#endif

FX_MULTIVERSION
static void unary_range(int kind, float alpha, const float *x, float *y, size_t n) {
  size_t i;
  switch (kind) {
    case FX_U_RELU:
      for (i = 0; i < n; ++i) { const float v = x[i]; y[i] = v > 0.0f ? v : 0.0f; }
      break;
    case FX_U_RELU6:
      for (i = 0; i < n; ++i) {
        float v = x[i];
        v = v > 0.0f ? v : 0.0f;
        y[i] = v < 6.0f ? v : 6.0f;
      }
      break;
    case FX_U_RELU_N1_TO_1:
      for (i = 0; i < n; ++i) {
        float v = x[i];
        v = v > -1.0f ? v : -1.0f;
        y[i] = v < 1.0f ? v : 1.0f;
      }
      break;
    case FX_U_LOGISTIC:
      for (i = 0; i < n; ++i) y[i] = fx_sigmoidf(x[i]);
      break;
    case FX_U_SWISH: /* the same float operations as LOGISTIC then MUL: bit-identical */
      for (i = 0; i < n; ++i) { const float v = x[i]; y[i] = v * fx_sigmoidf(v); }
      break;
    case FX_U_TANH:
      for (i = 0; i < n; ++i) y[i] = fx_tanhf(x[i]);
      break;
    case FX_U_HARD_SWISH:
      for (i = 0; i < n; ++i) {
        const float v = x[i];
        float r = v + 3.0f;
        r = r > 0.0f ? r : 0.0f;
        r = r < 6.0f ? r : 6.0f;
        y[i] = v * r / 6.0f;
      }
      break;
    case FX_U_LEAKY_RELU:
      for (i = 0; i < n; ++i) { const float v = x[i]; y[i] = fx_sel(v > 0.0f, v, alpha * v); }
      break;
    case FX_U_NEG:
      for (i = 0; i < n; ++i) y[i] = -x[i];
      break;
    case FX_U_ABS:
      for (i = 0; i < n; ++i) y[i] = fabsf(x[i]);
      break;
    case FX_U_SQUARE:
      for (i = 0; i < n; ++i) y[i] = x[i] * x[i];
      break;
    case FX_U_SQRT:
      for (i = 0; i < n; ++i) y[i] = sqrtf(x[i]);
      break;
    case FX_U_RSQRT: /* stock's 1 / sqrt, not an estimate */
      for (i = 0; i < n; ++i) y[i] = 1.0f / sqrtf(x[i]);
      break;
    case FX_U_EXP:
      for (i = 0; i < n; ++i) y[i] = expf(x[i]);
      break;
    case FX_U_LOG:
      for (i = 0; i < n; ++i) y[i] = logf(x[i]);
      break;
    default:
      if (x != y) memmove(y, x, n * sizeof(float));
      break;
  }
}

static void unary_any(int kind, float alpha, const float *x, float *y, size_t n) {
  if ((kind == FX_U_LOGISTIC || kind == FX_U_SWISH) && fx_vsigmoid(x, y, n, kind == FX_U_SWISH)) return;
  if (kind == FX_U_GELU || kind == FX_U_GELU_TANH) { fx_vgelu_f32(x, y, n, kind == FX_U_GELU_TANH); return; }
  unary_range(kind, alpha, x, y, n);
}

typedef struct { int kind; float alpha; const float *x; float *y; } unary_job;

static void unary_task(void *ctx, size_t b, size_t e) {
  const unary_job *j = ctx;
  unary_any(j->kind, j->alpha, j->x + b, j->y + b, e - b);
}

/* Below this many elements a thread hand-off costs more than it saves. */
#define FX_UNARY_PARALLEL_MIN 16384

void fx_unary_f32_pool(fx_pool *pool, int kind, float alpha, const float *x, float *y, size_t n) {
  unary_job j = {kind, alpha, x, y};
  if (n < FX_UNARY_PARALLEL_MIN) unary_task(&j, 0, n);
  else fx_parallel_for(pool, n, FX_UNARY_PARALLEL_MIN / 4, unary_task, &j);
}

void fx_unary_f32(int kind, float alpha, const float *x, float *y, size_t n) {
  unary_any(kind, alpha, x, y, n);
}

/* ---------------------------------------------------------------------------
 * Binary ops. Row kernels for the three operand patterns:
 *   vv: both vectors, vs: b scalar, sv: a scalar.
 * y may alias a or b exactly (in-place), so no restrict here; gcc versions
 * the loops with a runtime overlap check and still vectorises them.
 * Clamping with [lo, hi] is fused (TFLite ActivationFunctionWithMinMax).
 * Multiversioned like the unary loops: built for the baseline ISA only, the squeeze-excite
 * MULs of EfficientNet-B0 (2.6M elements per invoke) ran 4 floats at a time.
 * ------------------------------------------------------------------------- */
typedef void (*fx_row_fn)(const float *a, const float *b, float *y, size_t n, float lo, float hi);

#define FX_CLAMP(v) do { v = v < lo ? lo : v; v = v > hi ? hi : v; } while (0)

/* One row loop: HOIST reads a broadcast operand once, P and Q are the element operands. */
#define FX_ROW(NAME, KIND, EXPR, HOIST, P, Q)                                                \
  FX_MULTIVERSION                                                                            \
  static void row_##NAME##_##KIND(const float *a, const float *b, float *y, size_t n, float lo, \
                                  float hi) {                                                \
    HOIST;                                                                                   \
    for (size_t i = 0; i < n; ++i) {                                                         \
      const float p = (P), q = (Q);                                                          \
      float v = (EXPR);                                                                      \
      FX_CLAMP(v);                                                                           \
      y[i] = v;                                                                              \
    }                                                                                        \
  }
/* The three loops of a binary op: both operands vectors, b a scalar, a a scalar. */
#define FX_DEF_ROWS(NAME, EXPR)                          \
  FX_ROW(NAME, vv, EXPR, (void)0, a[i], b[i])            \
  FX_ROW(NAME, vs, EXPR, const float b0 = b[0], a[i], b0) \
  FX_ROW(NAME, sv, EXPR, const float a0 = a[0], a0, b[i])

FX_DEF_ROWS(add, p + q)
FX_DEF_ROWS(sub, p - q)
FX_DEF_ROWS(mul, p * q)
FX_DEF_ROWS(div, p / q)
FX_DEF_ROWS(max, p > q ? p : q)
FX_DEF_ROWS(min, p < q ? p : q)
FX_DEF_ROWS(prelu, fx_sel(p >= 0.0f, p, p * q))
FX_DEF_ROWS(sqdiff, (p - q) * (p - q))
FX_DEF_ROWS(pow, powf(p, q))

enum { PAT_VV = 0, PAT_VS = 1, PAT_SV = 2 };

static const fx_row_fn fx_rows[FX_B_COUNT][3] = {
    {row_add_vv, row_add_vs, row_add_sv},       {row_sub_vv, row_sub_vs, row_sub_sv},
    {row_mul_vv, row_mul_vs, row_mul_sv},       {row_div_vv, row_div_vs, row_div_sv},
    {row_max_vv, row_max_vs, row_max_sv},       {row_min_vv, row_min_vs, row_min_sv},
    {row_prelu_vv, row_prelu_vs, row_prelu_sv}, {row_sqdiff_vv, row_sqdiff_vs, row_sqdiff_sv},
    {row_pow_vv, row_pow_vs, row_pow_sv},
};

#define FX_PAR_MIN_ELEMS ((size_t)65536)
#define FX_PAR_GRAIN_ELEMS ((size_t)16384)

typedef struct {
  const float *a, *b;
  float *y;
  float lo, hi;
  int tanh_act;
  int mode;           /* 0: flat (pattern pat), 1: per-row vector, 2: general */
  int pat;            /* row pattern for modes 0/1 and the inner row of mode 2 */
  int b_is_vec;       /* mode 1: which side is the per-channel vector */
  int both_bcast;     /* mode 2: inner dim broadcast on both sides */
  fx_row_fn fn;
  size_t inner;       /* elements per row (modes 1/2) */
  /* mode 2: outer dims (outermost first), their sizes and element strides */
  int nd;
  size_t n[FX_MAX_RANK];
  ptrdiff_t sa[FX_MAX_RANK], sb[FX_MAX_RANK];
} fx_bin_ctx;

static void bin_task(void *vctx, size_t begin, size_t end) {
  const fx_bin_ctx *c = (const fx_bin_ctx *)vctx;
  if (begin >= end) return;
  if (c->mode == 0) {
    const float *a = c->pat == PAT_SV ? c->a : c->a + begin;
    const float *b = c->pat == PAT_VS ? c->b : c->b + begin;
    c->fn(a, b, c->y + begin, end - begin, c->lo, c->hi);
    if (c->tanh_act) fx_unary_f32(FX_U_TANH, 0.0f, c->y + begin, c->y + begin, end - begin);
    return;
  }
  const size_t inner = c->inner;
  if (c->mode == 1) {
    for (size_t r = begin; r < end; ++r) {
      float *y = c->y + r * inner;
      if (c->b_is_vec) c->fn(c->a + r * inner, c->b, y, inner, c->lo, c->hi);
      else c->fn(c->a, c->b + r * inner, y, inner, c->lo, c->hi);
      if (c->tanh_act) fx_unary_f32(FX_U_TANH, 0.0f, y, y, inner);
    }
    return;
  }
  /* general: decode `begin` into an outer multi-index */
  size_t idx[FX_MAX_RANK];
  ptrdiff_t oa = 0, ob = 0;
  {
    size_t r = begin;
    for (int d = c->nd - 1; d >= 0; --d) {
      idx[d] = r % c->n[d];
      r /= c->n[d];
      oa += (ptrdiff_t)idx[d] * c->sa[d];
      ob += (ptrdiff_t)idx[d] * c->sb[d];
    }
  }
  for (size_t r = begin; r < end; ++r) {
    float *y = c->y + r * inner;
    if (c->both_bcast) {
      c->fn(c->a + oa, c->b + ob, y, 1, c->lo, c->hi);
      const float v = y[0];
      for (size_t i = 1; i < inner; ++i) y[i] = v;
    } else {
      c->fn(c->a + oa, c->b + ob, y, inner, c->lo, c->hi);
    }
    if (c->tanh_act) fx_unary_f32(FX_U_TANH, 0.0f, y, y, inner);
    /* odometer increment over the outer dims */
    for (int d = c->nd - 1; d >= 0; --d) {
      oa += c->sa[d];
      ob += c->sb[d];
      if (++idx[d] < c->n[d]) break;
      oa -= (ptrdiff_t)c->n[d] * c->sa[d];
      ob -= (ptrdiff_t)c->n[d] * c->sb[d];
      idx[d] = 0;
    }
  }
}

static void bin_run(fx_pool *pool, fx_bin_ctx *c, size_t items, size_t elems_per_item,
                    size_t total) {
  if (total >= FX_PAR_MIN_ELEMS && items > 1) {
    size_t grain = FX_PAR_GRAIN_ELEMS / (elems_per_item ? elems_per_item : 1);
    if (grain < 1) grain = 1;
    fx_parallel_for(pool, items, grain, bin_task, c);
  } else {
    bin_task(c, 0, items);
  }
}

/* (d) of fx_binary_f32: the general strided loop over the output with its size-1 dims dropped and
 * compatible dims merged; ad / bd are the operands' right-aligned, 1-padded dims. */
static void bin_general(fx_pool *pool, fx_bin_ctx *c, int op, const int *ad, const int *bd, const fx_shape *ys,
                        size_t total) {
  const int R = ys->rank;
  size_t n[FX_MAX_RANK];
  ptrdiff_t sa[FX_MAX_RANK], sb[FX_MAX_RANK];
  int k = 0;
  {
    ptrdiff_t ca[FX_MAX_RANK], cb[FX_MAX_RANK]; /* contiguous strides */
    ptrdiff_t acc_a = 1, acc_b = 1;
    for (int i = R - 1; i >= 0; --i) {
      ca[i] = acc_a; cb[i] = acc_b;
      acc_a *= ad[i]; acc_b *= bd[i];
    }
    for (int i = 0; i < R; ++i) {
      if (ys->d[i] == 1) continue;
      const ptrdiff_t s_a = ad[i] == 1 ? 0 : ca[i];
      const ptrdiff_t s_b = bd[i] == 1 ? 0 : cb[i];
      if (k > 0 && sa[k - 1] == s_a * (ptrdiff_t)ys->d[i] &&
          sb[k - 1] == s_b * (ptrdiff_t)ys->d[i]) {
        n[k - 1] *= (size_t)ys->d[i];
        sa[k - 1] = s_a;
        sb[k - 1] = s_b;
        continue;
      }
      n[k] = (size_t)ys->d[i]; sa[k] = s_a; sb[k] = s_b;
      ++k;
    }
  }
  if (k == 0) { n[0] = 1; sa[0] = 0; sb[0] = 0; k = 1; }
  c->mode = 2;
  c->inner = n[k - 1];
  const int ia = sa[k - 1] != 0, ib = sb[k - 1] != 0;
  c->both_bcast = !ia && !ib;
  c->pat = (ia && ib) ? PAT_VV : (ia ? PAT_VS : (ib ? PAT_SV : PAT_VV));
  c->fn = fx_rows[op][c->pat];
  c->nd = k - 1;
  for (int d = 0; d < k - 1; ++d) { c->n[d] = n[d]; c->sa[d] = sa[d]; c->sb[d] = sb[d]; }
  bin_run(pool, c, total / c->inner, c->inner, total);
}

void fx_binary_f32(fx_pool *pool, int op, const float *a, const fx_shape *as,
                   const float *b, const fx_shape *bs, float *y, const fx_shape *ys, int act) {
  if (op < 0 || op >= FX_B_COUNT) return;
  const int R = ys->rank;
  if (R > FX_MAX_RANK || as->rank > R || bs->rank > R) return;
  const size_t total = fx_shape_numel(ys);
  if (total == 0) return;

  fx_bin_ctx c;
  memset(&c, 0, sizeof c);
  c.a = a; c.b = b; c.y = y;
  fx_act_bounds(act, &c.lo, &c.hi);
  if (act == FLEX_ACT_NONE && op != FX_B_ADD && op != FX_B_SUB && op != FX_B_MUL && op != FX_B_DIV) {
    c.lo = -INFINITY; c.hi = INFINITY;     /* these TFLite ops never clamp */
  }
  c.tanh_act = act == FLEX_ACT_TANH;

  /* right-aligned, 1-padded operand dims */
  int ad[FX_MAX_RANK], bd[FX_MAX_RANK];
  for (int i = 0; i < R; ++i) {
    const int ia = i - (R - as->rank), ib = i - (R - bs->rank);
    ad[i] = ia >= 0 ? as->d[ia] : 1;
    bd[i] = ib >= 0 ? bs->d[ib] : 1;
  }
  size_t na = 1, nb = 1;
  for (int i = 0; i < R; ++i) { na *= (size_t)ad[i]; nb *= (size_t)bd[i]; }

  /* (a) same shape, (b) one side scalar and the other full */
  if (na == 1 && nb == 1) {
    float v;
    fx_rows[op][PAT_VV](a, b, &v, 1, c.lo, c.hi);
    if (c.tanh_act) fx_unary_f32(FX_U_TANH, 0.0f, &v, &v, 1);
    for (size_t i = 0; i < total; ++i) y[i] = v;
    return;
  }
  if ((na == total && nb == total) || (nb == 1 && na == total) || (na == 1 && nb == total)) {
    c.mode = 0;
    c.pat = nb == 1 ? PAT_VS : (na == 1 ? PAT_SV : PAT_VV);
    c.fn = fx_rows[op][c.pat];
    bin_run(pool, &c, total, 1, total);
    return;
  }

  /* (c) one side is a vector along the last dim, the other is full */
  const int C = R > 0 ? ys->d[R - 1] : 1;
  if (R > 0 && C > 1) {
    int b_vec = nb == (size_t)C && bd[R - 1] == C && na == total;
    int a_vec = na == (size_t)C && ad[R - 1] == C && nb == total;
    if (b_vec || a_vec) {
      c.mode = 1;
      c.b_is_vec = b_vec;
      c.inner = (size_t)C;
      c.fn = fx_rows[op][PAT_VV];
      bin_run(pool, &c, total / (size_t)C, (size_t)C, total);
      return;
    }
  }

  /* (d) the general strided loop */
  bin_general(pool, &c, op, ad, bd, ys, total);
}
