/* Checks every QS8 GEMM / IGEMM variant this CPU runs (scalar reference included) against a
 * naive convolution written here, over GEMM shapes (m, n, k at 1, tile edges and large k; every
 * m mod 8, as the VNNI kernels are compiled per tail row count),
 * random NHWC convolutions through the conv driver in both its forms, IGEMM and im2col GEMM
 * (padding, strides, dilations), zero points
 * at both ends, tiny and huge multipliers, every clamp and every rounding, and the QU8 path
 * (uint8 data, weight zero point); and the run-time B of an int8 BATCH_MATMUL (int8 weights with
 * a zero point, read through strides: fx_qs8_pack_gemm_zw) under a split rounding rule
 * (fx_qs8_gemm_run_split), whole and over split panel ranges; and the float output stage of the
 * variants that have one (range_f32, hybrid layers: qs8-gemm.h fx_qs8_f32_out) against stock's
 * float operations written here, and its IGEMM form (tiles_f32) on random convs against the
 * im2col one. Prints one line per group and "ALL PASS".
 *   qs8_gemm_tester [cases]      (FLEXDELEGATE_ISA narrows nothing here: all variants run) */
#include <math.h>
#include <string.h>
#include "kernels/qs8-gemm/qs8-run.h"
#include "kernels/simd/nofuse.h"
#include "qs8_tester_util.h"

typedef struct {
  fx_qs8_conv_geom g;
  int u8;                 /* QU8: x, w are uint8 bytes; zp/zw in [0, 255] */
  int zx, zw;
  const int8_t *x, *w;    /* x [batch][h][w][cin], w [cout][kh][kw][cin] */
  const int32_t *bias, *m, *sh;
  fx_qs8_out o;           /* for QU8: in the int8 domain (zp, lo, hi shifted by -128) */
} problem;

/* The definition: acc = bias + sum over in-bounds taps (x - zx)(w - zw), requant, clamp. */
static void naive(const problem *p, int8_t *y) {
  const fx_qs8_conv_geom *g = &p->g;
  for (int b = 0; b < g->batch; b++)
    for (int oy = 0; oy < g->oh; oy++)
      for (int ox = 0; ox < g->ow; ox++)
        for (int co = 0; co < g->cout; co++) {
          uint32_t acc = (uint32_t)p->bias[co];
          for (int ky = 0; ky < g->kh; ky++)
            for (int kx = 0; kx < g->kw; kx++) {
              const int iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
              if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
              for (int ci = 0; ci < g->cin; ci++) {
                const size_t xi = (((size_t)b * g->h + iy) * g->w + ix) * g->cin + ci;
                const size_t wi = (((size_t)co * g->kh + ky) * g->kw + kx) * g->cin + ci;
                const int xv = p->u8 ? ((const uint8_t *)p->x)[xi] : p->x[xi];
                const int wv = p->u8 ? ((const uint8_t *)p->w)[wi] : p->w[wi];
                acc += (uint32_t)((xv - p->zx) * (wv - p->zw));
              }
            }
          const size_t yi = (((size_t)b * g->oh + oy) * g->ow + ox) * g->cout + co;
          y[yi] = fx_qs8_out_one((int32_t)acc, p->m[co], p->sh[co], p->o.rounding, &p->o);
        }
}

