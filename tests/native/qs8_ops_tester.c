/* The element-wise ADD / SUB / MUL microkernel variants (kernels/qs8-ops) against the scalar
 * reference under every floating-point rounding mode: the SIMD kernels compute long runs in float
 * (float-form.h), whose error bound holds for rounding to nearest only, so under the directed
 * modes they must keep to their exact forms. Converter-like scales and scales in simple ratios
 * (results on halves: the bound's margin decides them), runs around the 64-element
 * step, both element-wise and a broadcast a, int8 and uint8, every stock arithmetic form, out of
 * place and in place (the output over an input: the float form's fix-ups must read first).
 * The AVX2 exact forms (the AVX-512 kernels' fallback) are checked on their own too, on every
 * call rather than only where the float form refuses one.
 * Usage: qs8_ops_tester [trials per mode]. */
#include <fenv.h>
#include <string.h>
#include "kernels/qs8-ops/qs8-ops.h"
#include "qs8_tester_util.h"

static double rnd_scale(double lo, double hi) { return lo * pow(hi / lo, rnd_unit()); }

typedef void add_fn(size_t, const void *, size_t, const void *, void *, const fx_qs8_add_params *, int);
typedef void mul_fn(size_t, const void *, size_t, const void *, void *, const fx_qs8_mul_params *, int);
typedef struct {
  const char *name;
  add_fn *add;
  mul_fn *mul;
} kernel;

int main(int argc, char **argv) {
  const int trials = argc > 1 ? atoi(argv[1]) : 100;
  const int modes[] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
  const char *mode_names[] = {"nearest", "down", "up", "toward-zero"};
  enum { N_MAX = 5000 };
  static uint8_t a[N_MAX], b[N_MAX], want[N_MAX], got[N_MAX];
  kernel ks[16];
  int variants = 0;
  for (const fx_qs8_ops_config *c; (c = fx_qs8_ops_config_at(variants + 1)); variants++)
    ks[variants] = (kernel){c->name, c->add, c->mul};
#if defined(__x86_64__)
  if (fx_isa_runs(FX_ISA_AVX2)) ks[variants++] = (kernel){"qs8-ops-avx2 (exact)", fx_qs8_add_exact__avx2, fx_qs8_mul_exact__avx2};
#endif
  printf("qs8-ops: %d SIMD kernels:", variants);
  for (int v = 0; v < variants; v++) printf(" %s,", ks[v].name);
  printf("\n");
  const fx_qs8_ops_config *ref = fx_qs8_ops_config_at(0);
  int fails = 0, runs = 0;
  for (int mi = 0; mi < 4; mi++) {
    int mode_runs = 0, mode_pass = 0;
    for (int t = 0; t < trials; t++) {
      const int op = t % 3, u8 = (t / 3) % 2, bcast = t % 4 == 3;
      const size_t n = (size_t)(64 * rnd_in(1, 70) + rnd_in(0, 63)) % N_MAX + 64;
      const int lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
      for (size_t i = 0; i < n; i++) a[i] = (uint8_t)rnd_in(lo, hi), b[i] = (uint8_t)rnd_in(lo, hi);
      double s1 = rnd_scale(0.005, 0.2), s2 = op == FX_QS8_MUL ? rnd_scale(0.002, 0.05) : s1 * rnd_scale(0.25, 4);
      double so = op == FX_QS8_MUL ? s1 * s2 * rnd_scale(16, 512) : fmax(s1, s2) * rnd_scale(0.5, 2);
      if (t % 5 == 4) { /* simple ratios: results on halves everywhere (the bound's margin decides) */
        s1 = ldexp(1, -rnd_in(3, 8));
        s2 = op == FX_QS8_MUL ? ldexp(1, -rnd_in(3, 8)) : s1 * ldexp(1, rnd_in(-1, 1));
        so = op == FX_QS8_MUL ? s1 * s2 * ldexp(1, rnd_in(1, 7)) : fmax(s1, s2) * ldexp(1, rnd_in(0, 1));
      }
      const fx_qs8_shape sa = {1, {bcast ? 1 : (int)n}}, sb = {1, {(int)n}};
      fx_qs8_binary_op bop;
      fesetround(FE_TONEAREST); /* the parameters as the delegate prepares them */
      if (fx_qs8_binary_prepare(op, u8, (float)s1, rnd_zp(lo, hi), (float)s2, rnd_zp(lo, hi), (float)so,
                                rnd_zp(lo, hi), t % 2, &sa, &sb, FLEX_STOCK_PORTABLE, &bop) != 0)
        continue;
      fesetround(modes[mi]);
      for (int form = 0; form < 3; form++) {
        if (op == FX_QS8_MUL) ref->mul(n, a, !bcast, b, want, &bop.mul, form);
        else ref->add(n, a, !bcast, b, want, &bop.add, form);
        for (int v = 0; v < variants; v++) {
          const kernel *k = &ks[v];
          /* out of place, then in place over b and (element-wise) over a */
          int same = 1;
          for (int place = 0; place < (bcast ? 2 : 3); place++) {
            const uint8_t *x = a, *y = b;
            if (place == 0) memset(got, 0x5a, n);
            else memcpy(got, place == 1 ? b : a, n), *(place == 1 ? &y : &x) = got;
            if (op == FX_QS8_MUL) k->mul(n, x, !bcast, y, got, &bop.mul, form);
            else k->add(n, x, !bcast, y, got, &bop.add, form);
            same = same && memcmp(got, want, n) == 0;
          }
          mode_runs++;
          if (same) {
            mode_pass++;
          } else if (fails++ < 10) {
            size_t j = 0;
            while (got[j] == want[j]) j++;
            printf("FAIL %s %s op %d u8 %d bcast %d form %d n %zu: [%zu] %d != %d\n", mode_names[mi], k->name, op,
                   u8, bcast, form, n, j, got[j], want[j]);
          }
        }
      }
    }
    fesetround(FE_TONEAREST);
    printf("rounding %s: %d/%d pass\n", mode_names[mi], mode_pass, mode_runs);
    runs += mode_runs;
  }
  if (!fails && runs) printf("ALL PASS\n");
  return fails != 0 || !runs;
}
