/* Standalone check of the AArch64 NEON stem-conv microkernel, built with a cross compiler and run
 * under qemu by tests/native/test_conv_stem_neon.py (or natively on AArch64).
 *
 * Runs conv/stem.c's row driver with the NEON kernel and with the scalar reference (both read
 * 8-column panels, so one packing serves both) on every combination of small awkward stem shapes
 * (3x3 over 3 channels; cout 1..25, stride 1..3, pads 0..2, odd sizes, batch 1..2, a residual
 * and a clamp on/off, row ranges starting mid-row), against each other and a float64 loop, with
 * a canary after the output. Prints one line per section and "ALL PASS", or exits 1. */
#include "kernels/conv-stem/stem.h"
#include "neon_check.h"

#if defined(__aarch64__)
/* One conv with both kernels (rows [m0, g->m) only, as a budget slice runs them); 0 if they
 * agree with each other and the reference, and nothing outside those rows was written. */
static int check_conv(const fx_stem_config *ref, const fx_stem_config *neon, const fx_conv_geom *g, int cout,
                      int clamp, int residual, size_t m0) {
  const size_t batch = g->m / ((size_t)g->oh * g->ow), xn = batch * g->ih * g->iw * 3, yn = g->m * (size_t)cout;
  float *x = malloc(xn * sizeof *x), *w = malloc((size_t)cout * 27 * sizeof *w), *bias = malloc((size_t)cout * 4);
  float *packed = malloc(fx_gemm_packed_floats(cout, 27, 8) * sizeof(float)), *res = malloc(yn * sizeof *res + 4);
  float *yr = malloc((yn + 1) * sizeof *yr), *yn8 = malloc((yn + 1) * sizeof *yn8);
  if (!x || !w || !bias || !packed || !res || !yr || !yn8) return 1;
  for (size_t i = 0; i < xn; i++) x[i] = frand();
  for (size_t i = 0; i < (size_t)cout * 27; i++) w[i] = frand();
  for (int i = 0; i < cout; i++) bias[i] = frand();
  for (size_t i = 0; i < yn; i++) res[i] = frand();
  fx_gemm_pack(cout, 27, 8, w, bias, packed);
  const float lo = clamp ? -0.5f : -INFINITY, hi = clamp ? 0.5f : INFINITY;
  for (size_t i = 0; i <= yn; i++) yr[i] = yn8[i] = CANARY;
  const size_t panels = (size_t)(cout + 7) / 8;
  const fx_gemm_out out = {lo, hi, -1.0f, 1.0f};
  const float *r = residual ? res : NULL;
  fx_conv_stem_rows(ref, g, (size_t)cout, x, m0, g->m - m0, packed, 0, 0, panels, yr, r, &out);
  fx_conv_stem_rows(neon, g, (size_t)cout, x, m0, g->m - m0, packed, 0, 0, panels, yn8, r, &out);
  int bad = yr[yn] != CANARY || yn8[yn] != CANARY;
  for (size_t i = 0; i < m0 * (size_t)cout && !bad; i++) bad = yn8[i] != CANARY;
  for (size_t m = m0; m < g->m && !bad; m++)
    for (int o = 0; o < cout && !bad; o++) {
      double want = conv_reference(g, x, w, bias, m, o);
      want = want < lo ? lo : want > hi ? hi : want;
      if (residual) {
        want += res[m * (size_t)cout + o];
        want = want < -1.0 ? -1.0 : want > 1.0 ? 1.0 : want;
      }
      const float got = yn8[m * (size_t)cout + o];
      bad = !(fabs(got - want) <= 1e-5 * 28) || !(fabsf(got - yr[m * (size_t)cout + o]) <= 1e-5f * 28);
    }
  free(x), free(w), free(bias), free(packed), free(res), free(yr), free(yn8);
  return bad;
}

static int neon_check(int argc, char **argv) {
  (void)argc, (void)argv;
  const fx_gemm_config *gref = fx_gemm_config_at(0), *gneon = fx_gemm_config_at(1);
  const fx_stem_config *ref = gref ? fx_stem_config_for(gref) : NULL, *neon = gneon ? fx_stem_config_for(gneon) : NULL;
  if (check_pairing(ref ? ref->name : NULL, "f32-conv-stem-4x8-scalar", neon ? neon->name : NULL,
                    "f32-conv-stem-8x8-neon", neon && fx_stem_config_for(fx_gemm_config_get()) == neon))
    return 1;
  int checked = 0, failures = 0;
  for (int cout = 1; cout <= 25; cout += 4)
    for (int s = 1; s <= 3; s++)
      for (int pad = 0; pad <= 2; pad++)
        for (int batch = 1; batch <= 2; batch++)
          for (int variant = 0; variant < 4; variant++) {
            const int ih = 5 + 2 * batch + cout % 3, iw = 9 + 4 * variant + s;
            const int oh = (ih + pad + (pad > 0) - 3) / s + 1, ow = (iw + pad - 3) / s + 1;
            if (oh < 1 || ow < 1) continue;
            fx_conv_geom g = {.m = (size_t)batch * oh * ow, .ih = ih, .iw = iw, .cin = 3, .oh = oh, .ow = ow, .kh = 3,
                              .kw = 3, .stride_h = s, .stride_w = s, .dil_h = 1, .dil_w = 1,
                              .pad_top = pad, .pad_left = pad};
            const size_t m0 = variant == 3 ? (size_t)ow / 2 + 1 : 0;
            const int bad = check_conv(ref, neon, &g, cout, variant & 1, variant == 2, m0 < g.m ? m0 : 0);
            if (bad && failures < 20)
              printf("FAIL cout=%d s=%d pad=%d batch=%d variant=%d\n", cout, s, pad, batch, variant);
            failures += bad;
            checked++;
          }
  return report("convs", checked, failures);
}
#endif
