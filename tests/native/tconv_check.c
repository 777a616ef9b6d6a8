/* Checks the TRANSPOSE_CONV driver (kernels/transpose-conv) with every GEMM microkernel this CPU
 * runs, built and run by test_kernel_transpose_conv.py (natively, and for AArch64 under qemu).
 *
 * Against a float64 scatter reference (TFLite's reference formulation, not the driver's gather by
 * output row): kernels 1x1 .. 5x5 and 3x2, strides 1 .. 3 (taps that overlap, that tile the output
 * exactly, that leave gaps), SAME and VALID pads, outputs one larger than the stride gives, batch 2,
 * channels around the microkernel tiles, every activation. Each element within 2e-6 of the sum of
 * |x f| plus |bias| (its rounding scale); 1, 2 and 3 threads bit for bit equal; canaries after y
 * and after the scratch. Prints one line per kernel and "ALL PASS", or exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/ops/ops.h"
#include "kernels/transpose-conv/transpose_conv.h"
#include "runtime/pool.h"
#include "f32_tester_util.h"

#define CANARY 31337.0f
#define GUARD 64


static double act_ref(int act, double v) {
  switch (act) {
    case FLEX_ACT_RELU: return v < 0 ? 0 : v;
    case FLEX_ACT_RELU6: return v < 0 ? 0 : v > 6 ? 6 : v;
    case FLEX_ACT_RELU_N1_TO_1: return v < -1 ? -1 : v > 1 ? 1 : v;
    case FLEX_ACT_TANH: return tanh(v);
    default: return v;
  }
}

/* TFLite's padding of a transposed conv: that of the forward conv from the output size. */
static int pad_of(int same, int out, int k, int s) {
  if (!same) return 0;
  const int in = (out + s - 1) / s, total = (in - 1) * s + k - out;
  return total > 0 ? total / 2 : 0;
}

typedef struct {
  int n, h, w, ci, co, kh, kw, sh, sw, same, extra_h, extra_w, bias, act;
} tc_case;

static int g_failures;
static double g_worst[8];