/* Runs variant g on p in form FX_QS8_CONV_* (GEMM: 1x1 stride-1 unpadded windows only). */
static int run(const fx_qs8_gemm_config *g, const problem *p, int form, int8_t *y) {
  const fx_qs8_conv_geom *cg = &p->g;
  const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(g, cg, form);
  void *packed = malloc(fx_qs8_gemm_packed_bytes(&geom));
  const size_t nx = (size_t)cg->batch * cg->h * cg->w * cg->cin;
  int8_t *x8 = malloc(nx + 1), *zero = malloc((size_t)cg->cin);
  int rc = p->u8 ? fx_qu8_pack_gemm(&geom, (const uint8_t *)p->w, p->zw, p->bias, p->zx, p->m, p->sh, packed)
                 : fx_qs8_pack_gemm(&geom, p->w, p->bias, p->zx, p->m, p->sh, packed);
  if (p->u8) fx_qu8_flip((const uint8_t *)p->x, x8, nx); else memcpy(x8, p->x, nx);
  memset(zero, p->u8 ? p->zx - 128 : p->zx, (size_t)cg->cin);
  const int32_t factor = p->u8 ? fx_qu8_row_factor(p->zw) : 0;
  const size_t m = (size_t)cg->batch * cg->oh * cg->ow, panels = ((size_t)cg->cout + g->nr - 1) / g->nr;
  if (rc == 0 && form == FX_QS8_CONV_GEMM)
    fx_qs8_gemm_run(g, m, (size_t)cg->cout, (size_t)cg->cin, x8, (size_t)cg->cin, packed, y,
                    (size_t)cg->cout, factor, &p->o, 0, panels);
  else if (rc == 0)
    rc = fx_qs8_conv_run(g, cg, form, x8, zero, packed, y, factor, &p->o, 0, m, 0, panels);
  free(packed); free(x8); free(zero);
  return rc;
}

/* Packing is a pure function whose panels are independent: packing twice gives the same bytes,
 * and the byte range of panels [p0, p1) equals the packing of those channels alone (what
 * budgeted runs slice and stream). Then the driver over split ranges (two pixel ranges x two
 * panel ranges, as threads would take them) writes exactly the whole run's output. */
static int check_slicing(const fx_qs8_gemm_config *g, const problem *p, int form) {
  const fx_qs8_conv_geom *cg = &p->g;
  const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(g, cg, form);
  const size_t bytes = fx_qs8_gemm_packed_bytes(&geom), pb = fx_qs8_gemm_panel_bytes(&geom);
  const size_t panels = ((size_t)cg->cout + g->nr - 1) / g->nr;
  uint8_t *a = malloc(bytes), *b = malloc(bytes);
  int bad = 0;
  fx_qs8_pack_gemm(&geom, p->w, p->bias, p->zx, p->m, p->sh, a);
  fx_qs8_pack_gemm(&geom, p->w, p->bias, p->zx, p->m, p->sh, b);
  bad |= memcmp(a, b, bytes) != 0;
  const size_t p0 = panels / 2, c0 = p0 * (size_t)g->nr, K = (size_t)cg->kh * cg->kw * cg->cin;
  if (p0 > 0) {
    fx_qs8_gemm_geom sub = geom;
    sub.n = cg->cout - (int)c0;
    fx_qs8_pack_gemm(&sub, p->w + c0 * K, p->bias + c0, p->zx, p->m + c0, p->sh + c0, b);
    bad |= memcmp(a + p0 * pb, b, (panels - p0) * pb) != 0;
  }
  const size_t m = (size_t)cg->batch * cg->oh * cg->ow, ny = m * cg->cout, mid = m / 2 + 1;
  int8_t *whole = malloc(ny), *split = malloc(ny), *zero = malloc((size_t)cg->cin);
  memset(zero, p->zx, (size_t)cg->cin);
  memset(split, 0x55, ny);
  fx_qs8_conv_run(g, cg, form, p->x, zero, a, whole, 0, &p->o, 0, m, 0, panels);
  const size_t mr[3] = {0, mid < m ? mid : m, m}, pr[3] = {0, p0, panels};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) fx_qs8_conv_run(g, cg, form, p->x, zero, a + pr[j] * pb, split, 0, &p->o, mr[i], mr[i + 1], pr[j],
                                         pr[j + 1]); /* packed: from panel pr[j] on, as a budget step streams it */
  bad |= memcmp(whole, split, ny) != 0;
  free(a); free(b); free(whole); free(split); free(zero);
  return bad;
}

/* A x B of m x k int8 rows (zero point za) by int8 B (zero point zb; [n][k] or, transposed,
 * [k][n]) packed per run, one multiplier, o's tail rule (any tail_from): whole, then as two
 * panel ranges (what a BATCH_MATMUL task takes), on every variant against the definition.
 * Returns the number of variants that failed. */
