/* Standalone self-test for flexdelegate/native/ops: every kernel against a
 * small naive reference written here (a different formulation where possible),
 * on awkward shapes. Prints "N passed, M failed" last; exits non-zero on failure.
 *
 * Build (see test_ops_selftest.py): cc -std=c11 -O1 -Wall -Werror
 *   -I flexdelegate/native/ops tests/native/ops_selftest.c <every ops .c file> -lm */
#include "kernels/ops/ops.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ harness */
static int g_pass, g_fail;

/* Kernels size their split by the pool's threads: pretend to have 3, so the threaded
 * paths run (serially, below). */
int fx_pool_threads(const fx_pool *pool) {
  (void)pool;
  return 3;
}

/* Serial stand-in for the thread pool: still splits [0, n) into several
 * uneven chunks so kernels see partial ranges. */
void fx_parallel_for(fx_pool *pool, size_t n, size_t grain, fx_task_fn fn, void *ctx) {
  (void)pool;
  if (n == 0) return;
  if (grain == 0) grain = 1;
  size_t chunk = (n + 6) / 7;
  if (chunk < grain) chunk = grain;
  size_t b = 0, k = 0;
  while (b < n) {
    size_t len = chunk + (k++ % 2); /* uneven */
    size_t e = b + len < n ? b + len : n;
    fn(ctx, b, e);
    b = e;
  }
}

static void report(int ok, const char *fmt, ...) {
  if (ok) {
    g_pass++;
    return;
  }
  g_fail++;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

static int close_to(float got, double ref, double rel, double abs_tol) {
  if (isnan(ref)) return isnan(got);
  if (isinf(ref)) return (double)got == ref;
  if (isnan(got) || isinf(got)) return 0;
  return fabs((double)got - ref) <= rel * fabs(ref) + abs_tol;
}

/* compares arrays; one pass/fail per call */
static void check_f(const char *name, const float *got, const double *ref, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!close_to(got[i], ref[i], 1e-5, 1e-6)) {
      report(0, "%s: index %zu got %.9g want %.9g (n=%zu)", name, i, (double)got[i], ref[i], n);
      return;
    }
  }
  report(1, "%s", name);
}

static void check_bytes(const char *name, const void *got, const void *ref, size_t n) {
  const unsigned char *a = (const unsigned char *)got, *b = (const unsigned char *)ref;
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      report(0, "%s: byte %zu got %u want %u (n=%zu)", name, i, a[i], b[i], n);
      return;
    }
  }
  report(1, "%s", name);
}

static uint32_t g_rng = 12345u;
static float frand(float lo, float hi) {
  g_rng = g_rng * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)((g_rng >> 8) & 0xFFFFFF) / 16777216.0f;
}
static float *rand_buf(size_t n, float lo, float hi) {
  float *p = (float *)malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = frand(lo, hi);
  return p;
}
static double *dbuf(size_t n) { return (double *)calloc(n ? n : 1, sizeof(double)); }
static float *fbuf(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }

static fx_shape shp(int rank, ...) {
  fx_shape s;
  memset(&s, 0, sizeof s);
  s.rank = rank;
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; ++i) s.d[i] = va_arg(ap, int);
  va_end(ap);
  return s;
}

static size_t numel(const fx_shape *s) {
  size_t n = 1;
  for (int i = 0; i < s->rank; ++i) n *= (size_t)s->d[i];
  return n;
}

/* flat index -> coords (row-major) */
static void unravel(size_t f, const fx_shape *s, int *c) {
  for (int i = s->rank - 1; i >= 0; --i) {
    c[i] = (int)(f % (size_t)s->d[i]);
    f /= (size_t)s->d[i];
  }
}
static size_t ravel(const int *c, const fx_shape *s) {
  size_t f = 0;
  for (int i = 0; i < s->rank; ++i) f = f * (size_t)s->d[i] + (size_t)c[i];
  return f;
}

static double act_ref(int act, double v) {
  switch (act) {
    case FLEX_ACT_RELU: return v < 0 ? 0 : v;
    case FLEX_ACT_RELU6: return v < 0 ? 0 : (v > 6 ? 6 : v);
    case FLEX_ACT_RELU_N1_TO_1: return v < -1 ? -1 : (v > 1 ? 1 : v);
    case FLEX_ACT_TANH: return tanh(v);
    default: return v;
  }
}

/* ------------------------------------------------------------------- common */
static void test_common(void) {
  fx_shape s = shp(4, 2, 3, 1, 5);
  report(fx_shape_numel(&s) == 30, "numel");
  fx_shape s0 = shp(0);
  report(fx_shape_numel(&s0) == 1, "numel rank0");
  fx_shape sz = shp(2, 3, 0);
  report(fx_shape_numel(&sz) == 0, "numel zero dim");

  struct { int same, in, k, st, dil, out, pad; } cs[] = {
      {1, 5, 3, 2, 1, 3, 1},  {0, 5, 3, 2, 1, 2, 0},  {1, 7, 3, 1, 2, 7, 2},
      {0, 7, 3, 1, 2, 3, 0},  {1, 1, 3, 2, 1, 1, 1},  {1, 4, 1, 2, 1, 2, 0},
      {1, 6, 3, 2, 1, 3, 0},  {1, 224, 3, 2, 1, 112, 0}, {1, 113, 3, 2, 1, 57, 1},
      {0, 224, 7, 2, 1, 109, 0}, {1, 8, 4, 1, 1, 8, 1}, {1, 10, 2, 3, 3, 4, 1},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
    int o = -1, p = -1;
    fx_same_valid(cs[i].same, cs[i].in, cs[i].k, cs[i].st, cs[i].dil, &o, &p);
    report(o == cs[i].out && p == cs[i].pad, "same_valid case %zu: got out=%d pad=%d want %d %d", i,
           o, p, cs[i].out, cs[i].pad);
  }

  float lo, hi;
  fx_act_bounds(FLEX_ACT_RELU6, &lo, &hi);
  report(lo == 0.0f && hi == 6.0f, "act_bounds relu6");
  fx_act_bounds(FLEX_ACT_RELU, &lo, &hi);
  report(lo == 0.0f && hi >= FLT_MAX, "act_bounds relu");
  fx_act_bounds(FLEX_ACT_RELU_N1_TO_1, &lo, &hi);
  report(lo == -1.0f && hi == 1.0f, "act_bounds n1to1");
  fx_act_bounds(FLEX_ACT_TANH, &lo, &hi);
  report(isinf(lo) && lo < 0 && isinf(hi) && hi > 0, "act_bounds tanh");

  const int acts[] = {FLEX_ACT_NONE, FLEX_ACT_RELU, FLEX_ACT_RELU_N1_TO_1, FLEX_ACT_RELU6, FLEX_ACT_TANH};
  for (int a = 0; a < 5; ++a) {
    const size_t n = 37;
    float *x = rand_buf(n, -8, 8);
    double *r = dbuf(n);
    for (size_t i = 0; i < n; ++i) r[i] = act_ref(acts[a], x[i]);
    fx_apply_act(acts[a], x, n);
    char nm[64];
    snprintf(nm, sizeof nm, "apply_act %d", acts[a]);
    check_f(nm, x, r, n);
    free(x); free(r);
  }

  fx_shape a = shp(3, 2, 1, 5), b = shp(2, 3, 1), o;
  report(fx_broadcast_shape(&a, &b, &o) == 0 && o.rank == 3 && o.d[0] == 2 && o.d[1] == 3 &&
             o.d[2] == 5, "broadcast_shape basic");
  fx_shape c = shp(1, 4), d = shp(2, 3, 5);
  report(fx_broadcast_shape(&c, &d, &o) == -1, "broadcast_shape incompatible");
  fx_shape e = shp(0), f = shp(4, 2, 1, 1, 7);
  report(fx_broadcast_shape(&e, &f, &o) == 0 && o.rank == 4 && o.d[3] == 7 && o.d[1] == 1,
         "broadcast_shape scalar");
  fx_shape g = shp(2, 0, 1), h = shp(1, 3);
  report(fx_broadcast_shape(&g, &h, &o) == 0 && o.d[0] == 0 && o.d[1] == 3, "broadcast_shape zero");
}

