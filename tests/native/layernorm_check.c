/* Checks every LayerNorm kernel this CPU runs (kernels/layernorm), built and run by
 * test_kernel_layernorm.py (natively, and for AArch64 under qemu):
 *
 *   cc -std=gnu11 -O2 -pthread -I flexdelegate/native tests/native/layernorm_check.c \
 *      flexdelegate/native/cpu.c flexdelegate/native/threadpool.c flexdelegate/native/kernels/layernorm/\*.c -lm
 *
 * Row lengths around every vector width and the model widths (192 ... 3072), 1..5 rows with
 * row strides wider than the row and canaries between rows, gamma / beta present or not, both
 * modes, in place and not: the scalar reference against a float64 evaluation (error relative
 * to the row's largest term, see ref64), each vector variant against the scalar reference and
 * float64; a constant row bit for bit as stock's graph rounds it; then the threaded driver on a
 * 2-thread pool. Prints one line per variant, then "ALL PASS", or exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/layernorm/layernorm.h"
#include "kernels/simd/nofuse.h"
#include "runtime/pool.h"

#define TOL_F64 2e-6 /* scalar reference vs float64, relative to the row's largest |y| */
#define TOL_REF 3e-6 /* a vector variant vs the scalar reference (sums in another order), likewise */
#define CANARY -777.0f
#define PAD 3

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) { /* [0, 1) */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}
static float nrand(void) { return (float)(sqrt(-2.0 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand())); }

/* y in float64, and *scale = the row's largest |y_j| or |x_j g_j|: the terms the float formula
 * x*g + (beta - mean*g) rounds, so the size of its rounding errors (a row whose mean is large
 * against its spread cancels there, in stock's graph as here). */
static void ref64(size_t c, const float *x, double *scale, double *y, const fx_layernorm_params *p) {
  double s = 0.0, ss = 0.0;
  for (size_t j = 0; j < c; j++) s += x[j];
  const double mean = s / (double)c;
  for (size_t j = 0; j < c; j++) ss += (x[j] - mean) * (x[j] - mean);
  const double r = 1.0 / sqrt(ss / (double)c + p->eps);
  for (size_t j = 0; j < c; j++) {
    const double g = p->gamma ? p->gamma[j] : 1.0;
    y[j] = p->mode == FX_LN_KERAS_RMS ? x[j] * r * g : (x[j] - mean) * r * g + (p->beta ? p->beta[j] : 0.0);
    *scale = fmax(*scale, fmax(fabs(y[j]), fabs(x[j] * r * g)));
  }
}

/* max over rows of max_j |got - want| / scale[row]; -1 if a canary was hit. */
static double row_err(size_t rows, size_t c, size_t ys, const float *got, const float *want_f, const double *want_d,
                      const double *scales) {
  double worst = 0.0;
  for (size_t i = 0; i < rows; i++) {
    double scale = fmax(scales[i], 1e-30), e = 0.0;
    for (size_t j = 0; j < c; j++) {
      const double w = want_d ? want_d[i * c + j] : want_f[i * ys + j];
      e = fmax(e, fabs(got[i * ys + j] - w));
      if (isnan(got[i * ys + j])) return INFINITY;
    }
    for (size_t j = c; j < ys; j++)
      if (got[i * ys + j] != CANARY) return -1.0;
    worst = fmax(worst, e / scale);
  }
  return worst;
}

static const size_t k_widths[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127, 128, 129, 192, 257, 768, 1000, 3072};

