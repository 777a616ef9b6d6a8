/* Checks every GELU variant this CPU runs (kernels/vgelu), built and run by test_vgelu.py
 * (natively, and for AArch64 under qemu):
 *
 *   cc -std=gnu11 -O2 -I flexdelegate/native tests/native/vgelu_check.c flexdelegate/native/cpu.c \
 *      flexdelegate/native/kernels/vgelu/\*.c -lm -o check && ./check
 *
 * For both forms (exact erf, tanh approximation): the scalar reference against a float64
 * evaluation of the same function, in ulp of the result, over one float in every 4099 of all
 * 2^32 bit patterns and a dense sweep of [-16, 16]; each vector variant against the scalar
 * reference on the same values; the special values (NaN, +-inf, +-0, huge); array lengths
 * 0..70 (vector tails) with canaries, in place and not. Prints one line per variant and form,
 * then "ALL PASS", or exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/vgelu/vgelu.h"

#define MAX_ULP_F64 6.0  /* the scalar reference against float64 */
#define MAX_ULP_REF 1.0  /* a vector variant against the scalar reference */

static const double K = 0.7978846f, C = 0.044715f; /* stock's float constants, widened */

static double ref64(float xf, int approximate) {
  const double x = xf;
  if (!approximate) return 0.5 * x * erfc(-x / sqrt(2.0));
  const double z = K * (x + C * x * x * x); /* 0.5 x (1 + tanh z) = x / (1 + e^-2z) */
  return x / (1.0 + exp(-2.0 * z));
}

/* |got - want| in units of the last place of a float of want's magnitude (2^-149 at least). */
static double ulps(float got, double want) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0.0 : INFINITY;
  if (isinf(want) || isinf(got)) return (double)got == want ? 0.0 : INFINITY;
  int e = want == 0.0 ? -126 : ilogb(want);
  if (e < -126) e = -126;
  return fabs((double)got - want) / ldexp(1.0, e - 23);
}

static float from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* The sample: a stride through all bit patterns, then [-16, 16] densely. */
static float *sample(size_t *n) {
  const size_t sweep = (size_t)(UINT32_MAX / 4099u) + 1, dense = 1u << 20;
  float *x = malloc((sweep + dense) * sizeof(float));
  size_t k = 0;
  for (uint64_t b = 0; b <= UINT32_MAX; b += 4099u) x[k++] = from_bits((uint32_t)b);
  for (size_t i = 0; i < dense; i++) x[k++] = -16.0f + 32.0f * (float)i / (float)dense;
  *n = k;
  return x;
}

static int check_specials(const fx_vgelu_config *v, int approximate) {
  const float x[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3e38f, -3e38f, 1e-45f, -1e-45f, 1e20f, -1e20f};
  float y[sizeof x / sizeof x[0]];
  const size_t n = sizeof x / sizeof x[0];
  v->fn(x, y, n, approximate);
  int bad = 0;
  bad |= !isnan(y[0]);
  bad |= !(isinf(y[1]) && y[1] > 0);
  bad |= !isnan(y[2]); /* stock: 0.5 * -inf * 0 */
  bad |= !(y[3] == 0.0f && !signbit(y[3]));
  bad |= !(y[4] == 0.0f && signbit(y[4]));
  bad |= y[5] != 3e38f || y[9] != 1e20f;
  bad |= !(y[6] == 0.0f && signbit(y[6])) || !(y[10] == 0.0f && signbit(y[10]));
  bad |= ulps(y[7], ref64(x[7], approximate)) > 1 || ulps(y[8], ref64(x[8], approximate)) > 1;
  if (bad) {
    printf("FAIL %s %s specials:", v->name, approximate ? "tanh" : "exact");
    for (size_t i = 0; i < n; i++) printf(" gelu(%g)=%g", x[i], y[i]);
    printf("\n");
  }
  return bad;
}

/* Lengths 0..70 around the vector widths: the tail lanes, canaries past the end, in place. */
static int check_tails(const fx_vgelu_config *v, const fx_vgelu_config *ref, int approximate) {
  float x[80], y[80], want[80], io[80];
  for (int n = 0; n <= 70; n++) {
    for (int i = 0; i < 80; i++) x[i] = (float)((i * 7919) % 200 - 100) * 0.07f, y[i] = io[i] = -7.0f;
    for (int i = 0; i < n; i++) io[i] = x[i];
    ref->fn(x, want, (size_t)n, approximate);
    v->fn(x, y, (size_t)n, approximate);
    v->fn(io, io, (size_t)n, approximate);
    for (int i = 0; i < 80; i++) {
      const int ok = i < n ? ulps(y[i], want[i]) <= MAX_ULP_REF && y[i] == io[i] : y[i] == -7.0f && io[i] == -7.0f;
      if (!ok) {
        printf("FAIL %s %s tail n=%d i=%d: %g (in place %g), want %g\n", v->name, approximate ? "tanh" : "exact", n,
               i, y[i], io[i], i < n ? want[i] : -7.0f);
        return 1;
      }
    }
  }
  return 0;
}

int main(void) {
  size_t n;
  float *x = sample(&n);
  float *yref = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  const fx_vgelu_config *ref = fx_vgelu_config_at(0);
  int failures = 0;
  if (!ref || strcmp(ref->name, "f32-vgelu-x1-scalar") != 0) {
    printf("FAIL: variant 0 is not the scalar reference\n");
    return 1;
  }
  for (int approximate = 0; approximate <= 1; approximate++) {
    const char *form = approximate ? "tanh" : "exact";
    ref->fn(x, yref, n, approximate);
    double worst = 0.0;
    float at = 0.0f;
    for (size_t i = 0; i < n; i++) {
      const double u = ulps(yref[i], ref64(x[i], approximate));
      if (u > worst) worst = u, at = x[i];
    }
    printf("%s %s: max %.2f ulp vs float64 (x = %.9g) over %zu values\n", ref->name, form, worst, at, n);
    failures += worst > MAX_ULP_F64;
    for (int i = 0; fx_vgelu_config_at(i); i++) {
      const fx_vgelu_config *v = fx_vgelu_config_at(i);
      double vs = 0.0;
      float vat = 0.0f;
      if (i > 0) {
        v->fn(x, y, n, approximate);
        for (size_t j = 0; j < n; j++) {
          const double u = ulps(y[j], yref[j]);
          if (u > vs) vs = u, vat = x[j];
        }
        printf("%s %s: max %.2f ulp vs the scalar reference (x = %.9g)\n", v->name, form, vs, vat);
      }
      failures += vs > MAX_ULP_REF;
      failures += check_specials(v, approximate);
      failures += check_tails(v, ref, approximate);
    }
  }
  free(x), free(y), free(yref);
  if (failures) {
    printf("%d FAILURES\n", failures);
    return 1;
  }
  printf("ALL PASS\n");
  return 0;
}