static int check_bmm(size_t m, size_t n, size_t k) {
  int8_t *a = malloc(m * k + 1), *b = malloc(n * k + 1), *want = malloc(m * n + 1), *got = malloc(m * n + 1);
  int32_t *ms = malloc(sizeof(int32_t) * 2 * n);
  const int za = rnd_zp(-128, 127), zb = rnd_zp(-128, 127), transposed = rnd_in(0, 1);
  rnd_i8(a, m * k, -128, 127);
  rnd_i8(b, n * k, -128, 127);
  fx_qs8_out o = rnd_out((int)n, 1);
  if (o.rounding < FLEX_RQ_SINGLE && rnd_in(0, 1)) o.tail_from = rnd_in(0, (int)n); /* any split point */
  rnd_requant(1, 128.0 * 100 * sqrt((double)k), o.rounding, ms, ms + n);
  for (size_t j = 1; j < n; j++) ms[j] = ms[0], ms[n + j] = ms[n];
  const size_t cs = transposed ? 1 : k, ks = transposed ? n : 1;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      uint32_t acc = 0;
      for (size_t q = 0; q < k; q++) acc += (uint32_t)((a[i * k + q] - za) * (b[j * cs + q * ks] - zb));
      want[i * n + j] = fx_qs8_out_one((int32_t)acc, ms[j], ms[n + j], fx_qs8_rounding_of(&o, j), &o);
    }
  int bad = 0;
  const fx_qs8_gemm_config *v;
  for (int vi = 0; (v = fx_qs8_gemm_config_at(vi)); vi++) {
    const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(v, (int)n, 1, (int)k);
    const size_t panels = (n + v->nr - 1) / v->nr, pb = fx_qs8_gemm_panel_bytes(&geom), mid = panels / 2;
    uint8_t *packed = malloc(fx_qs8_gemm_packed_bytes(&geom));
    int rc = fx_qs8_pack_gemm_zw(&geom, b, cs, ks, zb, za, ms, ms + n, packed);
    memset(got, 0x55, m * n);
    fx_qs8_gemm_run_split(v, m, n, k, a, k, packed, got, n, -zb, &o, 0, panels);
    int fail = rc || memcmp(got, want, m * n);
    memset(got, 0x55, m * n);
    fx_qs8_gemm_run_split(v, m, n, k, a, k, packed, got, n, -zb, &o, 0, mid);
    fx_qs8_gemm_run_split(v, m, n, k, a, k, packed + mid * pb, got, n, -zb, &o, mid, panels);
    fail |= memcmp(got, want, m * n) != 0;
    if (fail)
      fprintf(stderr, "FAIL %s bmm: %zux%zux%zu za=%d zb=%d transposed=%d rnd=%d tail=%d from %d\n", v->name, m, n,
              k, za, zb, transposed, o.rounding, o.tail_rounding, o.tail_from);
    bad += fail;
    free(packed);
  }
  free(a); free(b); free(want); free(got); free(ms);
  return bad;
}

/* x86's min / max: the second operand when either is NaN (the kernels' clamp relies on it). */
static float x86_max(float a, float b) { return a > b ? a : b; }
static float x86_min(float a, float b) { return a < b ? a : b; }

/* A hybrid GEMM (m x k int8 rows, scales and zero points per row or one for all, n channels of
 * int8 weights) through range_f32: the float stage as stock computes it, each operation rounded,
 * the clamp keeping a NaN or turning it into lo, a residual; whole and as two panel ranges (the
 * columns outside a range untouched), with the range of the values stored. Returns the number
 * of variants that failed. */
