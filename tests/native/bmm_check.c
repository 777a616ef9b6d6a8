/* Checks the BATCH_MATMUL driver (kernels/batch-matmul) with every GEMM microkernel this CPU runs,
 * built and run by test_kernel_batch_matmul.py (natively, and for AArch64 under qemu):
 *
 *   cc -std=gnu11 -O2 -pthread -I flexdelegate/native tests/native/bmm_check.c flexdelegate/native/cpu.c \
 *      flexdelegate/native/threadpool.c flexdelegate/native/gemm/config.c flexdelegate/native/gemm/f32-gemm-*.c \
 *      flexdelegate/native/kernels/batch-matmul/\*.c -lm && ./a.out [quick]
 *
 * Shapes of rank 2..5 with broadcast batch dims either side, adj_x / adj_y, M / N / K around the
 * microkernel tiles (1 .. 197, 768), empty dims; B packed once (constant) or per invoke; 1, 2 and 3
 * threads (bit for bit equal). Each element against float64, within 2e-6 of sum_k |a b| (its
 * rounding scale); canaries after C; shape errors refused; the packed B identical on repacking.
 * Prints one line per kernel and "ALL PASS", or exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/batch-matmul/batch_matmul.h"
#include "runtime/pool.h"
#include "f32_tester_util.h"

#define CANARY 31337.0f
#define GUARD 64


typedef struct {
  int ar, a[5], br, b[5], adj_x, adj_y;
} bmm_case;

static size_t numel(const int *d, int r) {
  size_t n = 1;
  for (int i = 0; i < r; i++) n *= (size_t)d[i];
  return n;
}

/* The element (i, j) of C batch ob in float64, and sum_k |a b|. */
static void ref_elem(const fx_bmm_plan *p, const float *a, const float *b, size_t ob, int i, int j, double *v, double *mag) {
  size_t ai = 0, bi = 0, x = ob;
  for (int d = p->rank - 3; d >= 0; d--) {
    const size_t c = x % (size_t)p->dims[d];
    x /= (size_t)p->dims[d];
    ai += c * p->a_step[d], bi += c * p->b_step[d];
  }
  const size_t m = (size_t)p->m, k = (size_t)p->k, n = (size_t)p->n;
  const float *am = a + ai * m * k, *bm = b + bi * k * n;
  double s = 0.0, g = 0.0;
  for (size_t kk = 0; kk < k; kk++) {
    const double av = p->adj_x ? am[kk * m + (size_t)i] : am[(size_t)i * k + kk];
    const double bv = p->adj_y ? bm[(size_t)j * k + kk] : bm[kk * n + (size_t)j];
    s += av * bv, g += fabs(av * bv);
  }
  *v = s, *mag = g;
}

static int g_failures;
static double g_worst[8];