/* ------------------------------------------------------------------- unary */
static double unary_ref(int kind, double alpha, double x) {
  switch (kind) {
    case FX_U_RELU: return x > 0 ? x : 0;
    case FX_U_RELU6: return x < 0 ? 0 : (x > 6 ? 6 : x);
    case FX_U_RELU_N1_TO_1: return x < -1 ? -1 : (x > 1 ? 1 : x);
    case FX_U_LOGISTIC: return 1.0 / (1.0 + exp(-x));
    case FX_U_TANH: return tanh(x);
    case FX_U_HARD_SWISH: {
      double r = x + 3;
      r = r < 0 ? 0 : (r > 6 ? 6 : r);
      return x * r / 6;
    }
    case FX_U_LEAKY_RELU: return x > 0 ? x : alpha * x;
  }
  return 0;
}

static void test_unary(void) {
  const char *names[] = {"relu", "relu6", "relu_n1_to_1", "logistic", "tanh", "hard_swish", "leaky"};
  const size_t n = 1003;
  float *x = fbuf(n);
  /* a mix of ranges: tiny, moderate, large, and exact special points */
  for (size_t i = 0; i < n; ++i) {
    if (i % 4 == 0) x[i] = frand(-1e-3f, 1e-3f);
    else if (i % 4 == 1) x[i] = frand(-4, 4);
    else if (i % 4 == 2) x[i] = frand(-30, 30);
    else x[i] = frand(-120, 120);
  }
  const float special[] = {0.0f, -0.0f, 0.3f, -0.3f, 0.29999998f, 3.0f, -3.0f, 6.0f, 9.0f, -9.0f,
                           88.0f, -88.0f, 1.0f, -1.0f, 1e-30f, -1e-30f};
  memcpy(x, special, sizeof special);
  float *y = fbuf(n);
  double *r = dbuf(n);
  for (int k = FX_U_RELU; k <= FX_U_LEAKY_RELU; ++k) {
    const float alpha = 0.2f;
    for (size_t i = 0; i < n; ++i) r[i] = unary_ref(k, alpha, x[i]);
    fx_unary_f32(k, alpha, x, y, n);
    check_f(names[k], y, r, n);
  }
  /* in place */
  float *z = fbuf(n);
  memcpy(z, x, n * sizeof(float));
  for (size_t i = 0; i < n; ++i) r[i] = unary_ref(FX_U_TANH, 0, x[i]);
  fx_unary_f32(FX_U_TANH, 0, z, z, n);
  check_f("tanh in place", z, r, n);

  /* logistic tail: strict relative accuracy for tiny outputs */
  {
    const size_t m = 200;
    float *t = fbuf(m), *u = fbuf(m);
    for (size_t i = 0; i < m; ++i) t[i] = -10.0f - 70.0f * (float)i / (float)m;
    fx_unary_f32(FX_U_LOGISTIC, 0, t, u, m);
    int ok = 1;
    for (size_t i = 0; i < m && ok; ++i) {
      const double ref = 1.0 / (1.0 + exp(-(double)t[i]));
      if (!(fabs(u[i] - ref) <= 1e-5 * ref)) {
        ok = 0;
        report(0, "logistic tail x=%g got %g want %g", (double)t[i], (double)u[i], ref);
      }
    }
    if (ok) report(1, "logistic tail");
    /* tanh small: strict relative */
    for (size_t i = 0; i < m; ++i) t[i] = (float)(i + 1) * 0.0031f * (i % 2 ? -1.0f : 1.0f);
    fx_unary_f32(FX_U_TANH, 0, t, u, m);
    ok = 1;
    for (size_t i = 0; i < m && ok; ++i) {
      const double ref = tanh((double)t[i]);
      if (!(fabs(u[i] - ref) <= 1e-6 * fabs(ref))) {
        ok = 0;
        report(0, "tanh small x=%g got %.9g want %.9g", (double)t[i], (double)u[i], ref);
      }
    }
    if (ok) report(1, "tanh small relative");
    free(t); free(u);
  }
  /* NaN / inf propagation */
  {
    float s[4] = {NAN, INFINITY, -INFINITY, 0.5f}, o[4];
    fx_unary_f32(FX_U_LOGISTIC, 0, s, o, 4);
    report(isnan(o[0]) && o[1] == 1.0f && o[2] == 0.0f, "logistic nan/inf");
    fx_unary_f32(FX_U_TANH, 0, s, o, 4);
    report(isnan(o[0]) && o[1] == 1.0f && o[2] == -1.0f, "tanh nan/inf");
  }
  free(x); free(y); free(r); free(z);
}

/* ------------------------------------------------------------------ binary */
static double binop_ref(int op, double a, double b) {
  switch (op) {
    case FX_B_ADD: return a + b;
    case FX_B_SUB: return a - b;
    case FX_B_MUL: return a * b;
    case FX_B_DIV: return a / b;
    case FX_B_MAX: return a > b ? a : b;
    case FX_B_MIN: return a < b ? a : b;
    case FX_B_PRELU: return a >= 0 ? a : a * b;
  }
  return 0;
}

static void binary_case(int op, fx_shape as, fx_shape bs, int act, int inplace, const char *tag) {
  fx_shape ys;
  if (fx_broadcast_shape(&as, &bs, &ys) != 0) {
    report(0, "binary %s: broadcast failed", tag);
    return;
  }
  const size_t na = numel(&as), nb = numel(&bs), ny = numel(&ys);
  float *a = rand_buf(na, -3, 3), *b = rand_buf(nb, -3, 3);
  if (op == FX_B_DIV)
    for (size_t i = 0; i < nb; ++i) b[i] = b[i] < 0 ? b[i] - 0.5f : b[i] + 0.5f;
  double *r = dbuf(ny);
  int yc[FX_MAX_RANK] = {0}, ac[FX_MAX_RANK] = {0}, bc[FX_MAX_RANK] = {0};
  for (size_t f = 0; f < ny; ++f) {
    unravel(f, &ys, yc);
    for (int i = 0; i < as.rank; ++i) {
      const int yi = i + ys.rank - as.rank;
      ac[i] = as.d[i] == 1 ? 0 : yc[yi];
    }
    for (int i = 0; i < bs.rank; ++i) {
      const int yi = i + ys.rank - bs.rank;
      bc[i] = bs.d[i] == 1 ? 0 : yc[yi];
    }
    const double va = a[ravel(ac, &as)], vb = b[ravel(bc, &bs)];
    /* float arithmetic for the op itself (the kernel computes in float) */
    float v;
    switch (op) {
      case FX_B_ADD: v = (float)va + (float)vb; break;
      case FX_B_SUB: v = (float)va - (float)vb; break;
      case FX_B_MUL: v = (float)va * (float)vb; break;
      case FX_B_DIV: v = (float)va / (float)vb; break;
      default: v = (float)binop_ref(op, va, vb); break;
    }
    r[f] = act_ref(act, v);
  }
  float *y;
  if (inplace == 1 && na == ny) y = a;
  else if (inplace == 2 && nb == ny) y = b;
  else y = fbuf(ny);
  fx_binary_f32(NULL, op, a, &as, b, &bs, y, &ys, act);
  char nm[160];
  snprintf(nm, sizeof nm, "binary op=%d act=%d %s", op, act, tag);
  check_f(nm, y, r, ny);
  if (y != a && y != b) free(y);
  free(a); free(b); free(r);
}

