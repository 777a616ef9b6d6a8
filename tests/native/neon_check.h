/* The harness of the standalone NEON checks (*_neon_check.c), built with a cross compiler and
 * run under qemu-aarch64 (or natively on AArch64) by their test_*_neon.py.
 *
 * A check defines `static int neon_check(int argc, char **argv)`, which returns its failure
 * count; this header supplies main(): "SKIP" on any other build, else the check then "ALL PASS"
 * or "FAILED (n)" and exit 1. Also the pieces every check wants: a canary value for memory that
 * must stay untouched, the configuration check of a family paired with the GEMM variants, one
 * float64 conv, and the per-section "label: passed/checked pass" line the tests read. */
#ifndef NEON_CHECK_H
#define NEON_CHECK_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv/conv.h"
#include "kernels/gemm/gemm.h"
#include "f32_tester_util.h"

#define CANARY 12345.678f

#if !defined(__aarch64__)
int main(int argc, char **argv) {
  (void)argc, (void)argv;
  printf("SKIP: not an AArch64 build\n");
  return 0;
}
#else
static int neon_check(int argc, char **argv);

int main(int argc, char **argv) {
  const int failures = neon_check(argc, argv);
  printf(failures ? "FAILED (%d)\n" : "ALL PASS\n", failures);
  return failures != 0;
}
#endif

/* A family whose variant i reads GEMM variant i's panels: 0 if variant 0 is want_ref, variant 1
 * (paired with the NEON GEMM) is want_neon, and the chosen GEMM pairs with it (neon_chosen). */
static int check_pairing(const char *ref, const char *want_ref, const char *neon, const char *want_neon,
                         int neon_chosen) {
  if (!ref || !neon || strcmp(ref, want_ref) || strcmp(neon, want_neon) || !neon_chosen) {
    printf("FAIL config: want %s and %s paired with their GEMMs\n", want_ref, want_neon);
    return 1;
  }
  printf("config: %s pairs with %s\n", neon, fx_gemm_config_at(1)->name);
  return 0;
}

/* Output m (a row of the output image), channel o, of conv g in float64: x [n,ih,iw,cin],
 * w [cout][kh][kw][cin]. */
static double conv_reference(const fx_conv_geom *g, const float *x, const float *w, const float *bias, size_t m,
                             int o) {
  const int ox = (int)(m % (size_t)g->ow), oy = (int)(m / (size_t)g->ow % (size_t)g->oh);
  const int b = (int)(m / ((size_t)g->ow * g->oh));
  double acc = bias[o];
  for (int ky = 0; ky < g->kh; ky++)
    for (int kx = 0; kx < g->kw; kx++) {
      const int iy = oy * g->stride_h - g->pad_top + ky * g->dil_h;
      const int ix = ox * g->stride_w - g->pad_left + kx * g->dil_w;
      if (iy < 0 || iy >= g->ih || ix < 0 || ix >= g->iw) continue;
      for (int c = 0; c < g->cin; c++)
        acc += (double)x[(((size_t)b * g->ih + iy) * g->iw + ix) * g->cin + c] *
               w[(((size_t)o * g->kh + ky) * g->kw + kx) * g->cin + c];
    }
  return acc;
}

/* One section's line; returns its failures. */
static int report(const char *label, int checked, int failures) {
  printf("%s: %d/%d pass\n", label, checked - failures, checked);
  return failures;
}
#endif