static void run_case(const tc_case *t) {
  const int oh = t->same ? t->h * t->sh + t->extra_h : (t->h - 1) * t->sh + t->kh + t->extra_h;
  const int ow = t->same ? t->w * t->sw + t->extra_w : (t->w - 1) * t->sw + t->kw + t->extra_w;
  const fx_tconv_geom g = {t->n, t->h, t->w, t->ci, oh, ow, t->co, t->kh, t->kw, t->sh, t->sw,
                           pad_of(t->same, oh, t->kh, t->sh), pad_of(t->same, ow, t->kw, t->sw)};
  const size_t nx = (size_t)t->n * t->h * t->w * t->ci, nf = (size_t)t->co * t->kh * t->kw * t->ci;
  const size_t ny = (size_t)t->n * oh * ow * t->co;
  float *x = malloc(nx * sizeof *x), *f = malloc(nf * sizeof *f), *b = malloc((size_t)t->co * sizeof *b);
  double *ref = calloc(ny, sizeof *ref), *mag = calloc(ny, sizeof *mag);
  float *first = malloc(ny * sizeof *first);
  for (size_t i = 0; i < nx; i++) x[i] = frand();
  for (size_t i = 0; i < nf; i++) f[i] = frand();
  for (int i = 0; i < t->co; i++) b[i] = frand();
  for (int bb = 0; bb < t->n; bb++)
    for (int iy = 0; iy < t->h; iy++)
      for (int ix = 0; ix < t->w; ix++)
        for (int fy = 0; fy < t->kh; fy++)
          for (int fx = 0; fx < t->kw; fx++) {
            const int oy = iy * t->sh - g.pad_top + fy, ox = ix * t->sw - g.pad_left + fx;
            if (oy < 0 || ox < 0 || oy >= oh || ox >= ow) continue;
            for (int oc = 0; oc < t->co; oc++)
              for (int ic = 0; ic < t->ci; ic++) {
                const size_t o = (((size_t)bb * oh + oy) * ow + ox) * t->co + oc;
                const double p = (double)x[(((size_t)bb * t->h + iy) * t->w + ix) * t->ci + ic] *
                                 f[(((size_t)oc * t->kh + fy) * t->kw + fx) * t->ci + ic];
                ref[o] += p, mag[o] += fabs(p);
              }
          }
  for (int u = 0; fx_gemm_config_at(u); u++) {
    const fx_gemm_config *uk = fx_gemm_config_at(u);
    const size_t ns = fx_tconv_packed_floats(&g, uk);
    float *y = malloc((ny + GUARD) * sizeof *y), *s = malloc((ns + GUARD) * sizeof *s);
    for (int threads = 1; threads <= 3; threads++) {
      for (size_t i = 0; i < ny + GUARD; i++) y[i] = NAN;
      for (size_t i = ns; i < ns + GUARD; i++) s[i] = CANARY;
      for (size_t i = ny; i < ny + GUARD; i++) y[i] = CANARY;
      fx_pool *pool = threads > 1 ? fx_pool_new(threads) : NULL;
      fx_tconv_f32(pool, &g, uk, x, f, t->bias ? b : NULL, y, s, t->act);
      if (pool) fx_pool_free(pool);
      double worst = 0;
      int canary = 0, differs = 0;
      for (size_t i = ny; i < ny + GUARD; i++) canary |= y[i] != CANARY;
      for (size_t i = ns; i < ns + GUARD; i++) canary |= s[i] != CANARY;
      for (size_t i = 0; i < ny; i++) {
        const double bias = t->bias ? b[i % (size_t)t->co] : 0.0;
        const double want = act_ref(t->act, ref[i] + bias), scale = mag[i] + fabs(bias) + 1e-30;
        const double err = isnan(y[i]) ? INFINITY : fabs(y[i] - want) / scale;
        worst = err > worst ? err : worst;
        if (threads == 1) first[i] = y[i];
        else differs |= memcmp(&first[i], &y[i], sizeof(float)) != 0;
      }
      if (worst > g_worst[u]) g_worst[u] = worst;
      if (worst > 2e-6 || canary || differs) {
        g_failures++;
        printf("FAIL %s threads=%d n%d %dx%dx%d -> %dx%dx%d k%dx%d s%dx%d same=%d bias=%d act=%d: err %.3g%s%s\n",
               uk->name, threads, t->n, t->h, t->w, t->ci, oh, ow, t->co, t->kh, t->kw, t->sh, t->sw, t->same,
               t->bias, t->act, worst, canary ? " CANARY" : "", differs ? " THREADS-DIFFER" : "");
      }
    }
    free(y);
    free(s);
  }
  free(x), free(f), free(b), free(ref), free(mag), free(first);
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "quick") == 0; /* qemu: one pass over the windows */
  static const int kernels[][2] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {3, 2}};
  static const int strides[][2] = {{1, 1}, {2, 2}, {3, 3}, {1, 2}};
  int i = 0;
  for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++)
    for (size_t s = 0; s < sizeof strides / sizeof *strides; s++)
      for (int same = 0; same < 2; same++, i++) {
        if (quick && i % 3) continue;
        const tc_case t = {1 + (i % 5 == 0), 4, 5, 3 + (i % 7), 5 + 13 * (i % 3), kernels[k][0], kernels[k][1],
                           strides[s][0], strides[s][1], same, 0, 0, i % 2, i % 5};
        run_case(&t);
      }
  static const tc_case more[] = {
      {1, 16, 16, 64, 32, 2, 2, 2, 2, 0, 0, 0, 1, FLEX_ACT_NONE},  /* U-Net's decoder, exact tiling */
      {1, 7, 9, 33, 17, 2, 2, 2, 2, 1, 0, 0, 1, FLEX_ACT_RELU},    /* SAME tiling, cout % nr != 0 */
      {1, 3, 3, 2, 2, 3, 3, 2, 2, 0, 1, 1, 1, FLEX_ACT_NONE},      /* VALID, output one larger */
      {1, 4, 4, 3, 17, 3, 3, 2, 2, 1, -1, -1, 1, FLEX_ACT_RELU6},  /* TF's odd output: in*s - 1 */
      {1, 5, 5, 8, 9, 2, 2, 2, 2, 0, 1, 1, 1, FLEX_ACT_RELU6},     /* tiling, row and column left over */
      {2, 3, 3, 1, 2, 2, 2, 3, 3, 0, 0, 0, 1, FLEX_ACT_TANH},      /* gaps */
      {1, 1, 1, 9, 5, 3, 3, 2, 2, 1, 0, 0, 1, FLEX_ACT_RELU_N1_TO_1},
      {1, 6, 20, 40, 48, 4, 4, 2, 2, 1, 0, 0, 0, FLEX_ACT_RELU},   /* wide rows: several mr tiles */
      {1, 10, 64, 8, 20, 3, 3, 1, 1, 1, 0, 0, 1, FLEX_ACT_RELU},   /* several row blocks per task */
      {1, 8, 64, 16, 24, 2, 2, 2, 2, 0, 0, 0, 1, FLEX_ACT_RELU6},  /* the same, exact tiling */
  };
  for (size_t k = 0; k < sizeof more / sizeof *more; k++) run_case(&more[k]);
  for (int u = 0; fx_gemm_config_at(u); u++) printf("%s: max %.3g of sum |x f| vs float64\n", fx_gemm_config_at(u)->name, g_worst[u]);
  if (g_failures) {
    printf("%d FAILURES\n", g_failures);
    return 1;
  }
  printf("ALL PASS\n");
  return 0;
}