static void test_binary(void) {
  struct { fx_shape a, b; const char *tag; } cases[] = {
      {shp(3, 2, 3, 5), shp(3, 2, 3, 5), "equal"},
      {shp(3, 2, 3, 5), shp(0), "b scalar rank0"},
      {shp(1, 1), shp(3, 2, 3, 5), "a scalar [1]"},
      {shp(3, 2, 3, 7), shp(1, 7), "b per-channel"},
      {shp(3, 1, 1, 7), shp(3, 2, 3, 7), "a per-channel"},
      {shp(3, 2, 1, 5), shp(2, 3, 1), "general 2x3x5"},
      {shp(2, 4, 1), shp(2, 1, 5), "outer product"},
      {shp(4, 2, 3, 1, 5), shp(3, 3, 4, 1), "general rank4"},
      {shp(2, 4, 1), shp(1, 1), "partial a, scalar b"},
      {shp(2, 1, 1), shp(1, 1), "both scalar"},
      {shp(4, 2, 1, 3, 1), shp(4, 1, 4, 1, 6), "alternating"},
      {shp(3, 1, 5, 1), shp(3, 3, 5, 2), "a mid"},
      {shp(1, 9), shp(2, 9, 1), "a row b col"},
      {shp(6, 2, 1, 3, 1, 2, 1), shp(5, 4, 3, 1, 2, 7), "rank6"},
      {shp(2, 1, 3), shp(3, 2, 1, 3), "per-channel with batch mismatch"},
  };
  const int acts[] = {FLEX_ACT_NONE, FLEX_ACT_RELU6, FLEX_ACT_TANH, FLEX_ACT_RELU_N1_TO_1};
  for (int op = FX_B_ADD; op <= FX_B_PRELU; ++op)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
      const int act = (op == FX_B_MAX || op == FX_B_MIN || op == FX_B_PRELU) ? FLEX_ACT_NONE
                                                                             : acts[c % 4];
      binary_case(op, cases[c].a, cases[c].b, act, 0, cases[c].tag);
    }
  /* in place and large (parallel path) */
  binary_case(FX_B_ADD, shp(3, 2, 3, 5), shp(3, 2, 3, 5), FLEX_ACT_NONE, 1, "inplace a");
  binary_case(FX_B_MUL, shp(1, 5), shp(3, 2, 3, 5), FLEX_ACT_RELU, 2, "inplace b");
  binary_case(FX_B_SUB, shp(2, 256, 300), shp(1, 300), FLEX_ACT_NONE, 0, "large per-channel");
  binary_case(FX_B_ADD, shp(2, 300, 257), shp(2, 300, 257), FLEX_ACT_RELU6, 0, "large equal");
  binary_case(FX_B_DIV, shp(2, 300, 257), shp(0), FLEX_ACT_NONE, 0, "large scalar");
  binary_case(FX_B_MAX, shp(3, 64, 1, 32), shp(3, 1, 41, 32), FLEX_ACT_NONE, 0, "large general");
  binary_case(FX_B_PRELU, shp(4, 2, 33, 35, 17), shp(3, 1, 1, 17), FLEX_ACT_NONE, 0, "large prelu");
  binary_case(FX_B_MUL, shp(3, 70, 1, 1000), shp(2, 1, 1000), FLEX_ACT_TANH, 0, "large tanh");

  /* NONE clamps +-inf to +-FLT_MAX like TFLite's ActivationFunctionWithMinMax */
  {
    float a[2] = {INFINITY, 1.0f}, b[2] = {1.0f, -INFINITY}, y[2];
    fx_shape s = shp(1, 2);
    fx_binary_f32(NULL, FX_B_ADD, a, &s, b, &s, y, &s, FLEX_ACT_NONE);
    report(y[0] == FLT_MAX && y[1] == -FLT_MAX, "add none saturates inf");
  }
}

/* -------------------------------------------------------------------- pool */
static void pool_case(int is_max, int N, int H, int W, int C, int kh, int kw, int sh, int sw,
                      int same, int act) {
  int oh, ow, pt, pl;
  fx_same_valid(same, H, kh, sh, 1, &oh, &pt);
  fx_same_valid(same, W, kw, sw, 1, &ow, &pl);
  fx_shape xs = shp(4, N, H, W, C), ys = shp(4, N, oh, ow, C);
  fx_window w = {sh, sw, 1, 1, kh, kw, pt, pl};
  float *x = rand_buf(numel(&xs), -5, 5);
  float *y = fbuf(numel(&ys));
  double *r = dbuf(numel(&ys));
  for (int b = 0; b < N; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int c = 0; c < C; ++c) {
          double acc = is_max ? -INFINITY : 0.0;
          int cnt = 0;
          for (int t = 0; t < kh * kw; ++t) { /* flat tap loop, bounds checked per tap */
            const int iy = oy * sh - pt + t / kw, ix = ox * sw - pl + t % kw;
            if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
            const double v = x[((b * H + iy) * W + ix) * C + c];
            if (is_max) acc = v > acc ? v : acc;
            else acc += v;
            cnt++;
          }
          if (!is_max) acc = cnt ? acc / cnt : 0;
          r[((b * oh + oy) * ow + ox) * C + c] = act_ref(act, acc);
        }
  fx_pool2d_f32(NULL, is_max, x, &xs, &w, y, &ys, act);
  char nm[160];
  snprintf(nm, sizeof nm, "pool max=%d N%d H%d W%d C%d k%dx%d s%dx%d same=%d act=%d", is_max, N, H,
           W, C, kh, kw, sh, sw, same, act);
  check_f(nm, y, r, numel(&ys));
  free(x); free(y); free(r);
}

static void test_pool(void) {
  for (int m = 0; m < 2; ++m) {
    pool_case(m, 2, 7, 6, 3, 3, 3, 2, 2, 1, FLEX_ACT_NONE);
    pool_case(m, 2, 7, 6, 3, 3, 3, 2, 2, 0, FLEX_ACT_RELU6);
    pool_case(m, 1, 1, 1, 5, 2, 2, 2, 2, 1, FLEX_ACT_NONE);
    pool_case(m, 1, 5, 5, 5, 2, 2, 1, 1, 1, FLEX_ACT_RELU);
    pool_case(m, 2, 8, 9, 1, 3, 2, 3, 1, 1, FLEX_ACT_TANH);
    pool_case(m, 1, 4, 4, 17, 4, 4, 4, 4, 0, FLEX_ACT_NONE);
    pool_case(m, 1, 9, 9, 8, 5, 5, 1, 1, 1, FLEX_ACT_RELU_N1_TO_1);
    pool_case(m, 1, 13, 11, 33, 3, 3, 2, 2, 1, FLEX_ACT_NONE);
  }
  /* explicit padding beyond SAME: a window fully outside the image */
  {
    fx_shape xs = shp(4, 1, 2, 2, 2), ys = shp(4, 1, 2, 2, 2);
    fx_window w = {2, 2, 1, 1, 1, 1, 1, 1};
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    fx_pool2d_f32(NULL, 0, x, &xs, &w, y, &ys, FLEX_ACT_NONE);
    /* out(0,0) is at input (-1,-1): empty -> 0; out(1,1) at (1,1) -> 7,8 */
    report(y[0] == 0 && y[1] == 0 && y[6] == 7 && y[7] == 8, "avg pool empty window");
  }
}