static int check_hybrid(size_t m, size_t n, size_t k) {
  int8_t *a = malloc(m * k + 1), *w = malloc(n * k + 1);
  float *xs = malloc(sizeof(float) * m), *ws = malloc(sizeof(float) * n), *bias = malloc(sizeof(float) * n);
  float *res = malloc(sizeof(float) * m * n + 4), *want = malloc(sizeof(float) * m * n), *got = malloc(sizeof(float) * m * n);
  int32_t *zp = malloc(sizeof(int32_t) * m);
  rnd_i8(a, m * k, -128, 127);
  rnd_i8(w, n * k, -127, 127);
  const size_t x_step = (size_t)rnd_in(0, 1);
  for (size_t i = 0; i < m; i++) xs[i] = (float)(rnd_unit() * 0.02 + 1e-4), zp[i] = rnd_in(-128, 127);
  for (size_t j = 0; j < n; j++) ws[j] = (float)(rnd_unit() * 0.01 + 1e-5), bias[j] = (float)(rnd_unit() * 4 - 2);
  for (size_t i = 0; i < m * n; i++) res[i] = (float)(rnd_unit() * 2 - 1);
  const int poison = rnd_in(0, 4) == 0; /* a NaN scale (a row of NaN inputs) and an infinite bias */
  if (poison) xs[rnd_in(0, (int)m - 1)] = NAN, bias[rnd_in(0, (int)n - 1)] = INFINITY;
  static const float los[] = {-INFINITY, 0.f, -1.f, -6.f}, his[] = {INFINITY, 6.f, 1.f, 0.5f};
  const int act = rnd_in(0, 3);
  fx_qs8_f32_out o = {.x_scale = xs, .x_zp = rnd_in(0, 1) ? zp : NULL, .x_step = x_step, .w_scale = ws, .bias = bias,
                      .lo = los[act], .hi = his[act], .nan_to_lo = rnd_in(0, 1), .res = rnd_in(0, 2) ? NULL : res,
                      .res_stride = n, .res_lo = -1.5f, .res_hi = 1.5f};
  float lo_want = INFINITY, hi_want = -INFINITY;
  int finite = 1;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      const size_t r = i * x_step;
      int32_t acc = 0;
      for (size_t q = 0; q < k; q++) acc += a[i * k + q] * w[j * k + q];
      if (o.x_zp) {
        int32_t sum = 0;
        for (size_t q = 0; q < k; q++) sum += w[j * k + q];
        acc -= o.x_zp[r] * sum;
      }
      const float scale = xs[r] * ws[j];
      float f = (float)acc * scale;
      FX_NOFUSE(f);
      f = f + bias[j];
      f = o.nan_to_lo ? x86_min(x86_max(f, o.lo), o.hi) : x86_min(o.hi, x86_max(o.lo, f));
      if (o.res) f = x86_min(o.res_hi, x86_max(o.res_lo, f + res[i * n + j]));
      want[i * n + j] = f;
      finite &= isfinite(f) != 0;
      lo_want = f < lo_want ? f : lo_want;
      hi_want = f > hi_want ? f : hi_want;
    }
  int bad = 0;
  const fx_qs8_gemm_config *v;
  for (int vi = 0; (v = fx_qs8_gemm_config_at(vi)); vi++) {
    if (!v->range_f32) continue;
    const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(v, (int)n, 1, (int)k);
    const size_t nr = (size_t)v->nr, panels = (n + nr - 1) / nr, pb = fx_qs8_gemm_panel_bytes(&geom);
    const size_t mid = (size_t)rnd_in(0, (int)panels);
    uint8_t *packed = malloc(fx_qs8_gemm_packed_bytes(&geom));
    int fail = fx_qs8_pack_hybrid(&geom, w, packed) != 0;
    float range[2] = {INFINITY, -INFINITY};
    fx_qs8_f32_out ow = o;
    ow.range = range;
    memset(got, 0x7f, sizeof(float) * m * n);
    v->range_f32(m, n, k, a, k, packed, pb, got, n, &ow, 0, panels);
    fail |= memcmp(got, want, sizeof(float) * m * n) != 0;
    fail |= finite && (range[0] != lo_want || range[1] != hi_want);
    /* panels [mid, panels) first, packed from panel mid on; the others untouched, then filled */
    memset(got, 0x7f, sizeof(float) * m * n);
    v->range_f32(m, n, k, a, k, packed + mid * pb, pb, got, n, &o, mid, panels);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < mid * nr && j < n; j++) {
        uint32_t bits;
        memcpy(&bits, &got[i * n + j], 4);
        fail |= bits != 0x7f7f7f7fu;
      }
    v->range_f32(m, n, k, a, k, packed, pb, got, n, &o, 0, mid);
    fail |= memcmp(got, want, sizeof(float) * m * n) != 0;
    if (fail)
      fprintf(stderr, "FAIL %s hybrid: %zux%zux%zu x_step=%zu zp=%d act=%d nan_to_lo=%d res=%d poison=%d\n", v->name, m, n,
              k, x_step, o.x_zp != NULL, act, o.nan_to_lo, o.res != NULL, poison);
    bad += fail;
    free(packed);
  }
  free(a); free(w); free(xs); free(ws); free(bias); free(res); free(want); free(got); free(zp);
  return bad;
}