static void run_case(const bmm_case *t) {
  fx_bmm_plan p;
  if (fx_bmm_plan_init(&p, t->a, t->ar, t->b, t->br, t->adj_x, t->adj_y) != 0) {
    printf("FAIL plan refused a valid case\n");
    g_failures++;
    return;
  }
  const size_t na = numel(t->a, t->ar), nb = numel(t->b, t->br), nc = numel(p.dims, p.rank);
  float *a = malloc((na + 1) * sizeof(float)), *b = malloc((nb + 1) * sizeof(float));
  for (size_t i = 0; i < na; i++) a[i] = frand();
  for (size_t i = 0; i < nb; i++) b[i] = frand();
  for (int u = 0; fx_gemm_config_at(u); u++) {
    const fx_gemm_config *uk = fx_gemm_config_at(u);
    const size_t pf = fx_bmm_packed_floats(&p, uk);
    float *packed = malloc((pf + 1) * sizeof(float)), *again = malloc((pf + 1) * sizeof(float));
    fx_bmm_pack_b(&p, uk, b, packed);
    fx_bmm_pack_b(&p, uk, b, again);
    if (memcmp(packed, again, pf * sizeof(float)) != 0) {
      printf("FAIL %s: packing B twice differs\n", uk->name);
      g_failures++;
    }
    for (int constant = 0; constant <= 1; constant++)
      for (int threads = 1; threads <= 3; threads++) {
        float *c = malloc((nc + GUARD) * sizeof(float));
        for (size_t i = 0; i < nc + GUARD; i++) c[i] = CANARY;
        const size_t sf = fx_bmm_scratch_floats(&p, uk, threads, constant);
        float *scratch = sf ? malloc(sf * sizeof(float)) : NULL;
        fx_pool *pool = threads > 1 ? fx_pool_new(threads) : NULL;
        const int rc = fx_bmm_f32(pool, &p, uk, a, constant ? NULL : b, constant ? packed : NULL, c, scratch);
        if (pool) fx_pool_free(pool);
        free(scratch);
        double worst = 0.0;
        int canary = 0;
        for (size_t i = nc; i < nc + GUARD; i++) canary |= c[i] != CANARY;
        for (size_t ob = 0; ob < p.batches; ob++)
          for (int i = 0; i < p.m; i++)
            for (int jj = 0; jj < p.n; jj++) {
              double v, mag;
              ref_elem(&p, a, b, ob, i, jj, &v, &mag);
              const double e = fabs(c[(ob * (size_t)p.m + (size_t)i) * (size_t)p.n + (size_t)jj] - v) / (mag + 1e-30);
              worst = e > worst ? e : worst;
            }
        int differs = 0;
        /* same kernel, other thread counts and packing: bit for bit (a row's sums do not depend on the split) */
        static float *same;
        if (constant == 0 && threads == 1) {
          free(same);
          same = malloc((nc + 1) * sizeof(float));
          memcpy(same, c, nc * sizeof(float));
        } else {
          differs = memcmp(same, c, nc * sizeof(float)) != 0;
        }
        if (rc != 0 || worst > 2e-6 || canary || differs) {
          printf("FAIL %s const=%d threads=%d a[", uk->name, constant, threads);
          for (int d = 0; d < t->ar; d++) printf("%d%s", t->a[d], d + 1 < t->ar ? "," : "");
          printf("] b[");
          for (int d = 0; d < t->br; d++) printf("%d%s", t->b[d], d + 1 < t->br ? "," : "");
          printf("] adj %d%d: rc %d err %.3g%s%s\n", t->adj_x, t->adj_y, rc, worst, canary ? " CANARY" : "",
                 differs ? " DIFFERS" : "");
          g_failures++;
        }
        g_worst[u] = worst > g_worst[u] ? worst : g_worst[u];
        free(c);
      }
    free(packed), free(again);
  }
  free(a), free(b);
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "quick") == 0; /* qemu: the smaller shapes */
  const bmm_case cases[] = {
      {2, {1, 1}, 2, {1, 1}, 0, 0},
      {2, {7, 5}, 2, {5, 3}, 0, 0},
      {2, {17, 33}, 2, {19, 33}, 0, 1},
      {2, {33, 17}, 2, {33, 19}, 1, 0},
      {2, {64, 9}, 2, {40, 64}, 1, 1},
      {3, {3, 197, 64}, 3, {3, 64, 197}, 0, 0},             /* attention's Q Kt, 3 heads */
      {4, {1, 3, 197, 197}, 4, {1, 3, 197, 64}, 0, 0},      /* P V */
      {4, {2, 1, 13, 24}, 4, {1, 4, 24, 31}, 0, 0},         /* batch broadcast both ways */
      {5, {2, 1, 3, 6, 10}, 3, {3, 10, 7}, 0, 0},           /* rank 5 x rank 3 */
      {3, {2, 10, 6}, 5, {2, 1, 1, 7, 10}, 1, 1},
      {3, {4, 128, 768}, 2, {768, 96}, 0, 0},               /* constant B shared by all batches */
      {3, {1, 5, 768}, 2, {200, 768}, 0, 1},                /* FC-like, N > M */
      {3, {2, 0, 8}, 2, {8, 5}, 0, 0},                      /* M = 0 */
      {3, {2, 4, 0}, 2, {0, 5}, 0, 0},                      /* K = 0: zeros */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const bmm_case *t = &cases[i];
    if (quick && (double)numel(t->a, t->ar) * (t->adj_y ? t->b[t->br - 2] : t->b[t->br - 1]) > 1e7) continue;
    run_case(t);
  }
  /* shapes that cannot multiply are refused */
  fx_bmm_plan p;
  const int a1[] = {2, 3, 4}, b1[] = {3, 4, 5}, a2[] = {3, 4}, b2[] = {5, 6}, a3[] = {4};
  if (fx_bmm_plan_init(&p, a1, 3, b1, 3, 0, 0) == 0 || fx_bmm_plan_init(&p, a2, 2, b2, 2, 0, 0) == 0 ||
      fx_bmm_plan_init(&p, a3, 1, b2, 2, 0, 0) == 0) {
    printf("FAIL: an impossible shape was accepted\n");
    g_failures++;
  }
  for (int u = 0; fx_gemm_config_at(u); u++) printf("%s: max %.3g of sum |a b| vs float64\n", fx_gemm_config_at(u)->name, g_worst[u]);
  if (g_failures) {
    printf("%d FAILURES\n", g_failures);
    return 1;
  }
  printf("ALL PASS\n");
  return 0;
}