/* --------------------------------------------------------------- depthwise */
static void dw_case(int N, int H, int W, int CI, int mult, int kh, int kw, int sh, int sw, int dh,
                    int dw, int same, int with_bias, int act) {
  int oh, ow, pt, pl;
  fx_same_valid(same, H, kh, sh, dh, &oh, &pt);
  fx_same_valid(same, W, kw, sw, dw, &ow, &pl);
  const int OC = CI * mult;
  fx_shape xs = shp(4, N, H, W, CI), ys = shp(4, N, oh, ow, OC);
  fx_window w = {sh, sw, dh, dw, kh, kw, pt, pl};
  float *x = rand_buf(numel(&xs), -1, 1);
  float *f = rand_buf((size_t)kh * kw * OC, -1, 1);
  float *bias = with_bias ? rand_buf((size_t)OC, -1, 1) : NULL;
  float *y = fbuf(numel(&ys));
  double *r = dbuf(numel(&ys));
  for (size_t o = 0; o < numel(&ys); ++o) {
    int c[4] = {0};
    unravel(o, &ys, c);
    const int ic = c[3] / mult;
    double acc = 0;
    for (int fy = 0; fy < kh; ++fy)
      for (int fx = 0; fx < kw; ++fx) {
        const int iy = c[1] * sh - pt + fy * dh, ix = c[2] * sw - pl + fx * dw;
        if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
        acc += (double)x[((c[0] * H + iy) * W + ix) * CI + ic] * f[(fy * kw + fx) * OC + c[3]];
      }
    if (bias) acc += bias[c[3]];
    r[o] = act_ref(act, acc);
  }
  fx_depthwise_f32(NULL, x, &xs, f, bias, mult, &w, y, &ys, act);
  char nm[200];
  snprintf(nm, sizeof nm, "depthwise N%d H%d W%d CI%d m%d k%dx%d s%dx%d d%dx%d same=%d bias=%d act=%d",
           N, H, W, CI, mult, kh, kw, sh, sw, dh, dw, same, with_bias, act);
  check_f(nm, y, r, numel(&ys));
  free(x); free(f); free(bias); free(y); free(r);
}

static void test_depthwise(void) {
  dw_case(2, 7, 6, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, FLEX_ACT_NONE);
  dw_case(2, 7, 6, 5, 1, 3, 3, 2, 2, 1, 1, 1, 0, FLEX_ACT_RELU6);
  dw_case(1, 9, 8, 3, 2, 3, 3, 1, 1, 2, 2, 1, 1, FLEX_ACT_RELU);
  dw_case(1, 9, 8, 3, 2, 3, 3, 1, 1, 2, 2, 0, 1, FLEX_ACT_NONE);
  dw_case(1, 6, 7, 1, 4, 3, 2, 2, 1, 1, 2, 1, 1, FLEX_ACT_TANH);
  dw_case(1, 1, 1, 7, 1, 3, 3, 1, 1, 1, 1, 1, 1, FLEX_ACT_NONE);
  dw_case(2, 5, 5, 17, 1, 5, 5, 2, 2, 1, 1, 1, 1, FLEX_ACT_RELU_N1_TO_1);
  dw_case(1, 10, 10, 33, 1, 3, 3, 2, 2, 1, 1, 0, 0, FLEX_ACT_NONE);
  dw_case(1, 4, 6, 3, 3, 1, 1, 1, 1, 1, 1, 0, 1, FLEX_ACT_NONE);
  dw_case(1, 12, 11, 6, 1, 3, 3, 3, 2, 3, 2, 1, 1, FLEX_ACT_RELU6);
}

/* ------------------------------------------------------------------ resize */
static void resize_case(int bilinear, int N, int H, int W, int C, int OH, int OW, int ac, int hp) {
  fx_shape xs = shp(4, N, H, W, C), ys = shp(4, N, OH, OW, C);
  float *x = rand_buf(numel(&xs), -2, 2);
  float *y = fbuf(numel(&ys));
  double *r = dbuf(numel(&ys));
  const float hs0 = (ac && OH > 1) ? (float)(H - 1) / (float)(OH - 1) : (float)H / (float)OH;
  const float ws0 = (ac && OW > 1) ? (float)(W - 1) / (float)(OW - 1) : (float)W / (float)OW;
  for (size_t o = 0; o < numel(&ys); ++o) {
    int c[4] = {0};
    unravel(o, &ys, c);
    if (bilinear) {
      /* per-axis source position, then lerp of lerps */
      const float sy = hp ? ((float)c[1] + 0.5f) * hs0 - 0.5f : (float)c[1] * hs0;
      const float sx = hp ? ((float)c[2] + 0.5f) * ws0 - 0.5f : (float)c[2] * ws0;
      int y0 = (int)floorf(sy), x0 = (int)floorf(sx);
      int y1 = (int)ceilf(sy), x1 = (int)ceilf(sx);
      if (y0 < 0) y0 = 0;
      if (x0 < 0) x0 = 0;
      if (y1 > H - 1) y1 = H - 1;
      if (x1 > W - 1) x1 = W - 1;
      const double fy = (double)sy - y0, fx = (double)sx - x0;
#define X(yy, xx) ((double)x[((c[0] * H + (yy)) * W + (xx)) * C + c[3]])
      const double top = X(y0, x0) + (X(y0, x1) - X(y0, x0)) * fx;
      const double bot = X(y1, x0) + (X(y1, x1) - X(y1, x0)) * fx;
#undef X
      r[o] = top + (bot - top) * fy;
    } else {
      const float off = hp ? 0.5f : 0.0f;
      const float py = ((float)c[1] + off) * hs0, px = ((float)c[2] + off) * ws0;
      int iy = ac ? (int)roundf(py) : (int)floorf(py);
      int ix = ac ? (int)roundf(px) : (int)floorf(px);
      if (iy > H - 1) iy = H - 1;
      if (ix > W - 1) ix = W - 1;
      if (hp && iy < 0) iy = 0;
      if (hp && ix < 0) ix = 0;
      r[o] = x[((c[0] * H + iy) * W + ix) * C + c[3]];
    }
  }
  if (bilinear) fx_resize_bilinear_f32(x, &xs, y, &ys, ac, hp);
  else fx_resize_nearest(x, &xs, y, &ys, sizeof(float), ac, hp);
  char nm[160];
  snprintf(nm, sizeof nm, "resize bilinear=%d %dx%dx%dx%d -> %dx%d ac=%d hp=%d", bilinear, N, H, W,
           C, OH, OW, ac, hp);
  check_f(nm, y, r, numel(&ys));
  free(x); free(y); free(r);
}

static void test_resize(void) {
  const int sizes[][4] = {{3, 4, 7, 9}, {5, 6, 3, 2}, {4, 4, 8, 8}, {1, 1, 3, 2}, {7, 5, 7, 5},
                          {2, 3, 5, 1}, {6, 6, 4, 9}};
  for (int bl = 0; bl < 2; ++bl)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
      for (int flags = 0; flags < 3; ++flags) { /* (ac,hp) = (0,0), (1,0), (0,1) */
        const int ac = flags == 1, hp = flags == 2;
        resize_case(bl, 2, sizes[s][0], sizes[s][1], 3, sizes[s][2], sizes[s][3], ac, hp);
      }
  /* nearest with both flags (TFLite allows it for nearest) */
  resize_case(0, 1, 5, 3, 2, 8, 7, 1, 1);
  /* hand-checked values */
  {
    float x[4] = {0, 1, 2, 3}, y[9];
    fx_shape xs = shp(4, 1, 2, 2, 1), ys = shp(4, 1, 3, 3, 1);
    fx_resize_bilinear_f32(x, &xs, y, &ys, 1, 0);
    report(y[0] == 0 && y[1] == 0.5f && y[2] == 1 && y[4] == 1.5f && y[8] == 3,
           "bilinear align_corners 2x2->3x3");
    fx_shape ys2 = shp(4, 1, 4, 4, 1);
    float y2[16];
    fx_resize_bilinear_f32(x, &xs, y2, &ys2, 0, 1);
    /* half pixel: row 0 src y=-0.25 -> clamped to row 0; col 1 src x=0.25 */
    report(y2[0] == 0 && fabsf(y2[1] - 0.25f) < 1e-7f && y2[3] == 1 && y2[15] == 3,
           "bilinear half_pixel 2x2->4x4");
    fx_resize_nearest(x, &xs, y2, &ys2, sizeof(float), 0, 1);
    report(y2[0] == 0 && y2[1] == 0 && y2[2] == 1 && y2[3] == 1 && y2[8] == 2,
           "nearest half_pixel 2x2->4x4");
    fx_shape ys3 = shp(4, 1, 3, 3, 1);
    fx_resize_nearest(x, &xs, y, &ys3, sizeof(float), 1, 0);
    /* align_corners: scale 0.5, round(0.5)=1 -> cols 0,1,1 */
    report(y[0] == 0 && y[1] == 1 && y[2] == 1 && y[3] == 2, "nearest align_corners 2x2->3x3");
  }
}