/* A hybrid conv (one image, its scale and zero point, padding reading zx) through
 * fx_qs8_hybrid_run in the IGEMM form on the variants with a float tiles kernel, against the
 * im2col form through range_f32 (which check_hybrid holds to the definition): the same floats,
 * the same range, over the whole image and as two row ranges x two panel ranges. Returns the
 * number of variants that failed. */
static int check_hybrid_conv(const fx_qs8_conv_geom *cg) {
  const size_t nx = (size_t)cg->h * cg->w * cg->cin, m = (size_t)cg->oh * cg->ow, n = (size_t)cg->cout;
  const size_t nw = n * cg->kh * cg->kw * cg->cin;
  int8_t *x = malloc(nx + 1), *w = malloc(nw + 1);
  float *ws = malloc(sizeof(float) * n), *bias = malloc(sizeof(float) * n), *res = malloc(sizeof(float) * m * n + 4);
  float *want = malloc(sizeof(float) * m * n), *got = malloc(sizeof(float) * m * n);
  const float xs = (float)(rnd_unit() * 0.02 + 1e-4);
  const int32_t zp = rnd_in(-128, 127);
  const int asym = rnd_in(0, 1);
  rnd_i8(x, nx, asym ? -128 : -127, 127);
  rnd_i8(w, nw, -127, 127);
  for (size_t j = 0; j < n; j++) ws[j] = (float)(rnd_unit() * 0.01 + 1e-5), bias[j] = (float)(rnd_unit() * 4 - 2);
  for (size_t i = 0; i < m * n; i++) res[i] = (float)(rnd_unit() * 2 - 1);
  fx_qs8_f32_out o = {.x_scale = &xs, .x_zp = asym ? &zp : NULL, .x_step = 0, .w_scale = ws, .bias = bias,
                      .lo = rnd_in(0, 1) ? 0.f : -INFINITY, .hi = INFINITY, .nan_to_lo = 0,
                      .res = rnd_in(0, 2) ? NULL : res, .res_stride = n, .res_lo = -1.5f, .res_hi = 1.5f};
  const int8_t zx = asym ? (int8_t)zp : 0;
  int bad = 0;
  const fx_qs8_gemm_config *v;
  for (int vi = 0; (v = fx_qs8_gemm_config_at(vi)); vi++) {
    if (!v->range_f32 || !v->igemm_tiles_f32) continue;
    int fail = 0;
    float ranges[2][2];
    float *outs[2] = {want, got};
    const int forms[2] = {FX_QS8_CONV_IM2COL, FX_QS8_CONV_IGEMM};
    for (int f = 0; f < 2; f++) {
      const fx_qs8_gemm_geom geom = fx_qs8_conv_pack_geom(v, cg, forms[f]);
      uint8_t *packed = malloc(fx_qs8_gemm_packed_bytes(&geom));
      const size_t panels = (n + v->nr - 1) / v->nr, pb = fx_qs8_gemm_panel_bytes(&geom);
      fail |= fx_qs8_pack_hybrid(&geom, w, packed) != 0;
      memset(outs[f], 0x7f, sizeof(float) * m * n);
      ranges[f][0] = INFINITY, ranges[f][1] = -INFINITY;
      fx_qs8_f32_out of = o;
      of.range = ranges[f];
      if (f == 0) {
        fail |= fx_qs8_hybrid_run(v, cg, forms[f], x, zx, 0, n, packed, outs[f], &of, NULL, 0, m, 0, panels) != 0;
      } else { /* two row ranges x two panel ranges, as threads and budget slices take them */
        const size_t mm = (size_t)rnd_in(0, (int)m), mp = (size_t)rnd_in(0, (int)panels);
        const size_t mr[3] = {0, mm, m}, pr[3] = {0, mp, panels};
        for (int i = 0; i < 2; i++)
          for (int j = 0; j < 2; j++)
            fail |= fx_qs8_hybrid_run(v, cg, forms[f], x, zx, 0, n, packed + pr[j] * pb, outs[f], &of, NULL, mr[i],
                                      mr[i + 1], pr[j], pr[j + 1]) != 0;
      }
      free(packed);
    }
    fail |= memcmp(want, got, sizeof(float) * m * n) != 0;
    fail |= ranges[0][0] != ranges[1][0] || ranges[0][1] != ranges[1][1];
    if (fail)
      fprintf(stderr, "FAIL %s hybrid conv: %dx%dx%d k%dx%d s%d d%d p%d,%d -> %dx%dx%d asym=%d res=%d\n", v->igemm_name,
              cg->h, cg->w, cg->cin, cg->kh, cg->kw, cg->sh, cg->dh, cg->pt, cg->pl, cg->oh, cg->ow, cg->cout, asym,
              o.res != NULL);
    bad += fail;
  }
  free(x); free(w); free(ws); free(bias); free(res); free(want); free(got);
  return bad;
}

