/* Standalone check of the AArch64 NEON GEMM microkernel against the scalar reference, built
 * with a cross compiler and run under qemu by tests/native/test_gemm_neon.py (or natively on an
 * AArch64 machine):
 *
 *   aarch64-linux-gnu-gcc -std=gnu11 -O2 -I flexdelegate/native -I flexdelegate/native/include \
 *      tests/native/gemm_neon_check.c flexdelegate/native/runtime/cpu.c \
 *      flexdelegate/native/kernels/gemm/gemm_config.c flexdelegate/native/kernels/gemm/f32-gemm-*.c -o check
 *
 * Every shape m 1..17, n 1..33, k 0..70 runs twice (bias + no clamp; random bias + a random
 * clamp window + a fused residual ADD) through a whole-GEMM driver like
 * conv.c's, with A and C row strides wider than
 * k and n and canaries around C, so stray reads of padding or stray writes show up. Then
 * direct microkernel calls with every (mr, nc) remainder check that rows past mr and columns
 * past nc are untouched, and the config: NEON listed after the scalar reference and chosen by
 * default (`check config` stops after that). Prints one line per section and "ALL PASS", or
 * exits 1 on any failure (neon_check.h). */
#include "neon_check.h"

#if defined(__aarch64__)
#define MAX_M 17
#define MAX_N 33
#define MAX_K 70
#define A_PAD 3 /* A row stride = k + A_PAD */
#define C_PAD 5 /* C row stride = n + C_PAD */


/* Whole GEMM C[m][n] (row stride cs) = out(A[m][k] (row stride as) * W[n][k]^T + bias) with
 * microkernel uk, the way conv.c drives it, then the residual r (stride cs, or NULL) added
 * and clamped to [o.rlo, o.rhi]. */
static int run_gemm(const fx_gemm_config *uk, int m, int n, int k, const float *a, size_t as,
                    const float *w, const float *bias, float *c, size_t cs, const float *r, fx_gemm_out o) {
  float *packed = malloc((fx_gemm_packed_floats(n, k, uk->nr) + 1) * sizeof(float));
  if (!packed) return -1;
  fx_gemm_pack(n, k, uk->nr, w, bias, packed);
  const size_t panel = (size_t)uk->nr * (size_t)(k + 1);
  for (int n0 = 0; n0 < n; n0 += uk->nr) {
    const size_t nc = (size_t)(n - n0 < uk->nr ? n - n0 : uk->nr);
    for (int m0 = 0; m0 < m; m0 += uk->mr) {
      const size_t mr = (size_t)(m - m0 < uk->mr ? m - m0 : uk->mr), at = (size_t)m0 * cs + (size_t)n0;
      uk->fn(mr, nc, (size_t)k, a + (size_t)m0 * as, as, packed + (size_t)(n0 / uk->nr) * panel, c + at, cs,
             r ? r + at : NULL, &o);
    }
  }
  free(packed);
  return 0;
}

static const fx_gemm_config *find(const char *name) {
  for (int i = 0; fx_gemm_config_at(i); i++)
    if (strcmp(fx_gemm_config_at(i)->name, name) == 0) return fx_gemm_config_at(i);
  return NULL;
}

static int check_shapes(const fx_gemm_config *ref, const fx_gemm_config *neon, int *checked) {
  static float a[MAX_M * (MAX_K + A_PAD)], w[MAX_N * MAX_K], bias[MAX_N];
  static float abs_a[MAX_M * (MAX_K + A_PAD)], abs_w[MAX_N * MAX_K], abs_b[MAX_N];
  static float cr[MAX_M * (MAX_N + C_PAD) + 2], cn[MAX_M * (MAX_N + C_PAD) + 2];
  static float cabs[MAX_M * (MAX_N + C_PAD)], res[MAX_M * (MAX_N + C_PAD)];
  int failures = 0;
  for (int m = 1; m <= MAX_M; m++)
    for (int n = 1; n <= MAX_N; n++)
      for (int k = 0; k <= MAX_K; k++)
        for (int variant = 0; variant < 2; variant++) {
          const size_t as = (size_t)k + A_PAD, cs = (size_t)n + C_PAD;
          for (size_t i = 0; i < (size_t)m * as; i++) a[i] = frand(), abs_a[i] = fabsf(a[i]);
          for (int i = 0; i < m; i++) /* NaN in A's padding: any read of it poisons C */
            for (int t = k; t < (int)as; t++) a[(size_t)i * as + t] = NAN;
          for (int i = 0; i < n * k; i++) w[i] = frand(), abs_w[i] = fabsf(w[i]);
          for (int i = 0; i < n; i++) bias[i] = variant ? frand() : 0.0f, abs_b[i] = fabsf(bias[i]);
          float lo = -INFINITY, hi = INFINITY;
          if (variant) { /* a clamp window that cuts a fair share of outputs on both sides */
            lo = -0.3f * sqrtf((float)k + 1) + 0.1f * frand();
            hi = 0.3f * sqrtf((float)k + 1) + 0.1f * frand();
          }
          const size_t cn_len = (size_t)m * cs;
          for (size_t i = 0; i < cn_len + 2; i++) cr[i] = cn[i] = CANARY;
          for (size_t i = 0; i < cn_len; i++) res[i] = frand();
          fx_gemm_out o = fx_gemm_out_clamp(lo, hi);
          const float *r = NULL;
          if (variant) { /* then a residual, clamped again */
            r = res;
            o.rlo = lo - 0.2f;
            o.rhi = hi + 0.2f;
          }
          /* c + 1: one canary before C; one after. */
          if (run_gemm(ref, m, n, k, a, as, w, variant ? bias : NULL, cr + 1, cs, r, o) ||
              run_gemm(neon, m, n, k, a, as, w, variant ? bias : NULL, cn + 1, cs, r, o) ||
              run_gemm(ref, m, n, k, abs_a, as, abs_w, variant ? abs_b : NULL, cabs, cs, NULL,
                       fx_gemm_out_clamp(-INFINITY, INFINITY))) {
            printf("FAIL m=%d n=%d k=%d: out of memory\n", m, n, k);
            return failures + 1;
          }
          int bad = cn[0] != CANARY || cn[cn_len + 1] != CANARY;
          if (bad && failures < 20) printf("FAIL m=%d n=%d k=%d: write outside C\n", m, n, k);
          for (int i = 0; i < m && !bad; i++)
            for (int j = 0; j < (int)cs && !bad; j++) {
              const size_t at = (size_t)i * cs + (size_t)j;
              const float got = cn[1 + at], want = cr[1 + at];
              if (j >= n) { /* C's row padding must be untouched */
                bad = got != CANARY;
                continue;
              }
              /* Both accumulate over k in the same order; allow FMA-vs-mul/add rounding. */
              const float tol = 1e-6f * (1.0f + cabs[at]) * (float)(k + 1);
              bad = !(fabsf(got - want) <= tol) || got < o.rlo || got > o.rhi || (!r && (got < lo || got > hi));
              if (bad && failures < 20)
                printf("FAIL m=%d n=%d k=%d variant=%d at (%d,%d): neon %.9g ref %.9g\n", m, n,
                       k, variant, i, j, got, want);
            }
          failures += bad;
          (*checked)++;
        }
  return failures;
}