/* ---------------------------------------------------------------- reduce */
static void mean_case(fx_shape xs, unsigned mask) {
  fx_shape ys = xs;
  for (int i = 0; i < xs.rank; ++i)
    if ((mask >> i) & 1u) ys.d[i] = 1;
  float *x = rand_buf(numel(&xs), -4, 4);
  float *y = fbuf(numel(&ys));
  double *r = dbuf(numel(&ys));
  size_t cnt = 1;
  for (int i = 0; i < xs.rank; ++i)
    if ((mask >> i) & 1u) cnt *= (size_t)xs.d[i];
  int c[FX_MAX_RANK] = {0};
  for (size_t f = 0; f < numel(&xs); ++f) { /* scatter every input into its output */
    unravel(f, &xs, c);
    for (int i = 0; i < xs.rank; ++i)
      if ((mask >> i) & 1u) c[i] = 0;
    r[ravel(c, &ys)] += x[f];
  }
  for (size_t i = 0; i < numel(&ys); ++i) r[i] /= (double)cnt;
  fx_mean_f32(x, &xs, mask, y);
  char nm[128];
  snprintf(nm, sizeof nm, "mean rank%d mask=0x%x", xs.rank, mask);
  /* float accumulation: allow a little more absolute slack */
  for (size_t i = 0; i < numel(&ys); ++i)
    if (!close_to(y[i], r[i], 1e-5, 1e-5)) {
      report(0, "%s: index %zu got %.9g want %.9g", nm, i, (double)y[i], r[i]);
      free(x); free(y); free(r);
      return;
    }
  report(1, "%s", nm);
  free(x); free(y); free(r);
}

/* The threaded spatial mean (channel blocks) must equal the serial one bit for bit. */
static void mean_pool_case(fx_shape xs) {
  fx_shape ys = xs;
  ys.d[1] = ys.d[2] = 1;
  float *x = rand_buf(numel(&xs), -4, 4), *y = fbuf(numel(&ys)), *z = fbuf(numel(&ys));
  fx_mean_f32(x, &xs, 0x6, y);
  fx_mean_f32_pool(NULL, x, &xs, 0x6, z);
  report(memcmp(y, z, numel(&ys) * sizeof(float)) == 0, "threaded spatial mean %dx%dx%dx%d",
         xs.d[0], xs.d[1], xs.d[2], xs.d[3]);
  free(x); free(y); free(z);
}

static void test_reduce(void) {
  mean_pool_case(shp(4, 2, 41, 13, 37));   /* 16-channel blocks, tail of 5 */
  mean_pool_case(shp(4, 1, 20, 20, 200));  /* 64-channel blocks, tail of 8 */
  mean_pool_case(shp(4, 1, 3, 3, 5));      /* small: the serial path */
  mean_case(shp(4, 2, 7, 5, 3), 0x6);
  mean_case(shp(4, 2, 7, 5, 3), 0x8);
  mean_case(shp(4, 2, 7, 5, 3), 0x1);
  mean_case(shp(4, 2, 7, 5, 3), 0xF);
  mean_case(shp(4, 2, 7, 5, 3), 0x5);
  mean_case(shp(4, 2, 7, 5, 3), 0xA);
  mean_case(shp(4, 1, 7, 1, 33), 0x6);
  mean_case(shp(4, 1, 1, 1, 9), 0x6);
  mean_case(shp(1, 1000), 0x1);
  mean_case(shp(5, 2, 3, 4, 5, 6), 0x1A);
  mean_case(shp(3, 4, 5, 6), 0x0);
  mean_case(shp(2, 3, 129), 0x2);

  const int colss[] = {1, 7, 33, 1000};
  const float betas[] = {1.0f, 0.5f, 2.5f};
  for (size_t ci = 0; ci < 4; ++ci)
    for (size_t bi = 0; bi < 3; ++bi) {
      const int cols = colss[ci];
      const size_t rows = 3, n = rows * (size_t)cols;
      float *x = rand_buf(n, -10, 10), *y = fbuf(n);
      double *r = dbuf(n);
      for (size_t rr = 0; rr < rows; ++rr) {
        double s = 0;
        for (int j = 0; j < cols; ++j) s += exp((double)betas[bi] * x[rr * cols + j]);
        for (int j = 0; j < cols; ++j) r[rr * cols + j] = exp((double)betas[bi] * x[rr * cols + j]) / s;
      }
      fx_softmax_f32(x, rows, cols, betas[bi], y);
      char nm[64];
      snprintf(nm, sizeof nm, "softmax cols=%d beta=%g", cols, (double)betas[bi]);
      check_f(nm, y, r, n);
      free(x); free(y); free(r);
    }
  {
    float x[4] = {1000.0f, 1000.0f, -1000.0f, 999.0f}, y[4];
    fx_softmax_f32(x, 1, 4, 1.0f, y);
    const double e1 = exp(-1.0), s = 2 + e1;
    report(close_to(y[0], 1 / s, 1e-5, 0) && close_to(y[3], e1 / s, 1e-5, 0) && y[2] < 1e-30f,
           "softmax large logits");
  }
}

/* ------------------------------------------------------------------ layout */
static void fill_pattern(void *p, size_t bytes) {
  unsigned char *b = (unsigned char *)p;
  for (size_t i = 0; i < bytes; ++i) b[i] = (unsigned char)(i * 131u + 7u + (i >> 8));
}

static void pad_case(fx_shape xs, const int *pads, size_t es, int with_value) {
  fx_shape ys = xs;
  for (int i = 0; i < xs.rank; ++i) ys.d[i] += pads[2 * i] + pads[2 * i + 1];
  const size_t nx = numel(&xs), ny = numel(&ys);
  unsigned char *x = (unsigned char *)malloc(nx * es + 1), *y = (unsigned char *)malloc(ny * es + 1);
  unsigned char *r = (unsigned char *)malloc(ny * es + 1);
  fill_pattern(x, nx * es);
  unsigned char val[8] = {0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x17, 0x28};
  int c[FX_MAX_RANK] = {0};
  for (size_t f = 0; f < ny; ++f) {
    unravel(f, &ys, c);
    int inside = 1;
    for (int i = 0; i < xs.rank; ++i) {
      c[i] -= pads[2 * i];
      if (c[i] < 0 || c[i] >= xs.d[i]) inside = 0;
    }
    if (inside) memcpy(r + f * es, x + ravel(c, &xs) * es, es);
    else if (with_value) memcpy(r + f * es, val, es);
    else memset(r + f * es, 0, es);
  }
  memset(y, 0x5A, ny * es);
  fx_pad(x, &xs, pads, with_value ? val : NULL, es, y);
  char nm[96];
  snprintf(nm, sizeof nm, "pad rank%d es%zu value=%d", xs.rank, es, with_value);
  check_bytes(nm, y, r, ny * es);
  free(x); free(y); free(r);
}