static int same_geom(fx_qs8_conv_geom *g, int h, int w, int kh, int kw, int s, int d, int same) {
  g->h = h; g->w = w; g->kh = kh; g->kw = kw; g->sh = g->sw = s; g->dh = g->dw = d;
  const int eh = (kh - 1) * d + 1, ew = (kw - 1) * d + 1;
  if (same) {
    g->oh = (h + s - 1) / s; g->ow = (w + s - 1) / s;
    const int ph = (g->oh - 1) * s + eh - h, pw = (g->ow - 1) * s + ew - w;
    g->pt = ph > 0 ? ph / 2 : 0; g->pl = pw > 0 ? pw / 2 : 0;
  } else {
    if (eh > h || ew > w) return 0;
    g->oh = (h - eh) / s + 1; g->ow = (w - ew) / s + 1; g->pt = g->pl = 0;
  }
  return 1;
}

/* One random problem on every variant; returns the number of variants that failed. */
static int check(problem *p, int form, const char *what) {
  const fx_qs8_conv_geom *g = &p->g;
  const size_t ny = (size_t)g->batch * g->oh * g->ow * g->cout;
  int8_t *want = malloc(ny), *got = malloc(ny);
  naive(p, want);
  if (p->u8) { /* the naive result is the uint8 value minus 128 in the int8 domain */ }
  int bad = 0;
  const fx_qs8_gemm_config *v;
  for (int i = 0; (v = fx_qs8_gemm_config_at(i)); i++) {
    memset(got, 0x55, ny);
    if (run(v, p, form, got) != 0 || memcmp(got, want, ny) != 0) {
      size_t e = 0;
      while (e < ny && got[e] == want[e]) e++;
      fprintf(stderr, "FAIL %s %s: b%d %dx%dx%d k%dx%d s%d d%d p%d,%d -> %dx%dx%d u8=%d zx=%d zw=%d "
              "rnd=%d zp=%d [%d,%d] first diff @%zu got %d want %d\n", form == FX_QS8_CONV_IGEMM ? v->igemm_name : v->name, what,
              g->batch, g->h, g->w, g->cin, g->kh, g->kw, g->sh, g->dh, g->pt, g->pl, g->oh, g->ow, g->cout,
              p->u8, p->zx, p->zw, p->o.rounding, p->o.zp, p->o.lo, p->o.hi, e, e < ny ? got[e] : 0, e < ny ? want[e] : 0);
      bad++;
    }
  }
  free(want); free(got);
  return bad;
}