int main(void) {
  const size_t nw = sizeof k_widths / sizeof k_widths[0], maxc = 3072, maxr = 5, ys = maxc + PAD;
  float *x = malloc(maxr * ys * sizeof(float)), *yr = malloc(maxr * ys * sizeof(float));
  float *y = malloc(maxr * ys * sizeof(float)), *io = malloc(maxr * ys * sizeof(float));
  float *gamma = malloc(maxc * sizeof(float)), *beta = malloc(maxc * sizeof(float));
  double *y64 = malloc(maxr * maxc * sizeof(double));
  int failures = 0, cases = 0;
  double worst64 = 0.0, worst_v[8] = {0}, worst_v64[8] = {0};
  for (size_t wi = 0; wi < nw; wi++)
    for (int opt = 0; opt < 8; opt++) {
      const size_t c = k_widths[wi], rows = 1 + (size_t)(opt + wi) % maxr;
      const int mode = opt & 1 ? FX_LN_KERAS_RMS : FX_LN_AFFINE;
      const float shift = (float)(urand() * 6.0 - 3.0), spread = (float)(0.1 + urand() * 10.0);
      for (size_t i = 0; i < maxr * ys; i++) x[i] = shift + spread * nrand();
      for (size_t j = 0; j < maxc; j++) gamma[j] = 1.0f + 0.5f * nrand(), beta[j] = nrand();
      const fx_layernorm_params p = {opt & 2 ? gamma : NULL, opt & 4 ? beta : NULL, opt & 2 ? 1e-5f : 1e-12f, mode};
      double scales[8] = {0};
      for (size_t i = 0; i < rows; i++) ref64(c, x + i * ys, &scales[i], y64 + i * c, &p);
      for (int v = 0; fx_layernorm_config_at(v); v++) {
        const fx_layernorm_config *k = fx_layernorm_config_at(v);
        for (size_t i = 0; i < maxr * ys; i++) y[i] = io[i] = CANARY;
        for (size_t i = 0; i < rows; i++) memcpy(io + i * ys, x + i * ys, c * sizeof(float));
        k->fn(rows, c, x, ys, v == 0 ? yr : y, ys, &p);
        k->fn(rows, c, io, ys, io, ys, &p);
        if (v == 0) {
          for (size_t i = 0; i < rows; i++)
            for (size_t j = c; j < ys; j++) yr[i * ys + j] = CANARY; /* the reference's own canaries */
          k->fn(rows, c, x, ys, yr, ys, &p);
          const double e = row_err(rows, c, ys, yr, NULL, y64, scales);
          if (e < 0 || e > TOL_F64) {
            printf("FAIL %s vs float64: c=%zu rows=%zu opt=%d err %g\n", k->name, c, rows, opt, e);
            failures++;
          }
          worst64 = fmax(worst64, e);
        } else {
          const double e = row_err(rows, c, ys, y, yr, NULL, scales), e64 = row_err(rows, c, ys, y, NULL, y64, scales);
          if (e < 0 || e > TOL_REF || e64 > TOL_F64) {
            printf("FAIL %s: c=%zu rows=%zu opt=%d err %g vs reference, %g vs float64\n", k->name, c, rows, opt, e, e64);
            failures++;
          }
          worst_v[v] = fmax(worst_v[v], e);
          worst_v64[v] = fmax(worst_v64[v], e64);
        }
        for (size_t i = 0; i < rows; i++)
          for (size_t j = 0; j < c; j++)
            if (io[i * ys + j] != (v == 0 ? yr : y)[i * ys + j]) {
              printf("FAIL %s in place differs: c=%zu opt=%d\n", k->name, c, opt);
              failures++;
              i = rows;
              break;
            }
        cases++;
      }
    }
  printf("%s: max %.3g vs float64 (relative to the row's largest term)\n", fx_layernorm_config_at(0)->name, worst64);
  for (int v = 1; fx_layernorm_config_at(v); v++)
    printf("%s: max %.3g vs the scalar reference, %.3g vs float64\n", fx_layernorm_config_at(v)->name, worst_v[v],
           worst_v64[v]);

  /* A constant row: stock's graph rounds x*g and mean*g alike, so they cancel exactly (eps 1e-12
   * makes g = 1e6: a fused multiply-add would leave ~0.1 there). Every variant, bit for bit. */
  for (int v = 0; fx_layernorm_config_at(v); v++) {
    const size_t c = 77;
    float cx[77], cy[77];
    for (size_t j = 0; j < c; j++) cx[j] = 2.5f;
    const fx_layernorm_params p = {gamma, beta, 1e-12f, FX_LN_AFFINE};
    fx_layernorm_config_at(v)->fn(1, c, cx, c, cy, c, &p);
    const float r = 1.0f / sqrtf(1e-12f);
    for (size_t j = 0; j < c; j++) {
      const float g = r * gamma[j];
      float xg = 2.5f * g, t = -2.5f * g;
      FX_NOFUSE(xg);
      FX_NOFUSE(t);
      t += beta[j];
      if (cy[j] != xg + t) {
        printf("FAIL %s constant row: y[%zu] = %.9g, stock's graph gives %.9g\n", fx_layernorm_config_at(v)->name, j,
               cy[j], xg + t);
        failures++;
        break;
      }
    }
  }

  /* The threaded driver (this CPU's kernel) on 2 threads against the reference. */
  {
    const size_t rows = 197, c = 768;
    float *bx = malloc(rows * c * sizeof(float)), *by = malloc(rows * c * sizeof(float)), *br = malloc(rows * c * sizeof(float));
    for (size_t i = 0; i < rows * c; i++) bx[i] = 0.3f + nrand();
    const fx_layernorm_params p = {gamma, beta, 1e-6f, FX_LN_AFFINE};
    fx_pool *pool = fx_pool_new(2);
    fx_layernorm_f32(pool, rows, c, bx, c, by, c, &p);
    fx_pool_free(pool);
    fx_layernorm_config_at(0)->fn(rows, c, bx, c, br, c, &p);
    double *scales = malloc(rows * sizeof(double)), *y64 = malloc(c * sizeof(double));
    for (size_t i = 0; i < rows; i++) scales[i] = 0.0, ref64(c, bx + i * c, &scales[i], y64, &p);
    const double e = row_err(rows, c, c, by, br, NULL, scales);
    free(scales), free(y64);
    printf("threaded (%s, 2 threads): max %.3g vs the scalar reference\n", fx_layernorm_config_get()->name, e);
    if (e < 0 || e > TOL_REF) failures++;
    free(bx), free(by), free(br);
  }
  printf("%d cases\n", cases);
  if (failures) {
    printf("%d FAILURES\n", failures);
    return 1;
  }
  printf("ALL PASS\n");
  return 0;
}