static void transpose_case(fx_shape xs, const int *perm, size_t es) {
  fx_shape ys;
  ys.rank = xs.rank;
  for (int i = 0; i < xs.rank; ++i) ys.d[i] = xs.d[perm[i]];
  const size_t n = numel(&xs);
  unsigned char *x = (unsigned char *)malloc(n * es + 1), *y = (unsigned char *)malloc(n * es + 1);
  unsigned char *r = (unsigned char *)malloc(n * es + 1);
  fill_pattern(x, n * es);
  int yc[FX_MAX_RANK] = {0}, xc[FX_MAX_RANK] = {0};
  for (size_t f = 0; f < n; ++f) {
    unravel(f, &ys, yc);
    for (int i = 0; i < xs.rank; ++i) xc[perm[i]] = yc[i];
    memcpy(r + f * es, x + ravel(xc, &xs) * es, es);
  }
  fx_transpose(x, &xs, perm, es, y);
  char nm[96];
  snprintf(nm, sizeof nm, "transpose rank%d es%zu perm0=%d", xs.rank, es, perm[0]);
  check_bytes(nm, y, r, n * es);
  free(x); free(y); free(r);
}

static void test_layout(void) {
  /* pad */
  {
    const int p4[] = {0, 0, 1, 2, 2, 1, 0, 0};
    const int p4b[] = {1, 0, 0, 0, 0, 3, 2, 1};
    const int p4z[] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int p1[] = {3, 5};
    const int p3[] = {0, 1, 0, 0, 2, 0};
    const size_t ess[] = {1, 2, 4, 8};
    for (int e = 0; e < 4; ++e)
      for (int v = 0; v < 2; ++v) {
        pad_case(shp(4, 2, 3, 4, 5), p4, ess[e], v);
        pad_case(shp(4, 1, 3, 1, 3), p4b, ess[e], v);
        pad_case(shp(1, 7), p1, ess[e], v);
        pad_case(shp(3, 2, 3, 4), p3, ess[e], v);
      }
    pad_case(shp(4, 2, 3, 4, 5), p4z, 4, 0);
    pad_case(shp(4, 2, 0, 4, 5), p4, 4, 1);
  }
  /* concat */
  {
    const size_t ess[] = {2, 4};
    for (int e = 0; e < 2; ++e)
      for (int axis = -1; axis < 3; ++axis) {
        const size_t es = ess[e];
        const int ax = axis < 0 ? axis + 3 : axis;
        fx_shape s[3] = {shp(3, 2, 3, 4), shp(3, 2, 3, 4), shp(3, 2, 3, 4)};
        s[1].d[ax] = 1;
        s[2].d[ax] = 5;
        void *in[3];
        for (int j = 0; j < 3; ++j) {
          in[j] = malloc(numel(&s[j]) * es);
          fill_pattern(in[j], numel(&s[j]) * es);
          ((unsigned char *)in[j])[0] = (unsigned char)(j + 1);
        }
        fx_shape ys = s[0];
        ys.d[ax] = s[0].d[ax] + s[1].d[ax] + s[2].d[ax];
        const size_t ny = numel(&ys);
        unsigned char *y = (unsigned char *)malloc(ny * es), *r = (unsigned char *)malloc(ny * es);
        int c[FX_MAX_RANK] = {0};
        for (size_t f = 0; f < ny; ++f) {
          unravel(f, &ys, c);
          int j = 0;
          while (c[ax] >= s[j].d[ax]) c[ax] -= s[j++].d[ax];
          memcpy(r + f * es, (unsigned char *)in[j] + ravel(c, &s[j]) * es, es);
        }
        const fx_shape *sp[3] = {&s[0], &s[1], &s[2]};
        fx_concat(3, (const void *const *)in, sp, axis, es, y);
        char nm[64];
        snprintf(nm, sizeof nm, "concat axis=%d es=%zu", axis, es);
        check_bytes(nm, y, r, ny * es);
        for (int j = 0; j < 3; ++j) free(in[j]);
        free(y); free(r);
      }
  }
  /* transpose */
  {
    const int p2[] = {1, 0}, p3[] = {2, 0, 1}, p3b[] = {0, 2, 1}, p4a[] = {0, 3, 1, 2},
              p4b[] = {0, 2, 3, 1}, p4c[] = {3, 2, 1, 0}, p4i[] = {0, 1, 2, 3}, p5[] = {4, 1, 3, 0, 2},
              p4d[] = {1, 0, 2, 3};
    const size_t ess[] = {1, 2, 4, 8};
    for (int e = 0; e < 4; ++e) {
      transpose_case(shp(2, 7, 13), p2, ess[e]);
      transpose_case(shp(3, 3, 4, 5), p3, ess[e]);
      transpose_case(shp(3, 3, 4, 5), p3b, ess[e]);
      transpose_case(shp(4, 2, 3, 4, 5), p4a, ess[e]);
      transpose_case(shp(4, 2, 3, 4, 5), p4b, ess[e]);
      transpose_case(shp(4, 2, 3, 4, 5), p4c, ess[e]);
      transpose_case(shp(4, 2, 3, 4, 5), p4i, ess[e]);
      transpose_case(shp(4, 1, 3, 1, 5), p4a, ess[e]);
      transpose_case(shp(4, 3, 1, 4, 5), p4d, ess[e]);
      transpose_case(shp(5, 2, 3, 1, 4, 3), p5, ess[e]);
      transpose_case(shp(2, 37, 45), p2, ess[e]);      /* several partial tiles */
      transpose_case(shp(3, 3, 40, 33), p3b, ess[e]);
    }
  }
  /* depth_to_space / space_to_depth */
  {
    const int blocks[] = {2, 3};
    const size_t ess[] = {1, 4, 8};
    for (int bi = 0; bi < 2; ++bi)
      for (int e = 0; e < 3; ++e) {
        const int bs = blocks[bi];
        const size_t es = ess[e];
        const int N = 2, H = 3, W = 2, OC = 3, C = OC * bs * bs;
        fx_shape xs = shp(4, N, H, W, C), ys = shp(4, N, H * bs, W * bs, OC);
        const size_t n = numel(&xs);
        unsigned char *x = (unsigned char *)malloc(n * es), *y = (unsigned char *)malloc(n * es);
        unsigned char *r = (unsigned char *)malloc(n * es), *z = (unsigned char *)malloc(n * es);
        fill_pattern(x, n * es);
        int c[4] = {0};
        for (size_t f = 0; f < n; ++f) {
          unravel(f, &ys, c);
          const int xc[4] = {c[0], c[1] / bs, c[2] / bs, ((c[1] % bs) * bs + c[2] % bs) * OC + c[3]};
          memcpy(r + f * es, x + ravel(xc, &xs) * es, es);
        }
        fx_depth_to_space(x, &xs, bs, es, y);
        char nm[64];
        snprintf(nm, sizeof nm, "depth_to_space bs=%d es=%zu", bs, es);
        check_bytes(nm, y, r, n * es);
        fx_space_to_depth(y, &ys, bs, es, z);
        snprintf(nm, sizeof nm, "space_to_depth roundtrip bs=%d es=%zu", bs, es);
        check_bytes(nm, z, x, n * es);
        /* direct space_to_depth reference on a fresh input */
        fill_pattern(y, n * es);
        y[0] ^= 0x55;
        for (size_t f = 0; f < n; ++f) {
          unravel(f, &xs, c);
          const int by = (c[3] / OC) / bs, bx = (c[3] / OC) % bs;
          const int yc[4] = {c[0], c[1] * bs + by, c[2] * bs + bx, c[3] % OC};
          memcpy(r + f * es, y + ravel(yc, &ys) * es, es);
        }
        fx_space_to_depth(y, &ys, bs, es, z);
        snprintf(nm, sizeof nm, "space_to_depth bs=%d es=%zu", bs, es);
        check_bytes(nm, z, r, n * es);
        free(x); free(y); free(r); free(z);
      }
  }
  /* gather */
  {
    struct { fx_shape xs, is; int axis, bd, i64; } gc[] = {
        {shp(3, 5, 3, 4), shp(1, 4), 0, 0, 0},     {shp(3, 5, 3, 4), shp(2, 2, 3), 1, 0, 1},
        {shp(3, 5, 3, 4), shp(1, 6), -1, 0, 0},    {shp(3, 2, 6, 3), shp(2, 2, 4), 1, 1, 0},
        {shp(4, 2, 3, 6, 2), shp(3, 2, 3, 2), 2, 2, 1}, {shp(3, 2, 6, 3), shp(2, 2, 4), 2, -1, 0},
        {shp(1, 9), shp(0), 0, 0, 0},
    };
    for (size_t k = 0; k < sizeof gc / sizeof gc[0]; ++k) {
      fx_shape xs = gc[k].xs, is = gc[k].is;
      const int axis = gc[k].axis < 0 ? gc[k].axis + xs.rank : gc[k].axis;
      const int bd = gc[k].bd < 0 ? gc[k].bd + is.rank : gc[k].bd;
      fx_shape ys;
      ys.rank = 0;
      for (int i = 0; i < axis; ++i) ys.d[ys.rank++] = xs.d[i];
      for (int i = bd; i < is.rank; ++i) ys.d[ys.rank++] = is.d[i];
      for (int i = axis + 1; i < xs.rank; ++i) ys.d[ys.rank++] = xs.d[i];
      const size_t nx = numel(&xs), ni = numel(&is), ny = numel(&ys);
      float *x = rand_buf(nx, -1, 1), *y = fbuf(ny);
      double *r = dbuf(ny);
      int32_t *i32 = (int32_t *)malloc(ni * 4 + 4);
      int64_t *i64 = (int64_t *)malloc(ni * 8 + 8);
      for (size_t i = 0; i < ni; ++i) {
        i32[i] = (int32_t)((i * 7 + 3) % (size_t)xs.d[axis]);
        i64[i] = i32[i];
      }
      int yc[FX_MAX_RANK] = {0}, xc[FX_MAX_RANK] = {0}, ic[FX_MAX_RANK] = {0};
      for (size_t f = 0; f < ny; ++f) {
        unravel(f, &ys, yc);
        for (int i = 0; i < bd; ++i) ic[i] = yc[i];
        for (int i = bd; i < is.rank; ++i) ic[i] = yc[axis + (i - bd)];
        for (int i = 0; i < axis; ++i) xc[i] = yc[i];
        xc[axis] = i32[ravel(ic, &is)];
        for (int i = axis + 1; i < xs.rank; ++i) xc[i] = yc[i - 1 + (is.rank - bd)];
        r[f] = x[ravel(xc, &xs)];
      }
      const int rc = fx_gather(x, &xs, gc[k].i64 ? (const void *)i64 : (const void *)i32,
                               gc[k].i64, &is, gc[k].axis, gc[k].bd, 4, y);
      char nm[64];
      snprintf(nm, sizeof nm, "gather case %zu", k);
      report(rc == 0, "%s rc=%d", nm, rc);
      check_f(nm, y, r, ny);
      if (ni > 0) {
        i32[ni - 1] = xs.d[axis];
        i64[0] = -1;
        report(fx_gather(x, &xs, i32, 0, &is, gc[k].axis, gc[k].bd, 4, y) == -1,
               "gather oob i32 %zu", k);
        report(fx_gather(x, &xs, i64, 1, &is, gc[k].axis, gc[k].bd, 4, y) == -1,
               "gather oob i64 %zu", k);
      }
      free(x); free(y); free(r); free(i32); free(i64);
    }
  }
}