/* Random data and parameters for geometry p->g. */
static void fill(problem *p, int u8, int8_t **x, int8_t **w, int32_t **bias, int32_t **m, int32_t **sh) {
  const fx_qs8_conv_geom *g = &p->g;
  const size_t nx = (size_t)g->batch * g->h * g->w * g->cin, nw = (size_t)g->cout * g->kh * g->kw * g->cin;
  *x = malloc(nx + 1); *w = malloc(nw + 1);
  *bias = malloc(sizeof(int32_t) * g->cout); *m = malloc(sizeof(int32_t) * g->cout); *sh = malloc(sizeof(int32_t) * g->cout);
  p->u8 = u8;
  const int wide = rnd_in(0, 3) != 0; /* else small weights: accumulators near the tie region */
  if (u8) {
    p->zx = rnd_zp(0, 255); p->zw = rnd_zp(0, 255);
    for (size_t i = 0; i < nx; i++) (*x)[i] = (int8_t)rnd_in(0, 255);
    for (size_t i = 0; i < nw; i++) (*w)[i] = (int8_t)(wide ? rnd_in(0, 255) : rnd_in(p->zw > 2 ? p->zw - 2 : 0, p->zw < 253 ? p->zw + 2 : 255));
  } else {
    p->zx = rnd_zp(-128, 127); p->zw = 0;
    rnd_i8(*x, nx, -128, 127);
    if (wide) rnd_i8(*w, nw, -128, 127); else rnd_i8(*w, nw, -2, 2);
  }
  const int K = g->kh * g->kw * g->cin;
  for (int c = 0; c < g->cout; c++) (*bias)[c] = rnd_in(0, 7) ? rnd_in(-40000, 40000) : (int32_t)rnd32();
  p->o = rnd_out(g->cout, 1); /* a tail the GEMMs must ignore */
  rnd_requant(g->cout, (wide ? 128.0 * 100 : 128.0 * 2) * sqrt((double)K), p->o.rounding, *m, *sh);
  if (u8) { /* uint8 outputs in the int8 domain */
    const int zo = rnd_zp(0, 255);
    p->o.zp = zo - 128;
    if (p->o.lo > p->o.zp) p->o.lo = p->o.zp;
  }
  p->x = *x; p->w = *w; p->bias = *bias; p->m = *m; p->sh = *sh;
}