/* Direct microkernel calls: for every mr <= MR and nc <= NR, exactly the mr x nc block is
 * written; a_stride/c_stride are deliberately odd. */
static int check_remainders(const fx_gemm_config *neon, int *checked) {
  enum { K = 13, AS = K + 2, CS = 19 };
  const int MR = neon->mr, NR = neon->nr;
  float *a = malloc(sizeof(float) * (size_t)MR * AS);
  float *w = malloc(sizeof(float) * (size_t)NR * (K + 1));
  float *c = malloc(sizeof(float) * (size_t)(MR + 1) * CS);
  if (!a || !w || !c) return 1;
  for (int i = 0; i < MR * AS; i++) a[i] = frand();
  for (int i = 0; i < NR * (K + 1); i++) w[i] = frand();
  int failures = 0;
  for (int mr = 1; mr <= MR; mr++)
    for (int nc = 1; nc <= NR; nc++) {
      for (int i = 0; i < (MR + 1) * CS; i++) c[i] = CANARY;
      const fx_gemm_out o = fx_gemm_out_clamp(-INFINITY, INFINITY);
      neon->fn((size_t)mr, (size_t)nc, K, a, AS, w, c, CS, NULL, &o);
      int bad = 0;
      for (int i = 0; i <= MR; i++)
        for (int j = 0; j < CS; j++) {
          const float v = c[i * CS + j];
          if (i < mr && j < nc) {
            double want = w[j];
            for (int t = 0; t < K; t++) want += (double)a[i * AS + t] * w[NR * (t + 1) + j];
            bad |= fabs(v - want) > 1e-4;
          } else {
            bad |= v != CANARY;
          }
        }
      if (bad) printf("FAIL remainder mr=%d nc=%d\n", mr, nc);
      failures += bad;
      (*checked)++;
    }
  free(a);
  free(w);
  free(c);
  return failures;
}

static int neon_check(int argc, char **argv) {
  int failures = 0;
  const fx_gemm_config *ref = fx_gemm_config_at(0), *neon = find("f32-gemm-8x8-neon");
  const char *isa = getenv("FLEXDELEGATE_ISA");
  if (!ref || strcmp(ref->name, "f32-gemm-4x8-scalar") != 0 || !neon) {
    printf("FAIL config: scalar reference first and f32-gemm-8x8-neon listed\n");
    return 1;
  }
  if (!(isa && *isa) && fx_gemm_config_get() != neon) {
    printf("FAIL config: default kernel is %s, want f32-gemm-8x8-neon\n", fx_gemm_config_get()->name);
    failures++;
  }
  if (neon->nr % 4 || neon->mr < 1) {
    printf("FAIL config: NR must be a multiple of 4\n");
    failures++;
  }
  printf("config: chosen %s, %s is %dx%d\n", fx_gemm_config_get()->name, neon->name, neon->mr, neon->nr);
  if (argc > 1 && strcmp(argv[1], "config") == 0) return failures; /* config only */

  char label[96];
  int checked = 0, f = check_shapes(ref, neon, &checked);
  snprintf(label, sizeof label, "shapes (m 1..%d, n 1..%d, k 0..%d, x2 clamp/bias variants)", MAX_M, MAX_N, MAX_K);
  failures += report(label, checked, f);
  checked = 0;
  f = check_remainders(neon, &checked);
  snprintf(label, sizeof label, "microkernel remainders (mr 1..%d x nc 1..%d)", neon->mr, neon->nr);
  return failures + report(label, checked, f);
}
#endif