/* ----------------------------------------------------------- strided slice */
/* Python slice.indices() semantics (CPython PySlice_AdjustIndices): a
 * different formulation of the same begin/end resolution. */
static int py_slice(int len, int has_start, int start, int has_stop, int stop, int step, int *idx) {
  const int lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
  if (!has_start) start = step > 0 ? lower : upper;
  else if (start < 0) { start += len; if (start < lower) start = lower; }
  else if (start > upper) start = upper;
  if (!has_stop) stop = step > 0 ? upper : lower;
  else if (stop < 0) { stop += len; if (stop < lower) stop = lower; }
  else if (stop > upper) stop = upper;
  int n = 0;
  for (int i = start; step > 0 ? i < stop : i > stop; i += step) idx[n++] = i;
  return n;
}

/* one canonical per-input-dim spec for the reference */
typedef struct { int has_b, b, has_e, e, step, shrink; } dimspec;

static void slice_ref(const float *x, const fx_shape *xs, const dimspec *sp, float *r, size_t *nr) {
  int idx[FX_MAX_RANK][64], cnt[FX_MAX_RANK];
  for (int i = 0; i < xs->rank; ++i) {
    if (sp[i].shrink) {
      int b = sp[i].b < 0 ? sp[i].b + xs->d[i] : sp[i].b;
      idx[i][0] = b;
      cnt[i] = 1;
    } else {
      cnt[i] = py_slice(xs->d[i], sp[i].has_b, sp[i].b, sp[i].has_e, sp[i].e, sp[i].step, idx[i]);
    }
  }
  size_t total = 1;
  for (int i = 0; i < xs->rank; ++i) total *= (size_t)cnt[i];
  *nr = total;
  int c[FX_MAX_RANK] = {0}, xc[FX_MAX_RANK] = {0};
  for (size_t f = 0; f < total; ++f) {
    size_t t = f;
    for (int i = xs->rank - 1; i >= 0; --i) { c[i] = (int)(t % (size_t)cnt[i]); t /= (size_t)cnt[i]; }
    for (int i = 0; i < xs->rank; ++i) xc[i] = idx[i][c[i]];
    r[f] = x[ravel(xc, xs)];
  }
}

typedef struct {
  const char *name;
  fx_shape xs;
  int n;
  int begin[8], end[8], strides[8];
  int bm, em, elm, nam, sam, offset;
  int want_rc;
  fx_shape want_out;
  dimspec ref[8]; /* per input dim */
} ss_case;

#define FULL {0, 0, 0, 0, 1, 0}