static void release(int8_t *x, int8_t *w, int32_t *bias, int32_t *m, int32_t *sh) {
  free(x); free(w); free(bias); free(m); free(sh);
}

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 300;
  int total = 0, failed = 0;
  const fx_qs8_gemm_config *v;
  printf("variants:");
  for (int i = 0; (v = fx_qs8_gemm_config_at(i)); i++) printf(" %s/%s", v->name, v->igemm_name);
  printf("\n");
  /* GEMM shapes: every m, n, k edge of the tiles in use (1, MR/NR/KR +-1, large k). */
  static const int ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 17, 31, 32, 33, 70}; /* AMX: 32-row steps, 64-row blocks at k 1000 */
  static const int ns[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 33};
  static const int ksz[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 72, 95, 100, 1000}; /* 64+: 1-row tiles 32 a step */
  int shapes = 0, shapes_bad = 0;
  for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
      for (size_t c = 0; c < sizeof ksz / sizeof *ksz; c++) {
        problem p;
        memset(&p, 0, sizeof p);
        fx_qs8_conv_geom *g = &p.g;
        g->batch = 1; g->cin = ksz[c]; g->cout = ns[b];
        same_geom(g, 1, ms[a], 1, 1, 1, 1, 0);
        int8_t *x, *w; int32_t *bias, *m, *sh;
        fill(&p, (a + b + c) % 4 == 0, &x, &w, &bias, &m, &sh);
        shapes++;
        shapes_bad += check(&p, FX_QS8_CONV_GEMM, "gemm-shape") != 0;
        release(x, w, bias, m, sh);
      }
  printf("gemm shapes (m x n x k, int8 and uint8): %d/%d pass\n", shapes - shapes_bad, shapes);
  total += shapes; failed += shapes_bad;
  int bmms = 0, bmms_bad = 0;
  for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
      for (size_t c = 0; c < sizeof ksz / sizeof *ksz; c += 2) {
        bmms++;
        bmms_bad += check_bmm((size_t)ms[a], (size_t)ns[b], (size_t)ksz[c]) != 0;
      }
  printf("run-time int8 B (zero point, strides) under split roundings: %d/%d pass\n", bmms - bmms_bad, bmms);
  total += bmms; failed += bmms_bad;
  int hybrids = 0, hybrids_bad = 0;
  for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
      for (size_t c = 0; c < sizeof ksz / sizeof *ksz; c++) {
        hybrids++;
        hybrids_bad += check_hybrid((size_t)ms[a], (size_t)ns[b], (size_t)ksz[c]) != 0;
      }
  printf("hybrid float output stage (range_f32 variants), whole and split panel ranges: %d/%d pass\n",
         hybrids - hybrids_bad, hybrids);
  total += hybrids; failed += hybrids_bad;
  /* Random convolutions in both driver forms (and 1x1 ones through the GEMM as well). */
  int convs = 0, convs_bad = 0, slices = 0, slices_bad = 0, hybrid_convs = 0, hybrid_convs_bad = 0;
  for (int i = 0; i < cases; i++) {
    problem p;
    memset(&p, 0, sizeof p);
    fx_qs8_conv_geom *g = &p.g;
    g->batch = rnd_in(1, 2); g->cin = rnd_in(0, 3) ? rnd_in(1, 24) : rnd_in(25, 70); g->cout = rnd_in(1, 40);
    static const int kszs[] = {1, 1, 2, 3, 3, 5, 7};
    const int kh = kszs[rnd_in(0, 6)], kw = rnd_in(0, 2) ? kh : kszs[rnd_in(0, 6)];
    if (!same_geom(g, rnd_in(1, 9), rnd_in(1, 9), kh, kw, rnd_in(1, 2), rnd_in(0, 3) ? 1 : 2, rnd_in(0, 2) != 0)) {
      i--;
      continue;
    }
    int8_t *x, *w; int32_t *bias, *m, *sh;
    fill(&p, rnd_in(0, 3) == 0, &x, &w, &bias, &m, &sh);
    static const int forms[] = {FX_QS8_CONV_IGEMM, FX_QS8_CONV_IM2COL};
    for (int f = 0; f < 2; f++) {
      convs++;
      convs_bad += check(&p, forms[f], f ? "conv-im2col" : "conv") != 0;
      if (!p.u8)
        for (int vi = 0; (v = fx_qs8_gemm_config_at(vi)); vi++) {
          slices++;
          if (check_slicing(v, &p, forms[f])) {
            slices_bad++;
            fprintf(stderr, "FAIL %s: packing not deterministic/sliceable or split run differs\n",
                    f ? v->name : v->igemm_name);
          }
        }
    }
    if (!p.u8) {
      hybrid_convs++;
      hybrid_convs_bad += check_hybrid_conv(g) != 0;
    }
    if (kh == 1 && kw == 1 && g->sh == 1 && g->pt == 0 && g->pl == 0) {
      convs++;
      convs_bad += check(&p, FX_QS8_CONV_GEMM, "conv-1x1-gemm") != 0;
    }
    release(x, w, bias, m, sh);
  }
  printf("random convolutions (igemm and im2col; 1x1 also gemm): %d/%d pass\n", convs - convs_bad, convs);
  printf("packing deterministic, panel ranges sliceable, split runs equal: %d/%d pass\n", slices - slices_bad, slices);
  printf("hybrid convs, IGEMM float form equal to im2col's (tiles_f32 variants): %d/%d pass\n",
         hybrid_convs - hybrid_convs_bad, hybrid_convs);
  total += convs + slices + hybrid_convs; failed += convs_bad + slices_bad + hybrid_convs_bad;
  if (failed) {
    printf("FAILED %d of %d\n", failed, total);
    return 1;
  }
  printf("ALL PASS (%d problems x every variant)\n", total);
  return 0;
}
