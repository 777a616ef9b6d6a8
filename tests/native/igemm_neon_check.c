/* Standalone check of the AArch64 NEON IGEMM (direct conv) microkernel, built with a cross
 * compiler and run under qemu by tests/native/test_direct_conv_neon.py (or natively on AArch64).
 *
 * Runs conv/direct.c's row driver with the NEON kernel and with the scalar reference (both read
 * 8-column panels, so one packing serves both) on every combination of small awkward conv
 * shapes (cin 1..9, cout 1..19, 1x1 / 3x3 / 1x3 / 5x5 kernels, stride 1..2, dilation 1..2, pads
 * 0..2, batch 1..2, clamp on/off), against each other and a float64 loop, with a canary after
 * the output. Prints one line per section and "ALL PASS", or exits 1 on any failure. */
#include "kernels/igemm/igemm.h"
#include "neon_check.h"

#if defined(__aarch64__)
/* One conv with both kernels; 0 if they agree with each other and the reference. */
static int check_conv(const fx_igemm_config *ref, const fx_igemm_config *neon, const fx_conv_geom *g, int cout,
                      int clamp) {
  const size_t k = (size_t)g->kh * g->kw * g->cin, batch = g->m / ((size_t)g->oh * g->ow);
  const size_t xn = batch * g->ih * g->iw * g->cin, yn = g->m * (size_t)cout;
  float *x = malloc(xn * sizeof *x), *w = malloc((size_t)cout * k * sizeof *w), *bias = malloc((size_t)cout * 4);
  float *packed = malloc(fx_gemm_packed_floats(cout, (int)k, 8) * sizeof(float));
  float *yr = malloc((yn + 1) * sizeof *yr), *yn8 = malloc((yn + 1) * sizeof *yn8);
  if (!x || !w || !bias || !packed || !yr || !yn8) return 1;
  for (size_t i = 0; i < xn; i++) x[i] = frand();
  for (size_t i = 0; i < (size_t)cout * k; i++) w[i] = frand();
  for (int i = 0; i < cout; i++) bias[i] = frand();
  fx_gemm_pack(cout, (int)k, 8, w, bias, packed);
  const float lo = clamp ? -0.5f : -INFINITY, hi = clamp ? 0.5f : INFINITY;
  yr[yn] = yn8[yn] = CANARY;
  const size_t panels = (size_t)(cout + 7) / 8;
  const fx_gemm_out out = fx_gemm_out_clamp(lo, hi);
  fx_conv_direct_rows(ref, g, (size_t)cout, x, 0, g->m, packed, 0, 0, panels, yr, NULL, &out);
  fx_conv_direct_rows(neon, g, (size_t)cout, x, 0, g->m, packed, 0, 0, panels, yn8, NULL, &out);
  int bad = yr[yn] != CANARY || yn8[yn] != CANARY;
  for (size_t m = 0; m < g->m && !bad; m++)
    for (int o = 0; o < cout && !bad; o++) {
      double want = conv_reference(g, x, w, bias, m, o);
      want = want < lo ? lo : want > hi ? hi : want;
      const float got = yn8[m * (size_t)cout + o];
      bad = !(fabs(got - want) <= 1e-5 * (double)(k + 1)) || !(fabsf(got - yr[m * (size_t)cout + o]) <= 1e-5f * (float)(k + 1));
    }
  free(x), free(w), free(bias), free(packed), free(yr), free(yn8);
  return bad;
}

static int neon_check(int argc, char **argv) {
  (void)argc, (void)argv;
  const fx_gemm_config *gref = fx_gemm_config_at(0), *gneon = fx_gemm_config_at(1);
  const fx_igemm_config *ref = gref ? fx_igemm_config_for(gref) : NULL, *neon = gneon ? fx_igemm_config_for(gneon) : NULL;
  if (check_pairing(ref ? ref->name : NULL, "f32-igemm-4x8-scalar", neon ? neon->name : NULL, "f32-igemm-8x8-neon",
                    neon && fx_igemm_config_for(fx_gemm_config_get()) == neon))
    return 1;
  static const int kernels[][2] = {{1, 1}, {3, 3}, {1, 3}, {5, 5}};
  int checked = 0, failures = 0;
  for (int cin = 1; cin <= 9; cin += 2)
    for (int cout = 1; cout <= 19; cout += 6)
      for (int ki = 0; ki < 4; ki++)
        for (int s = 1; s <= 2; s++)
          for (int d = 1; d <= 2; d++)
            for (int pad = 0; pad <= 2; pad++)
              for (int batch = 1; batch <= 2; batch++) {
                const int kh = kernels[ki][0], kw = kernels[ki][1], ih = 7 + batch, iw = 6 + cin % 3;
                const int oh = (ih + 2 * pad - (kh - 1) * d - 1) / s + 1, ow = (iw + pad - (kw - 1) * d - 1) / s + 1;
                if (oh < 1 || ow < 1) continue;
                fx_conv_geom g = {.m = (size_t)batch * oh * ow, .ih = ih, .iw = iw, .cin = cin, .oh = oh, .ow = ow, .kh = kh,
                                  .kw = kw, .stride_h = s, .stride_w = s, .dil_h = d, .dil_w = d,
                                  .pad_top = pad, .pad_left = pad};
                const int bad = check_conv(ref, neon, &g, cout, (cin + cout) % 2);
                if (bad && failures < 20)
                  printf("FAIL cin=%d cout=%d k=%dx%d s=%d d=%d pad=%d batch=%d\n", cin, cout, kh, kw, s, d, pad, batch);
                failures += bad;
                checked++;
              }
  return report("convs", checked, failures);
}
#endif