static void test_strided_slice(void) {
  ss_case cs[] = {
      {"basic", shp(3, 4, 5, 6), 3, {1, 0, 2}, {3, 5, 6}, {1, 2, 3}, 0, 0, 0, 0, 0, 0, 0,
       shp(3, 2, 3, 2), {{1, 1, 1, 3, 1, 0}, {1, 0, 1, 5, 2, 0}, {1, 2, 1, 6, 3, 0}}},
      {"negative idx", shp(2, 7, 5), 2, {-5, -1}, {-1, 5}, {1, 1}, 0, 0, 0, 0, 0, 0, 0, shp(2, 4, 1),
       {{1, -5, 1, -1, 1, 0}, {1, -1, 1, 5, 1, 0}}},
      {"masks", shp(3, 4, 5, 6), 3, {2, 3, 9}, {0, 4, -2}, {1, 1, 1}, 0x5, 0x1, 0, 0, 0, 0, 0,
       shp(3, 4, 1, 4), {{0, 0, 0, 0, 1, 0}, {1, 3, 1, 4, 1, 0}, {0, 0, 1, -2, 1, 0}}},
      {"negative strides", shp(2, 6, 7), 2, {-1, 5}, {0, 1}, {-2, -1}, 0, 0x1, 0, 0, 0, 0, 0,
       shp(2, 3, 4), {{1, -1, 0, 0, -2, 0}, {1, 5, 1, 1, -1, 0}}},
      {"reverse all", shp(3, 3, 4, 5), 3, {0, 0, 0}, {0, 0, 0}, {-1, -1, -1}, 0x7, 0x7, 0, 0, 0, 0, 0,
       shp(3, 3, 4, 5), {{0, 0, 0, 0, -1, 0}, {0, 0, 0, 0, -1, 0}, {0, 0, 0, 0, -1, 0}}},
      {"shrink", shp(3, 4, 5, 6), 3, {1, -2, 0}, {2, 0, 6}, {1, 1, 2}, 0, 0, 0, 0, 0x3, 0, 0,
       shp(1, 3), {{1, 1, 0, 0, 1, 1}, {1, -2, 0, 0, 1, 1}, {1, 0, 1, 6, 2, 0}}},
      {"shrink all", shp(2, 4, 5), 2, {3, -1}, {4, 0}, {1, 1}, 0, 0, 0, 0, 0x3, 0, 0, shp(0),
       {{1, 3, 0, 0, 1, 1}, {1, -1, 0, 0, 1, 1}}},
      {"clamp", shp(2, 4, 5), 2, {-100, 2}, {100, 100}, {1, 2}, 0, 0, 0, 0, 0, 0, 0, shp(2, 4, 2),
       {{1, -100, 1, 100, 1, 0}, {1, 2, 1, 100, 2, 0}}},
      {"clamp neg stride", shp(2, 4, 5), 2, {100, -100}, {-100, 100}, {-1, -3}, 0, 0, 0, 0, 0, 0, 0,
       shp(2, 4, 0), {{1, 100, 1, -100, -1, 0}, {1, -100, 1, 100, -3, 0}}},
      {"empty", shp(2, 4, 5), 2, {3, 0}, {1, 5}, {1, 1}, 0, 0, 0, 0, 0, 0, 0, shp(2, 0, 5),
       {{1, 3, 1, 1, 1, 0}, {1, 0, 1, 5, 1, 0}}},
      {"n < rank", shp(4, 3, 4, 5, 2), 2, {1, -3}, {3, -1}, {1, 1}, 0, 0, 0, 0, 0, 0, 0,
       shp(4, 2, 2, 5, 2), {{1, 1, 1, 3, 1, 0}, {1, -3, 1, -1, 1, 0}, FULL, FULL}},
      {"offset", shp(3, 4, 5, 6), 3, {1, 2, 0}, {2, 3, 3}, {1, 1, 2}, 0, 0, 0, 0, 0, 1, 0,
       shp(3, 2, 3, 2), {{1, 1, 1, 3, 1, 0}, {1, 2, 1, 5, 1, 0}, {1, 0, 1, 3, 2, 0}}},
      {"offset neg begin", shp(2, 4, 6), 2, {-3, 0}, {2, 6}, {1, 1}, 0, 0, 0, 0, 0, 1, 0,
       shp(2, 2, 6), {{1, 1, 1, 3, 1, 0}, FULL}},
      {"ellipsis lead", shp(4, 2, 3, 4, 5), 2, {0, 1}, {0, 4}, {1, 2}, 0, 0, 0x1, 0, 0, 0, 0,
       shp(4, 2, 3, 4, 2), {FULL, FULL, FULL, {1, 1, 1, 4, 2, 0}}},
      {"ellipsis mid shrink", shp(4, 2, 3, 4, 5), 3, {1, 0, -1}, {2, 0, 0}, {1, 1, 1}, 0, 0, 0x2, 0,
       0x5, 0, 0, shp(2, 3, 4), {{1, 1, 0, 0, 1, 1}, FULL, FULL, {1, -1, 0, 0, 1, 1}}},
      {"new axis", shp(2, 3, 4), 3, {0, 0, 1}, {0, 0, 3}, {1, 1, 1}, 0x2, 0x2, 0, 0x1, 0, 0, 0,
       shp(3, 1, 3, 2), {FULL, {1, 1, 1, 3, 1, 0}}},
      {"ellipsis + new axis", shp(3, 2, 3, 4), 2, {0, 0}, {0, 0}, {1, 1}, 0, 0, 0x1, 0x2, 0, 0, 0,
       shp(4, 2, 3, 4, 1), {FULL, FULL, FULL}},
      {"new axis + ellipsis + shrink", shp(2, 3, 4), 3, {0, 0, 2}, {0, 0, 3}, {1, 1, 1}, 0, 0, 0x2,
       0x1, 0x4, 0, 0, shp(2, 1, 3), {FULL, {1, 2, 0, 0, 1, 1}}},
      {"zero stride", shp(1, 4), 1, {0}, {4}, {0}, 0, 0, 0, 0, 0, 0, -2, shp(0), {FULL}},
      {"shrink oob", shp(1, 4), 1, {4}, {5}, {1}, 0, 0, 0, 0, 0x1, 0, -2, shp(0), {FULL}},
      {"two ellipses", shp(2, 4, 4), 2, {0, 0}, {0, 0}, {1, 1}, 0, 0, 0x3, 0, 0, 0, -1, shp(0),
       {FULL}},
      {"too many spec", shp(1, 4), 2, {0, 0}, {1, 1}, {1, 1}, 0, 0, 0, 0, 0, 0, -2, shp(0), {FULL}},
  };
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; ++k) {
    ss_case *c = &cs[k];
    fx_slice_plan p;
    const int rc = fx_strided_slice_plan(&c->xs, c->n, c->begin, c->end, c->strides, c->bm, c->em,
                                         c->elm, c->nam, c->sam, c->offset, &p);
    if (rc != c->want_rc) {
      report(0, "strided_slice %s: rc %d want %d", c->name, rc, c->want_rc);
      continue;
    }
    if (rc != 0) {
      report(1, "strided_slice %s rc", c->name);
      continue;
    }
    int shape_ok = p.out.rank == c->want_out.rank;
    for (int i = 0; shape_ok && i < p.out.rank; ++i) shape_ok = p.out.d[i] == c->want_out.d[i];
    report(shape_ok, "strided_slice %s: output shape (rank %d: %d %d %d %d)", c->name, p.out.rank,
           p.out.d[0], p.out.d[1], p.out.d[2], p.out.d[3]);
    const size_t nx = numel(&c->xs);
    float *x = rand_buf(nx, -1, 1);
    float *r = fbuf(nx), *y = fbuf(nx + 1);
    size_t nr;
    slice_ref(x, &c->xs, c->ref, r, &nr);
    report(nr == numel(&p.out), "strided_slice %s: count %zu want %zu", c->name, numel(&p.out), nr);
    fx_strided_slice(x, &c->xs, &p, 4, y);
    char nm[96];
    snprintf(nm, sizeof nm, "strided_slice %s data", c->name);
    check_bytes(nm, y, r, nr * 4);
    /* element-size generic: same slice on int16 data */
    int16_t *xs16 = (int16_t *)malloc(nx * 2), *y16 = (int16_t *)malloc(nx * 2 + 2);
    int16_t *r16 = (int16_t *)malloc(nx * 2 + 2);
    for (size_t i = 0; i < nx; ++i) xs16[i] = (int16_t)(i * 3 + 1);
    float *xf = fbuf(nx);
    for (size_t i = 0; i < nx; ++i) xf[i] = (float)xs16[i];
    slice_ref(xf, &c->xs, c->ref, r, &nr);
    for (size_t i = 0; i < nr; ++i) r16[i] = (int16_t)r[i];
    fx_strided_slice(xs16, &c->xs, &p, 2, y16);
    snprintf(nm, sizeof nm, "strided_slice %s int16", c->name);
    check_bytes(nm, y16, r16, nr * 2);
    free(x); free(r); free(y); free(xs16); free(y16); free(r16); free(xf);
  }
}

int main(void) {
  test_common();
  test_unary();
  test_binary();
  test_pool();
  test_depthwise();
  test_resize();
  test_reduce();
  test_layout();
  test_strided_slice();
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
